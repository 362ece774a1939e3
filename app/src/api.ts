/**
 * How the page reaches dock, with one of two transports chosen at start-up from `/app/config.json`:
 * `agent` (the laptop agent: its own `/v1/…`, every box's API relayed through
 * `/v1/boxes/{box}/api/{path}`, attach through the agent's WebSocket) or `box` (a box's phone listener:
 * that box's own `/v1/…`, one box, attach through the box's WebSocket). The agent's token travels only in
 * the `Authorization` header, and as `?token=` on a WebSocket (a browser cannot give one headers). On a
 * phone listener the credential is an HttpOnly cookie the box set at pairing (`daemon/api/phone.ts`):
 * the page never holds it, the browser sends it, and every request carries `x-dock-phone: 1` (the box's
 * CSRF check).
 *
 * @module
 */
import type {
  AnswerResult,
  BoxSessions,
  BoxStatus,
  DockEvent,
  KeysResult,
  PermissionAnswer,
  QueueItem,
  Session,
} from "../../client/wire.ts";
import { after, pause } from "./clock.ts";

/** What `/app/config.json` says. */
export type AppConfig = { mode: "agent" } | { mode: "box"; box: string };

/** A failed call, with the API's error code and status. */
export class ApiError extends Error {
  readonly code: string;
  readonly status: number;
  constructor(code: string, message: string, status: number) {
    super(message);
    this.name = "ApiError";
    this.code = code;
    this.status = status;
  }
}

const TOKEN_KEY = "dock.token";

/**
 * Moves the token from the address's fragment (`#token=…`, never sent to a server) into sessionStorage
 * and drops it from the address bar and the history; then the token of this tab, if any.
 */
export function takeToken(): string | null {
  const fragment = new URLSearchParams(location.hash.slice(1));
  const given = fragment.get("token");
  if (given) {
    sessionStorage.setItem(TOKEN_KEY, given);
    fragment.delete("token");
    const rest = fragment.toString();
    history.replaceState(null, "", location.pathname + location.search + (rest ? `#${rest}` : ""));
  }
  return sessionStorage.getItem(TOKEN_KEY);
}

/** The config the server wrote into the page (`<meta name="dock-config">`), saving a request. */
export function readConfig(): AppConfig | null {
  const meta = document.querySelector('meta[name="dock-config"]')?.getAttribute("content");
  try {
    return meta ? JSON.parse(meta) as AppConfig : null;
  } catch {
    return null;
  }
}

/** Reads `/app/config.json` (no token: it holds only the transport). */
export async function loadConfig(): Promise<AppConfig> {
  const response = await fetch("config.json", { cache: "no-store" });
  if (!response.ok) throw new ApiError("no_config", "the app's config.json did not load", response.status);
  return await response.json() as AppConfig;
}

const enc = encodeURIComponent;

/** How long boot.ts's early answers stay to be taken after the app's first ask. */
const EARLY_KEEP_MS = 5000;
let earlyDropping: (() => void) | null = null;

/**
 * The answer boot.ts asked for `path` before this script ran (a GET with the same credentials), taken
 * once; undefined when there is none.
 */
function takeEarly(path: string): Promise<Response> | undefined {
  const early = (globalThis as { dockEarly?: Map<string, Promise<Response>> }).dockEarly;
  if (!early) return undefined;
  const answer = early.get(path);
  early.delete(path);
  // What the app has not taken a few seconds after its first ask is dropped: a later ask wants a fresh answer.
  if (!earlyDropping) earlyDropping = after(EARLY_KEEP_MS, () => early.clear());
  return answer;
}

/** Options of {@linkcode Api.sendOnce}. */
export interface SendOptions {
  enter?: boolean;
  /** Tries after an answer that leaves unknown whether the prompt was typed. @default {4} */
  retries?: number;
}

/** The API of the agent or of one box, by the page's transport. */
export class Api {
  readonly config: AppConfig;
  #token: string | null;

  /** `token` is the agent's; null in box mode, where the phone's cookie is the credential. */
  constructor(config: AppConfig, token: string | null) {
    this.config = config;
    this.#token = token;
  }

  /**
   * The token, and `x-dock-origin: app`: events the page causes say so, and the agent counts the page's
   * event streams as open views (it leaves notifying to them).
   */
  #headers(): Record<string, string> {
    if (this.#token === null) return { "x-dock-phone": "1", "x-dock-origin": "phone" };
    return { authorization: `Bearer ${this.#token}`, "x-dock-origin": "app" };
  }

  /** True when the page sees every box through the laptop agent. */
  get agent(): boolean {
    return this.config.mode === "agent";
  }

  /** The agent's own path (`/v1/{path}`); in box mode the box's, which answers only what it has. */
  own(path: string): string {
    return `/v1/${path}`;
  }

  /** A box API path (`/v1/{path}` on the box), through the agent's relay in agent mode. */
  box(box: string, path: string): string {
    return this.config.mode === "agent" ? `/v1/boxes/${enc(box)}/api/${path}` : `/v1/${path}`;
  }

  /**
   * Sends a request with the page's credentials (a JSON `body` as such). A failure to reach dock is thrown
   * as {@linkcode ApiError} `unreachable`, an error answer as the ApiError its body names.
   */
  async #request(
    path: string,
    init: { method?: string; body?: unknown; signal?: AbortSignal },
  ): Promise<Response> {
    const headers = this.#headers();
    if (init.body !== undefined) headers["content-type"] = "application/json";
    // The first GET of what boot.ts asked for early takes that answer.
    const early = init.method === undefined && init.body === undefined && !init.signal && this.#token !== null
      ? takeEarly(path)
      : undefined;
    let response: Response;
    try {
      response = await (early ?? fetch(path, {
        method: init.method ?? "GET",
        headers,
        body: init.body === undefined ? undefined : JSON.stringify(init.body),
        signal: init.signal,
      }));
    } catch (error) {
      throw new ApiError("unreachable", `cannot reach dock: ${(error as Error).message}`, 0);
    }
    if (!response.ok) {
      const error = (await response.json().catch(() => null))?.error ?? {};
      throw new ApiError(error.code ?? "error", error.message ?? response.statusText, response.status);
    }
    return response;
  }

  /** A JSON call; an error answer is thrown as {@linkcode ApiError}. */
  async json<T>(
    path: string,
    init: { method?: string; body?: unknown; signal?: AbortSignal } = {},
  ): Promise<T> {
    const text = await (await this.#request(path, init)).text();
    return (text ? JSON.parse(text) : null) as T;
  }

  /**
   * A streamed operation (`POST /v1/boxes/add-ssh`, `…/upgrade`): each NDJSON line as it comes. An error
   * answer before the stream (a refused request) is thrown as {@linkcode ApiError}.
   */
  async *lines<T>(path: string, body?: unknown): AsyncGenerator<T> {
    const response = await this.#request(path, { method: "POST", body });
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let end: number;
      while ((end = buffer.indexOf("\n")) >= 0) {
        const line = buffer.slice(0, end).trim();
        buffer = buffer.slice(end + 1);
        if (line) yield JSON.parse(line) as T;
      }
    }
    if (buffer.trim()) yield JSON.parse(buffer) as T;
  }

  /**
   * Every box's sessions through the agent (`GET /v1/sessions`), with the newest event the answer holds
   * (`x-dock-event-id`; null when not said): only later events may have changed what it says, so the
   * event stream followed from it needs no second read.
   */
  async board(): Promise<{ board: BoxSessions[]; after: string | null }> {
    const response = await this.#request(this.own("sessions"), {});
    const after = response.headers.get("x-dock-event-id");
    const text = await response.text();
    return { board: JSON.parse(text) as BoxSessions[], after: after && /^\d+$/.test(after) ? after : null };
  }

  /** The plain text of a GET (a service's log). */
  async text(path: string): Promise<string> {
    const response = await fetch(path, { headers: this.#headers() });
    if (!response.ok) throw new ApiError("error", response.statusText, response.status);
    return await response.text();
  }

  /** The boxes: the agent's list, or in box mode the one box, online since the page reached it. */
  async boxes(): Promise<BoxStatus[]> {
    if (this.config.mode === "agent") return await this.json<BoxStatus[]>(this.own("boxes"));
    return [{
      name: this.config.box,
      kind: "tls",
      transport: "tls",
      address: location.host,
      online: true,
      since: null,
      error: null,
      latency_ms: null,
      build: null,
      behind: false,
    }];
  }

  /**
   * Types a prompt so that it is typed at most once: the box records the key first and answers a repeat
   * with the first outcome, so an answer that leaves it unknown (a 502, a cut connection) is asked again
   * with the same key.
   */
  async sendOnce(box: string, session: string, text: string, options: SendOptions = {}): Promise<Session> {
    const key = `once-${crypto.randomUUID()}`;
    const path = this.box(box, `sessions/${enc(session)}/send`);
    let delay = 300;
    for (let attempt = 0;; attempt++) {
      try {
        return await this.json<Session>(path, {
          method: "POST",
          body: { text, enter: options.enter ?? true, key },
        });
      } catch (error) {
        const unknown = error instanceof ApiError && (error.status === 502 || error.code === "unreachable");
        if (!unknown || attempt >= (options.retries ?? 4)) throw error;
        await pause(delay);
        delay = Math.min(delay * 2, 3000);
      }
    }
  }

  /** Puts a prompt in the laptop's offline queue (agent mode only). */
  async queue(box: string, session: string, text: string): Promise<QueueItem> {
    return await this.json<QueueItem>(this.own("queue"), { method: "POST", body: { box, session, text } });
  }

  /** The WebSocket address of a session's terminal (without a size, the box keeps the window's). */
  attachUrl(box: string, session: string, size?: { cols: number; rows: number }): string {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const path = this.config.mode === "agent"
      ? `/v1/boxes/${enc(box)}/sessions/${enc(session)}/attach`
      : `/v1/sessions/${enc(session)}/attach`;
    const query = new URLSearchParams(size ? { cols: `${size.cols}`, rows: `${size.rows}` } : {});
    if (this.#token !== null) query.set("token", this.#token);
    return `${scheme}//${location.host}${path}?${query}`;
  }

  /**
   * Presses keys in a session as its terminal would (`POST sessions/{name}/keys`: a character each, or
   * `Enter`, `Escape`, …), never a paste, which a permission prompt ignores. Resolves only when the box
   * says they were typed; typed at most once, asked again with the same key when the answer is lost.
   */
  keys(box: string, session: string, keys: string[]): Promise<KeysResult> {
    return this.#once((key) =>
      this.json<KeysResult>(this.box(box, `sessions/${enc(session)}/keys`), {
        method: "POST",
        body: { keys, key },
      })
    );
  }

  /**
   * Answers a session's permission prompt (`POST sessions/{name}/answer`) with the keys its tool takes for
   * `answer`; the box refuses (409) when it waits on none. Resolves only when the box says they were typed.
   */
  answer(box: string, session: string, answer: PermissionAnswer): Promise<AnswerResult> {
    return this.#once((key) =>
      this.json<AnswerResult>(this.box(box, `sessions/${enc(session)}/answer`), {
        method: "POST",
        body: { answer, key },
      })
    );
  }

  /** A keyed call asked again with the same key after an answer that leaves its outcome unknown. */
  async #once<T>(call: (key: string) => Promise<T>, retries = 4): Promise<T> {
    const key = `app-${crypto.randomUUID()}`;
    let delay = 300;
    for (let attempt = 0;; attempt++) {
      try {
        return await call(key);
      } catch (error) {
        const unknown = error instanceof ApiError && (error.status === 502 || error.code === "unreachable");
        if (!unknown || attempt >= retries) throw error;
        await pause(delay);
        delay = Math.min(delay * 2, 3000);
      }
    }
  }

  /**
   * Follows `GET /v1/events` until `signal` aborts, reconnecting with `Last-Event-ID` after a drop.
   * fetch() rather than EventSource: EventSource cannot send the `Authorization` header, and the token
   * must not ride in a URL outside WebSockets. `onOpen` runs on each (re)connection, so the caller reloads
   * what it may have missed. With `after`, the first connection waits for it and resumes after that id
   * (the events since the read the page drew from), or starts live when it settles to null.
   */
  async follow(
    onEvent: (event: DockEvent) => void,
    options: {
      signal: AbortSignal;
      after?: Promise<string | null>;
      onOpen?: () => void;
      onClose?: () => void;
    },
  ): Promise<void> {
    let last = (await options.after) ?? undefined;
    let delay = 250;
    while (!options.signal.aborted) {
      try {
        const headers = this.#headers();
        if (last) headers["last-event-id"] = last;
        const response = await fetch(this.own("events"), { headers, signal: options.signal });
        if (!response.ok || !response.body) {
          throw new ApiError("events", response.statusText, response.status);
        }
        delay = 250;
        options.onOpen?.();
        for await (const frame of frames(response.body)) {
          if (frame.id) last = frame.id;
          if (frame.data) onEvent(JSON.parse(frame.data) as DockEvent);
        }
      } catch (error) {
        if (options.signal.aborted) return;
        if (error instanceof ApiError && error.status === 401) throw error;
      }
      options.onClose?.();
      await pause(delay);
      delay = Math.min(delay * 2, 5000);
    }
  }
}

/** The frames of a server-sent-events body: `id` and the joined `data` lines. */
export async function* frames(
  body: ReadableStream<Uint8Array>,
): AsyncGenerator<{ id?: string; data?: string }> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += decoder.decode(value, { stream: true });
    let end: number;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      let id: string | undefined;
      const data: string[] = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("id:")) id = line.slice(3).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      yield { id, data: data.length ? data.join("\n") : undefined };
    }
  }
}
