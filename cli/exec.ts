/**
 * `exec LOC[/WT] -- CMD` (`dock exec BOX/LOC[/WT] -- CMD` from the laptop): streams the command's
 * output and exits with its code.
 *
 * @module
 */
import type { Command } from "./commander.ts";
import type { Scope } from "./target.ts";

/** Adds `exec`. */
export function execCommand(program: Command, scope: Scope): void {
  program.command("exec").description("run a command in a location or worktree through a login shell")
    .argument(
      scope.arg("location"),
      scope.kind === "laptop" ? "BOX/LOCATION or BOX/LOCATION/WORKTREE" : "LOCATION or LOCATION/WORKTREE",
    ).argument("<command...>")
    .option("--timeout <duration>", "kill it after this long (default 10m, at most 1h)")
    .action((spec, words, o) =>
      scope.run(async () => {
        const { client, rest } = await scope.resolve(spec, "LOCATION[/WORKTREE]");
        let exit = 1;
        const encoder = new TextEncoder();
        for await (
          const line of client.execStream({
            location: rest.join("/"),
            command: words.join(" "),
            timeout: o.timeout,
          })
        ) {
          if (line.line !== undefined) await Deno.stdout.write(encoder.encode(line.line + "\n"));
          if (line.done) {
            if (line.error) console.error(`${scope.program}: ${line.error}`);
            exit = line.exit_code ?? 1;
          }
        }
        Deno.exit(exit);
      })
    );
}
