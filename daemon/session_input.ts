/**
 * Typing into a session (spec 4.2 `send`, `keys`, `answer`): a prompt as one pasted block, keystrokes,
 * the keys that answer a permission prompt. A session's input goes one call at a time, in order, and a
 * keyed call types at most once per key, also across a kill -9 of the daemon (`send_ledger.ts`, with a
 * slot in tmux that the typing claims in the same step). What the input means for the agent's turn
 * (a turn starts, an interrupt is checked) is the session's (`sessions.ts`), told through
 * {@linkcode InputTurns}. Never logs or announces what was typed.
 *
 * @module
 */
import { DockError } from "../client/errors.ts";
import type {
  AgentState,
  AnswerResult,
  KeysResult,
  PermissionAnswer,
  Session,
  WaitResult,
} from "../client/wire.ts";
import type { Clock } from "../core/clock.ts";
import { createHash } from "node:crypto";
import type { EventBus } from "../core/events.ts";
import { answerKeys } from "./answers.ts";
import { RestoredInputs } from "./restored_input.ts";
import type { SendLedger } from "./send_ledger.ts";
import type { Tmux } from "./tmux.ts";

/** What typed input means for an agent's turn: the session owner decides and records it. */
export interface InputTurns {
  /** Input was submitted to the agent (a prompt with Enter): a turn starts. */
  started(name: string, at: string): void;
  /** Enter was typed as a key: an agent at rest starts a turn. */
  submitted(name: string, at: string): void;
  /** Esc or Ctrl-C was typed: a running agent may have stopped its turn. */
  interrupted(name: string): void;
  /** A permission prompt was answered: the turn goes on (or, for a denial, ends). */
  answered(name: string, at: string): void;
}

/** Dependencies of {@linkcode SessionInput}. */
export interface SessionInputOptions {
  tmux: Pick<Tmux, "capture" | "command" | "paste" | "pasteOnce" | "typeKeys" | "pressEnter" | "dropSlot">;
  bus: Pick<EventBus, "publish">;
  /** Keyed calls. */
  ledger: Pick<SendLedger, "once">;
  /** Dates each typing (the turn it starts). */
  clock: Pick<Clock, "now">;
  /** The sessions: one as it is now (404 when unknown), and a wait for its agent to report. */
  sessions: {
    get(name: string): Session;
    wait(
      name: string,
      options: { states: AgentState[]; after?: Date; timeoutMs: number },
    ): Promise<WaitResult>;
  };
  turns: InputTurns;
}

/** Types into sessions, one call at a time per session. */
export class SessionInput {
  #o: SessionInputOptions;

  constructor(options: SessionInputOptions) {
    this.#o = options;
  }

  /** Forgets what is remembered of a session that ended. */
  forget(name: string): void {
    this.#restored.forget(name);
  }

  #now(): string {
    return new Date(this.#o.clock.now()).toISOString();
  }

  /**
   * Types a prompt: one pasted block, then Enter unless `enter` is false. Never logs the text. With
   * `key` (an idempotency key) the prompt is typed at most once per key (see `send_ledger.ts`). With
   * `unlessWaiting: "permission"`, an agent waiting on a permission prompt refuses it (409
   * `permission_prompt`): checked in the step that types, so no state change slips in between.
   *
   * A session's sends go one at a time, in order: a send's check and its typing are not interleaved
   * with another send's typing (which could raise the prompt the check looked for).
   */
  send(
    name: string,
    text: string,
    enter: boolean,
    origin: string,
    options: { key?: string; unlessWaiting?: "permission" } = {},
  ): Promise<Session> {
    return this.#inLane(name, () => this.#sendNow(name, text, enter, origin, options));
  }

  /**
   * Types keystrokes (`POST sessions/{name}/keys`): each entry one character, typed literally, or a named
   * key (`KEY_NAMES`), never a paste, in the same line as the session's sends. Never logs or announces
   * the keys. Enter counts as input submitted and Esc or Ctrl-C as an interrupt, as typed through attach.
   * With `key`, typed at most once per key (as `send`).
   */
  keys(
    name: string,
    keys: readonly string[],
    origin: string,
    options: { key?: string } = {},
  ): Promise<KeysResult> {
    return this.#inLane(name, () =>
      this.#keystrokes(name, origin, {
        key: options.key === undefined ? undefined : ledgerKey("keys", options.key),
        choose: () => Promise.resolve(keys),
        after: (at) => {
          if (keys.includes("Enter")) this.#o.turns.submitted(name, at);
          if (keys.includes("Escape") || keys.includes("C-c")) this.#o.turns.interrupted(name);
        },
        announce: { type: "session.keys", data: { session: name, typed: keys.length } },
        shape: (result) => result,
      }));
  }

  /**
   * Answers the agent's permission prompt (`POST sessions/{name}/answer`) with the keys its tool takes
   * for `answer` (`answers.ts`). 409 `not_waiting_permission` unless the agent waits on a permission
   * prompt, checked in the step that types (in the session's line, nothing awaited between the check and
   * tmux's command but the read of the screen that shows the options). With `key`, typed at most once.
   */
  answer(
    name: string,
    answer: PermissionAnswer,
    origin: string,
    options: { key?: string } = {},
  ): Promise<AnswerResult> {
    return this.#inLane(name, () =>
      this.#keystrokes(name, origin, {
        key: options.key === undefined ? undefined : ledgerKey("answer", options.key),
        choose: async (session, fresh) => {
          if (!fresh) return answerKeys(session, answer);
          if (session.agent_state !== "waiting" || session.reason !== "permission") {
            throw new DockError(
              "not_waiting_permission",
              `session '${name}' is ${session.agent_state}${
                session.reason ? ` (${session.reason})` : ""
              }, not waiting on a permission prompt: nothing was typed`,
              {
                status: 409,
                detail: { session: name, agent_state: session.agent_state, reason: session.reason },
              },
            );
          }
          answerKeys(session, answer); // 422 for a tool the table does not know, before reading the screen
          const screen = await this.#o.tmux.capture(name, 0);
          const now = this.#o.sessions.get(name);
          if (now.agent_state !== "waiting" || now.reason !== "permission") {
            throw new DockError(
              "not_waiting_permission",
              `session '${name}' stopped waiting: nothing was typed`,
              {
                status: 409,
                detail: { session: name, agent_state: now.agent_state, reason: now.reason },
              },
            );
          }
          return answerKeys(now, answer, screen);
        },
        // An answer is input to the agent: a turn goes on (or, for a denial, ends: the pane is checked).
        after: (at) => this.#o.turns.answered(name, at),
        announce: { type: "session.answered", data: { session: name, answer } },
        // The keys an answer typed are the table's, not the caller's input: they are part of its outcome.
        shape: (result, keys) => ({ ...result, answer, keys: [...keys] }),
      }));
  }

  /** Runs `step` after the session's earlier sends and keys, in order, one at a time. */
  #inLane<T>(name: string, step: () => Promise<T>): Promise<T> {
    const previous = this.#lanes.get(name) ?? Promise.resolve();
    const running = previous.then(step);
    const lane = running.then(() => {}, () => {});
    this.#lanes.set(name, lane);
    lane.then(() => {
      if (this.#lanes.get(name) === lane) this.#lanes.delete(name);
    });
    return running;
  }

  /** Each session's last send or keys, which the next one waits for. */
  #lanes = new Map<string, Promise<void>>();

  /**
   * Types keys chosen by `choose` from the session as it is now (`fresh`: false when finishing a keyed
   * call an earlier daemon recorded, whose checks passed then). With `key`, at most once (see
   * `send_ledger.ts`): recorded before tmux may type them, and claimed in tmux's slot in the same step
   * as the typing, so a repeat after a kill -9 types them only when the killed daemon had not.
   */
  async #keystrokes<T>(
    name: string,
    origin: string,
    step: {
      key?: string;
      choose: (session: Session, fresh: boolean) => Promise<readonly string[]>;
      after: (at: string) => void;
      announce: { type: string; data: Record<string, unknown> };
      /** The answer (what a repeat of the key replays). */
      shape: (result: KeysResult, keys: readonly string[]) => T;
    },
  ): Promise<T> {
    const type = async (keys: readonly string[], slot?: string, resumed = false): Promise<T> => {
      const release = slot ? [...this.#settledSlots] : [];
      if (slot) this.#settledSlots.clear();
      const at = this.#now();
      const done = await this.#o.tmux.typeKeys(name, keys, { slot, release });
      if (done === "typed") {
        // A resumed call's slot stays claimed: the killed daemon's own command may still come, and the
        // claim is what stops it (as a resumed send's).
        if (slot && !resumed) this.#claimed.add(slot);
        step.after(at);
        this.#o.bus.publish({ type: step.announce.type, origin, data: step.announce.data });
      }
      return step.shape({ session: this.#o.sessions.get(name), typed: keys.length, at }, keys);
    };
    const fresh = async (commit: (options?: { resumable?: boolean }) => void, slot?: string) => {
      const session = this.#o.sessions.get(name);
      if (session.exited) {
        throw new DockError("exited", `session '${name}' has exited; its program no longer reads input`, {
          status: 409,
        });
      }
      const keys = await step.choose(session, true);
      // From here on the keys may reach the terminal.
      commit({ resumable: slot !== undefined });
      return await type(keys, slot);
    };
    if (step.key === undefined) return await fresh(() => {});
    const slot = `dock-keys-${slotHash(step.key)}`;
    try {
      return await this.#o.ledger.once<T>(
        step.key,
        name,
        (commit) => fresh(commit, slot),
        async () => await type(await step.choose(this.#o.sessions.get(name), false), slot, true),
      );
    } finally {
      if (this.#claimed.delete(slot)) this.#settledSlots.add(slot);
    }
  }

  async #sendNow(
    name: string,
    text: string,
    enter: boolean,
    origin: string,
    options: { key?: string; unlessWaiting?: "permission" },
  ): Promise<Session> {
    const { key, unlessWaiting } = options;
    if (key === undefined) return await this.#send(name, text, enter, origin, () => {}, { unlessWaiting });
    const slot = sendSlot(key);
    try {
      return await this.#o.ledger.once(
        key,
        name,
        (commit) => this.#send(name, text, enter, origin, commit, { slot, unlessWaiting }),
        // Finishing a send recorded before a kill: its check passed when it was recorded.
        () => this.#typeOnce(name, text, slot, { enter, origin, resumed: true }),
      );
    } finally {
      // Settled: no daemon looks at a slot this process claimed for a fresh send again, and no other
      // process ever had a command for it. The next keyed send unsets it.
      if (this.#claimed.delete(slot)) this.#settledSlots.add(slot);
    }
  }

  /** The prompt an interrupt put back in an agent's input box, cleared before the next send. */
  #restored = new RestoredInputs();

  /** Slots this process claimed for sends not settled yet. */
  #claimed = new Set<string>();
  /** Slots of this process's keyed sends settled since the last one, unset by the next. */
  #settledSlots = new Set<string>();

  async #send(
    name: string,
    text: string,
    enter: boolean,
    origin: string,
    commit: (options?: { resumable?: boolean }) => void,
    options: { slot?: string; unlessWaiting?: "permission" },
  ): Promise<Session> {
    const { slot, unlessWaiting } = options;
    const session = this.#o.sessions.get(name);
    if (session.exited) {
      throw new DockError("exited", `session '${name}' has exited; its program no longer reads input`, {
        status: 409,
      });
    }
    if (session.agent && session.state_time === session.created) {
      // The agent has not reported since it started: its input may not be up yet, and a prompt pasted
      // into a terminal nobody reads yet is lost or mangled. Give it a moment to say it is ready.
      await this.#o.sessions.wait(name, {
        states: ["idle", "running", "waiting", "finished"],
        after: new Date(session.created),
        timeoutMs: 10_000,
      });
    }
    if (enter && session.agent) {
      await this.#restored.clearBefore(this.#o.sessions.get(name), text, this.#o.tmux);
    }
    // The last look before the text may reach the terminal: nothing awaited from here to tmux's command.
    if (unlessWaiting) refuseWhileWaiting(this.#o.sessions.get(name), unlessWaiting);
    if (slot) {
      // Recorded before tmux may type it; tmux's slot tells a daemon started after a kill -9 how far
      // it got, so a repeat finishes it instead of refusing (send_ledger.ts).
      commit({ resumable: true });
      return await this.#typeOnce(name, text, slot, { enter, origin, resumed: false });
    }
    // From here on the text may reach the terminal.
    commit();
    const sent = this.#now();
    await this.#o.tmux.paste(name, text, enter, settlesBeforeEnter(this.#o.sessions.get(name)));
    if (enter && session.agent) this.#o.turns.started(name, sent);
    this.#o.bus.publish({ type: "session.sent", origin, data: { session: name } });
    return this.#o.sessions.get(name);
  }

  /**
   * Types a keyed send once (see `Tmux.pasteOnce`), then presses Enter if that is still owed.
   * `resumed`: finishing a send an earlier daemon recorded and never settled, where both steps may have
   * happened already (and `enter` only matters if the paste had not).
   */
  async #typeOnce(
    name: string,
    text: string,
    slot: string,
    options: { enter: boolean; origin: string; resumed: boolean },
  ): Promise<Session> {
    const session = this.#o.sessions.get(name);
    const sent = this.#now();
    const release = [...this.#settledSlots];
    this.#settledSlots.clear();
    let typed: boolean;
    try {
      const settle = settlesBeforeEnter(session);
      const paste = await this.#o.tmux.pasteOnce(name, slot, text, { enter: options.enter, release, settle });
      // A resumed send's slot stays claimed even when this call claimed it: the killed daemon's own
      // command may still come, and the claim is what stops it.
      if (paste === "claimed" && !options.resumed) this.#claimed.add(slot);
      const entered = (options.enter || options.resumed) && await this.#o.tmux.pressEnter(name, slot, settle);
      typed = paste !== "found" || entered;
      if (entered && session.agent) this.#o.turns.started(name, sent);
    } catch (error) {
      await this.#o.tmux.dropSlot(slot);
      throw error;
    }
    if (typed) this.#o.bus.publish({ type: "session.sent", origin: options.origin, data: { session: name } });
    return this.#o.sessions.get(name);
  }
}

/**
 * The send ledger's key of a keyed `keys` or `answer` call: apart from `send`'s keys (and each other's),
 * so a key reused across routes never replays another route's answer.
 */
export function ledgerKey(route: "keys" | "answer", key: string): string {
  return `${route}:${key}`;
}

/** Refuses a send to an agent waiting on `reason` (409 `permission_prompt`): typing would answer it. */
function refuseWhileWaiting(session: Session, reason: "permission"): void {
  if (session.agent_state !== "waiting" || session.reason !== reason) return;
  throw new DockError(
    "permission_prompt",
    `session '${session.name}' waits on a permission prompt: the text would answer it, so it was not typed`,
    { status: 409, detail: { session: session.name, reason } },
  );
}

/**
 * The slot of a keyed send in tmux (the name of its claim, its buffer and its Enter marker): made
 * from its key, so every daemon finds the same. Hashed: a key may hold characters tmux's command line
 * treats specially (a trailing `;`).
 */
function sendSlot(key: string): string {
  return `dock-send-${slotHash(key)}`;
}

/**
 * The part of a slot's name made from its key: 12 bytes of its SHA-256 in hex. Hashed with node:crypto,
 * at once: WebCrypto's `digest` cost the daemon's loop ~0.5 ms per keyed call under load (CPU profile
 * of 1,500 keys calls), against ~2 µs.
 */
function slotHash(key: string): string {
  return createHash("sha256").update(key).digest("hex").slice(0, 24);
}

/**
 * Whether a send into `session` waits, before its Enter, for the program to draw the paste and go quiet
 * (`Tmux` `#settleAfterPaste`, 100 ms to 1 s): every agent does. Gemini CLI 0.61 turns an Enter read
 * within 40 ms of a bracketed paste into a newline, and Codex 0.169 takes keys that come in a burst with
 * the paste as part of it; on a loaded machine Claude Code too has been seen to miss a prompt whose Enter
 * came 3 ms after its paste (the real-agent suite, in a full parallel run: "reached the model: no"). A
 * plain shell session has no such guard and gets its Enter at once.
 */
function settlesBeforeEnter(session: Pick<Session, "agent">): boolean {
  return Boolean(session.agent);
}
