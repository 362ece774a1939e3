/**
 * The HTTP transport under the typed clients: one `fetch` that reaches a box over its unix socket or
 * over TCP, and turns every error answer into a {@linkcode DockError}.
 *
 * @module
 */
import { causeChain, DockError, type ErrorBody, TransportError } from "./errors.ts";
import { getOnce, type PlainTarget } from "./http1.ts";

/**
 * How a client reads. `oneShotReads`: a short-lived process (a CLI command) sends its JSON reads
 * (`json()` GETs) over a connection of their own without `fetch`, whose first use costs more than the
 * whole rest of a command (see `http1.ts`); only over the socket or plain http.
 */
interface Reads {
  oneShotReads?: boolean;
  /**
   * Called once when a request provably never reached the server (nothing listens yet), before that
   * request is sent again: a CLI starts the laptop agent here instead of asking first whether it runs.
   * Its failure is every later request's failure.
   */
  whenUnreachable?: () => Promise<void>;
}

/** Where a client connects. */
export type Endpoint =
  | { socket: string; origin?: string } & Reads
  | { url: string; token?: string; caCerts?: string[]; origin?: string; box?: string } & Reads;

/** Options of a single request. */
export interface RequestOptions {
  method?: string;
  body?: unknown;
  /** A body that is not JSON (a package), sent as it is with its content type; `body` must be absent. */
  upload?: { data: ReadableStream<Uint8Array> | Uint8Array<ArrayBuffer>; type: string };
  query?: Record<string, string | number | boolean | undefined>;
  headers?: Record<string, string>;
  signal?: AbortSignal;
  /**
   * The request may reach the server twice and act once: a keyed call (an idempotency key the box
   * replays the first outcome of). It goes on a kept connection as a read does, and is resent once
   * when a kept connection turns out dead.
   */
  idempotent?: boolean;
}

/** A minimal HTTP connection to one endpoint; owns its Deno HTTP client. */
export class Transport {
  #base: string;
  /**
   * The Deno HTTP clients, made on first use: the first costs ~2–3 ms, and a CLI command whose reads
   * all go `oneShotReads` never needs one.
   */
  #clients?: { client?: Deno.HttpClient; reads?: Deno.HttpClient };
  #makeClients: () => { client?: Deno.HttpClient; reads?: Deno.HttpClient };
  #token?: string;
  #origin?: string;
  #box?: string;
  /** Where `json()` GETs go without `fetch` (`oneShotReads`). */
  #plain?: PlainTarget;
  #whenUnreachable?: () => Promise<void>;
  #reached?: Promise<void>;

  constructor(endpoint: Endpoint) {
    this.#origin = endpoint.origin;
    this.#whenUnreachable = endpoint.whenUnreachable;
    if (endpoint.oneShotReads) this.#plain = plainTarget(endpoint);
    if ("socket" in endpoint) {
      // The host names nothing (the transport is the socket), but it must resolve instantly: a made-up
      // name costs a DNS lookup per new connection (seen: 5 s stalls, 1 request in 40).
      this.#base = "http://localhost";
      // No idle connections: the HTTP stack resends a request whose reused connection died, and a
      // request to a daemon killed mid-way must fail (the caller decides), never run twice. Reads
      // may run twice, and a new connection per request is most of a small GET's cost (measured:
      // `GET locations` 0.76 ms against 0.33 ms on a kept connection), so they keep theirs; so does a
      // keyed write (`idempotent`), which the box acts on once however often it arrives.
      const proxy = { transport: "unix", path: endpoint.socket } as const;
      this.#makeClients = () => ({
        client: Deno.createHttpClient({ proxy, poolMaxIdlePerHost: 0 }),
        reads: Deno.createHttpClient({ proxy }),
      });
    } else {
      this.#base = endpoint.url.replace(/\/+$/, "");
      this.#token = endpoint.token;
      this.#box = endpoint.box;
      const caCerts = endpoint.caCerts;
      this.#makeClients = () => caCerts ? { client: Deno.createHttpClient({ caCerts }) } : {};
    }
  }

  /** Sends a request and returns the raw response; throws a DockError for an error answer. */
  fetch(path: string, options: RequestOptions = {}): Promise<Response> {
    return this.#reaching(() => this.#fetch(path, options));
  }

  /** Runs `send`, and once more after `whenUnreachable` when it never reached the server. */
  async #reaching<T>(send: () => Promise<T>): Promise<T> {
    try {
      return await send();
    } catch (error) {
      if (!this.#whenUnreachable || !(error instanceof TransportError) || !error.neverSent) throw error;
      await (this.#reached ??= this.#whenUnreachable());
      return await send();
    }
  }

  async #fetch(path: string, options: RequestOptions): Promise<Response> {
    const url = this.#url(path, options.query);
    const headers = this.#headers(options.headers);
    let body: BodyInit | undefined;
    if (options.body !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(options.body);
    } else if (options.upload) {
      headers["content-type"] = options.upload.type;
      body = options.upload.data;
    }
    const method = options.method ?? (body === undefined ? "GET" : "POST");
    const clients = this.#clients ??= this.#makeClients();
    const resendable = method === "GET" || method === "HEAD" || options.idempotent === true;
    const client = resendable && clients.reads ? clients.reads : clients.client;
    const send = () => fetch(url, { method, headers, body, signal: options.signal, client } as RequestInit);
    let response: Response;
    try {
      response = await send().catch((cause) => {
        // A kept connection outlives the server that accepted it: after a daemon restart (an upgrade)
        // the first read on it fails (broken pipe, reset) although the new daemon answers. A read may
        // run twice, so it goes once more; the pool has dropped the dead connection by then. Not when
        // connecting failed: no kept connection was used, and a second try would only wait again (a
        // box offline behind a connect timeout took twice as long to be told so).
        if (!resendable || options.signal?.aborted || failedBeforeSending(cause)) throw cause;
        return send();
      });
    } catch (cause) {
      if (options.signal?.aborted) throw cause;
      throw new TransportError(`cannot reach ${this.#base}: ${causeChain(cause)}`, {
        neverSent: failedBeforeSending(cause),
        cause,
      });
    }
    if (!response.ok) throw errorFrom(response.status, await response.text());
    return response;
  }

  /** Sends a request and parses its JSON answer. */
  async json<T>(path: string, options: RequestOptions = {}): Promise<T> {
    const plain = this.#plain;
    if (plain && options.body === undefined && (options.method ?? "GET") === "GET") {
      const url = this.#url(path, options.query);
      const answer = await this.#reaching(() =>
        getOnce(plain, url.pathname + url.search, {
          host: url.host,
          headers: this.#headers(options.headers),
          signal: options.signal,
        })
      );
      const text = new TextDecoder().decode(answer.body);
      if (answer.status < 200 || answer.status > 299) throw errorFrom(answer.status, text);
      return (text ? JSON.parse(text) : undefined) as T;
    }
    const response = await this.fetch(path, options);
    const text = await response.text();
    return (text ? JSON.parse(text) : undefined) as T;
  }

  #url(path: string, query: RequestOptions["query"]): URL {
    // Through the laptop agent, a box's `/v1/x` is the agent's `/v1/boxes/<box>/api/x`.
    const routed = this.#box && path.startsWith("/v1/")
      ? `/v1/boxes/${encodeURIComponent(this.#box)}/api/${path.slice(4)}`
      : path;
    const url = new URL(this.#base + routed);
    for (const [key, value] of Object.entries(query ?? {})) {
      if (value !== undefined) url.searchParams.set(key, String(value));
    }
    return url;
  }

  #headers(extra: Record<string, string> | undefined): Record<string, string> {
    const headers: Record<string, string> = { ...extra };
    if (this.#token) headers.authorization = `Bearer ${this.#token}`;
    // The tool a request comes from becomes the origin of the events it causes (spec 2.1).
    if (this.#origin) headers["x-dock-origin"] = this.#origin;
    return headers;
  }

  /**
   * Follows an SSE stream of JSON messages from `after` on, until `signal` aborts; the end of an aborted
   * stream is not an error. A stream that breaks after it delivered events is followed again from the
   * last one. The caller's `after` goes as `?after=` (an id past the server's last is a 400 naming it);
   * a resume as `Last-Event-ID` (past the last id: the journal was made anew, and it starts over).
   */
  async *stream<T>(path: string, options: { after?: number; signal?: AbortSignal } = {}): AsyncGenerator<T> {
    let after = options.after;
    let resume = false;
    while (true) {
      const headers: Record<string, string> = {};
      if (after !== undefined && resume) headers["last-event-id"] = String(after);
      const query = after !== undefined && !resume ? { after } : undefined;
      const response = await this.fetch(path, { headers, query, signal: options.signal });
      resume = true;
      let received = false;
      try {
        for await (const message of readSse(response.body!)) {
          if (message.id) {
            after = Number(message.id);
            received = true;
          }
          yield JSON.parse(message.data) as T;
        }
        return;
      } catch (error) {
        if (options.signal?.aborted) return;
        // A server cuts off a client that fell behind (core/sse.ts): resume after the last event
        // received. A stream that broke before any event is an error for the caller.
        if (!received) throw error;
      }
    }
  }

  /** Releases the underlying HTTP clients. */
  close(): void {
    this.#clients?.client?.close();
    this.#clients?.reads?.close();
  }
}

// Deno's fetch tells why a request failed only in words; hyper, under it, names the phase that failed.
// `client error (Connect)` covers resolving the name, connecting (TCP or unix socket) and the TLS
// handshake: all before the request is written. The older phrasings (no phase named) are kept for the
// same failures. Anything else (`SendRequest`, a connection closed before the answer) may have come
// after the request went out.
const CONNECT_PHASE =
  /client error \(Connect\)|error trying to connect|tcp connect error|dns error|Name or service not known|Connection refused|No such file or directory \(os error 2\)/i;

/**
 * Whether a failed `fetch` (its error, with causes) provably never sent the request: the one place
 * that reads the failure's words, so every caller can rely on {@linkcode TransportError.neverSent}.
 */
export function failedBeforeSending(cause: unknown): boolean {
  return CONNECT_PHASE.test(causeChain(cause));
}

/** Where `json()` GETs of `endpoint` go without `fetch`: its socket, or the host of a plain-http URL. */
function plainTarget(endpoint: Endpoint): PlainTarget | undefined {
  if ("socket" in endpoint) return { socket: endpoint.socket };
  const url = new URL(endpoint.url);
  if (url.protocol !== "http:" || endpoint.caCerts) return undefined;
  return { hostname: url.hostname.replace(/^\[|\]$/g, ""), port: Number(url.port || 80) };
}

function errorFrom(status: number, text: string): DockError {
  try {
    const body = JSON.parse(text) as ErrorBody;
    if (body?.error?.code) {
      const { code, message, ...detail } = body.error;
      return new DockError(code, message, { status: status as 400, detail });
    }
  } catch {
    // not JSON: fall through to a generic error carrying the text
  }
  return new DockError("http_error", `HTTP ${status}: ${text.slice(0, 200)}`, { status: status as 400 });
}

/** Reads a body of NDJSON lines as parsed values. */
export async function* readNdjson<T>(body: ReadableStream<Uint8Array>): AsyncGenerator<T> {
  for await (const line of readLines(body)) {
    if (line.trim()) yield JSON.parse(line) as T;
  }
}

/** Reads a body as text lines (without their line ends). */
export async function* readLines(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder();
  // The pieces of a line not ended yet, joined once it ends: appending each chunk to one string and
  // searching it whole again copied a 64 KB line four times over as its chunks came.
  let pending: string[] = [];
  for await (const chunk of chunksOf(body)) {
    const text = decoder.decode(chunk, { stream: true });
    let start = 0;
    let end: number;
    while ((end = text.indexOf("\n", start)) >= 0) {
      let line = text.slice(start, end);
      if (pending.length) {
        pending.push(line);
        line = pending.join("");
        pending = [];
      }
      yield line.endsWith("\r") ? line.slice(0, -1) : line;
      start = end + 1;
    }
    if (start < text.length) pending.push(text.slice(start));
  }
  const rest = pending.join("") + decoder.decode();
  if (rest) yield rest;
}

/**
 * Bytes read at a time from a body that lets its reader bring the buffer. Each open stream holds one
 * (the agent keeps one event stream per box: 200 boxes held 12.5 MiB of them at 64 KiB); a read takes
 * what has arrived, so a larger event only comes in more reads.
 */
const READ_BUFFER = 16 * 1024;

/**
 * The chunks of a body, each valid until the next is asked for: read into one buffer, used again and
 * again, where the stream lets its reader bring one (fetch's bodies do). Read the plain way, each chunk
 * comes in a buffer of its own (64 KiB), garbage once decoded: an agent merging a box's 64 KB events
 * made 64 MiB of it between collections, and the allocator kept its peak (agent RSS 78 → 150 MiB).
 */
async function* chunksOf(body: ReadableStream<Uint8Array>): AsyncGenerator<Uint8Array> {
  let reader: ReadableStreamBYOBReader;
  try {
    reader = body.getReader({ mode: "byob" });
  } catch {
    yield* body; // not a byte stream
    return;
  }
  let buffer = new ArrayBuffer(READ_BUFFER);
  let finished = false;
  try {
    while (true) {
      const { value, done } = await reader.read(new Uint8Array(buffer));
      if (done || !value) {
        finished = true;
        return;
      }
      yield value;
      buffer = value.buffer; // handed back, whole, by the read
    }
  } catch (error) {
    finished = true;
    throw error;
  } finally {
    // Left early (the caller stopped reading): cancel the body, as leaving a for-await over it does.
    if (!finished) await reader.cancel().catch(() => {});
    reader.releaseLock();
  }
}

/** One server-sent event as read off the wire. */
export interface SseMessage {
  id?: string;
  event?: string;
  data: string;
}

/** Reads a server-sent-events body message by message. */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseMessage> {
  let message: SseMessage = { data: "" };
  let hasData = false;
  for await (const line of readLines(body)) {
    if (line === "") {
      if (hasData) yield message;
      message = { data: "" };
      hasData = false;
      continue;
    }
    if (line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    // A slice, not a replace: the value of a large event's data line is not copied again.
    const value = colon < 0 ? "" : line.slice(line[colon + 1] === " " ? colon + 2 : colon + 1);
    if (field === "data") {
      message.data = hasData ? `${message.data}\n${value}` : value;
      hasData = true;
    } else if (field === "id") message.id = value;
    else if (field === "event") message.event = value;
  }
}
