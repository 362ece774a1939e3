/**
 * `dockd exec LOC[/WT] -- CMD`: streams the command's output and exits with its code.
 *
 * @module
 */
import type { Command } from "@commander-js/extra-typings";
import { localBox } from "./client.ts";
import { guarded } from "./output.ts";

/** Adds `exec`. */
export function execCommand(program: Command): void {
  program.command("exec").description("run a command in a location or worktree through a login shell")
    .argument("<location>", "LOCATION or LOCATION/WORKTREE").argument("<command...>")
    .option("--timeout <duration>", "kill it after this long (default 10m, at most 1h)")
    .action((location, words, o) =>
      guarded(async () => {
        let exit = 1;
        const encoder = new TextEncoder();
        for await (
          const line of localBox().execStream({ location, command: words.join(" "), timeout: o.timeout })
        ) {
          if (line.line !== undefined) await Deno.stdout.write(encoder.encode(line.line + "\n"));
          if (line.done) {
            if (line.error) console.error(`dockd: ${line.error}`);
            exit = line.exit_code ?? 1;
          }
        }
        Deno.exit(exit);
      })
    );
}
