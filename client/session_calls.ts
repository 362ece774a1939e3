/**
 * The session calls of a box's API (spec 2.3): sessions, the prompts, keystrokes and answers typed into
 * them exactly once over a path that may fail midway, waits on an agent's state, and tasks.
 * {@linkcode BoxClient} extends {@linkcode SessionCalls}.
 *
 * @module
 */
import { DockError, TransportError } from "./errors.ts";
import { PluginCalls } from "./plugin_calls.ts";
import { sleep } from "./timers.ts";
import type {
  AnswerResult,
  KeysResult,
  PermissionAnswer,
  Screen,
  Session,
  SessionCreate,
  TaskRequest,
  TaskResult,
  WaitResult,
} from "./wire.ts";

const enc = encodeURIComponent;

/** A box's session calls (and, from {@linkcode PluginCalls}, its plugin calls). */
export class SessionCalls extends PluginCalls {
  /** `GET sessions`. */
  sessions(): Promise<Session[]> {
    return this.transport.json("/v1/sessions");
  }

  /** `GET sessions/{name}`. */
  session(name: string): Promise<Session> {
    return this.transport.json(`/v1/sessions/${enc(name)}`);
  }

  /** `POST sessions`. */
  createSession(body: SessionCreate): Promise<Session> {
    return this.transport.json("/v1/sessions", { body });
  }

  /** `DELETE sessions/{name}`: ends the session and everything it started. */
  removeSession(name: string): Promise<Session> {
    return this.transport.json(`/v1/sessions/${enc(name)}`, { method: "DELETE" });
  }

  /** `GET sessions/{name}/screen?history=N`. */
  screen(name: string, history?: number): Promise<Screen> {
    return this.transport.json(`/v1/sessions/${enc(name)}/screen`, { query: { history } });
  }

  /**
   * `POST sessions/{name}/send`: pastes the text as one block, then Enter unless `enter` is false.
   * With `key`, a repeat of the same key answers the first outcome and never types again. With
   * `unlessWaiting: "permission"`, an agent waiting on a permission prompt refuses it (409
   * `permission_prompt`), checked by the box in the same step as the typing. A box older than that
   * field (which refuses it as unknown) is asked the old way: its session read just before the send.
   */
  async send(
    name: string,
    text: string,
    options: { enter?: boolean; key?: string; unlessWaiting?: "permission"; signal?: AbortSignal } = {},
  ): Promise<Session> {
    const post = (unlessWaiting?: "permission"): Promise<Session> =>
      this.transport.json(`/v1/sessions/${enc(name)}/send`, {
        body: { text, enter: options.enter, key: options.key, unless_waiting: unlessWaiting },
        signal: options.signal,
        idempotent: options.key !== undefined,
      });
    try {
      return await post(options.unlessWaiting);
    } catch (error) {
      const older = options.unlessWaiting && error instanceof DockError && error.status === 400 &&
        error.detail?.field === "unless_waiting";
      if (!older) throw error;
    }
    const now = await this.session(name);
    if (now.agent_state === "waiting" && now.reason === options.unlessWaiting) {
      throw new DockError(
        "permission_prompt",
        `session '${name}' waits on a permission prompt: the text would answer it, so it was not typed`,
        { status: 409, detail: { session: name, reason: options.unlessWaiting } },
      );
    }
    return await post();
  }

  /**
   * Sends a prompt exactly once over a path that may fail midway: with a fresh idempotency key, and
   * after an answer that leaves the outcome unknown (502 from the relay: the connection failed after
   * the request went out; or a connection that failed under this client) it asks again with the same
   * key, backing off, until the box answers. The box then replays the first outcome and never types
   * twice. A first answer of 503 from the relay (never reached the box) is thrown at once: nothing was
   * typed, so the caller may queue the prompt. After `retries` unanswered repeats it throws
   * `send_unconfirmed` (502) with the key, which can be sent again safely.
   */
  sendOnce(
    name: string,
    text: string,
    options: {
      enter?: boolean;
      key?: string;
      unlessWaiting?: "permission";
      signal?: AbortSignal;
      retries?: number;
      delayMs?: number;
    } = {},
  ): Promise<Session> {
    const { enter, unlessWaiting, signal } = options;
    return once(PROMPT, options, (key) => this.send(name, text, { enter, key, unlessWaiting, signal }));
  }

  /**
   * `POST sessions/{name}/keys`: types keystrokes (each entry one character, or a named key such as
   * `Enter` or `Escape`), never a paste. Typed once even over a path that fails midway: with a fresh
   * idempotency key (or `key`), asked again with it after an answer that leaves the outcome unknown, as
   * {@linkcode BoxClient.sendOnce}. Answers when the box says they were typed.
   */
  keys(
    name: string,
    keys: string[],
    options: { key?: string; signal?: AbortSignal; retries?: number; delayMs?: number } = {},
  ): Promise<KeysResult> {
    return once(
      KEYS,
      options,
      (key) =>
        this.transport.json(`/v1/sessions/${enc(name)}/keys`, {
          body: { keys, key },
          signal: options.signal,
          idempotent: true,
        }),
    );
  }

  /**
   * `POST sessions/{name}/answer`: answers the agent's permission prompt `yes`, `no` or `always` with the
   * keys its tool takes (the box's table); 409 `not_waiting_permission` when it waits on none. Typed once,
   * as {@linkcode BoxClient.keys}.
   */
  answer(
    name: string,
    answer: PermissionAnswer,
    options: { key?: string; signal?: AbortSignal; retries?: number; delayMs?: number } = {},
  ): Promise<AnswerResult> {
    return once(ANSWER, options, (key) =>
      this.transport.json(`/v1/sessions/${enc(name)}/answer`, {
        body: { answer, key },
        signal: options.signal,
        idempotent: true,
      }));
  }

  /** `GET sessions/{name}/wait`: until one of `states` (after `after`), the program's exit, or the timeout. */
  wait(
    name: string,
    options: { states?: string[]; after?: string; timeout?: string; signal?: AbortSignal } = {},
  ): Promise<WaitResult> {
    return this.transport.json(`/v1/sessions/${enc(name)}/wait`, {
      query: { for: options.states?.join(","), after: options.after, timeout: options.timeout },
      signal: options.signal,
    });
  }

  /** `POST tasks`: a new worktree with an agent running in it. */
  createTask(body: TaskRequest): Promise<TaskResult> {
    return this.transport.json("/v1/tasks", { body });
  }
}

/** What a keyed call types: its key's prefix, and how `send_unconfirmed` names it. */
interface Typed {
  prefix: string;
  what: string;
  /** `it` or `them`. */
  it: string;
}

const PROMPT: Typed = { prefix: "once", what: "the prompt", it: "it" };
const KEYS: Typed = { prefix: "keys", what: "the keys", it: "them" };
const ANSWER: Typed = { prefix: "answer", what: "the answer", it: "it" };

/**
 * Makes a keyed call whose outcome may be lost on the way (a prompt, keys, an answer): with `options.key`
 * or a fresh one, asked again with the same key after an answer that leaves it unknown (502 from the relay:
 * the connection failed after the request went out; or a connection that failed under this client),
 * backing off, until the box answers; the box replays the first outcome and never types twice. A first
 * answer of 503 from the relay (never reached the box) is thrown at once: nothing was typed, so the caller
 * may queue it. After `retries` unanswered repeats it throws `send_unconfirmed` (502) with the key.
 */
async function once<T>(
  typed: Typed,
  options: { key?: string; signal?: AbortSignal; retries?: number; delayMs?: number },
  call: (key: string) => Promise<T>,
): Promise<T> {
  const key = options.key ?? `${typed.prefix}-${crypto.randomUUID()}`;
  const retries = options.retries ?? 5;
  let delay = options.delayMs ?? 500;
  let uncertain = false;
  for (let attempt = 1;; attempt++) {
    try {
      return await call(key);
    } catch (error) {
      if (!(error instanceof DockError) || options.signal?.aborted) throw error;
      // A connection that never carried the request (refused, no socket) typed nothing; any other
      // failure of this client's connection may have come after the request went out.
      const cutShort = error instanceof TransportError && !error.neverSent;
      const unknown = error.status === 502 || cutShort || (uncertain && error.status === 503);
      if (!unknown) throw error;
      uncertain = true;
      if (attempt > retries) {
        const they = typed.it === "it" ? "it" : "they";
        throw new DockError(
          "send_unconfirmed",
          `the box did not confirm ${typed.what} after ${attempt} tries (${error.message}); ${they} may have ` +
            `been typed. Sending ${typed.it} again with key ${key} never types ${typed.it} twice`,
          { status: 502, detail: { key } },
        );
      }
      await sleep(delay, options.signal);
      if (options.signal?.aborted) throw error;
      delay = Math.min(delay * 2, 5000);
    }
  }
}
