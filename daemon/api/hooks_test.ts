import { assertEquals } from "../../tests/assert.ts";
import { boxTables } from "../../tests/route_tables.ts";
import { hooksRoutes } from "./hooks.ts";

/** The box's hooks routes over a fake hooks file; the gate refuses a file that drops every hook. */
function hooksApp() {
  const written: string[] = [];
  const { app, gates } = boxTables([hooksRoutes({
    hooks: {
      state: () => ({ path: "/home/u/.dock/hooks.json", hooks: [] }) as never,
      write: (file, origin) => {
        written.push(`${file.hooks.length} ${origin}`);
        return Promise.resolve({ path: "", ...file } as never);
      },
    },
  })], { refuse: (_action, target) => (target.value as { hooks: unknown[] }).hooks.length === 0 });
  return { app, gates, written };
}

Deno.test("box hooks routes: read, and a write that passes the config.change gate", async () => {
  const { app, gates, written } = hooksApp();
  assertEquals((await app.call("GET", "/hooks")).body.hooks, []);
  const hook = { on: "before:session.send", run: "check.sh" };
  assertEquals((await app.call("PUT", "/hooks", { json: { hooks: [hook] } })).status, 200);
  assertEquals(gates, [`config.change - {"file":"hooks.json","value":{"hooks":[${JSON.stringify(hook)}]}}`]);
  assertEquals(written, ["1 api"]);
  app.assertEveryRouteSucceeded();
});

Deno.test("box hooks routes: refusals (the gate, strict body, a bad hook checked before the gate)", async () => {
  const { app, gates, written } = hooksApp();
  assertEquals((await app.refused("PUT", "/hooks", 403, "gate_refused", { json: { hooks: [] } })).entered, 0);
  await app.refusesUnknownField("PUT", "/hooks", { hooks: [] });
  const bad = await app.call("PUT", "/hooks", { json: { hooks: [{ on: "before:nothing here", run: "x" }] } });
  assertEquals([bad.status, bad.body.error.code], [400, "invalid_hooks"]);
  assertEquals([gates.length, written], [1, []]);
});
