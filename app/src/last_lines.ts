/**
 * The last non-blank line of each session's screen, as the board shows under its row: read once per state
 * change of the session, and once more when its screen has settled, two reads at a time, held while the
 * board's first lists load (200 sessions never hold the board's own requests back).
 *
 * @module
 */
import { type Signal, signal } from "@preact/signals";
import type { Session } from "../../client/wire.ts";
import { after, now } from "./clock.ts";

/** How long after a state change a screen is read again for its last line (above the box's 1.1 s). */
const SETTLE_MS = 1500;

/**
 * A signal per `box/session`, so a line read redraws its row only (one map of them redrew all 200 rows
 * per line read).
 */
const lines = new Map<string, Signal<string>>();

/** The last line of a `box/session`'s screen, as its own signal ("" until read). */
export function lastLine(key: string): Signal<string> {
  let line = lines.get(key);
  if (!line) lines.set(key, line = signal(""));
  return line;
}

/** Reads a session's screen: its text. */
export type ReadScreen = (box: string, name: string) => Promise<string>;

/** The reads of the screens' last lines, asked again for the sessions whose state changed. */
export class LastLines {
  #read: ReadScreen;
  #asked = new Map<string, string>();
  #queue: { box: string; name: string }[] = [];
  #running = 0;
  /** The reads asked once more when their screen has settled, in the order due, and the timer for them. */
  #settling: { due: number; box: string; name: string; key: string; mark: string }[] = [];
  #settleTimer: (() => void) | null = null;
  /** True while the first lists of sessions load: the last lines wait for all of them. */
  #held = false;

  constructor(read: ReadScreen) {
    this.#read = read;
  }

  /** Holds the reads (while the board's first lists load) or lets them go. */
  hold(held: boolean): void {
    this.#held = held;
    this.#pump();
  }

  /** Asks for the lines of `box`'s sessions whose state changed since their last read. */
  ask(box: string, list: Session[]): void {
    const due = now() + SETTLE_MS;
    for (const session of list) {
      const key = `${box}/${session.name}`;
      const mark = `${session.agent_state}@${session.state_time}@${session.exited}`;
      if (session.exited || this.#asked.get(key) === mark) continue;
      this.#asked.set(key, mark);
      this.#queue.push({ box, name: session.name });
      // A tool draws its prompt just after the hook that changed its state (the box waits 1.1 s for a
      // screen to settle, daemon/turn_check.ts): read once more after that, or the line is the one before.
      this.#settling.push({ due, box, name: session.name, key, mark });
    }
    this.#armSettle();
    this.#pump();
  }

  /**
   * One timer for every read waiting for its screen to settle, not one each: 2,000 timers set while the
   * board of 200 boxes drew were ~85 ms of its script (a Chromium profile under load).
   */
  #armSettle(): void {
    if (this.#settleTimer || this.#settling.length === 0) return;
    this.#settleTimer = after(Math.max(0, this.#settling[0].due - now()), () => {
      this.#settleTimer = null;
      const at = now();
      while (this.#settling.length > 0 && this.#settling[0].due <= at) {
        const { box, name, key, mark } = this.#settling.shift()!;
        if (this.#asked.get(key) === mark) this.#queue.push({ box, name });
      }
      this.#armSettle();
      this.#pump();
    });
  }

  /** Two at a time. */
  #pump(): void {
    while (!this.#held && this.#running < 2 && this.#queue.length > 0) this.#next();
  }

  async #next(): Promise<void> {
    const next = this.#queue.shift();
    if (!next) return;
    this.#running++;
    try {
      const screen = await this.#read(next.box, next.name);
      const line = screen.split("\n").map((l) => l.trimEnd()).filter(Boolean).at(-1) ?? "";
      lastLine(`${next.box}/${next.name}`).value = line;
    } catch { /* gone, or its box is down: the line shown stays the last known */ }
    this.#running--;
    this.#pump();
  }
}
