/**
 * `hooks`: what a hooks file holds and how its hooks have run (spec 2.9, 4.1). `dockd hooks` shows the
 * box's `~/.dock/hooks.json`; `dock hooks` the laptop's, and `dock hooks BOX` that box's. Edit the file
 * itself (it takes effect within a second) or `PUT` it through the API; a file that does not parse is
 * shown with its error, and the last good hooks stay in force until it is fixed.
 *
 * @module
 */
import type { Command } from "./commander.ts";
import type { HooksState } from "../client/wire.ts";
import { printJson, table } from "./output.ts";
import type { Scope } from "./target.ts";

/** Adds `hooks` to `dockd` (this box) or `dock` (the laptop, or `BOX`). */
export function hooksCommands(program: Command, scope: Scope): void {
  const command = program.command("hooks")
    .description(
      scope.kind === "box" ? "the box's hooks file and its runs" : "the laptop's hooks file, or a box's",
    )
    .option("--json", "print JSON");
  if (scope.kind === "box") {
    command.action((o) =>
      scope.run(async () => show(await (await scope.resolve("", "")).client.hooks(), o.json ?? false))
    );
    return;
  }
  command.argument("[box]", "a box (default: the laptop's own hooks)").action((box, o) =>
    scope.run(async () => {
      const state = box === undefined
        ? await (await scope.agent!()).hooks()
        : await (await scope.resolve(box, "")).client.hooks();
      show(state, o.json ?? false);
    })
  );
}

function show(state: HooksState, json: boolean): void {
  if (json) return printJson(state);
  console.log(state.path);
  if (state.error) console.log(`error: ${state.error} (the last good hooks stay in force)`);
  if (state.hooks.length === 0) console.log("no hooks");
  else {
    table(
      ["ON", "RUN", "TIMEOUT", "TOOL"],
      state.hooks.map((hook) => [hook.on, hook.run, hook.timeout, hook.tool]),
    );
  }
  const runs = state.runs;
  if (runs) {
    console.log(
      `runs: ${runs.started} started, ${runs.failed} failed, ${runs.running} running, ${runs.queued} waiting` +
        (runs.dropped ? `, ${runs.dropped} dropped` : ""),
    );
  }
}
