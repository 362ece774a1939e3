/**
 * `dock mcp`: dock's orchestration as an MCP server on stdin/stdout (`agent/mcp.ts`), for an agent
 * tool's MCP settings (`{ "command": "dock", "args": ["mcp"] }`). It talks to the laptop agent
 * (started in the background when it is not running) with the origin `mcp`.
 *
 * @module
 */
import type { Command } from "./commander.ts";
import { agentClient } from "./agent.ts";
import { load } from "./lazy.ts";
import { guarded } from "./output.ts";

/** Adds `mcp` to `dock`. */
export function mcpCommands(program: Command): void {
  program.command("mcp").description(
    "serve dock's tools (boxes, sessions, tasks, prompts, wait, screen, exec, flows) to an MCP client " +
      "on stdin/stdout",
  ).action(() =>
    guarded(async () => {
      const [client, { serveMcpStdio }] = await Promise.all([
        agentClient({ origin: "mcp", oneShotReads: false }),
        load<typeof import("../agent/mcp.ts")>("../agent/mcp.ts"),
      ]);
      await serveMcpStdio(client);
    }, "dock")
  );
}
