/**
 * The `dockd` command line (everything but the `hook` fast path): the box daemon (`dockd serve`) and
 * the commands that talk to it over its socket through the typed client. Only `serve` loads the daemon
 * (through `lazy.ts`), so the others start fast.
 *
 * @module
 */
import { Command } from "./commander.ts";
import { boxCommands } from "./box_commands.ts";
import { VERSION } from "../client/version.ts";
import { eventCommands } from "./events.ts";
import { load } from "./lazy.ts";
import { guarded } from "./output.ts";
import { defaultHookCommand, integrationCommands } from "./integrations.ts";
import { systemCommands } from "./system.ts";
import { schemasCommand } from "./schemas.ts";
import { boxScope } from "./target.ts";
import { boxPairCommands } from "./pair.ts";

/** Parses `args` and runs the command. */
export async function main(args: string[]): Promise<void> {
  const program = new Command("dockd").description("dock's box daemon and its command line").version(VERSION);
  program.command("serve").description("run the box daemon in the foreground").action(() =>
    guarded(async () => {
      const { serveBox } = await load<typeof import("./serve.ts")>("./serve.ts");
      await serveBox();
    })
  );
  program.command("install").description(
    "install the box daemon as a service that runs permanently (systemd user unit, launchd agent)",
  ).action(() =>
    guarded(async () => {
      const { daemonService, installService } = await load<typeof import("../core/service_install.ts")>(
        "../core/service_install.ts",
      );
      const { boxPaths } = await load<typeof import("../core/paths.ts")>("../core/paths.ts");
      const result = await installService(daemonService(`${boxPaths().box}/dockd.log`));
      console.log(`wrote ${result.file} (${result.manager})${result.started ? "; dockd runs now" : ""}`);
      for (const note of result.notes) console.log(note);
    })
  );
  const scope = boxScope();
  boxCommands(program, scope);
  eventCommands(program);
  systemCommands(program);
  boxPairCommands(program);
  schemasCommand(program);
  integrationCommands(program, { hookCommand: () => defaultHookCommand("dockd") });
  program.command("hook").description("report an agent tool's hook (run by the tool itself)")
    .argument("<tool>").argument("<event>");
  await program.parseAsync(["deno", "dockd", ...args]);
}
