/**
 * The clock a module reads when time decides what it does (schedules): the system's, or in tests one they
 * move by hand, so no test waits for a real minute.
 *
 * @module
 */

/** Wall-clock time and a one-shot timer. */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls `fn` once, `ms` from now; returns what cancels it. */
  after(ms: number, fn: () => void): () => void;
}

/** The system clock, `offsetMs` ahead (the `DOCK_CLOCK_OFFSET_MS` test knob; 0 otherwise). */
export function systemClock(offsetMs = 0): Clock {
  return {
    now: () => Date.now() + offsetMs,
    after: (ms, fn) => {
      const id = setTimeout(fn, Math.max(0, ms));
      return () => clearTimeout(id);
    },
  };
}
