import { assertEquals } from "../../tests/assert.ts";
import { agentTables } from "../../tests/route_tables.ts";
import { hooksRoutes } from "./hooks.ts";
import type { HooksFile } from "../../core/config.ts";

/** The laptop hooks routes over a fake hooks file. */
function hooksApp() {
  const written: string[] = [];
  let file: HooksFile = { hooks: [] };
  const tables = agentTables([hooksRoutes({
    hooks: {
      state: () => ({ path: "/home/u/.dock/hooks.json", ...file }) as never,
      write: (next, origin) => {
        written.push(`${JSON.stringify(next)} ${origin}`);
        file = next;
        return Promise.resolve({ path: "/home/u/.dock/hooks.json", ...file } as never);
      },
    },
  })]);
  return { tables, written };
}

Deno.test("hooks routes: read the file, write it ($schema dropped)", async () => {
  const { tables, written } = hooksApp();
  assertEquals((await tables.call("GET", "/hooks")).body.hooks, []);
  const hook = { on: "agent.finished", run: "say done" };
  const put = await tables.call("PUT", "/hooks", { json: { $schema: "x", hooks: [hook] } });
  assertEquals([put.status, put.body.hooks], [200, [hook]]);
  assertEquals((await tables.call("GET", "/hooks")).body.hooks, [hook]);
  assertEquals(written, [`{"hooks":[${JSON.stringify(hook)}]} api`]);
  tables.assertEveryRouteSucceeded();
});

Deno.test("hooks routes: refusals (strict body, a bad hook, the token)", async () => {
  const { tables, written } = hooksApp();
  await tables.refusesUnknownField("PUT", "/hooks", { hooks: [] });
  const badEvent = await tables.call("PUT", "/hooks", {
    json: { hooks: [{ on: "Not An Event", run: "x" }] },
  });
  assertEquals([badEvent.status, badEvent.body.error.code], [400, "invalid_hooks"]);
  const unknownHookField = await tables.call("PUT", "/hooks", {
    json: { hooks: [{ on: "agent.finished", run: "x", when: 1 }] },
  });
  assertEquals(unknownHookField.status, 400);
  await tables.assertEveryRouteNeedsToken();
  assertEquals(written, []);
});
