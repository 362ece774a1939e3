/**
 * The plugin host's generations' lifecycle (`module_host.ts`), written once: a generation is `live` (new
 * calls go to it), `retired` (a wider grant took its place, or it is a quarantine host: it finishes its
 * calls and is then killed), or `ended` (its process is gone). Only `live` and `retired` change.
 *
 * @module
 */
import { transition, type TransitionTable } from "../core/transition.ts";

/** Where a host generation is in its lifecycle. */
export type HostPhase = "live" | "retired" | "ended";

/** What moves a host generation along. */
export type HostEvent = "retire" | "end";

/** The lifecycle. */
export const HOST_LIFECYCLE: TransitionTable<HostPhase, HostEvent> = {
  live: { retire: "retired", end: "ended" },
  retired: { end: "ended" },
  ended: {},
};

/** One change of a generation's phase. */
export interface HostPhaseChange {
  generation: number;
  from: HostPhase;
  event: HostEvent;
  to: HostPhase;
}

/** The phase `event` leads `from` to, or null (said to `log`) when the lifecycle does not allow it. */
export function nextHostPhase(
  generation: number,
  from: HostPhase,
  event: HostEvent,
  log: (message: string) => void,
): HostPhase | null {
  return transition(HOST_LIFECYCLE, from, event, { name: `plugin host ${generation}`, log });
}
