/**
 * Listeners that a stranger cannot starve. `Deno.serve` owns its accept loop: it dies on `EMFILE`
 * (`Uncaught (in promise) Http: Too many open files`, seen with 300 idle sockets under `ulimit -n 256`)
 * and keeps idle, half-open and never-handshaking connections forever (400 of 400 still open after 60 s;
 * 20,000 of them took dockd from 87 to 403 MB). So the ports a stranger can reach accept here instead:
 *
 * - an accept loop that survives running out of file descriptors (refuse, log once, back off, recover);
 * - a cap on connections open at once, in all and per peer address (past it, closed at once);
 * - a TLS handshake deadline, a deadline for a request's headers, and an idle timeout for a connection
 *   with no request in flight (a streaming answer, an upgraded WebSocket, counts as in flight);
 * - HTTP served per connection by `Deno.serveHttp` (hidden from Deno 2's types but kept: the one API that
 *   serves HTTP on a connection the caller accepted; measured 15-30 µs a request above `Deno.serve`, on
 *   loopback TCP and on a unix socket). `Deno.serve`'s own server on one connection
 *   (`Deno[Deno.internal].serveHttpOnConnection`) is as fast as `Deno.serve` but closes an upgraded
 *   WebSocket as soon as the connection's HTTP ends (measured on Deno 2.9.6: no message got through);
 * - TLS ended by `node:tls` on the connection this loop accepted, never by a listener of its own that a
 *   local process could dial past these limits (see {@linkcode serveGuarded}; the hop: `tls_hop.ts`,
 *   its bytes through `pump.ts`).
 *
 * @module
 */
import { Deadlines } from "./deadlines.ts";
import { DockError } from "../client/errors.ts";
import { positiveFromEnv } from "./knobs.ts";
import { type Closable, type Slot, Slots } from "./listen_slots.ts";
import { TlsHop } from "./tls_hop.ts";
import {
  answer,
  DirectConn,
  type DirectServing,
  type HttpServing,
  serveDirect,
  serveHttpOnConnection,
} from "./listen_direct.ts";

/**
 * The process's soft limit on open files (Deno raises it to the hard limit at start; measured), from
 * `/proc/self/limits`; 1,024 where that cannot be read.
 */
export function openFileLimit(): number {
  try {
    const line = Deno.readTextFileSync("/proc/self/limits").split("\n").find((l) =>
      l.startsWith("Max open files")
    );
    const soft = Number(line?.split(/\s{2,}/)[1]);
    return Number.isInteger(soft) && soft > 0 ? soft : 1024;
  } catch {
    return 1024;
  }
}

/**
 * Limits from the environment (`DOCK_LISTEN_MAX_CONNECTIONS`, `DOCK_LISTEN_MAX_PER_PEER`,
 * `DOCK_LISTEN_HANDSHAKE_MS`, `DOCK_LISTEN_HEADER_MS`, `DOCK_LISTEN_IDLE_MS`); unset: the defaults.
 */
export function listenLimitsFromEnv(env: { get(key: string): string | undefined } = Deno.env): ListenLimits {
  return {
    maxConnections: positiveFromEnv("DOCK_LISTEN_MAX_CONNECTIONS", env),
    maxPerPeer: positiveFromEnv("DOCK_LISTEN_MAX_PER_PEER", env),
    handshakeMs: positiveFromEnv("DOCK_LISTEN_HANDSHAKE_MS", env),
    headerMs: positiveFromEnv("DOCK_LISTEN_HEADER_MS", env),
    idleMs: positiveFromEnv("DOCK_LISTEN_IDLE_MS", env),
  };
}

/**
 * Reads `HOST:PORT` (`[::]:1379` for IPv6; a bare `PORT` binds every IPv4 address), or null for `off`.
 * `what` names the setting in the error (`DOCK_LISTEN`, `listen`); blank text means `fallback`.
 */
export function parseListenAddress(
  value: string,
  options: { what: string; fallback: string; field?: string },
): { hostname: string; port: number } | null {
  const text = value.trim() || options.fallback;
  if (text === "off") return null;
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:\s]+)):(\d{1,5})$/.exec(text) ?? /^()()(\d{1,5})$/.exec(text);
  const port = Number(match?.[3]);
  if (!match || port > 65535) {
    throw new DockError(
      options.field ? "invalid_request" : "usage",
      `${options.what} must be HOST:PORT (such as 0.0.0.0:${options.fallback.split(":").at(-1)} or [::]:${
        options.fallback.split(":").at(-1)
      }) or off, got ${JSON.stringify(value)}`,
      options.field ? { status: 400, detail: { field: options.field } } : {},
    );
  }
  return { hostname: match[1] || match[2] || "0.0.0.0", port };
}

/** Limits of a {@linkcode serveGuarded} listener. */
export interface ListenLimits {
  /**
   * Connections open at once, in all: a quarter of the open-file limit in descriptors (a TLS connection
   * takes three), at most 1,024, so one listener can never take the descriptors the rest of the process
   * needs. @default {min(1024, openFileLimit() / 4 or / 12 with TLS)}
   */
  maxConnections?: number;
  /** Connections open at once from one peer address. @default {256} */
  maxPerPeer?: number;
  /** A TLS handshake must finish within this. @default {10_000} */
  handshakeMs?: number;
  /** A new connection's first request headers must arrive within this. @default {15_000} */
  headerMs?: number;
  /** A connection with no request in flight is closed after this. @default {120_000} */
  idleMs?: number;
}

/** Where a {@linkcode serveGuarded} listener listens: a TCP port (with TLS or not), or a unix socket. */
export type ListenTarget =
  | { hostname: string; port: number }
  | { hostname: string; port: number; cert: string; key: string }
  | { path: string };

/**
 * The peer every connection to a unix socket is taken to be: they all come from this machine's users the
 * socket's mode lets in, so the per-peer cap is the total cap there.
 */
const LOCAL_PEER: Deno.NetAddr = { transport: "tcp", hostname: "unix-socket", port: 0 };

/** What a handler learns of the connection a request came on. */
export interface ConnectionInfo {
  remoteAddr: Deno.NetAddr;
}

/** A request handler of a {@linkcode serveGuarded} listener. */
export type GuardedHandler = (request: Request, info: ConnectionInfo) => Response | Promise<Response>;

/** Counters of a guarded listener. */
export interface ListenStats {
  open: number;
  accepted: number;
  /** Closed at once: over a cap. */
  refused: number;
  /** Closed by a deadline: handshake, headers or idle. */
  timedOut: number;
  /** Accepts that failed for lack of file descriptors (or another accept error). */
  acceptErrors: number;
}

/** A running guarded listener. */
export interface GuardedServer {
  /** The TCP address it listens on (for a unix socket: a stand-in with port 0; the socket is its path). */
  addr: Deno.NetAddr;
  stats(): ListenStats;
  /** Stops accepting and closes every connection. */
  shutdown(): Promise<void>;
  /** Resolves once shut down. */
  finished: Promise<void>;
}

/** Options of {@linkcode serveGuarded}. */
export interface ServeGuardedOptions extends ListenLimits {
  /** Stops the listener. */
  signal?: AbortSignal;
  /** Where the one line said on a run of accept errors goes (the process's log: no fallback to stderr). */
  log: (line: string) => void;
  /** Answers a handler that threw. @default {a plain 500} */
  onError?: (error: unknown) => Response;
  /**
   * Where this listener's clients find WebSockets, when not here: its plain connections are then served
   * by the runtime's own server, ~0.25 ms a request sooner on an idle machine (listen_direct.ts), and a
   * WebSocket request is refused (400 `websocket_elsewhere`) naming this. A TLS listener serves WebSockets either way.
   * @default {WebSockets served here}
   */
  webSocketsAt?: string;
}

interface HttpConn
  extends AsyncIterable<{ request: Request; respondWith(r: Response | Promise<Response>): Promise<void> }> {
  close(): void;
}

/** One request on a connection served by `Deno.serveHttp`. */
type HttpEvent = { request: Request; respondWith(r: Response | Promise<Response>): Promise<void> };

// Soft-removed from Deno 2's types, present and working at run time (see the module doc).
const serveHttp = (Deno as unknown as { serveHttp(conn: Deno.Conn): HttpConn }).serveHttp;

/**
 * A connection's socket, and the HTTP connection once one is served on it. `Deno.serveHttp` takes the
 * socket over: closing it afterwards only throws BadResource, and the error is built with its stack
 * (two a connection, ~25 µs each, measured on `dock hook`'s one-request connections). So once served,
 * the HTTP connection is what gets closed, and a slot closes the socket only while nothing serves it.
 */
class ServedConn implements Closable {
  #conn: Deno.Conn;
  #http: HttpConn | undefined;
  #inFlight = 0;
  #closing = false;
  #upgraded = false;

  constructor(conn: Deno.Conn) {
    this.#conn = conn;
  }

  /** Serves HTTP on the socket (once). */
  serve(): HttpConn {
    return this.#http ??= serveHttp(this.#conn);
  }

  /** A request came: it is no longer idle. */
  began(): void {
    this.#inFlight++;
  }

  /** A request was answered with a 101: the socket is a WebSocket's now, which nothing here closes. */
  upgrade(): void {
    this.#upgraded = true;
  }

  /** Whether it was handed to a WebSocket. */
  get upgraded(): boolean {
    return this.#upgraded;
  }

  /**
   * A request's answer went out. Returns whether the connection is idle now (no answer in flight, still
   * HTTP's); when asked to close meanwhile, it ends once none is in flight.
   */
  answered(): boolean {
    if (--this.#inFlight > 0) return false;
    if (this.#closing) this.end();
    return !this.#upgraded;
  }

  /** Ends the connection: the HTTP connection, or the socket while none was served on it. */
  end(): void {
    if (this.#upgraded) return;
    try {
      (this.#http ?? this.#conn).close();
    } catch { /* closed */ }
  }

  /**
   * What a slot closes (a shutdown, a deadline, the connection's end): the socket while no HTTP was served
   * on it; once served, the HTTP connection at once when idle, else as its last answer in flight goes out.
   */
  close(): void {
    if (!this.#http) return this.end();
    this.#closing = true;
    if (this.#inFlight === 0) this.end();
  }
}

/** A listener's limits, every default filled in. */
type Limits = Required<ListenLimits>;

/** The limits of a listener on `target`: the options', else {@linkcode ListenLimits}' defaults. */
function limitsOf(target: ListenTarget, options: ListenLimits): Limits {
  return {
    // A TLS connection costs three descriptors (outer, pipe, its loopback end), a plain one one.
    maxConnections: options.maxConnections ??
      Math.min(1024, Math.floor(openFileLimit() / ("cert" in target ? 12 : 4))),
    maxPerPeer: "path" in target ? Infinity : options.maxPerPeer ?? 256,
    handshakeMs: options.handshakeMs ?? 10_000,
    headerMs: options.headerMs ?? 15_000,
    idleMs: options.idleMs ?? 120_000,
  };
}

/**
 * Serves HTTP on `conn` (plain, or the loopback end of a TLS pipe: `piped`) for the stranger of `slot`,
 * closing it at the header deadline and when idle.
 */
async function serveHttpOn(
  socket: ServedConn,
  slot: Slot,
  piped: boolean,
  serving: HttpServing,
): Promise<void> {
  const { deadlines, limits, stats } = serving;
  const deadline = deadlines.add(() => {
    stats.timedOut++;
    socket.end();
    slot.close();
  });
  try {
    deadline.arm(limits.headerMs);
    // Once HTTP is served on it, the connection belongs to the HTTP layer: closing it goes through it.
    const http = socket.serve();
    const info: ConnectionInfo = { remoteAddr: slot.peer };
    for await (const event of http) {
      deadline.disarm();
      socket.began();
      // Not awaited: an HTTP/2 connection carries requests at once. A 101 (a WebSocket) ends the loop:
      // the connection left HTTP. Behind the TLS hop the pipe keeps the slot until the socket closes;
      // a plain connection is the socket's now.
      respond(event, info, () => socket.upgrade(), serving).finally(() => {
        if (socket.answered()) deadline.arm(limits.idleMs);
      });
    }
  } catch {
    // A reset, a timeout's close: the connection is done either way.
  } finally {
    deadline.disarm();
    socket.end(); // not a WebSocket's
    if (!socket.upgraded || !piped) slot.close();
  }
}

/** Answers one request with the handler (a handler that threw: `onError`'s answer); tells `onUpgrade` of a 101. */
async function respond(
  event: HttpEvent,
  info: ConnectionInfo,
  onUpgrade: () => void,
  serving: HttpServing,
): Promise<void> {
  const response = await answer(event.request, info, serving);
  if (response.status === 101) onUpgrade();
  await event.respondWith(response).catch(() => {});
}

/** What an accept loop shares with its listener. */
export interface Accepting {
  stats: ListenStats;
  log(line: string): void;
  stopped(): boolean;
}

/** Accepts on `from` until stopped, outliving running out of file descriptors. */
export async function acceptLoop(
  from: Deno.Listener,
  name: string,
  onConn: (conn: Deno.Conn) => void,
  accepting: Accepting,
): Promise<void> {
  let backoff = 0;
  while (!accepting.stopped()) {
    let conn: Deno.Conn;
    try {
      conn = await from.accept();
    } catch (error) {
      if (accepting.stopped() || error instanceof Deno.errors.BadResource) break;
      // Out of file descriptors (EMFILE/ENFILE) or a transient accept error: the pending connections
      // wait in the kernel's backlog while open ones finish and give theirs back.
      accepting.stats.acceptErrors++;
      if (backoff === 0) accepting.log(`listener ${name}: cannot accept: ${(error as Error).message}`);
      backoff = Math.min(Math.max(backoff * 2, 10), 1000);
      await new Promise((resolve) => setTimeout(resolve, backoff));
      continue;
    }
    backoff = 0;
    onConn(conn);
  }
}

/**
 * Serves `handler` on a TCP (or TLS) port with the limits of {@linkcode ListenLimits}.
 *
 * TLS is terminated here, by `node:tls` on the connection this loop accepted (`tls_hop.ts`), not by
 * `Deno.listenTls`: a `Deno.listenTls` connection whose handshake never started keeps its descriptor
 * after `close()` until the peer closes it (measured on Deno 2.9.6: 50 silent connections, each closed,
 * still held 50 descriptors; a plain TCP connection's and a `node:tls` socket's close release at once).
 * It used to sit behind this loop on a loopback port with no cap of its own, which any local process
 * could dial: 240 connections held there under `ulimit -n 256` ended dockd. The decrypted bytes still
 * reach HTTP through a hop, since `Deno.serveHttp` serves only a connection the runtime accepted: a
 * plain TCP listener on a loopback port, where a connection that is not one of this listener's pipes is
 * closed at once (its close releases it) and no more than the pipes being dialled wait for theirs, so
 * the inner port holds no more than the outer one lets in.
 */
export function serveGuarded(
  target: ListenTarget,
  handler: GuardedHandler,
  options: ServeGuardedOptions,
): GuardedServer {
  options = Object.fromEntries(
    Object.entries(options).filter(([, value]) => value !== undefined),
  ) as unknown as ServeGuardedOptions;
  const limits = limitsOf(target, options);
  const log = options.log;
  const listener = "path" in target
    ? Deno.listen({ transport: "unix", path: target.path })
    : Deno.listen({ hostname: target.hostname, port: target.port });
  const addr = "path" in target ? LOCAL_PEER : listener.addr as Deno.NetAddr;
  const where = "path" in target ? target.path : `${addr.hostname}:${addr.port}`;
  const stats: ListenStats = { open: 0, accepted: 0, refused: 0, timedOut: 0, acceptErrors: 0 };
  // Every connection's handshake, header and idle deadline, checked together: a deadline fires up to a
  // quarter of the shortest limit late (at most a second).
  const deadlines = new Deadlines({
    tickMs: Math.max(5, Math.min(1000, Math.min(limits.handshakeMs, limits.headerMs, limits.idleMs) / 4)),
  });
  const slots = new Slots(stats);
  const serving: HttpServing = {
    handler,
    onError: options.onError,
    deadlines,
    limits,
    stats,
    secure: "cert" in target,
  };
  const hop = "cert" in target
    ? new TlsHop({
      cert: target.cert,
      key: target.key,
      handshakeMs: limits.handshakeMs,
      headerMs: limits.headerMs,
      deadlines,
      slots,
      stats,
      where,
      log,
      // A connection whose first request asks for a WebSocket is served by `Deno.serveHttp`, which
      // can carry one; any other by the runtime's own server, ~0.25 ms sooner (listen_direct.ts).
      serve: (conn, slot, webSockets) =>
        webSockets || !direct
          ? void serveHttpOn(new ServedConn(conn), slot, true, serving)
          : serveDirect(new DirectConn(conn), slot, direct, true),
    })
    : null;
  // Served directly: behind the hop, a connection whose first request asks for no WebSocket; on a plain
  // listener, every connection when WebSockets are served elsewhere.
  const webSocketsAt = hop
    ? "a connection of their own (a first request that asks for one)"
    : options.webSocketsAt;
  const direct: DirectServing | null = webSocketsAt !== undefined && serveHttpOnConnection
    ? { ...serving, webSocketsAt }
    : null;
  let stopped = false;
  const accepting: Accepting = { stats, log, stopped: () => stopped };

  const admit = (conn: Deno.Conn) => {
    stats.accepted++;
    const remote = "path" in target ? LOCAL_PEER : conn.remoteAddr as Deno.NetAddr;
    if (slots.full(remote, limits)) {
      stats.refused++;
      try {
        conn.close();
      } catch { /* gone */ }
      return;
    }
    if (hop) return void hop.pipe(conn, remote);
    // An answer goes out in more than one write when its body streams (the relay's, SSE, a compressed
    // body's last bytes): with Nagle the last write waits for the client's delayed ACK (~40 ms).
    // Measured: `GET info` through the agent over the SSH transport p50 47 ms → 2.6 ms, over TLS 4.7 →
    // 2.4 ms (the headers came at ~4 ms either way; the body's 11-byte tail waited).
    if (!("path" in target)) (conn as Deno.TcpConn).setNoDelay(true);
    if (direct) {
      const socket = new DirectConn(conn);
      return serveDirect(socket, slots.take(remote, [socket]), direct);
    }
    const socket = new ServedConn(conn);
    serveHttpOn(socket, slots.take(remote, [socket]), false, serving);
  };
  const { promise: finished, resolve: finish } = Promise.withResolvers<void>();
  const shutdown = () => {
    if (!stopped) {
      stopped = true;
      try {
        listener.close();
      } catch { /* closed */ }
      hop?.close();
      slots.closeAll();
      deadlines.close();
      finish();
    }
    return finished;
  };
  options.signal?.addEventListener("abort", () => shutdown(), { once: true });
  acceptLoop(listener, where, admit, accepting);
  if (hop) acceptLoop(hop.listener, `${where} (loopback hop)`, (conn) => void hop.handOver(conn), accepting);
  return { addr, stats: () => ({ ...stats }), shutdown, finished };
}
