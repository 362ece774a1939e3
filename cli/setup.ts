/**
 * `dock setup port80 [--remove]`: private URLs without `:1377` (`agent/port80.ts`), through the agent,
 * each step printed; not root, the exact command to run is printed instead.
 *
 * @module
 */
import type { Command } from "./commander.ts";
import { DockError } from "../client/errors.ts";
import { agentClient } from "./agent.ts";
import { guarded } from "./output.ts";

/** Adds `setup` to `dock`. */
export function setupCommands(program: Command): void {
  const setup = program.command("setup").description("one-time set-up of this laptop");
  setup.command("port80").description(
    "make http://<wt>.<loc>.<box>.localhost/ work without :1377 (root once)",
  )
    .option("--remove", "undo it").action((o) =>
      guarded(async () => {
        let error: string | undefined;
        for await (const line of (await agentClient()).setupPort80({ remove: o.remove })) {
          if (line.line) console.log(line.line);
          if (line.error) error = line.error;
        }
        if (error) throw new DockError("setup", error);
      }, "dock")
    );
}
