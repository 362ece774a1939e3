/**
 * The clock a module reads when time orders or delays what it does: the system's, or in tests one they
 * move by hand, so no test waits for real time. Production code takes a `Clock` (an option defaulting to
 * {@linkcode systemClock} at the composition root) instead of calling `Date.now()` or the timer globals,
 * which `tests/imports_test.ts` allows only here and in a short, commented list of spots.
 *
 * @module
 */

/** Wall-clock time and timers. */
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

/** The system clock without an offset: the default for every module that takes a `Clock`. */
export const SYSTEM_CLOCK: Clock = systemClock();

/**
 * Calls `fn` every `ms` on `clock` until the returned function is called. Each call is scheduled after the
 * previous one ran, so a slow `fn` never stacks up calls.
 */
export function every(clock: Clock, ms: number, fn: () => void): () => void {
  let cancel = () => {};
  let stopped = false;
  const tick = () => {
    if (stopped) return;
    try {
      fn();
    } finally {
      if (!stopped) cancel = clock.after(ms, tick);
    }
  };
  cancel = clock.after(ms, tick);
  return () => {
    stopped = true;
    cancel();
  };
}

/** Resolves `ms` from now on `clock`, or rejects with the signal's reason when `signal` aborts first. */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      cancel();
      reject(signal!.reason);
    };
    const cancel = clock.after(ms, () => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    });
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}

/**
 * A signal that aborts `ms` from now on `clock` with a `TimeoutError` (as `AbortSignal.timeout`'s does),
 * and what cancels that: a guard on a request that a test's clock can fire.
 */
export function timeoutSignal(clock: Clock, ms: number): { signal: AbortSignal; cancel: () => void } {
  const controller = new AbortController();
  const cancel = clock.after(
    ms,
    () => controller.abort(new DOMException(`timed out after ${ms} ms`, "TimeoutError")),
  );
  return { signal: controller.signal, cancel };
}
