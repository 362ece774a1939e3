import { DockError } from "../../client/errors.ts";
import { assert, assertEquals } from "../../tests/assert.ts";
import { boxTables } from "../../tests/route_tables.ts";
import { RELAY_HEADER, secretRoutes } from "./secrets.ts";

/** The secrets routes over a fake worktree `app/feat` with one secret that resolves and one that fails. */
function secretsApp() {
  const calls: string[] = [];
  const { app } = boxTables([secretRoutes({
    worktrees: {
      target: (location) => {
        if (!location.startsWith("app")) {
          throw new DockError("not_found", `no location ${location}`, { status: 404 });
        }
        return { location: "app", name: "feat" } as never;
      },
      environment: (worktree, options) => {
        calls.push(`environment ${worktree.name}`);
        options?.onSecret?.(
          { variable: "TOKEN", scheme: "env", ok: true, length: 12, value: "hunter2hunter" } as never,
        );
        options?.onSecret?.({ variable: "KEY", scheme: "op", ok: false, error: "not signed in" } as never);
        return Promise.resolve({} as never);
      },
      environmentLayers: (worktree) => {
        calls.push(`layers ${worktree.name}`);
        return Promise.resolve([{ source: "config", names: ["TOKEN"] }] as never);
      },
    },
  })]);
  return { app, calls };
}

Deno.test("secrets routes: the report names each secret's outcome and never its value; the layers", async () => {
  const { app, calls } = secretsApp();
  const report = await app.call("POST", "/secrets/report", { json: { location: "app/feat" } });
  assertEquals(report.body, {
    location: "app",
    worktree: "feat",
    secrets: [
      { variable: "TOKEN", scheme: "env", ok: true, length: 12 },
      { variable: "KEY", scheme: "op", ok: false, error: "not signed in" },
    ],
  });
  assert(!JSON.stringify(report.body).includes("hunter2"));
  assertEquals((await app.call("POST", "/secrets/environment", { json: { location: "app" } })).status, 200);
  assertEquals(calls, ["environment feat", "layers feat"]);
  app.assertEveryRouteSucceeded();
});

Deno.test("secrets routes: refusals (relayed from a laptop, strict body, an unknown location)", async () => {
  const { app, calls } = secretsApp();
  for (const path of ["/secrets/report", "/secrets/environment"]) {
    const relayed = await app.call("POST", path, {
      json: { location: "app" },
      headers: { [RELAY_HEADER]: "1" },
    });
    assertEquals([relayed.status, relayed.body.error.code], [403, "socket_only"]);
    await app.refusesUnknownField("POST", path, { location: "app" });
    assertEquals((await app.call("POST", path, { json: { location: "" } })).status, 400);
    assertEquals((await app.call("POST", path, { json: { location: "ghost" } })).status, 404);
  }
  assertEquals(calls, []);
});
