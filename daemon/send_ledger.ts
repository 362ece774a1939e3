/**
 * The send ledger: idempotency keys of prompts typed into sessions (`POST sessions/{name}/send` with
 * `key`, the `send_keys` table). A keyed prompt is typed at most once: its key is recorded before the
 * text may reach the terminal, and a repeat with the same key replays the first outcome (the session as
 * it was answered, or the same error) or waits for it while it is still being typed. Keystrokes and
 * answers (`POST sessions/{name}/keys` and `answer`) are kept here too, under keys of their own
 * (`ledgerKey` in `session_input.ts`), with their own answer as the outcome.
 *
 * When the daemon stopped while typing it (a kill -9, a crash), the key is found without an outcome. A
 * send recorded `resumable` (its typing leaves a trace that tells how far it got: `Tmux.pasteOnce`)
 * is finished by the repeat: pasted if it was not, its Enter pressed if still owed, each at most once.
 * The queue's soak (bench/queue_soak.ts) lost a prompt at nearly every kill of dockd before this: the
 * repeat was refused and the queue item failed, holding its session's line. A send recorded `typing`
 * (an older daemon's) is refused with 409 `send_interrupted` rather than risk typing it twice.
 *
 * @module
 */
import { DockError, type ErrorStatus } from "../client/errors.ts";
import type { Session } from "../client/wire.ts";
import type { Clock } from "../core/clock.ts";
import type { Store } from "../core/store.ts";

/** Days a send's idempotency key is remembered, at least. */
export const SEND_KEY_DAYS = 7;
/**
 * Keys remembered at most: beyond it the oldest go even before {@linkcode SEND_KEY_DAYS} (only past
 * this many keyed sends in a week), so the table stays bounded.
 */
export const SEND_KEYS_KEPT = 100_000;

/** Keys recorded between two prunes of old keys. */
const PRUNE_EVERY = 200;

interface SendKeyRow {
  key: string;
  session: string;
  /** `resumable`: finished by a repeat; `typing`: unknown (refused). */
  state: "typing" | "resumable" | "done" | "failed";
  outcome: string | null;
  created: string;
}

/** Remembers keyed sends and their outcomes. */
export class SendLedger {
  #store: Store;
  #clock: Pick<Clock, "now">;
  /** Keyed sends being typed now, so a repeat waits for the same outcome. */
  #sending = new Map<string, Promise<unknown>>();
  #sinceKeyPrune = 0;

  /** `clock` dates each key, and says which are older than {@linkcode SEND_KEY_DAYS}. */
  constructor(options: { store: Store; clock: Pick<Clock, "now"> }) {
    this.#store = options.store;
    this.#clock = options.clock;
  }

  /** True when a send with this idempotency key was already made (or is being made). */
  known(key: string): boolean {
    return this.#sending.has(key) || this.#row(key) !== undefined;
  }

  /**
   * Makes the send of `key` to `session` at most once. A key seen before answers its first outcome
   * (or waits for it); otherwise `send` runs, and calls `commit` at the moment the text may reach the
   * terminal: from then on whatever happens (an error, a kill -9), a repeat never types it again. An
   * error before `commit` is not recorded, so a repeat tries afresh. `commit({ resumable: true })` says
   * the send can be finished from where it stands by `resume`: a repeat that finds it unsettled (the
   * daemon stopped) calls `resume` instead of refusing.
   */
  async once<T = Session>(
    key: string,
    session: string,
    send: (commit: (options?: { resumable?: boolean }) => void) => Promise<T>,
    resume?: () => Promise<T>,
  ): Promise<T> {
    const inFlight = this.#sending.get(key) as Promise<T> | undefined;
    if (inFlight) return await inFlight;
    const row = this.#row(key);
    let sending: Promise<T>;
    if (!row) sending = this.#settled(key, session, send);
    else if (row.state === "resumable" && row.session === session && resume) {
      sending = this.#settled(key, session, resume, { recorded: true });
    } else return replay<T>(row, session);
    // Registered synchronously, before any await, so a concurrent repeat finds it.
    this.#sending.set(key, sending);
    try {
      return await sending;
    } finally {
      this.#sending.delete(key);
    }
  }

  async #settled<T>(
    key: string,
    session: string,
    send: (commit: (options?: { resumable?: boolean }) => void) => Promise<T>,
    options: { recorded?: boolean } = {},
  ): Promise<T> {
    let committed = options.recorded ?? false;
    try {
      const answer = await send((commitOptions = {}) => {
        if (committed) return;
        this.#record(key, session, commitOptions.resumable ? "resumable" : "typing");
        committed = true;
      });
      if (committed) this.#settle(key, "done", answer);
      return answer;
    } catch (error) {
      if (!committed) throw error;
      const failure = error instanceof DockError
        ? error
        : new DockError("send_failed", `typing into session '${session}' failed`, {
          status: 422,
          cause: error,
        });
      this.#settle(key, "failed", { status: failure.status, ...failure.toBody() });
      throw failure;
    }
  }

  #row(key: string): SendKeyRow | undefined {
    return this.#store.get<SendKeyRow>("SELECT * FROM send_keys WHERE key = ?", key);
  }

  #record(key: string, session: string, state: "typing" | "resumable"): void {
    this.#store.run(
      "INSERT INTO send_keys (key, session, state, created) VALUES (?, ?, ?, ?)",
      key,
      session,
      state,
      new Date(this.#clock.now()).toISOString(),
    );
    if (++this.#sinceKeyPrune >= PRUNE_EVERY) {
      this.#sinceKeyPrune = 0;
      const cutoff = new Date(this.#clock.now() - SEND_KEY_DAYS * 86_400_000).toISOString();
      this.#store.run("DELETE FROM send_keys WHERE created < ?", cutoff);
      this.#store.run(
        `DELETE FROM send_keys WHERE rowid <= (SELECT rowid FROM send_keys ORDER BY rowid DESC
         LIMIT 1 OFFSET ?)`,
        SEND_KEYS_KEPT,
      );
    }
  }

  #settle(key: string, state: "done" | "failed", outcome: unknown): void {
    this.#store.run(
      "UPDATE send_keys SET state = ?, outcome = ? WHERE key = ?",
      state,
      JSON.stringify(outcome),
      key,
    );
  }
}

/** The outcome a repeated send key gets: the first answer, the same error, or why there is none. */
function replay<T>(row: SendKeyRow, name: string): T {
  if (row.session !== name) {
    throw new DockError(
      "key_conflict",
      `key: already used for a send to session '${row.session}', not '${name}'`,
      { status: 409, detail: { field: "key" } },
    );
  }
  if (row.state === "done") return JSON.parse(row.outcome!) as T;
  if (row.state === "failed") {
    const { status, error: { code, message, ...detail } } = JSON.parse(row.outcome!) as {
      status: ErrorStatus;
      error: { code: string; message: string; [extra: string]: unknown };
    };
    throw new DockError(code, message, { status, detail });
  }
  // Recorded but never settled: the daemon stopped while typing it. It may be typed in part, in
  // whole or not at all; typing it again could make it twice, so say so instead. (A resumable one
  // lands here only when nothing can resume it.)
  throw new DockError(
    "send_interrupted",
    `the box stopped while typing this prompt into session '${name}'; it may or may not have arrived`,
    { status: 409 },
  );
}
