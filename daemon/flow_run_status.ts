/**
 * A flow run's lifecycle (spec 3.4, `flows.ts`), written once: a run is recorded `running` or, when it
 * never starts (already running there, over its hourly budget), `skipped`; a running run ends
 * `succeeded`, `failed`, or `interrupted` (the daemon stopped during it). Every status `flows.ts` writes
 * comes from {@linkcode runStatus}.
 *
 * @module
 */
import type { FlowRunStatus } from "../client/wire.ts";
import { transition, type TransitionTable } from "../core/transition.ts";
import type { Log } from "../core/log.ts";

/** Before a run is recorded. */
export type FlowRunPhase = FlowRunStatus | "new";

/** What moves a flow run along. */
export type FlowRunEvent = "begin" | "skip" | "succeed" | "fail" | "interrupt";

/** The lifecycle: only `running` ever changes; the four ends are final. */
export const FLOW_RUN_LIFECYCLE: TransitionTable<FlowRunPhase, FlowRunEvent> = {
  new: { begin: "running", skip: "skipped" },
  running: { succeed: "succeeded", fail: "failed", interrupt: "interrupted" },
  succeeded: {},
  failed: {},
  skipped: {},
  interrupted: {},
};

/** The status `event` leads a run in `from` to; a change the lifecycle does not name is logged and thrown. */
export function runStatus(
  from: FlowRunPhase,
  event: FlowRunEvent,
  log: Pick<Log, "error">,
): FlowRunStatus {
  const to = transition(FLOW_RUN_LIFECYCLE, from, event, {
    name: "flow run",
    log: (line) => log.error(line),
  });
  if (to === null || to === "new") throw new Error(`flow run: '${event}' is not a change from '${from}'`);
  return to;
}
