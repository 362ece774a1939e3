/**
 * `dockd events` (stream the box's events) and `dockd emit TYPE key=value… --origin TOOL`.
 *
 * @module
 */
import type { Command } from "./commander.ts";
import { localBox } from "./client.ts";
import { guarded, keyValues } from "./output.ts";

/** Adds `events` and `emit`. */
export function eventCommands(program: Command): void {
  program.command("events").description("stream the box's events as JSON lines")
    .option("--after <id>", "start after this event id (replays the journal)", Number)
    .action((o) =>
      guarded(async () => {
        for await (const event of localBox().events({ after: o.after })) console.log(JSON.stringify(event));
      })
    );

  program.command("emit").description("announce an event on this box").argument("<type>").argument(
    "[data...]",
  )
    .option("--origin <tool>", "the tool announcing it").option("--json", "print the event")
    .action((type, words, o) =>
      guarded(async () => {
        const event = await localBox().emit({ type, origin: o.origin, data: keyValues(words) });
        if (o.json) console.log(JSON.stringify(event));
      })
    );
}
