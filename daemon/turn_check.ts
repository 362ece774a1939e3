/**
 * The check that follows an interrupted turn. Claude Code fires no `Stop` when the person presses Esc or
 * Ctrl-C mid-turn, nor when they deny a permission ("What should Claude do instead?"); Codex and Cursor
 * report nothing either. Left alone, the session would show `running` until the next prompt, and `wait`
 * and the queue would hold on it. So after an interrupt key typed into a running agent (through attach),
 * or an answer sent to a permission prompt, the pane is watched: a working agent redraws all the time
 * (a spinner, a timer), so a screen that stays the same for {@linkcode QUIET_MS} means the tool is back
 * at its prompt, and the session is set `waiting` for input (cause `interrupt`). A hook that reports
 * meanwhile, a program that exits, or a screen that never settles within {@linkcode CHECK_MS} ends the
 * check without a change. Nothing here types into the agent.
 *
 * @module
 */
import type { AgentState } from "../client/wire.ts";
import { type Clock, sleep } from "../core/clock.ts";
import type { AgentStates } from "./agent_state.ts";
import type { Tmux } from "./tmux.ts";

/** How long the screen must stay the same: longer than the slowest redraw of a working tool (Codex's timer ticks each second). */
export const QUIET_MS = 1100;
/** How often the screen is read meanwhile. */
export const POLL_MS = 100;
/** How long a check goes on before giving up (an interrupt the tool ignored). */
export const CHECK_MS = 15_000;

/** What the check reads of a session. */
export interface TurnRow {
  agent_state: AgentState;
  state_time: string | null;
  exited: boolean;
}

/** Dependencies of {@linkcode TurnChecks}. */
export interface TurnChecksOptions {
  tmux: Pick<Tmux, "capture">;
  states: Pick<AgentStates, "set">;
  /** The session's state now, or null when it is gone. */
  row: (name: string) => TurnRow | null;
  /** Times the quiet period, the reads of the screen and the check's end. */
  clock: Clock;
}

/** The running checks, one per session at most. */
export class TurnChecks {
  #o: TurnChecksOptions;
  #running = new Map<string, { restart: boolean }>();
  #closed = false;

  constructor(options: TurnChecksOptions) {
    this.#o = options;
  }

  /**
   * Watches the pane of `name` until it settles, then sets it `waiting` (reason `input`) unless its
   * state changed meanwhile. A second call during a check starts its quiet period again.
   */
  after(name: string): void {
    const running = this.#running.get(name);
    if (running) {
      running.restart = true;
      return;
    }
    const row = this.#o.row(name);
    if (!row || row.exited || row.agent_state !== "running") return;
    const check = { restart: false };
    this.#running.set(name, check);
    this.#check(name, row, check)
      .catch(() => {}) // a session removed meanwhile: nothing to set
      .finally(() => this.#running.delete(name));
  }

  /** Ends every check (the daemon stops). */
  close(): void {
    this.#closed = true;
  }

  /** True while a check of `name` runs (tests). */
  checking(name: string): boolean {
    return this.#running.has(name);
  }

  async #check(name: string, start: TurnRow, check: { restart: boolean }): Promise<void> {
    const clock = this.#o.clock;
    const now = () => clock.now();
    const deadline = now() + CHECK_MS;
    let screen = await this.#o.tmux.capture(name, 0);
    let since = now();
    while (!this.#closed && now() < deadline) {
      await sleep(clock, POLL_MS);
      const row = this.#o.row(name);
      // A hook reported, the program ended, or someone else set the state: the turn is accounted for.
      if (!row || row.exited || row.agent_state !== "running" || row.state_time !== start.state_time) return;
      const next = await this.#o.tmux.capture(name, 0);
      if (next !== screen || check.restart) {
        screen = next;
        since = now();
        check.restart = false;
        continue;
      }
      if (now() - since >= QUIET_MS) {
        this.#o.states.set(name, "waiting", { reason: "input", cause: "interrupt" });
        return;
      }
    }
  }
}

/** What a chunk of typed bytes holds: an Enter after other keys (a submit), an interrupt key. */
export interface TypedKeys {
  submits: number;
  interrupt: boolean;
  /** Whether keys other than Enter were typed since the last Enter (carried to the next chunk). */
  typed: boolean;
}

/**
 * Reads one chunk of what a person typed into an attached terminal. Ctrl-C is `0x03`; the Esc key is an
 * ESC byte that ends the chunk (a terminal sends an arrow or Alt+key as ESC and the rest in one chunk).
 */
export function readTyped(bytes: Uint8Array, typed: boolean): TypedKeys {
  let submits = 0;
  let interrupt = false;
  for (let i = 0; i < bytes.length; i++) {
    const byte = bytes[i];
    if (byte === 0x0d || byte === 0x0a) {
      if (typed) submits++;
      typed = false;
    } else if (byte === 0x03 || (byte === 0x1b && i === bytes.length - 1)) {
      interrupt = true;
      typed = false;
    } else if (byte === 0x1b) {
      // The rest of an escape sequence (an arrow, a function key) is not typing.
      i = skipEscape(bytes, i);
    } else if (byte >= 0x20 && byte !== 0x7f) {
      typed = true;
    }
  }
  return { submits, interrupt, typed };
}

/** The index of the last byte of the escape sequence starting at `i` (CSI, SS3, or ESC + one byte). */
function skipEscape(bytes: Uint8Array, i: number): number {
  const next = bytes[i + 1];
  if (next === 0x5b) { // CSI: ESC [ params… final byte 0x40–0x7e
    let j = i + 2;
    while (j < bytes.length && !(bytes[j] >= 0x40 && bytes[j] <= 0x7e)) j++;
    return Math.min(j, bytes.length - 1);
  }
  if (next === 0x4f) return Math.min(i + 2, bytes.length - 1); // SS3: ESC O and one byte
  return i + 1; // Alt+key: ESC and the key
}
