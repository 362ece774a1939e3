import { assertEquals } from "../../tests/assert.ts";
import { AGENT_PORT, AGENT_TOKEN, agentTables } from "../../tests/route_tables.ts";
import { mcpRoutes } from "./mcp.ts";

const HEADERS = { accept: "application/json, text/event-stream" };

/** The MCP route in memory (the calls its tools make would reach port 1378: none is made here). */
function mcpApp() {
  return agentTables([mcpRoutes({ token: AGENT_TOKEN }, { port: AGENT_PORT })]);
}

/** The JSON-RPC answer of an MCP POST (JSON, or the one SSE `data:` line). */
function rpc(body: unknown): { id?: number; result?: Record<string, unknown>; error?: { code: number } } {
  if (typeof body !== "string") return body as never;
  return JSON.parse(body.split("\n").find((line) => line.startsWith("data: "))!.slice("data: ".length));
}

Deno.test("mcp route: initialize and tools/list answer over POST; GET and DELETE are the stateless 405", async () => {
  const tables = mcpApp();
  const init = await tables.call("POST", "/mcp", {
    headers: HEADERS,
    json: {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-03-26", capabilities: {}, clientInfo: { name: "t", version: "1" } },
    },
  });
  assertEquals(init.status, 200);
  assertEquals(rpc(init.body).id, 1);
  assertEquals(typeof (rpc(init.body).result?.serverInfo as { name: string }).name, "string");
  const tools = await tables.call("POST", "/mcp", {
    headers: HEADERS,
    json: { jsonrpc: "2.0", id: 2, method: "tools/list" },
  });
  assertEquals(tools.status, 200);
  const listed = (rpc(tools.body).result?.tools ?? []) as { name: string }[];
  assertEquals(listed.length > 0, true);
  for (const method of ["GET", "DELETE"]) {
    const answer = await tables.call(method, "/mcp", { headers: HEADERS });
    assertEquals([answer.status, answer.body.error.code], [405, "stateless"]);
  }
  tables.assertEveryRouteSucceeded(["GET /mcp", "DELETE /mcp"]);
});

Deno.test("mcp route: refusals (strict JSON-RPC message, a batch too big, the token)", async () => {
  const tables = mcpApp();
  await tables.refusesUnknownField("POST", "/mcp", { jsonrpc: "2.0", id: 1, method: "tools/list" });
  for (
    const json of [
      { jsonrpc: "1.0", id: 1, method: "tools/list" },
      { jsonrpc: "2.0", id: 1 },
      [],
      Array(65).fill({ jsonrpc: "2.0", method: "notifications/initialized" }),
    ]
  ) {
    assertEquals((await tables.call("POST", "/mcp", { headers: HEADERS, json })).status, 400);
  }
  await tables.assertEveryRouteNeedsToken();
});
