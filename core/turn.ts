/**
 * The end of the current turn of the event loop, where what batches per turn runs its batch (the bus's
 * announcements, the SSE fan-out). A zero-delay `setTimeout` waits for the timers' next tick instead:
 * measured on a shared 2-core machine (Deno 2.9.6), a `setTimeout(0)` round trip took 2.3 ms and ~80 µs
 * of CPU, a `setImmediate` one 2–10 µs and ~3 µs; an event met two such waits on the box and two on
 * the laptop between its `POST` and its SSE clients.
 *
 * @module
 */
import { clearImmediate, setImmediate } from "node:timers";

/** Calls `fn` once the current turn (its microtasks included) is over; returns what cancels it. */
export function afterTurn(fn: () => void): () => void {
  const immediate = setImmediate(fn);
  return () => clearImmediate(immediate);
}

/**
 * A check made once per batch: the first {@linkcode OncePerBatch.run} runs it, later calls are skipped
 * until the running code yields to its microtasks. What the bus delivers in one go (a box's events by the
 * hundred on the laptop, a burst of `POST events` on the box) checks a file's signature once, not once per
 * event; anything that awaits (reading a request, a write) comes after the microtasks and checks again.
 */
export class OncePerBatch {
  #done = false;

  /** Runs `check` unless it ran earlier in this batch. */
  run(check: () => void): void {
    if (this.#done) return;
    check();
    this.#done = true;
    queueMicrotask(() => this.#done = false);
  }
}
