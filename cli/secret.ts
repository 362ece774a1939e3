/**
 * `dockd secret test REF`, `dockd secret exec [--location L[/WT]] -- CMD` and `dockd secret report
 * [L[/WT]]` (issue 16). `exec` runs a command
 * run here, in this terminal and folder, with the environment of a worktree (its `DOCK_*` variables and
 * compatibility names, the box's `env.json`, the location's config `env`: the layers the daemon gives,
 * `POST secrets/environment`, as it builds them for the worktree's own processes) and every secret
 * reference in it resolved. The values go only into the child's environment: never onto a command line,
 * never through the daemon's API (the references are resolved by this process, as the daemon resolves
 * them: `env://NAME` from this process's environment, a vault's with its CLI). The worktree is
 * `--location`, else the one `DOCK_LOCATION` and
 * `DOCK_WORKTREE_NAME` name (inside a dock session or service), else the one holding this folder.
 *
 * @module
 */
import type { Command } from "./commander.ts";
import type { BoxClient } from "../client/box.ts";
import { DockError } from "../client/errors.ts";
import { localBox } from "./client.ts";
import { load } from "./lazy.ts";
import { guarded, printJson, table } from "./output.ts";

/** `LOCATION/WORKTREE` of the worktree the command is about. */
async function whichWorktree(client: BoxClient, option: string | undefined): Promise<[string, string]> {
  const spec = option ??
    (Deno.env.get("DOCK_LOCATION")
      ? `${Deno.env.get("DOCK_LOCATION")}/${Deno.env.get("DOCK_WORKTREE_NAME") ?? ""}`.replace(/\/$/, "")
      : undefined);
  if (spec) {
    const [location, worktree] = spec.split("/");
    if (worktree) return [location, worktree];
    const main = (await client.location(location)).worktrees.find((w) => w.main);
    if (!main) {
      throw new DockError("not_found", `location '${location}' has no main checkout`, { status: 404 });
    }
    return [location, main.name];
  }
  const here = await Deno.realPath(Deno.cwd());
  let best: [string, string, number] | null = null;
  for (const location of await client.locations()) {
    for (const w of location.worktrees) {
      if ((here === w.path || here.startsWith(`${w.path}/`)) && (!best || w.path.length > best[2])) {
        best = [w.location, w.name, w.path.length];
      }
    }
  }
  if (!best) {
    throw new DockError(
      "usage",
      "this folder is in no dock worktree: say which with --location LOCATION[/WORKTREE]",
    );
  }
  return [best[0], best[1]];
}

/** Adds `secret` to `dockd`. */
export function secretCommands(program: Command): void {
  const secret = program.command("secret").description("secret references and the secrets of a worktree");

  secret.command("test")
    .description("resolve a reference now and report whether it works (never its value)").argument("<ref>")
    .action((ref) =>
      guarded(async () => {
        const result = await localBox().testSecret(ref);
        console.log(result.ok ? `ok (${result.length} characters)` : `not ok: ${result.error}`);
        if (!result.ok) Deno.exit(1);
      })
    );

  secret.command("exec").description(
    "run a command here with a worktree's environment, its secrets resolved (values only in its environment)",
  ).option("--location <location>", "LOCATION or LOCATION/WORKTREE (default: the worktree of this folder)")
    .argument("<command...>").action((words: string[], o) =>
      guarded(async () => {
        const client = localBox();
        const [location, name] = await whichWorktree(client, o.location);
        const [layers, env, runner] = await Promise.all([
          client.secretEnvironment(`${location}/${name}`),
          load<typeof import("../daemon/env.ts")>("../daemon/env.ts"),
          load<typeof import("../core/runner.ts")>("../core/runner.ts"),
        ]);
        const { SecretResolver } = await load<typeof import("../daemon/secrets.ts")>("../daemon/secrets.ts");
        const { SYSTEM_CLOCK } = await load<typeof import("../core/clock.ts")>("../core/clock.ts");
        const built = await env.buildEnv({
          base: Deno.env.toObject(),
          boxEnv: layers.box,
          dock: layers.dock,
          config: layers.config,
          secrets: new SecretResolver({ clock: SYSTEM_CLOCK }),
        });
        for (const problem of built.problems) {
          console.error(`dockd: ${problem.key} left out: ${problem.error}`);
        }
        Deno.exit(
          await runner.runForeground(runner.loginShell(), ["-c", words.join(" ")], {
            env: built.env,
            clearEnv: true,
          }),
        );
      })
    );

  secret.command("report").description(
    "which secrets of a worktree's environment resolve on the box, and why not (never a value)",
  ).argument("[location]", "LOCATION or LOCATION/WORKTREE (default: the worktree of this folder)")
    .option("--json", "print JSON").action((spec, o) =>
      guarded(async () => {
        const client = localBox();
        const [location, name] = await whichWorktree(client, spec);
        const report = await client.secretReport(`${location}/${name}`);
        if (o.json) return printJson(report);
        if (!report.secrets.length) return console.log(`${location}/${name}: no secret references`);
        table(
          ["VARIABLE", "SCHEME", "RESOLVED", "WHY NOT"],
          report.secrets.map((s) => [s.variable, s.scheme, s.ok ? `yes (${s.length} chars)` : "no", s.error]),
        );
      })
    );
}
