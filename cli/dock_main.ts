/**
 * The `dock` command line (everything but the `hook` fast path): the laptop agent and the commands
 * that talk to it. `dock up` runs the box daemon and the agent together on this machine.
 *
 * @module
 */
import { Command } from "@commander-js/extra-typings";
import { BUILD } from "../daemon/box.ts";
import { defaultHookCommand, integrationCommands } from "./integrations.ts";
import { agentCommands } from "./agent.ts";

/** Parses `args` and runs the command. */
export async function main(args: string[]): Promise<void> {
  const program = new Command("dock").description("drive coding agents on remote boxes from this laptop")
    .version(BUILD);
  agentCommands(program);
  integrationCommands(program, { hookCommand: () => defaultHookCommand("dock") });
  program.command("hook").description("report an agent tool's hook (run by the tool itself)")
    .argument("<tool>").argument("<event>");
  await program.parseAsync(["deno", "dock", ...args]);
}
