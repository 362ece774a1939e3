import type { AgentStatus } from "../../client/wire.ts";
import { assertEquals } from "../../tests/assert.ts";
import { agentTables } from "../../tests/route_tables.ts";
import { statusRoutes } from "./status.ts";

/** The agent's own routes over a fake backend that records what it was asked. */
function statusApp() {
  const calls: string[] = [];
  let boxes = 0;
  const status = (): AgentStatus => ({
    build: "1.0.0+abc",
    boxes: Array.from({ length: boxes }, (_, i) => ({ name: `b${i}` }) as AgentStatus["boxes"][number]),
    forwards: [],
    routes: [],
    proxy: { enabled: false },
  });
  const tables = agentTables([statusRoutes({
    statusJson: () => JSON.stringify(status()),
    refresh: () => {
      calls.push("refresh");
      boxes++;
      return Promise.resolve();
    },
    upgrade: async (body, origin) => {
      calls.push(`upgrade ${new TextDecoder().decode(await new Response(body).arrayBuffer())} ${origin}`);
      return { from: "1.0.0+abc", to: "1.1.0+def", mode: "self", after: 7 };
    },
  })]);
  return { tables, calls };
}

Deno.test("status routes: status, refresh (asks the boxes, then answers), upgrade (a package body, 202)", async () => {
  const { tables, calls } = statusApp();
  const first = await tables.call("GET", "/status");
  assertEquals([first.status, first.body.build, first.body.boxes.length], [200, "1.0.0+abc", 0]);
  const refreshed = await tables.call("POST", "/refresh");
  assertEquals([refreshed.status, refreshed.body.boxes.length], [200, 1]);
  const upgrade = await tables.call("POST", "/upgrade", {
    body: "tarball",
    headers: { "content-type": "application/gzip", "x-dock-origin": "cli" },
  });
  assertEquals([upgrade.status, upgrade.body.to, upgrade.body.after], [202, "1.1.0+def", 7]);
  assertEquals(calls, ["refresh", "upgrade tarball cli"]);
  // Stop is refused to every holder of the token; it has no success to cover.
  const stop = await tables.call("POST", "/stop");
  assertEquals([stop.status, stop.body.error.code], [403, "refused"]);
  tables.assertEveryRouteSucceeded(["POST /stop"]);
});

Deno.test("status routes: an upgrade that is not a package is refused before anything is installed", async () => {
  const { tables, calls } = statusApp();
  const json = await tables.call("POST", "/upgrade", { json: { version: "1.1.0" } });
  assertEquals([json.status, json.body.error.code], [415, "unsupported_type"]);
  const empty = await tables.call("POST", "/upgrade", { headers: { "content-type": "application/gzip" } });
  assertEquals([empty.status, empty.body.error.code], [400, "invalid_request"]);
  const wrongMethod = await tables.call("GET", "/upgrade");
  assertEquals([wrongMethod.status, wrongMethod.body.error.code], [405, "method_not_allowed"]);
  assertEquals(calls, []);
});

Deno.test("status routes: every route needs the token", async () => {
  const { tables, calls } = statusApp();
  await tables.assertEveryRouteNeedsToken();
  assertEquals(calls, []);
});
