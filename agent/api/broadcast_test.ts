import { assertEquals } from "../../tests/assert.ts";
import { agentTables } from "../../tests/route_tables.ts";
import { broadcastRoutes } from "./broadcast.ts";

/** The broadcast route over a fake broadcaster that records each run. */
function broadcastApp() {
  const runs: string[] = [];
  const tables = agentTables([broadcastRoutes({
    run: (request, origin) => {
      runs.push(`${request.text} → ${request.to?.join(",")} ${origin}`);
      return Promise.resolve({ results: request.to?.map((to) => ({ to, outcome: "sent" })) ?? [] } as never);
    },
  })]);
  return { tables, runs };
}

Deno.test("broadcast route: runs the request and answers each target's outcome", async () => {
  const { tables, runs } = broadcastApp();
  const answer = await tables.call("POST", "/broadcast", {
    json: { text: "hi {{session}}", to: ["b1/s1", "b2/s2"] },
    headers: { "x-dock-origin": "app" },
  });
  assertEquals([answer.status, answer.body.results.length], [200, 2]);
  assertEquals(runs, ["hi {{session}} → b1/s1,b2/s2 app"]);
  tables.assertEveryRouteSucceeded();
});

Deno.test("broadcast route: refusals (strict body, bad targets, the token)", async () => {
  const { tables, runs } = broadcastApp();
  await tables.refusesUnknownField("POST", "/broadcast", { text: "x", to: ["b1/s1"] });
  for (const to of [[], ["no-slash"], ["b1/a b"], ["b\u0000/s1"]]) {
    assertEquals((await tables.call("POST", "/broadcast", { json: { text: "x", to } })).status, 400);
  }
  const where = await tables.call("POST", "/broadcast", { json: { text: "x", where: { state: "asleep" } } });
  assertEquals(where.status, 400);
  await tables.assertEveryRouteNeedsToken();
  assertEquals(runs, []);
});
