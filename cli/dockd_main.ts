/**
 * The `dockd` command line (everything but the `hook` fast path): the box daemon (`dockd serve`) and
 * the commands that talk to it over its socket through the typed client. Only the family a command
 * line names is loaded (`families.ts`), and only `serve` loads the daemon, so the others start fast.
 *
 * @module
 */
import { Command } from "./commander.ts";
import { boxFamilies } from "./box_commands.ts";
import { DOCKD_COMMANDS } from "./commands.generated.ts";
import { BUILD } from "../client/version.ts";
import { type Families, hookStub, registerFor } from "./families.ts";
import { load } from "./lazy.ts";
import { ABOUT } from "./top_help.ts";
import { guarded } from "./output.ts";

/** `dockd serve` and `dockd install`: running the daemon itself. */
function daemonCommands(program: Command): void {
  program.command("serve").description("run the box daemon in the foreground").action(() =>
    guarded(async () => {
      // What the daemon's start waits on is begun first (certificates, a cgroup probe): they run while
      // its modules load.
      const early = await load<typeof import("./serve_early.ts")>("./serve_early.ts");
      const { boxPaths } = await load<typeof import("../core/paths.ts")>("../core/paths.ts");
      const begun = early.beginStart(boxPaths());
      const { serveBox } = await load<typeof import("./serve.ts")>("./serve.ts");
      await serveBox(begun);
    })
  );
  program.command("install").description(
    "install the box daemon as a service that runs permanently (systemd user unit, launchd agent)",
  ).option("--cron", "instead, a user crontab @reboot entry (where there is no systemd user session)")
    .option("--remove", "with --cron: remove that entry").action((o) =>
      guarded(async () => {
        const { daemonService, installCron, installService } = await load<
          typeof import("../core/service_install.ts")
        >(
          "../core/service_install.ts",
        );
        const { boxPaths } = await load<typeof import("../core/paths.ts")>("../core/paths.ts");
        const spec = daemonService(`${boxPaths().box}/dockd.log`);
        if (o.cron) {
          await installCron(spec, { remove: o.remove === true });
          return console.log(
            o.remove ? "removed the crontab @reboot entry" : "crontab @reboot entry installed",
          );
        }
        const result = await installService(spec);
        console.log(`wrote ${result.file} (${result.manager})${result.started ? "; dockd runs now" : ""}`);
        for (const note of result.notes) console.log(note);
      })
    );
}

/** `dockd`'s families in the order its help lists them. */
export function dockdFamilies(): Families {
  const scope = async () => (await load<typeof import("./target.ts")>("./target.ts")).boxScope();
  return {
    daemon: () => Promise.resolve(daemonCommands),
    ...boxFamilies(scope),
    events: async () => (await load<typeof import("./events.ts")>("./events.ts")).eventCommands,
    system: async () => (await load<typeof import("./system.ts")>("./system.ts")).systemCommands,
    pair: async () => (await load<typeof import("./pair.ts")>("./pair.ts")).boxPairCommands,
    schemas: async () => (await load<typeof import("./schemas.ts")>("./schemas.ts")).schemasCommand,
    mcp: async () => (await load<typeof import("./mcp.ts")>("./mcp.ts")).boxMcpCommands,
    secret: async () => (await load<typeof import("./secret.ts")>("./secret.ts")).secretCommands,
    integrations: async () => {
      const { defaultHookCommand, integrationCommands } = await load<typeof import("./integrations.ts")>(
        "./integrations.ts",
      );
      return (program) => integrationCommands(program, { hookCommand: () => defaultHookCommand("dockd") });
    },
    hook: () => Promise.resolve(hookStub),
  };
}

/** Parses `args` and runs the command. */
export async function main(args: string[]): Promise<void> {
  const program = new Command("dockd").description(ABOUT.dockd).version(BUILD);
  await registerFor(program, args, dockdFamilies(), DOCKD_COMMANDS);
  await program.parseAsync(["deno", "dockd", ...args]);
}
