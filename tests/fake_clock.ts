/**
 * A {@linkcode Clock} tests move by hand: `advance` steps time forward and calls each timer that falls
 * due, in order, at its own instant. Nothing waits for real time.
 */
import type { Clock } from "../core/clock.ts";

/** A clock that stands still until told to move. */
export class FakeClock implements Clock {
  #now: number;
  #timers: { at: number; fn: () => void; seq: number }[] = [];
  #seq = 0;

  constructor(start: Date | number) {
    this.#now = typeof start === "number" ? start : start.getTime();
  }

  now(): number {
    return this.#now;
  }

  after(ms: number, fn: () => void): () => void {
    const timer = { at: this.#now + Math.max(0, ms), fn, seq: this.#seq++ };
    this.#timers.push(timer);
    return () => {
      this.#timers = this.#timers.filter((t) => t !== timer);
    };
  }

  /** Moves time forward by `ms`, calling the timers that fall due on the way. */
  advance(ms: number): void {
    this.set(this.#now + ms);
  }

  /** Moves time forward to `to`, calling the timers that fall due on the way. */
  set(to: Date | number): void {
    const end = typeof to === "number" ? to : to.getTime();
    for (;;) {
      const due = this.#timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at || a.seq - b.seq)[0];
      if (!due) break;
      this.#timers = this.#timers.filter((t) => t !== due);
      this.#now = Math.max(this.#now, due.at);
      due.fn();
    }
    this.#now = Math.max(this.#now, end);
  }
}
