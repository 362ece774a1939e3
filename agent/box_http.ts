/**
 * The relay's HTTP/1.1 client to one box, over kept connections: Deno's `fetch` either opens a
 * connection per request or keeps them and then resends any request, a POST included, on a kept
 * connection that died before answering (TOOLCHAIN.md). Measured (Deno 2.9.6, a shared 2-core machine):
 * `GET info` on a kept connection here 0.15 ms, by unpooled `fetch` 0.44 ms; the relay's p50 over the
 * box socket went from +1.0–1.2 ms to +0.7–0.9 ms with this alone (answers of a length up to
 * {@linkcode SMALL_BODY} handed on as bytes included). Here the retry rules are explicit:
 *
 * - a request whose bytes provably never left (the connect failed, or the write failed before its
 *   first byte) is tried once more on a fresh connection, whatever its method;
 * - a GET, HEAD or OPTIONS that a kept connection lost before its answer began is tried once more on a
 *   fresh connection;
 * - anything else that was sent is never resent: it fails with {@linkcode BoxHttpError} (`neverSent`
 *   false), so the relay answers 502 and the caller decides. A non-idempotent request goes on a kept
 *   connection only if it was idle for under {@linkcode POST_REUSE_MS}, far from any server's idle
 *   timeout, so the race with a server closing an idle connection is narrow as well as safe.
 *
 * An idle connection keeps a read waiting on it, so a box that closes it is seen before the connection
 * is used again. A connection goes back to the pool only once its answer was read whole (an SSE stream
 * holds its connection until it ends); what cannot be reused (close-delimited answers, `connection:
 * close`, an abandoned body) is closed. Bounded: connections per box (requests past it wait, and past
 * {@linkcode MAX_WAITING} fail at once), idle ones kept, idle time, and an answer's header bytes.
 * Nagle is off on TCP, so no small write waits for an ACK. TLS sessions are not resumed: Deno's
 * `startTls` has no session cache to share, and a kept connection needs no handshake at all.
 *
 * @module
 */
import { TransportError } from "../client/errors.ts";
import {
  type Body,
  ChunkedBody,
  Connection,
  type Head,
  join,
  LengthBody,
  MalformedAnswer,
  readHead,
} from "./http1_conn.ts";

/** Where a box listens: its daemon's unix socket, or its TLS URL with the pinned CA. */
export type BoxTarget = { socket: string } | { url: string; caCerts: string[] };

/** One request: `path` starts with `/` and carries the query; header values are sent as given. */
export interface BoxRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: Uint8Array;
  signal?: AbortSignal;
}

/**
 * An answer: its status, header fields (lower-case names; a repeated one joined with ", "), and its
 * body: bytes when it had a length up to {@linkcode SMALL_BODY} (read whole), else a stream.
 */
export interface BoxAnswer {
  status: number;
  headers: Map<string, string>;
  body: Uint8Array<ArrayBuffer> | ReadableStream<Uint8Array> | null;
}

/** Limits of one box's client; the defaults suit the relay. */
export interface BoxHttpLimits {
  /** Connections open to the box at once, idle or busy. @default {256} */
  maxConnections?: number;
  /**
   * Idle connections kept. 64: a burst of 50 relayed requests at once (the bench's, and an app page
   * loading a board) finds its connections again, where 32 opened 18 fresh ones each time; idle, each
   * holds its 16 KiB read buffer. @default {64}
   */
  maxIdle?: number;
  /** An idle connection is closed after this (a box's listener drops idle ones after 120 s). @default {30000} */
  idleMs?: number;
  /** The most an answer's status line and header fields may take. @default {65536} */
  maxHeaderBytes?: number;
}

/** A request that failed on the way: `neverSent` says the box provably never saw it. */
export class BoxHttpError extends TransportError {}

/** A kept connection is used for a non-idempotent request only if it was idle for less than this. */
export const POST_REUSE_MS = 2000;
/** Requests that may wait for a connection once a box has `maxConnections` open. */
export const MAX_WAITING = 1024;

const IDEMPOTENT = new Set(["GET", "HEAD", "OPTIONS"]);
/** Answers with a length up to this are read whole before the relay answers (see `#respond`). */
export const SMALL_BODY = 64 * 1024;
const encoder = new TextEncoder();

/** One box's connections and the requests to it. */
export class BoxHttp {
  #target: BoxTarget;
  #host: string;
  #limits: Required<BoxHttpLimits>;
  #idle: Connection[] = [];
  #open = 0;
  #opened = 0;
  #waiting: ((handed: Connection | "slot" | "closed") => void)[] = [];
  #closed = false;
  #sweeper?: ReturnType<typeof setTimeout>;

  constructor(target: BoxTarget, limits: BoxHttpLimits = {}) {
    this.#target = target;
    this.#host = "socket" in target ? "localhost" : new URL(target.url).host;
    this.#limits = {
      maxConnections: limits.maxConnections ?? 256,
      maxIdle: limits.maxIdle ?? 64,
      idleMs: limits.idleMs ?? 30_000,
      maxHeaderBytes: limits.maxHeaderBytes ?? 64 * 1024,
    };
  }

  /** Connections open now, idle ones, and connections opened in all. */
  stats(): { open: number; idle: number; opened: number } {
    return { open: this.#open, idle: this.#idle.length, opened: this.#opened };
  }

  /** Sends `request` and resolves with the answer once its header arrived; the body streams. */
  async request(request: BoxRequest): Promise<BoxAnswer> {
    const head = [`${request.method} ${request.path} HTTP/1.1`, `host: ${this.#host}`];
    for (const [name, value] of Object.entries(request.headers)) head.push(`${name}: ${value}`);
    if (request.body) head.push(`content-length: ${request.body.length}`);
    // The relay's values come from a parsed request, but a line break would forge a header: refuse it.
    if (head.some((line) => /[\r\n\0]/.test(line))) {
      throw new TypeError("a request line or header holds a line break or NUL");
    }
    const bytes = join(encoder.encode(`${head.join("\r\n")}\r\n\r\n`), request.body);
    const idempotent = IDEMPOTENT.has(request.method);
    request.signal?.throwIfAborted();
    for (let attempt = 0;; attempt++) {
      const connection = await this.#acquire({ reuse: attempt === 0, idempotent });
      const outcome = await this.#exchange(connection, request, bytes);
      if (!(outcome instanceof BoxHttpError)) return outcome;
      // Resent only on a fresh connection, once: when it provably never left, or when it may repeat.
      const again = attempt === 0 && (outcome.neverSent || (idempotent && connection.reused));
      if (!again || request.signal?.aborted) throw outcome;
    }
  }

  /** Closes the idle connections and those in use as soon as their answers end. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#sweeper);
    for (const connection of this.#idle.splice(0)) this.#destroy(connection);
    for (const waiter of this.#waiting.splice(0)) waiter("closed");
  }

  async #exchange(
    connection: Connection,
    request: BoxRequest,
    bytes: Uint8Array,
  ): Promise<BoxAnswer | BoxHttpError> {
    const abort = () => closeQuietly(connection.conn);
    request.signal?.addEventListener("abort", abort, { once: true });
    let written = 0;
    try {
      while (written < bytes.length) written += await connection.conn.write(bytes.subarray(written));
    } catch (cause) {
      request.signal?.removeEventListener("abort", abort);
      this.#destroy(connection);
      return this.#failure(cause, written === 0, request.signal);
    }
    try {
      for (;;) {
        const answer = await readHead(connection, this.#limits.maxHeaderBytes);
        // 1xx interim answers (100 Continue) precede the real one; an upgrade is not the relay's.
        if (answer.status >= 100 && answer.status < 200 && answer.status !== 101) continue;
        return await this.#respond(connection, request, answer, abort);
      }
    } catch (cause) {
      request.signal?.removeEventListener("abort", abort);
      this.#destroy(connection);
      if (cause instanceof BoxHttpError) throw cause;
      // The box's answer itself is wrong: not a reason to send the request again.
      if (cause instanceof MalformedAnswer) {
        throw new BoxHttpError(cause.message, { neverSent: false, cause });
      }
      return this.#failure(cause, false, request.signal);
    }
  }

  #failure(cause: unknown, neverSent: boolean, signal: AbortSignal | undefined): BoxHttpError {
    if (signal?.aborted) throw signal.reason;
    const reason = cause instanceof Error ? cause.message : String(cause);
    return new BoxHttpError(
      neverSent
        ? `the request never left: ${reason}`
        : `the connection failed after the request was sent: ${reason}`,
      { neverSent, cause },
    );
  }

  async #respond(
    connection: Connection,
    request: BoxRequest,
    answer: Head,
    abort: () => void,
  ): Promise<BoxAnswer> {
    const { status, headers } = answer;
    const keep = answer.keepAlive && !this.#closed;
    const done = (reusable: boolean) => {
      request.signal?.removeEventListener("abort", abort);
      if (reusable && keep && !request.signal?.aborted) this.#release(connection);
      else this.#destroy(connection);
    };
    if (status < 200 || status > 599) {
      done(false);
      throw new BoxHttpError(`the box answered with status ${status}`, { neverSent: false });
    }
    const length = headers.get("content-length") ?? null;
    const chunked = /\bchunked\b/i.test(headers.get("transfer-encoding") ?? "");
    if (request.method === "HEAD" || status === 204 || status === 304 || (!chunked && length === "0")) {
      done(true);
      return { status, headers, body: null };
    }
    let body: Body;
    if (chunked) body = new ChunkedBody(connection);
    else if (length !== null) {
      const size = Number(length);
      if (!/^\d+$/.test(length) || !Number.isSafeInteger(size)) {
        done(false);
        throw new BoxHttpError(`the box sent a malformed content-length: ${length.slice(0, 40)}`, {
          neverSent: false,
        });
      }
      body = new LengthBody(connection, size);
      if (size <= SMALL_BODY) {
        // Read whole before answering: a body of bytes is sent with its length in one write, where a
        // stream costs the agent's server a pull per chunk; the connection is free again at once.
        const bytes = new Uint8Array(size);
        for (let at = 0, chunk; (chunk = await body.next()); at += chunk.length) bytes.set(chunk, at);
        done(true);
        return { status, headers, body: bytes };
      }
    } else body = new LengthBody(connection, Infinity); // until the box closes: never reused
    const stream = new ReadableStream<Uint8Array>({
      async pull(controller) {
        try {
          const chunk = await body.next();
          if (chunk) controller.enqueue(chunk);
          else {
            controller.close();
            done(body.size !== Infinity);
          }
        } catch (cause) {
          done(false);
          controller.error(
            new BoxHttpError(`the box's answer broke off: ${(cause as Error).message}`, {
              neverSent: false,
              cause,
            }),
          );
        }
      },
      cancel() {
        done(false);
      },
    });
    return { status, headers, body: stream };
  }

  /** A connection for one request: a kept one when allowed, else a fresh one (waiting at the cap). */
  async #acquire(options: { reuse: boolean; idempotent: boolean }): Promise<Connection> {
    if (this.#closed) throw closedError();
    if (options.reuse) {
      const now = performance.now();
      // The most recent first: the least likely to have been closed by the box.
      while (this.#idle.length) {
        const connection = this.#idle.pop()!;
        if (connection.ended || (!options.idempotent && now - connection.idleSince > POST_REUSE_MS)) {
          this.#destroy(connection);
          continue;
        }
        connection.busy = true;
        return connection;
      }
    }
    if (this.#open >= this.#limits.maxConnections) {
      if (this.#waiting.length >= MAX_WAITING) {
        throw new BoxHttpError(`${MAX_WAITING} requests already wait for a connection to the box`, {
          neverSent: true,
          code: "box_busy",
          status: 503,
        });
      }
      // What is handed over already counts as open: a kept connection, or a slot for a fresh one.
      const handed = await new Promise<Connection | "slot" | "closed">((resolve) =>
        this.#waiting.push(resolve)
      );
      if (handed === "closed") throw closedError();
      if (handed !== "slot") {
        if (options.idempotent && options.reuse) return handed;
        // Not good for this request (a fresh one is wanted): its slot goes to the fresh one.
        handed.closed = true;
        closeQuietly(handed.conn);
      }
    } else this.#open++;
    this.#opened++;
    try {
      return new Connection(await connect(this.#target));
    } catch (cause) {
      this.#open--;
      this.#wake();
      throw new BoxHttpError(`cannot reach the box: ${(cause as Error).message}`, { neverSent: true, cause });
    }
  }

  #release(connection: Connection): void {
    connection.busy = false;
    connection.reused = true;
    const waiter = this.#waiting.shift();
    if (waiter) {
      connection.busy = true;
      waiter(connection);
      return;
    }
    if (this.#closed) {
      this.#destroy(connection);
      return;
    }
    if (this.#idle.length >= this.#limits.maxIdle) {
      this.#destroy(connection);
      return;
    }
    connection.idleSince = performance.now();
    connection.watch(() => this.#drop(connection));
    this.#idle.push(connection);
    // One timer for the pool, not one per request (a timer is an op: it showed in the agent's profile).
    if (this.#sweeper === undefined) this.#armSweep();
  }

  #armSweep(): void {
    const sweeper = setTimeout(() => this.#sweep(), this.#limits.idleMs / 2);
    Deno.unrefTimer(sweeper); // an idle connection is no reason to keep the process alive
    this.#sweeper = sweeper;
  }

  /** Closes the connections idle for `idleMs` or more (so each lives idle for at most 1.5 × that). */
  #sweep(): void {
    this.#sweeper = undefined;
    const now = performance.now();
    for (const connection of [...this.#idle]) {
      if (now - connection.idleSince >= this.#limits.idleMs) this.#drop(connection);
    }
    if (this.#idle.length) this.#armSweep();
  }

  /** An idle connection the box closed (or that timed out) leaves the pool. */
  #drop(connection: Connection): void {
    const at = this.#idle.indexOf(connection);
    if (at < 0) return;
    this.#idle.splice(at, 1);
    this.#destroy(connection);
  }

  #destroy(connection: Connection): void {
    if (connection.closed) return;
    connection.closed = true;
    closeQuietly(connection.conn);
    this.#open--;
    this.#wake();
  }

  /** A slot freed: the first waiter gets it, to open a connection of its own. */
  #wake(): void {
    const waiter = this.#waiting.shift();
    if (!waiter) return;
    this.#open++;
    waiter("slot");
  }
}

/** Opens a connection to the box: its socket, or TCP with Nagle off and TLS pinned to its CA. */
async function connect(target: BoxTarget): Promise<Deno.Conn> {
  if ("socket" in target) return await Deno.connect({ transport: "unix", path: target.socket });
  const url = new URL(target.url);
  const hostname = url.hostname.replace(/^\[|\]$/g, "");
  const port = Number(url.port || (url.protocol === "https:" ? 443 : 80));
  const tcp = await Deno.connect({ hostname, port });
  tcp.setNoDelay(true);
  if (url.protocol !== "https:") return tcp;
  try {
    const tls = await Deno.startTls(tcp, { hostname, caCerts: target.caCerts });
    await tls.handshake();
    return tls;
  } catch (error) {
    try {
      tcp.close();
    } catch { /* closed with the TLS connection */ }
    throw error;
  }
}

function closedError(): BoxHttpError {
  return new BoxHttpError("the box's client is closed", { neverSent: true });
}

function closeQuietly(conn: Deno.Conn): void {
  try {
    conn.close();
  } catch { /* already closed (an abort) */ }
}
