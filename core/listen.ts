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
 *   serves HTTP on a connection the caller accepted; measured ~0.25 ms a request above `Deno.serve` on
 *   loopback).
 *
 * @module
 */
import { Deadlines } from "./deadlines.ts";
import { DockError } from "../client/errors.ts";
import { positiveFromEnv } from "./knobs.ts";

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
  /** Aborts when the connection closes (an upgraded WebSocket's owner may want it). */
  closed: AbortSignal;
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
  /** Where the one line said on a run of accept errors goes. @default {console.error} */
  log?: (line: string) => void;
  /** Answers a handler that threw. @default {a plain 500} */
  onError?: (error: unknown) => Response;
}

interface HttpConn
  extends AsyncIterable<{ request: Request; respondWith(r: Response | Promise<Response>): Promise<void> }> {
  close(): void;
}

// Soft-removed from Deno 2's types, present and working at run time (see the module doc).
const serveHttp = (Deno as unknown as { serveHttp(conn: Deno.Conn): HttpConn }).serveHttp;

/** One accepted connection from a stranger, however many sockets serve it. */
interface Slot {
  peer: Deno.NetAddr;
  /** Closes every socket of the connection and gives its place back. */
  close(): void;
}

/**
 * Serves `handler` on a TCP (or TLS) port with the limits of {@linkcode ListenLimits}.
 *
 * TLS goes through a hop: `Deno.listenTls` keeps a connection's descriptor until the peer closes it when
 * its handshake never started — `close()` does not release it (measured: 300 silent connections held
 * 300 descriptors after every close; a plain TCP connection's close releases at once). So strangers
 * meet a plain TCP accept loop, whose closes work, and each connection within the limits is piped to a
 * TLS listener on a loopback port of its own, where the handshake happens. Closing the pipe ends both.
 */
export function serveGuarded(
  target: ListenTarget,
  handler: GuardedHandler,
  options: ServeGuardedOptions = {},
): GuardedServer {
  options = Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined));
  const limits = {
    // A TLS connection costs three descriptors (outer, pipe, loopback TLS), a plain one one.
    maxConnections: options.maxConnections ??
      Math.min(1024, Math.floor(openFileLimit() / ("cert" in target ? 12 : 4))),
    maxPerPeer: "path" in target ? Infinity : options.maxPerPeer ?? 256,
    handshakeMs: options.handshakeMs ?? 10_000,
    headerMs: options.headerMs ?? 15_000,
    idleMs: options.idleMs ?? 120_000,
  };
  const log = options.log ?? ((line: string) => console.error(line));
  const listener = "path" in target
    ? Deno.listen({ transport: "unix", path: target.path })
    : Deno.listen({ hostname: target.hostname, port: target.port });
  const addr = "path" in target ? LOCAL_PEER : listener.addr as Deno.NetAddr;
  const where = "path" in target ? target.path : `${addr.hostname}:${addr.port}`;
  const tls = "cert" in target
    ? Deno.listenTls({ hostname: "127.0.0.1", port: 0, cert: target.cert, key: target.key })
    : null;
  const stats: ListenStats = { open: 0, accepted: 0, refused: 0, timedOut: 0, acceptErrors: 0 };
  // Every connection's handshake, header and idle deadline, checked together: a deadline fires up to a
  // quarter of the shortest limit late (at most a second).
  const deadlines = new Deadlines({
    tickMs: Math.max(5, Math.min(1000, Math.min(limits.handshakeMs, limits.headerMs, limits.idleMs) / 4)),
  });
  const perPeer = new Map<string, number>();
  const slots = new Set<Slot>();
  /** TLS hop: the slot of each pipe, by the pipe's local port on the loopback TLS listener. */
  const pipes = new Map<number, Slot>();
  /** The loopback accept can run before the pipe's connect has resolved: it waits here for the slot. */
  const awaited = new Map<number, (slot: Slot) => void>();
  let stopped = false;

  const take = (peer: Deno.NetAddr, sockets: { close(): void }[]): Slot => {
    let done = false;
    const slot: Slot = {
      peer,
      close() {
        if (done) return;
        done = true;
        slots.delete(slot);
        stats.open--;
        const left = (perPeer.get(peer.hostname) ?? 1) - 1;
        if (left > 0) perPeer.set(peer.hostname, left);
        else perPeer.delete(peer.hostname);
        for (const socket of sockets) {
          try {
            socket.close();
          } catch { /* already closed */ }
        }
      },
    };
    slots.add(slot);
    stats.open++;
    perPeer.set(peer.hostname, (perPeer.get(peer.hostname) ?? 0) + 1);
    return slot;
  };

  /** Serves HTTP on `conn` (plain, or the TLS end of a pipe) for the stranger of `slot`. */
  const serveHttpOn = async (conn: Deno.Conn, slot: Slot, handshake?: () => Promise<unknown>) => {
    const closed = new AbortController();
    let inFlight = 0;
    let wasUpgraded = false;
    // Once HTTP is served on it, the connection belongs to the HTTP layer: closing it goes through it.
    let http: HttpConn | undefined;
    const deadline = deadlines.add(() => {
      stats.timedOut++;
      try {
        http?.close();
      } catch { /* closed */ }
      try {
        conn.close();
      } catch { /* closed */ }
      slot.close();
    });
    try {
      if (handshake) {
        deadline.arm(limits.handshakeMs);
        await handshake();
      }
      deadline.arm(limits.headerMs);
      http = serveHttp(conn);
      const info: ConnectionInfo = { remoteAddr: slot.peer, closed: closed.signal };
      for await (const event of http) {
        deadline.disarm();
        inFlight++;
        // Not awaited: an HTTP/2 connection carries requests at once. A 101 (a WebSocket) ends the loop:
        // the connection left HTTP. Behind the TLS hop the pipe keeps the slot until the socket closes;
        // a plain connection is the socket's now.
        respond(event, info, () => wasUpgraded = true).finally(() => {
          if (--inFlight === 0 && !wasUpgraded) deadline.arm(limits.idleMs);
        });
      }
    } catch {
      // A failed handshake, a reset, a timeout's close: the connection is done either way.
    } finally {
      deadline.disarm();
      if (!wasUpgraded) {
        closed.abort();
        try {
          conn.close();
        } catch { /* closed */ }
      }
      if (!wasUpgraded || !handshake) slot.close();
    }
  };

  /** Pipes a stranger's TCP connection to the loopback TLS listener, where it is served. */
  const pipe = async (outer: Deno.Conn, peer: Deno.NetAddr) => {
    let inner: Deno.Conn | undefined;
    const sockets: { close(): void }[] = [outer];
    const slot = take(peer, sockets);
    try {
      inner = await Deno.connect({ hostname: "127.0.0.1", port: (tls!.addr as Deno.NetAddr).port });
      sockets.push(inner);
      // Without it Nagle and delayed ACKs stall each small answer ~40 ms on the hop (measured: p50 33 ms).
      (outer as Deno.TcpConn).setNoDelay(true);
      (inner as Deno.TcpConn).setNoDelay(true);
      const port = (inner.localAddr as Deno.NetAddr).port;
      pipes.set(port, slot);
      awaited.get(port)?.(slot);
      const copy = async (from: Deno.Conn, to: Deno.Conn) => {
        const buffer = new Uint8Array(64 * 1024);
        try {
          while (true) {
            const n = await from.read(buffer);
            if (n === null) break;
            let written = 0;
            while (written < n) written += await to.write(buffer.subarray(written, n));
          }
        } catch { /* either side closed */ }
      };
      await Promise.race([copy(outer, inner), copy(inner, outer)]);
      pipes.delete(port);
    } catch {
      // The loopback listener is gone (shut down): nothing to serve.
    } finally {
      slot.close();
    }
  };

  const tlsAcceptLoop = async () => {
    while (!stopped && tls) {
      let conn: Deno.TlsConn;
      try {
        conn = await tls.accept();
      } catch (error) {
        if (stopped || error instanceof Deno.errors.BadResource) break;
        await new Promise((resolve) => setTimeout(resolve, 10));
        continue;
      }
      handOver(conn);
    }
  };

  const handOver = async (conn: Deno.TlsConn) => {
    const port = (conn.remoteAddr as Deno.NetAddr).port;
    const slot = pipes.get(port) ?? await new Promise<Slot | undefined>((resolve) => {
      const timer = setTimeout(() => resolve(undefined), 1000);
      awaited.set(port, (found) => (clearTimeout(timer), resolve(found)));
    });
    awaited.delete(port);
    // Only our own pipes dial the loopback listener; anything else has no stranger behind it.
    if (!slot) return conn.close();
    (conn as unknown as Deno.TcpConn).setNoDelay?.(true);
    serveHttpOn(conn, slot, () => conn.handshake());
  };

  const respond = async (
    event: { request: Request; respondWith(r: Response | Promise<Response>): Promise<void> },
    info: ConnectionInfo,
    onUpgrade: () => void,
  ) => {
    let response: Response;
    try {
      response = await handler(event.request, info);
    } catch (error) {
      response = options.onError?.(error) ?? new Response("internal error", { status: 500 });
    }
    if (response.status === 101) onUpgrade();
    await event.respondWith(response).catch(() => {});
  };

  const acceptLoop = async () => {
    let backoff = 0;
    while (!stopped) {
      let conn: Deno.Conn;
      try {
        conn = await listener.accept();
      } catch (error) {
        if (stopped || error instanceof Deno.errors.BadResource) break;
        // Out of file descriptors (EMFILE/ENFILE) or a transient accept error: the pending connections
        // wait in the kernel's backlog while open ones finish and give theirs back.
        stats.acceptErrors++;
        if (backoff === 0) {
          log(`listener ${where}: cannot accept: ${(error as Error).message}`);
        }
        backoff = Math.min(Math.max(backoff * 2, 10), 1000);
        await new Promise((resolve) => setTimeout(resolve, backoff));
        continue;
      }
      backoff = 0;
      stats.accepted++;
      const remote = "path" in target ? LOCAL_PEER : conn.remoteAddr as Deno.NetAddr;
      const fromPeer = perPeer.get(remote.hostname) ?? 0;
      if (stats.open >= limits.maxConnections || fromPeer >= limits.maxPerPeer) {
        stats.refused++;
        try {
          conn.close();
        } catch { /* gone */ }
        continue;
      }
      if (tls) pipe(conn, remote);
      else serveHttpOn(conn, take(remote, [conn]));
    }
  };
  const { promise: finished, resolve: finish } = Promise.withResolvers<void>();
  const shutdown = () => {
    if (!stopped) {
      stopped = true;
      for (const closable of [listener, tls]) {
        try {
          closable?.close();
        } catch { /* closed */ }
      }
      for (const slot of [...slots]) slot.close();
      deadlines.close();
      finish();
    }
    return finished;
  };
  options.signal?.addEventListener("abort", () => shutdown(), { once: true });
  acceptLoop();
  tlsAcceptLoop();
  return { addr, stats: () => ({ ...stats }), shutdown, finished };
}
