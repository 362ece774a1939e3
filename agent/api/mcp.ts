/**
 * `/v1/mcp`: the agent's MCP endpoint (Streamable HTTP, stateless; `core/mcp.ts`), behind the same
 * token and Host checks as every route. Its tools call this agent's own API with the origin `mcp`.
 *
 * @module
 */
import { z } from "zod";
import { AgentClient } from "../../client/agent.ts";
import { DockError } from "../../client/errors.ts";
import { body, RouteTable } from "../../core/http.ts";
import { answerMcpHttp, laptopDock } from "../../core/mcp.ts";

/**
 * One JSON-RPC 2.0 message (a request, a notification, or a response to the server's request), with
 * the API's body rules (strict fields, UTF-8, depth); the SDK checks the method and its params.
 */
const JSON_RPC = z.strictObject({
  jsonrpc: z.literal("2.0"),
  id: z.union([z.string().max(256), z.number().int()]).optional(),
  method: z.string().min(1).max(256).optional(),
  params: z.record(z.string(), z.unknown()).optional(),
  result: z.record(z.string(), z.unknown()).optional(),
  error: z.strictObject({ code: z.number().int(), message: z.string(), data: z.unknown().optional() })
    .optional(),
}).refine((m) => m.method !== undefined || m.result !== undefined || m.error !== undefined, {
  message: "a JSON-RPC message has a method, a result or an error",
});

/** A message or a batch of them. */
const MCP_MESSAGE = z.union([JSON_RPC, z.array(JSON_RPC).min(1).max(64)]);

/** What the endpoint uses of the agent. */
export interface McpRoutesBackend {
  token: string;
}

/** The MCP route, for an agent listening on `port`. */
export function mcpRoutes(agent: McpRoutesBackend, options: { port: number }): RouteTable {
  const client = () =>
    new AgentClient({ url: `http://127.0.0.1:${options.port}`, token: agent.token, origin: "mcp" });
  const answer = async (request: Request, message?: unknown) => {
    const own = client();
    try {
      return await answerMcpHttp(laptopDock(own), request, message);
    } finally {
      own.close();
    }
  };
  return new RouteTable("mcp")
    .add("POST", "/mcp", async (c) => answer(c.req.raw, await body(c, MCP_MESSAGE)))
    // Stateless: no stream for the server to speak first on, and no session to end (the protocol's 405).
    .add("GET", "/mcp", () => {
      throw new DockError("stateless", "this MCP endpoint is stateless: POST each message", { status: 405 });
    })
    .add("DELETE", "/mcp", () => {
      throw new DockError("stateless", "this MCP endpoint keeps no session to end", { status: 405 });
    });
}
