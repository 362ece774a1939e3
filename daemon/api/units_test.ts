import { DockError } from "../../client/errors.ts";
import { assertEquals } from "../../tests/assert.ts";
import { boxTables } from "../../tests/route_tables.ts";
import { unitRoutes } from "./units.ts";

/** The unit routes over a fake unit set that knows `web`; the exec gate refuses a command with `rm`. */
function unitsApp() {
  const calls: string[] = [];
  const known = (name: string) => {
    if (name !== "web") throw new DockError("not_found", `no unit ${name}`, { status: 404 });
    return { name, state: "running" };
  };
  const act = (verb: string) => (name: string, origin: string) => {
    known(name);
    calls.push(`${verb} ${name} ${origin}`);
    return Promise.resolve({ name, state: verb } as never);
  };
  const { app, gates } = boxTables([unitRoutes({
    units: {
      list: () => [known("web")] as never,
      get: (name) => known(name) as never,
      create: (unit, origin) => {
        calls.push(`create ${unit.name} ${origin}`);
        return Promise.resolve({ name: unit.name } as never);
      },
      start: act("start"),
      stop: act("stop"),
      restart: act("restart"),
      remove: act("remove"),
      log: (name, options) => {
        known(name);
        return (async function* () {
          yield { line: `tail ${options?.tail} follow ${options?.follow}` };
        })() as never;
      },
    },
  })], { refuse: (_action, target) => String(target.command).includes("rm") });
  return { app, gates, calls };
}

Deno.test("unit routes: create passes the exec gate; list, get, log, start, stop, restart, remove", async () => {
  const { app, gates, calls } = unitsApp();
  const made = await app.call("POST", "/units", { json: { name: "api", run: "deno task serve" } });
  assertEquals(made.status, 201);
  assertEquals(gates, ['exec - {"unit":"api","command":"deno task serve"}']);
  assertEquals((await app.call("GET", "/units")).body.length, 1);
  assertEquals((await app.call("GET", "/units/web")).body.name, "web");
  const log = await app.call("GET", "/units/web/log?tail=5&follow=1");
  assertEquals([log.status, log.body], [200, { line: "tail 5 follow true" }]);
  for (const verb of ["start", "stop", "restart"]) {
    assertEquals((await app.call("POST", `/units/web/${verb}`)).body.state, verb);
  }
  assertEquals((await app.call("DELETE", "/units/web")).status, 200);
  assertEquals(calls, [
    "create api api",
    "start web api",
    "stop web api",
    "restart web api",
    "remove web api",
  ]);
  app.assertEveryRouteSucceeded();
});

Deno.test("unit routes: refusals (the exec gate, strict body, names, unknown units, tail bounds)", async () => {
  const { app, calls } = unitsApp();
  const { entered } = await app.refused("POST", "/units", 403, "gate_refused", {
    json: { name: "x", run: "rm -rf ~" },
  });
  assertEquals(entered, 0);
  await app.refusesUnknownField("POST", "/units", { name: "x", run: "true" });
  for (
    const json of [{ name: "X Y", run: "true" }, { name: "x", run: "" }, {
      name: "x",
      run: "t",
      env: { "A-B": "1" },
    }]
  ) {
    assertEquals((await app.call("POST", "/units", { json })).status, 400);
  }
  assertEquals((await app.call("GET", "/units/ghost")).status, 404);
  assertEquals((await app.call("POST", "/units/ghost/start")).status, 404);
  assertEquals((await app.call("GET", "/units/web/log?tail=-1")).status, 400);
  assertEquals((await app.call("GET", "/units/ghost/log")).status, 404);
  assertEquals(calls, []);
});
