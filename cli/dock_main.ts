/**
 * The `dock` command line (everything but the `hook` fast path): the laptop agent and the commands
 * that talk to it. `dock up` runs the box daemon and the agent together on this machine. The box
 * commands are `dockd`'s, with a `BOX/` prefix, through the agent's relay (spec 4.4). Only the family
 * a command line names is loaded (`families.ts`).
 *
 * @module
 */
import { Command } from "./commander.ts";
import { boxFamilies } from "./box_commands.ts";
import { DOCK_COMMANDS } from "./commands.generated.ts";
import { BUILD } from "../client/version.ts";
import { type Families, hookStub, registerFor } from "./families.ts";
import { load } from "./lazy.ts";
import { ABOUT } from "./top_help.ts";

/** `dock`'s families in the order its help lists them. */
export function dockFamilies(): Families {
  const agent = () => load<typeof import("./agent.ts")>("./agent.ts");
  const scope = async () => {
    const [{ agentClient }, { laptopScope }] = await Promise.all([
      agent(),
      load<typeof import("./target.ts")>("./target.ts"),
    ]);
    return laptopScope(agentClient);
  };
  return {
    agent: async () => (await agent()).agentCommands,
    pair: async () => (await load<typeof import("./pair.ts")>("./pair.ts")).pairCommands,
    ...boxFamilies(scope),
    queue: async () => (await load<typeof import("./queue.ts")>("./queue.ts")).queueCommands,
    broadcast: async () => (await load<typeof import("./broadcast.ts")>("./broadcast.ts")).broadcastCommands,
    attach: async () => (await load<typeof import("./attach.ts")>("./attach.ts")).attachCommands,
    mcp: async () => (await load<typeof import("./mcp.ts")>("./mcp.ts")).mcpCommands,
    kit: async () => (await load<typeof import("./kit.ts")>("./kit.ts")).kitCommands,
    edit: async () => (await load<typeof import("./edit.ts")>("./edit.ts")).editCommands,
    discover: async () => (await load<typeof import("./discover.ts")>("./discover.ts")).discoverCommands,
    setup: async () => (await load<typeof import("./setup.ts")>("./setup.ts")).setupCommands,
    integrations: async () => {
      const { defaultHookCommand, integrationCommands } = await load<typeof import("./integrations.ts")>(
        "./integrations.ts",
      );
      return (program) => integrationCommands(program, { hookCommand: () => defaultHookCommand("dock") });
    },
    hook: () => Promise.resolve(hookStub),
  };
}

/** Parses `args` and runs the command. */
export async function main(args: string[]): Promise<void> {
  const program = new Command("dock").description(ABOUT.dock).version(BUILD);
  await registerFor(program, args, dockFamilies(), DOCK_COMMANDS);
  await program.parseAsync(["deno", "dock", ...args]);
}
