/**
 * `dock mcp` and `dockd mcp`: dock's orchestration as an MCP server on stdin/stdout (`core/mcp.ts`),
 * for an agent tool's MCP settings (`dock integrations install` writes them). `dock mcp` reaches every
 * box through the laptop agent (started in the background when it is not running); `dockd mcp`, for
 * agents on a box, reaches that box's daemon alone. Either talks with the origin `mcp`.
 *
 * @module
 */
import type { Command } from "./commander.ts";
import { load } from "./lazy.ts";
import { guarded } from "./output.ts";

const DESCRIPTION =
  "serve dock's tools (sessions, tasks, prompts, wait, screen, exec, flows) to an MCP client " +
  "on stdin/stdout";

/** Adds `mcp` to `dock`. */
export function mcpCommands(program: Command): void {
  program.command("mcp").description(`${DESCRIPTION}, for every box`).action(() =>
    guarded(async () => {
      const [{ agentClient }, mcp] = await Promise.all([
        load<typeof import("./agent.ts")>("./agent.ts"),
        load<typeof import("../core/mcp.ts")>("../core/mcp.ts"),
      ]);
      await mcp.serveMcpStdio(mcp.laptopDock(await agentClient({ origin: "mcp", oneShotReads: false })));
    }, "dock")
  );
}

/** Adds `mcp` to `dockd`. */
export function boxMcpCommands(program: Command): void {
  program.command("mcp").description(`${DESCRIPTION}, for this box`).action(() =>
    guarded(async () => {
      const [{ BoxClient }, { boxPaths }, mcp] = await Promise.all([
        load<typeof import("../client/box.ts")>("../client/box.ts"),
        load<typeof import("../core/paths.ts")>("../core/paths.ts"),
        load<typeof import("../core/mcp.ts")>("../core/mcp.ts"),
      ]);
      const client = new BoxClient({ socket: boxPaths().socket, origin: "mcp" });
      await mcp.serveMcpStdio(mcp.boxDock(client, (await client.info()).name));
    }, "dockd")
  );
}
