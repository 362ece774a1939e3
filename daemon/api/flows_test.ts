import { DockError } from "../../client/errors.ts";
import { assertEquals } from "../../tests/assert.ts";
import { boxTables } from "../../tests/route_tables.ts";
import { flowRoutes } from "./flows.ts";

/** The flows routes over a fake flow set (one flow, `f1`) and a bus that records. */
function flowsApp(refuse = false) {
  const calls: string[] = [];
  const { app, gates } = boxTables([flowRoutes({
    flows: {
      list: () => Promise.resolve([{ id: "f1" }] as never),
      write: (file: { flows: unknown[] }) => {
        calls.push(`write ${file.flows.length}`);
        return Promise.resolve({ flows: file.flows } as never);
      },
      runs: (query) => {
        calls.push(`runs ${query.flow} ${query.limit}`);
        return [] as never;
      },
      test: (id, request) => {
        if (id !== "f1") return Promise.reject(new DockError("not_found", `no flow ${id}`, { status: 404 }));
        calls.push(`test ${id} ${request.scope}`);
        return Promise.resolve({ id: "r1", status: "ok" } as never);
      },
    },
    bus: {
      publish: (announce) => {
        calls.push(`${announce.type} ${JSON.stringify(announce.data)}`);
        return {} as never;
      },
    },
  })], { refuse: () => refuse });
  return { app, gates, calls };
}

Deno.test("flows routes: list, write (gated, announced), runs, test", async () => {
  const { app, gates, calls } = flowsApp();
  assertEquals((await app.call("GET", "/flows")).body, [{ id: "f1" }]);
  assertEquals((await app.call("PUT", "/flows", { json: { $schema: "x", flows: [] } })).status, 200);
  assertEquals(gates, ['config.change - {"file":"flows.json","value":{"flows":[]}}']);
  assertEquals((await app.call("GET", "/flows/runs?flow=f1&limit=200")).status, 200);
  assertEquals((await app.call("GET", "/flows/runs")).status, 200);
  assertEquals((await app.call("POST", "/flows/f1/test", { json: { scope: "box" } })).body.status, "ok");
  assertEquals(calls, [
    "write 0",
    'config.changed {"file":"flows.json"}',
    "runs f1 200",
    "runs undefined 50",
    "test f1 box",
  ]);
  app.assertEveryRouteSucceeded();
});

Deno.test("flows routes: refusals (the config.change gate, strict bodies, limits, unknown flows)", async () => {
  const refused = flowsApp(true);
  const { entered } = await refused.app.refused("PUT", "/flows", 403, "gate_refused", {
    json: { flows: [] },
  });
  assertEquals([entered, refused.calls], [0, []]);
  const { app, calls } = flowsApp();
  await app.refusesUnknownField("PUT", "/flows", { flows: [] });
  await app.refusesUnknownField("POST", "/flows/f1/test", {});
  assertEquals((await app.call("PUT", "/flows", { json: { flows: [{ nonsense: true }] } })).status, 400);
  for (const limit of ["0", "201", "1.5", "x"]) {
    assertEquals((await app.call("GET", `/flows/runs?limit=${limit}`)).status, 400, limit);
  }
  assertEquals((await app.call("POST", "/flows/f1/test", { json: { scope: "lab" } })).status, 400);
  assertEquals((await app.call("POST", "/flows/ghost/test", { json: {} })).status, 404);
  assertEquals(calls, []);
});
