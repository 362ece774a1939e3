/**
 * `dock`: the laptop command line. `dock up` runs dock with a local box on this machine; the laptop
 * agent, pairing and the relay join it as their issues land.
 *
 * @module
 */
import { Command } from "@commander-js/extra-typings";
import { BUILD } from "../daemon/box.ts";
import { guarded } from "./output.ts";
import { defaultHookCommand, integrationCommands } from "./integrations.ts";
import { serveBox } from "./serve.ts";

/** Parses `args` and runs the command. */
export async function main(args: string[]): Promise<void> {
  const program = new Command("dock").description("drive coding agents on remote boxes from this laptop")
    .version(BUILD);
  program.command("up").description(
    "run dock with a local box in the foreground (the box daemon, on this machine)",
  )
    .action(() => guarded(serveBox, "dock"));
  integrationCommands(program, { hookCommand: () => defaultHookCommand("dock") });
  program.command("hook").description("report an agent tool's hook (run by the tool itself)")
    .argument("<tool>").argument("<event>");
  await program.parseAsync(["deno", "dock", ...args]);
}
