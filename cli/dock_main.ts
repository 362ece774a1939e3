/**
 * The `dock` command line (everything but the `hook` fast path): the laptop agent and the commands
 * that talk to it. `dock up` runs the box daemon and the agent together on this machine. The box
 * commands are `dockd`'s, with a `BOX/` prefix, through the agent's relay (spec 4.4).
 *
 * @module
 */
import { Command } from "./commander.ts";
import { boxCommands } from "./box_commands.ts";
import { VERSION } from "../client/version.ts";
import { defaultHookCommand, integrationCommands } from "./integrations.ts";
import { agentClient, agentCommands } from "./agent.ts";
import { laptopScope } from "./target.ts";
import { pairCommands } from "./pair.ts";
import { queueCommands } from "./queue.ts";

/** Parses `args` and runs the command. */
export async function main(args: string[]): Promise<void> {
  const program = new Command("dock").description("drive coding agents on remote boxes from this laptop")
    .version(VERSION);
  agentCommands(program);
  pairCommands(program);
  const scope = laptopScope(agentClient);
  boxCommands(program, scope);
  queueCommands(program);
  integrationCommands(program, { hookCommand: () => defaultHookCommand("dock") });
  program.command("hook").description("report an agent tool's hook (run by the tool itself)")
    .argument("<tool>").argument("<event>");
  await program.parseAsync(["deno", "dock", ...args]);
}
