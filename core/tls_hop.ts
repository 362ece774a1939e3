/**
 * The TLS hop of a guarded listener (`listen.ts`): TLS ended by `node:tls` on the connection the
 * listener accepted, and the plain bytes piped (through `pump.ts`) to a listener on a loopback port,
 * where they are served, since the runtime serves HTTP only on a connection it accepted. A
 * connection to that port that is not one of this hop's pipes is closed at once, and no more than the
 * pipes being dialled wait for theirs, so the inner port holds no more than the outer one lets in.
 *
 * The hop reads the connection's first bytes before it dials: a connection whose first request asks for
 * a WebSocket is served by `Deno.serveHttp`, any other by the runtime's own server (listen_direct.ts),
 * which answers ~0.25 ms sooner and cannot carry a WebSocket.
 *
 * @module
 */
import type { Deadlines } from "./deadlines.ts";
import type { Closable, Slot, Slots } from "./listen_slots.ts";
import { connEnd, type End, pump, type PumpOptions, type Reader } from "./pump.ts";

/**
 * What one connection's hop buffers in each direction before it stops reading the other side: per
 * connection, so small (a listener holds up to 1,024; at the pump's 4 MiB default that bound was
 * 8 GiB). A loopback hop refills a window this size in well under a millisecond.
 */
const HOP_WINDOW: PumpOptions = { highWaterBytes: 256 * 1024, lowWaterBytes: 64 * 1024 };

/** How long a loopback accept waits for the pipe whose connect it answers. */
const HAND_OVER_MS = 1000;

/** The part of `node:tls` the hop uses, loaded once a TLS listener starts (~30 ms to import). */
interface TlsTermination {
  /** Wraps a stranger's TCP connection in the server side of TLS with the listener's certificate. */
  wrap(conn: Deno.Conn): import("node:tls").TLSSocket;
}

/** Loads `node:tls` and makes the listener's secure context (once per listener). */
async function tlsTermination(cert: string, key: string): Promise<TlsTermination> {
  const [{ createSecureContext, TLSSocket }, { Duplex }] = await Promise.all([
    import("node:tls"),
    import("node:stream"),
  ]);
  const secureContext = createSecureContext({ cert, key });
  return {
    wrap(conn) {
      const raw = Duplex.from({ readable: conn.readable, writable: conn.writable });
      // An unheard 'error' event throws in the event loop: every close below may raise one.
      raw.on("error", () => {});
      const secure = new TLSSocket(raw, { isServer: true, secureContext });
      secure.on("error", () => {});
      return secure;
    },
  };
}

/**
 * Resolves with what `socket` emits first with `event` (its first argument), or null once it closes
 * first. `then` runs as it is emitted: a `data` chunk's taker pauses the socket there, or the chunks
 * after it flow on to no listener.
 */
function emitted<T>(
  socket: import("node:tls").TLSSocket,
  event: string,
  then?: () => void,
): Promise<{ value: T } | null> {
  return new Promise((resolve) => {
    if (socket.destroyed) return resolve(null);
    const done = (value: { value: T } | null) => {
      socket.off(event, onEvent);
      socket.off("close", onClose);
      if (value) then?.();
      resolve(value);
    };
    const onEvent = (value: T) => done({ value });
    const onClose = () => done(null);
    socket.once(event, onEvent);
    socket.once("close", onClose);
  });
}

/**
 * Whether the first bytes of a connection are a whole request head asking for a WebSocket, or may be
 * (the head is not whole in them): a WebSocket needs `Deno.serveHttp`'s server.
 */
export function mayAskForWebSocket(first: Uint8Array): boolean {
  const text = new TextDecoder("latin1").decode(first.subarray(0, 16 * 1024));
  const end = text.indexOf("\r\n\r\n");
  return end < 0 || /\r\nupgrade:[ \t]*websocket[ \t]*\r\n/i.test(text.slice(0, end + 2));
}

/**
 * A `node:tls` socket as a pump's side: what it decrypts becomes binary messages (`first`, read before
 * the pump began, the first of them), what it is sent is encrypted in order; its end is a normal close
 * (1000), an error a dropped connection (1006).
 */
function tlsSocketEnd(socket: import("node:tls").TLSSocket, name: string, first: Uint8Array): End {
  let finished = false;
  let drains: { mark: number; resolve: () => void }[] = [];
  const wake = () => {
    drains = drains.filter((drain) => {
      if (!finished && socket.writableLength > drain.mark) return true;
      drain.resolve();
      return false;
    });
  };
  socket.on("drain", wake);
  socket.once("close", () => {
    finished = true;
    wake();
  });
  return {
    name,
    ready: Promise.resolve(),
    start(reader: Reader) {
      let ended = false;
      const end = (code: number) => {
        if (ended) return;
        ended = true;
        reader.end({ code, reason: "" });
      };
      // A chunk node hands out is never written into again: no copy.
      socket.on("data", (chunk: Uint8Array) => reader.message({ binary: true, data: chunk }));
      socket.once("end", () => end(1000));
      socket.once("close", (hadError: boolean) => end(hadError ? 1006 : 1000));
      // Paused since `first` was read. A resume lets it flow from the next tick, after `first`, and a
      // pause the pump makes on taking `first` still holds it.
      socket.resume();
      reader.message({ binary: true, data: first });
      if (socket.destroyed) end(1006);
    },
    pause: () => void socket.pause(),
    resume: () => void socket.resume(),
    // node keeps what it is given until it is written: the pump's messages are bytes of their own.
    send: (message) => void socket.write(message.data),
    get backlog() {
      return socket.writableLength;
    },
    drained(mark) {
      if (finished || socket.writableLength <= mark) return Promise.resolve();
      return new Promise((resolve) => drains.push({ mark, resolve }));
    },
    close() {
      if (finished) return;
      finished = true;
      wake();
      socket.end();
    },
  };
}

/** Options of a {@linkcode TlsHop}. */
export interface TlsHopOptions {
  cert: string;
  key: string;
  /** A TLS handshake must finish within this. */
  handshakeMs: number;
  /** The first request's bytes must begin within this of the handshake. */
  headerMs: number;
  /** The listener's deadlines, on which the handshake's is armed. */
  deadlines: Deadlines;
  /** The listener's connections: a stranger's takes its place here. */
  slots: Slots;
  /** The listener's counters. */
  stats: { timedOut: number; refused: number };
  /** Names the listener in the line said when the certificate is refused. */
  where: string;
  log(line: string): void;
  /**
   * Serves HTTP on a loopback end of a pipe, for the stranger of `slot`; `webSockets`: its first request
   * may ask for a WebSocket ({@linkcode mayAskForWebSocket}).
   */
  serve(conn: Deno.Conn, slot: Slot, webSockets: boolean): void;
}

/** A stranger's connection piped to the loopback listener. */
interface Pipe {
  slot: Slot;
  /** Its first request may ask for a WebSocket. */
  webSockets: boolean;
}

/** One TLS listener's hop: its loopback listener, and the pipes to it by their local port. */
export class TlsHop {
  /** The loopback listener, whose connections go to {@linkcode TlsHop.handOver}. */
  readonly listener: Deno.Listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  #options: TlsHopOptions;
  #termination: Promise<TlsTermination>;
  /** The slot of each pipe, and whether it may carry a WebSocket, by the pipe's local port on the loopback listener. */
  #pipes = new Map<number, Pipe>();
  /** The loopback accept can run before the pipe's connect has resolved: it waits here for the pipe. */
  #awaited = new Map<number, (pipe: Pipe) => void>();
  /** Pipes dialling the loopback listener: no more accepted connections than this wait for a slot. */
  #dialling = 0;

  constructor(options: TlsHopOptions) {
    this.#options = options;
    this.#termination = tlsTermination(options.cert, options.key);
    // Settled now so that a certificate node:tls refuses is said once, not at every connection.
    this.#termination.catch((error) =>
      options.log(`listener ${options.where}: cannot serve TLS: ${(error as Error).message}`)
    );
  }

  /**
   * Terminates TLS on a stranger's TCP connection (within the handshake deadline) and pipes the plain
   * bytes to the loopback listener, where they are served; resolves once the connection is closed.
   */
  async pipe(outer: Deno.Conn, peer: Deno.NetAddr): Promise<void> {
    const { slots, stats } = this.#options;
    const sockets: Closable[] = [outer];
    const slot = slots.take(peer, sockets);
    const handshake = this.#options.deadlines.add(() => {
      stats.timedOut++;
      slot.close();
    });
    let port: number | undefined;
    try {
      // Without it Nagle and delayed ACKs stall each small answer ~40 ms on the hop (measured: p50 33 ms).
      (outer as Deno.TcpConn).setNoDelay(true);
      handshake.arm(this.#options.handshakeMs);
      const termination = await this.#termination;
      if (!slots.has(slot)) return; // the handshake deadline passed while node:tls loaded
      const secure = termination.wrap(outer);
      sockets.unshift({ close: () => secure.destroy() });
      if (!await emitted(secure, "secure")) return;
      // The first bytes say which server is to serve the connection; they are due as its headers are.
      // The rest waits unread (paused) until the pump takes them.
      handshake.arm(this.#options.headerMs);
      const first = (await emitted<Uint8Array>(secure, "data", () => secure.pause()))?.value;
      if (!first) return;
      handshake.disarm();
      const inner = await this.#dial();
      sockets.push(inner);
      if (!slots.has(slot)) return inner.close(); // closed (shut down) while it dialled
      inner.setNoDelay(true);
      port = (inner.localAddr as Deno.NetAddr).port;
      const pipe = { slot, webSockets: mayAskForWebSocket(first) };
      this.#pipes.set(port, pipe);
      this.#awaited.get(port)?.(pipe);
      await pump(tlsSocketEnd(secure, "the client", first), connEnd(inner, "the loopback hop"), HOP_WINDOW);
    } catch {
      // A failed or late handshake, the loopback listener gone (shut down): nothing to serve.
    } finally {
      handshake.disarm();
      if (port !== undefined) this.#pipes.delete(port);
      slot.close();
    }
  }

  /** Hands a loopback connection to the pipe that dialled it; anything else is closed at once. */
  async handOver(conn: Deno.Conn): Promise<void> {
    const port = (conn.remoteAddr as Deno.NetAddr).port;
    let pipe = this.#pipes.get(port);
    // Only this hop's pipes dial the loopback port, and only while one is dialling may an accept run
    // ahead of the connect it answers; anything else has no stranger behind it.
    if (!pipe && this.#awaited.size < this.#dialling) {
      pipe = await new Promise<Pipe | undefined>((resolve) => {
        const timer = setTimeout(() => resolve(undefined), HAND_OVER_MS);
        this.#awaited.set(port, (found) => (clearTimeout(timer), resolve(found)));
      });
      this.#awaited.delete(port);
    }
    if (!pipe) {
      this.#options.stats.refused++;
      try {
        return conn.close();
      } catch {
        return; /* gone */
      }
    }
    (conn as Deno.TcpConn).setNoDelay(true);
    this.#options.serve(conn, pipe.slot, pipe.webSockets);
  }

  /** Stops the loopback listener (the pipes close with their slots). */
  close(): void {
    try {
      this.listener.close();
    } catch { /* closed */ }
  }

  /** Dials the loopback listener, counted while it dials (see {@linkcode TlsHop.handOver}). */
  async #dial(): Promise<Deno.TcpConn> {
    this.#dialling++;
    try {
      return await Deno.connect({ hostname: "127.0.0.1", port: (this.listener.addr as Deno.NetAddr).port });
    } finally {
      this.#dialling--;
    }
  }
}
