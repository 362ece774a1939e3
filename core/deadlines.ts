/**
 * Deadlines for many connections on one coarse timer. A listener re-arms a connection's deadline on
 * every request (the header and idle limits, `core/listen.ts`); with a timer per connection that was a
 * `clearTimeout` and a `setTimeout` per request, and Deno's timers are Node's (`node:timers`' lists
 * and `Timeout` objects): ~8% of a small GET's time in the daemon. Here arming is setting a number,
 * and one interval, running while any deadline is set, fires those passed. A deadline fires up to one
 * tick late, which limits of seconds bear.
 *
 * {@linkcode ClockDeadlines} is the same idea, exact and on a {@linkcode Clock}: for deadlines set and
 * cancelled once per call (a plugin call's, its worker's keep-warm) that tests move on a fake clock.
 *
 * @module
 */
import type { Clock } from "./clock.ts";

/** One connection's deadline: armed, re-armed, disarmed; fires its callback at most once per arming. */
export interface Deadline {
  /** Fires `ms` from now (replacing any earlier arming). */
  arm(ms: number): void;
  /** Fires no more until armed again (also: the connection is done; nothing else holds it). */
  disarm(): void;
}

/** Options of {@linkcode Deadlines}. */
export interface DeadlinesOptions {
  /** How often deadlines are checked, at most this late. */
  tickMs: number;
  /** The clock, in milliseconds. @default {performance.now} */
  now?: () => number;
  /** Checks at a pace of its own instead of an interval (tests call {@linkcode Deadlines.sweep}). */
  manual?: boolean;
}

interface Entry {
  at: number;
  fire: () => void;
}

/** A set of deadlines checked together every `tickMs`. */
export class Deadlines {
  /** The armed ones; a deadline disarmed or removed is not here. */
  #armed = new Set<Entry>();
  #timer: ReturnType<typeof setInterval> | undefined;
  #o: DeadlinesOptions;
  #now: () => number;

  constructor(options: DeadlinesOptions) {
    this.#o = options;
    this.#now = options.now ?? (() => performance.now());
  }

  /** A new deadline that calls `fire` when it passes. */
  add(fire: () => void): Deadline {
    const entry: Entry = { at: Infinity, fire };
    return {
      arm: (ms) => {
        entry.at = this.#now() + ms;
        this.#armed.add(entry);
        this.#start();
      },
      disarm: () => void this.#armed.delete(entry),
    };
  }

  /** Fires every deadline passed; stops the interval when none is armed. */
  sweep(): void {
    const now = this.#now();
    for (const entry of this.#armed) {
      if (entry.at > now) continue;
      this.#armed.delete(entry);
      entry.fire();
    }
    if (this.#armed.size === 0) this.#stop();
  }

  /** Stops checking (the listener is shut down). */
  close(): void {
    this.#armed.clear();
    this.#stop();
  }

  #start(): void {
    if (this.#timer !== undefined || this.#o.manual) return;
    const timer = setInterval(() => this.sweep(), this.#o.tickMs);
    // A deadline is no reason to keep the process alive.
    Deno.unrefTimer(timer);
    this.#timer = timer;
  }

  #stop(): void {
    if (this.#timer === undefined) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
  }
}

/**
 * Many deadlines on one timer of a {@linkcode Clock}, for a path that sets and cancels one per call.
 * Deno's timers are Node's (`Timeout` objects in lists): a warm plugin `fn` call's two deadlines (its
 * own and its worker's keep-warm) were a `setTimeout` and a `clearTimeout` each, ~30 µs of the daemon's
 * ~350 µs of CPU per call (profiled, 12,500 calls). Here a deadline due no sooner than the one the timer
 * waits for, and any cancel, set a number: the timer, when it fires, calls those due and waits for the
 * next.
 */
export class ClockDeadlines implements Pick<Clock, "after"> {
  #clock: Clock;
  #entries = new Set<{ at: number; fire: () => void }>();
  #timerAt = Infinity;
  #cancelTimer = () => {};

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** Calls `fire` once, `ms` from now; returns what cancels it. */
  after(ms: number, fire: () => void): () => void {
    const entry = { at: this.#clock.now() + Math.max(0, ms), fire };
    this.#entries.add(entry);
    if (entry.at < this.#timerAt) this.#arm(entry.at);
    return () => void this.#entries.delete(entry);
  }

  #arm(at: number): void {
    this.#cancelTimer();
    this.#timerAt = at;
    this.#cancelTimer = this.#clock.after(at - this.#clock.now(), () => this.#fire());
  }

  /** Calls every deadline due (each, even when one throws: the first error is thrown after). */
  #fire(): void {
    this.#timerAt = Infinity;
    this.#cancelTimer = () => {};
    const now = this.#clock.now();
    const due: (() => void)[] = [];
    let next = Infinity;
    for (const entry of this.#entries) {
      if (entry.at <= now) {
        this.#entries.delete(entry);
        due.push(entry.fire);
      } else if (entry.at < next) next = entry.at;
    }
    if (next < Infinity) this.#arm(next);
    let failure: { error: unknown } | undefined;
    for (const fire of due) {
      try {
        fire();
      } catch (error) {
        failure ??= { error };
      }
    }
    if (failure) throw failure.error;
  }
}
