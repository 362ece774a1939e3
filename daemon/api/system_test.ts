import { assert, assertEquals } from "../../tests/assert.ts";
import { boxTables } from "../../tests/route_tables.ts";
import { systemRoutes } from "./system.ts";

/**
 * The system routes over a temporary state folder (the env and guard files are real files there) and
 * fakes for the rest; the gate refuses an env file that sets `EVIL`.
 */
async function systemApp() {
  const state = await Deno.makeTempDir({ prefix: "dock-system-api-" });
  const calls: string[] = [];
  const published: string[] = [];
  const { app, gates } = boxTables([systemRoutes({
    settings: { name: "box1" },
    paths: {
      state,
      userHome: state,
      socket: `${state}/dockd.sock`,
      envFile: `${state}/env.json`,
      guardFile: `${state}/guard.json`,
    },
    bus: {
      publish: (announce) => {
        published.push(`${announce.type} ${JSON.stringify(announce.data)}`);
        return {} as never;
      },
    },
    hooks: { state: () => ({ path: `${state}/hooks.json`, hooks: [] }) as never },
    services: { tracking: "none" } as never,
    locations: { list: () => [] },
    worktrees: { list: () => [] },
    sessions: { list: () => [], presets: () => [] } as never,
    secrets: {
      resolve: (ref) => {
        calls.push(`resolve ${ref}`);
        return Promise.resolve(
          ref === "env://TOKEN" ? { ok: true, value: "abcd" } : { ok: false, error: "unset" },
        ) as never;
      },
    },
    upgrades: {
      start: async (body, origin) => {
        calls.push(`upgrade ${await new Response(body).text()} ${origin}`);
        return { from: "1", to: "2", mode: "self", after: 1 };
      },
    },
  })], { refuse: (_action, target) => JSON.stringify(target).includes("EVIL") });
  return { app, gates, calls, published, state, close: () => Deno.remove(state, { recursive: true }) };
}

Deno.test("system routes: info, stats, doctor, fs, env and guard (gated, announced), secret test, upgrade", async () => {
  const world = await systemApp();
  try {
    const { app } = world;
    assertEquals((await app.call("GET", "/info")).body.name, "box1");
    assertEquals((await app.call("GET", "/stats")).body.worktrees, 0);
    const doctor = await app.call("GET", "/doctor");
    assertEquals([doctor.status, Array.isArray(doctor.body)], [200, true]);
    assertEquals((await app.call("GET", `/fs?path=${encodeURIComponent(world.state)}`)).status, 200);
    assertEquals((await app.call("GET", "/env")).body, { env: {} });
    assertEquals((await app.call("PUT", "/env", { json: { env: { PORT: "3000" } } })).status, 200);
    assertEquals((await app.call("GET", "/env")).body, { env: { PORT: "3000" } });
    assertEquals(
      (await app.call("PUT", "/guard", { json: { enabled: true, memory_percent: 90 } })).status,
      200,
    );
    assertEquals((await app.call("GET", "/guard")).body.memory_percent, 90);
    assertEquals((await app.call("POST", "/secrets/test", { json: { ref: "env://TOKEN" } })).body, {
      ok: true,
      length: 4,
    });
    assertEquals((await app.call("POST", "/secrets/test", { json: { ref: "plain" } })).body.ok, false);
    const upgrade = await app.call("POST", "/upgrade", {
      body: "pkg",
      headers: { "content-type": "application/gzip" },
    });
    assertEquals([upgrade.status, upgrade.body.to], [202, "2"]);
    assertEquals(world.gates.map((g) => g.split(" ")[0]), ["config.change", "config.change"]);
    assertEquals(world.published, [
      'config.changed {"file":"env.json"}',
      'config.changed {"file":"guard.json"}',
    ]);
    assertEquals(world.calls, ["resolve env://TOKEN", "upgrade pkg api"]);
    const stop = await app.call("POST", "/stop");
    assertEquals([stop.status, stop.body.error.code], [403, "forbidden"]);
    app.assertEveryRouteSucceeded(["POST /stop"]);
  } finally {
    await world.close();
  }
});

Deno.test("system routes: refusals (the gate, strict bodies, bad values, not a package)", async () => {
  const world = await systemApp();
  try {
    const { app } = world;
    assertEquals(
      (await app.refused("PUT", "/env", 403, "gate_refused", { json: { env: { EVIL: "1" } } })).entered,
      0,
    );
    await app.refusesUnknownField("PUT", "/env", { env: {} });
    await app.refusesUnknownField("PUT", "/guard", {});
    await app.refusesUnknownField("POST", "/secrets/test", { ref: "env://X" });
    assertEquals((await app.call("PUT", "/env", { json: { env: { "A=B": "1" } } })).status, 400);
    assertEquals((await app.call("PUT", "/env", { json: { env: { A: "a\u0000b" } } })).status, 400);
    for (const guard of [{ memory_percent: 150 }, { memory_percent: "90" }, { sustain: "1ms" }]) {
      assertEquals((await app.call("PUT", "/guard", { json: guard })).status, 400, JSON.stringify(guard));
    }
    assertEquals((await app.call("POST", "/upgrade", { json: {} })).status, 415);
    assertEquals(
      (await app.call("POST", "/upgrade", { headers: { "content-type": "application/gzip" } })).status,
      400,
    );
    assert(!(await Deno.stat(`${world.state}/env.json`).catch(() => null)));
    assertEquals([world.calls, world.published], [[], []]);
  } finally {
    await world.close();
  }
});
