/**
 * A worktree's setup lifecycle (spec 2.5 `setup`, `worktrees.ts`), written once: a worktree made with a
 * setup script is `pending`, its setup `running`, then `succeeded` or `failed`; one without a script is
 * `none`. A setup a daemon stop cut off (`pending` or `running` at the next start) is `failed`: nobody
 * waits for it any more. Every setup state `worktrees.ts` writes comes from {@linkcode setupState}.
 *
 * @module
 */
import type { SetupState } from "../client/wire.ts";
import { transition, type TransitionTable } from "../core/transition.ts";
import type { Log } from "../core/log.ts";

/** Before the worktree's record exists. */
export type SetupPhase = SetupState | "new";

/** What moves a setup along. */
export type SetupEvent = "plan" | "skip" | "start" | "succeed" | "fail" | "interrupt";

/** The lifecycle: the ends (`none`, `succeeded`, `failed`) are final. */
export const SETUP_LIFECYCLE: TransitionTable<SetupPhase, SetupEvent> = {
  new: { plan: "pending", skip: "none" },
  pending: { start: "running", interrupt: "failed" },
  running: { succeed: "succeeded", fail: "failed", interrupt: "failed" },
  none: {},
  succeeded: {},
  failed: {},
};

/** The state `event` leads a setup in `from` to; a change the lifecycle does not name is logged and thrown. */
export function setupState(
  from: SetupPhase,
  event: SetupEvent,
  log: Pick<Log, "error">,
): SetupState {
  const to = transition(SETUP_LIFECYCLE, from, event, { name: "setup", log: (line) => log.error(line) });
  if (to === null || to === "new") throw new Error(`setup: '${event}' is not a change from '${from}'`);
  return to;
}
