/**
 * The browser's clock: the one module of the app that reads the time or starts a timer. The app runs in a
 * page, not in a dock process, so it has no composition root to hand it a `Clock` (core/clock.ts); keeping
 * every read here still gives the time one owner, which `tests/imports_test.ts` checks (this file is in its
 * ALLOWED_TIMER_SPOTS).
 *
 * @module
 */

/** Milliseconds since the epoch. */
export function now(): number {
  return Date.now();
}

/** Calls `fn` once, `ms` from now; returns what cancels it. */
export function after(ms: number, fn: () => void): () => void {
  const id = setTimeout(fn, ms);
  return () => clearTimeout(id);
}

/** Calls `fn` every `ms` until the returned function is called. */
export function every(ms: number, fn: () => void): () => void {
  const id = setInterval(fn, ms);
  return () => clearInterval(id);
}

/** Resolves `ms` from now. */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
