/**
 * The one byte pump every relay runs: the agent's attach relay (the app's WebSocket ↔ the box's), the
 * box's attach (a WebSocket ↔ the PTY running `tmux attach`), the box's tunnel (a WebSocket ↔ a TCP
 * connection to a loopback port), the agent's forwards and proxy (a TCP connection ↔ the box's tunnel,
 * the browser's WebSocket ↔ a dev server's). Each side is an {@linkcode End}; `pump(a, b)` copies
 * messages both ways with one policy for backpressure and one for closing.
 *
 * **Backpressure.** Once a side's send backlog passes the high-water mark (4 MiB), the pump stops
 * reading the other side and reads it again when the backlog is down to the low-water mark (1 MiB).
 * Unread bytes then back up where they come from: in the kernel's socket buffers, in the box's own
 * pump, in the PTY, where the tmux client blocks and later redraws. A side that cannot stop reading
 * (the platform `WebSocket` has no way to) is closed instead once the other side's backlog passes a
 * limit (`maxBacklogBytes`, the high-water mark unless told): a client that outruns its target by that
 * much is cut off rather than buffered without end.
 *
 * **Closing.** The first side to end (its peer closed, its connection dropped, its program exited)
 * ends the pump, and the other side is closed with what the first one said ({@linkcode passOn}): the
 * same code and reason when a close frame may carry them, no code for none (1005), and 1011 "the
 * connection to … was lost" for a connection that just dropped (1006) or failed. An error on either
 * side (a failed read or write) is such a drop: both sides are closed. A side may refuse a message by
 * throwing {@linkcode RefusedMessage}: the sender is closed with its code. An abort of `signal` (a
 * laptop's pairing revoked) closes both sides with 1008 and the abort's reason.
 *
 * Nothing is read from either side before both are ready (a server WebSocket's handshake done), so
 * nothing is sent to a socket not yet open, and a PTY starts only once its terminal can show it.
 *
 * @module
 */
import { sleep } from "../client/timers.ts";

/** One message crossing a pump: a WebSocket message, or a chunk of a byte stream (always binary). */
export interface Message {
  binary: boolean;
  data: Uint8Array;
}

/** How a side closed, or how to close one: a WebSocket close code (1005: none) and reason. */
export interface Close {
  code: number;
  reason: string;
}

/** What a side tells the pump. */
export interface Reader {
  /** A message read from the side. */
  message(message: Message): void;
  /** The side ended: its peer's close (1006 when the connection dropped). Called once. */
  end(close: Close): void;
}

/** One side of a pump. Adapters: {@linkcode webSocketEnd}, {@linkcode messageSocketEnd}, {@linkcode connEnd}, `ptyEnd` (`pty_end.ts`). */
export interface End {
  /** Names the side in close reasons ("the client", "box 'b'"). */
  readonly name: string;
  /** Resolves once the side can send, or has ended. */
  readonly ready: Promise<void>;
  /** Starts reading into `reader`; called once, when both sides are ready. */
  start(reader: Reader): void;
  /** Stops reading until {@linkcode End.resume}; absent when the side cannot stop reading. */
  pause?(): void;
  resume?(): void;
  /** Sends one message. Throws {@linkcode RefusedMessage} to have the sender closed. */
  send(message: Message): void;
  /** Bytes given to `send` and not yet written. */
  readonly backlog: number;
  /** Resolves once the backlog is down to `mark` bytes, or the side is closed. */
  drained(mark: number): Promise<void>;
  /**
   * Closes the side after what it was sent is written, with a WebSocket close code (none when
   * undefined) and reason; other kinds of side ignore them. Closing twice does nothing.
   */
  close(code: number | undefined, reason: string): void;
}

/** Thrown by {@linkcode End.send} to refuse a message: the sending side is closed with `close`. */
export class RefusedMessage extends Error {
  readonly close: Close;

  constructor(code: number, reason: string) {
    super(reason);
    this.name = "RefusedMessage";
    this.close = { code, reason };
  }
}

/** The default high-water mark: past it, a pump stops reading the other side. */
const HIGH_WATER_BYTES = 4 * 1024 * 1024;
/** The default low-water mark: at it, a paused side is read again. */
const LOW_WATER_BYTES = 1024 * 1024;
/** Close code for "the connection was lost" (RFC 6455 "internal error"). */
export const CLOSE_LOST = 1011;
/** Close code for a revoked laptop and for input past the limit (RFC 6455 "policy violation"). */
const CLOSE_POLICY = 1008;
const CLOSE_GOING_AWAY = 1001;
/** A WebSocket close reason is limited to 123 bytes of UTF-8. */
const REASON_MAX_BYTES = 123;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** True for a close code that may travel in a close frame (RFC 6455 7.4). */
export function sendableCloseCode(code: number): boolean {
  return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) || (code >= 3000 && code <= 4999);
}

/**
 * The close to pass on to one side when the other, `from`, closed with `close`: the same code and
 * reason when a close frame may carry them, no code for none (1005), and 1011 naming `from` for a
 * connection that dropped (1006) or any other code that cannot be sent.
 */
export function passOn(close: Close, from: string): { code: number | undefined; reason: string } {
  if (close.code === 1005) return { code: undefined, reason: "" };
  if (sendableCloseCode(close.code)) return { code: close.code, reason: close.reason };
  return { code: CLOSE_LOST, reason: `the connection to ${from} was lost` };
}

/** `reason` cut to what a close frame can carry (123 bytes of UTF-8), never inside a character. */
export function fitReason(reason: string): string {
  if (reason.length <= REASON_MAX_BYTES / 3) return reason;
  let fitted = reason;
  while (encoder.encode(fitted).length > REASON_MAX_BYTES) fitted = fitted.slice(0, -1);
  return fitted;
}

/** Options of {@linkcode pump}. */
export interface PumpOptions {
  /** Stop reading a side once the other's backlog passes this. @default {4 MiB} */
  highWaterBytes?: number;
  /** Read a paused side again once the other's backlog is down to this. @default {1 MiB} */
  lowWaterBytes?: number;
  /**
   * Close both sides once a side that cannot stop reading has put this much in the other's backlog.
   * @default {highWaterBytes}
   */
  maxBacklogBytes?: number;
  /** Closes both sides when aborted: WebSockets with 1008 and the abort reason's message. */
  signal?: AbortSignal;
  /** Told when backpressure pauses (`true`) or resumes (`false`) reading a side: for metrics and tests. */
  onFlow?: (paused: boolean) => void;
}

/** Copies messages between `a` and `b` until either ends; resolves once both have been told to close. */
export function pump(a: End, b: End, options: PumpOptions = {}): Promise<void> {
  return new Pump(a, b, options).done;
}

/** Where a pump is; it only moves forward. */
type PumpState = "waiting" | "running" | "done";

class Pump {
  #a: End;
  #b: End;
  #options: PumpOptions;
  #state: PumpState = "waiting";
  #done = Promise.withResolvers<void>();
  #abort = () => {
    const reason = this.#options.signal?.reason;
    const text = reason instanceof Error ? reason.message : String(reason ?? "aborted");
    this.#finish([this.#a, CLOSE_POLICY, text], [this.#b, CLOSE_POLICY, text]);
  };

  constructor(a: End, b: End, options: PumpOptions) {
    this.#a = a;
    this.#b = b;
    this.#options = options;
    if (options.signal?.aborted) {
      this.#abort();
      return;
    }
    options.signal?.addEventListener("abort", this.#abort, { once: true });
    Promise.all([a.ready, b.ready]).then(() => {
      if (this.#state !== "waiting") return;
      this.#state = "running";
      a.start(this.#reader(a, b));
      // `a` may have ended at once (closed before it was ready).
      if (this.#state === "running") b.start(this.#reader(b, a));
    });
  }

  get done(): Promise<void> {
    return this.#done.promise;
  }

  /** The reader of `from`: what it reads goes to `to`, with backpressure. */
  #reader(from: End, to: End): Reader {
    const high = this.#options.highWaterBytes ?? HIGH_WATER_BYTES;
    const low = this.#options.lowWaterBytes ?? LOW_WATER_BYTES;
    const max = this.#options.maxBacklogBytes ?? high;
    let paused = false;
    return {
      message: (message) => {
        if (this.#state === "done") return;
        try {
          to.send(message);
        } catch (error) {
          if (error instanceof RefusedMessage) {
            this.#finish([from, error.close.code, error.close.reason], [to, undefined, ""]);
          } else {
            this.#ended(to, from, { code: 1006, reason: "" });
          }
          return;
        }
        if (paused || to.backlog <= high) return;
        if (!from.pause || !from.resume) {
          if (to.backlog > max) {
            this.#finish(
              [from, CLOSE_POLICY, `input arrives faster than ${to.name} takes it`],
              [to, CLOSE_GOING_AWAY, `${from.name} sent too much input`],
            );
          }
          return;
        }
        paused = true;
        from.pause();
        this.#options.onFlow?.(true);
        to.drained(low).then(() => {
          paused = false;
          if (this.#state === "done") return;
          from.resume?.();
          this.#options.onFlow?.(false);
        });
      },
      end: (close) => this.#ended(from, to, close),
    };
  }

  /** `from` ended with `close`: `to` is told the same (see {@linkcode passOn}). */
  #ended(from: End, to: End, close: Close): void {
    const { code, reason } = passOn(close, from.name);
    // `from` is closed already; closing it again releases what it holds (a connection, a PTY).
    this.#finish([to, code, reason], [from, undefined, ""]);
  }

  #finish(...closes: [End, number | undefined, string][]): void {
    if (this.#state === "done") return;
    this.#state = "done";
    this.#options.signal?.removeEventListener("abort", this.#abort);
    for (const [end, code, reason] of closes) {
      try {
        end.close(code, fitReason(reason));
      } catch { /* closed already */ }
    }
    this.#done.resolve();
  }
}

/**
 * What every adapter shares: messages and the end that arrive before `start` are kept for it, the end
 * is told once, and `drained` waiters are woken as the backlog shrinks.
 */
export abstract class BaseEnd implements End {
  readonly name: string;
  abstract readonly ready: Promise<void>;
  #reader: Reader | null = null;
  #early: Message[] = [];
  #ended: Close | null = null;
  #drains: { mark: number; resolve: () => void }[] = [];
  /** True once this side was closed or ended. */
  protected finished = false;

  constructor(name: string) {
    this.name = name;
  }

  abstract send(message: Message): void;
  abstract get backlog(): number;
  abstract close(code: number | undefined, reason: string): void;

  start(reader: Reader): void {
    this.#reader = reader;
    for (const message of this.#early.splice(0)) reader.message(message);
    if (this.#ended) reader.end(this.#ended);
    else this.read();
  }

  /** Starts reading (called by `start` once the reader is set). */
  protected read(): void {}

  drained(mark: number): Promise<void> {
    if (this.backlog <= mark || this.finished) return Promise.resolve();
    return new Promise((resolve) => this.#drains.push({ mark, resolve }));
  }

  /** How many `drained` calls wait. */
  protected get waiters(): number {
    return this.#drains.length;
  }

  /** Wakes the `drained` waiters the backlog now satisfies (all of them once closed). */
  protected wake(): void {
    if (this.#drains.length === 0) return;
    const backlog = this.backlog;
    this.#drains = this.#drains.filter((drain) => {
      if (backlog > drain.mark && !this.finished) return true;
      drain.resolve();
      return false;
    });
  }

  protected deliver(message: Message): void {
    if (this.#ended) return;
    if (this.#reader) this.#reader.message(message);
    else this.#early.push(message);
  }

  protected end(close: Close): void {
    if (this.#ended) return;
    this.#ended = close;
    this.finished = true;
    this.wake();
    this.#reader?.end(close);
  }
}

/** Options of {@linkcode webSocketEnd}. */
export interface WebSocketEndOptions {
  /** Milliseconds between backlog checks while the other side waits (WebSocket has no drain event). @default {5} */
  drainPollMs?: number;
}

/**
 * A platform `WebSocket` as a side: the server's end of an upgrade or a client's. It cannot stop
 * reading, so a pump closes it instead when it sends too much (see the module doc).
 */
export function webSocketEnd(socket: WebSocket, name: string, options: WebSocketEndOptions = {}): End {
  return new WebSocketEnd(socket, name, options);
}

class WebSocketEnd extends BaseEnd {
  readonly ready: Promise<void>;
  #socket: WebSocket;
  #pollMs: number;
  #polling = false;

  constructor(socket: WebSocket, name: string, options: WebSocketEndOptions) {
    super(name);
    this.#socket = socket;
    this.#pollMs = options.drainPollMs ?? 5;
    socket.binaryType = "arraybuffer";
    const ready = Promise.withResolvers<void>();
    this.ready = ready.promise;
    if (socket.readyState === WebSocket.OPEN) ready.resolve();
    socket.onopen = () => ready.resolve();
    socket.onmessage = (event) => {
      const data = event.data;
      this.deliver(
        typeof data === "string"
          ? { binary: false, data: encoder.encode(data) }
          : { binary: true, data: new Uint8Array(data as ArrayBuffer) },
      );
    };
    socket.onclose = (event) => {
      this.end({ code: event.code, reason: event.reason });
      ready.resolve();
    };
    // An error is followed by close, which does the work.
    socket.onerror = () => {};
  }

  get backlog(): number {
    return this.#socket.bufferedAmount;
  }

  send(message: Message): void {
    this.#socket.send(message.binary ? message.data : decoder.decode(message.data));
  }

  override drained(mark: number): Promise<void> {
    const waiting = super.drained(mark);
    if (!this.#polling) this.#poll();
    return waiting;
  }

  /** Checks the backlog every few milliseconds while someone waits for it to drain. */
  async #poll(): Promise<void> {
    this.#polling = true;
    while (this.waiters > 0) {
      await sleep(this.#pollMs);
      if (this.#socket.readyState !== WebSocket.OPEN) this.finished = true;
      this.wake();
    }
    this.#polling = false;
  }

  close(code: number | undefined, reason: string): void {
    this.finished = true;
    this.wake();
    const state = this.#socket.readyState;
    if (state === WebSocket.CLOSING || state === WebSocket.CLOSED) return;
    if (code === undefined) this.#socket.close();
    else this.#socket.close(code, reason);
  }
}

/**
 * A WebSocket read one message at a time and written through promises: the WebSocket client over a
 * connection (`ConnWebSocket` of core/websocket.ts) is one.
 */
export interface MessageSocket {
  /** The next message, or null once the socket is closed. */
  next(): Promise<Message | null>;
  sendBinary(data: Uint8Array): Promise<void>;
  sendText(text: string): Promise<void>;
  readonly bufferedAmount: number;
  /** The peer's close code once closed (1006 when the connection dropped). */
  readonly closeCode: number | null;
  readonly closeReason: string;
  close(code?: number, reason?: string): Promise<void>;
}

/** A {@linkcode MessageSocket} as a side: reading stops while paused. */
export function messageSocketEnd(socket: MessageSocket, name: string): End {
  return new MessageSocketEnd(socket, name);
}

class MessageSocketEnd extends BaseEnd {
  readonly ready: Promise<void> = Promise.resolve();
  #socket: MessageSocket;
  #resumed: PromiseWithResolvers<void> | null = null;
  #closed = false;

  constructor(socket: MessageSocket, name: string) {
    super(name);
    this.#socket = socket;
  }

  get backlog(): number {
    return this.#socket.bufferedAmount;
  }

  protected override async read(): Promise<void> {
    const socket = this.#socket;
    try {
      while (true) {
        if (this.#resumed) await this.#resumed.promise;
        const message = await socket.next();
        if (message === null) break;
        this.deliver(message);
      }
    } catch {
      // A failed read is a dropped connection.
    }
    this.end({ code: socket.closeCode ?? 1006, reason: socket.closeReason });
  }

  pause(): void {
    this.#resumed ??= Promise.withResolvers<void>();
  }

  resume(): void {
    this.#resumed?.resolve();
    this.#resumed = null;
  }

  send(message: Message): void {
    const sent = message.binary
      ? this.#socket.sendBinary(message.data)
      : this.#socket.sendText(decoder.decode(message.data));
    // A failed write means the connection is gone: the read loop sees it end and reports it.
    sent.then(() => this.wake(), () => this.#drop());
  }

  #drop(): void {
    this.wake();
    if (!this.#closed) {
      this.#closed = true;
      this.#socket.close().catch(() => {});
    }
  }

  close(code: number | undefined, reason: string): void {
    this.finished = true;
    this.resume();
    this.wake();
    if (this.#closed) return;
    this.#closed = true;
    this.#socket.close(code, reason).catch(() => {});
  }
}

/**
 * A byte stream (a TCP or unix connection) as a side: chunks read become binary messages, and what it
 * is sent is written in order; its end (EOF) is a normal close (1000).
 */
export function connEnd(conn: Deno.Conn, name: string): End {
  return new ConnEnd(conn, name);
}

class ConnEnd extends BaseEnd {
  readonly ready: Promise<void> = Promise.resolve();
  #conn: Deno.Conn;
  #writes: Promise<void> = Promise.resolve();
  #backlog = 0;
  #resumed: PromiseWithResolvers<void> | null = null;
  #closing = false;

  constructor(conn: Deno.Conn, name: string) {
    super(name);
    this.#conn = conn;
  }

  get backlog(): number {
    return this.#backlog;
  }

  protected override async read(): Promise<void> {
    const buffer = new Uint8Array(64 * 1024);
    let close: Close = { code: 1000, reason: "" };
    try {
      while (true) {
        if (this.#resumed) await this.#resumed.promise;
        const n = await this.#conn.read(buffer);
        if (n === null) break;
        // A copy: the buffer is read into again at once.
        this.deliver({ binary: true, data: buffer.slice(0, n) });
      }
    } catch {
      close = { code: this.#closing ? 1000 : 1006, reason: "" };
    }
    this.end(close);
  }

  pause(): void {
    this.#resumed ??= Promise.withResolvers<void>();
  }

  resume(): void {
    this.#resumed?.resolve();
    this.#resumed = null;
  }

  send(message: Message): void {
    const bytes = message.data;
    this.#backlog += bytes.length;
    // Chained, so writes keep their order.
    this.#writes = this.#writes.then(async () => {
      try {
        let written = 0;
        while (written < bytes.length) written += await this.#conn.write(bytes.subarray(written));
      } catch {
        this.#hangUp();
        this.end({ code: 1006, reason: "" });
      } finally {
        this.#backlog -= bytes.length;
        this.wake();
      }
    });
  }

  close(): void {
    if (this.#closing) return;
    this.#closing = true;
    this.finished = true;
    this.resume();
    this.wake();
    // What was sent is written first, as a peer closing after its last message expects.
    this.#writes.then(() => this.#hangUp());
  }

  #hangUp(): void {
    try {
      this.#conn.close();
    } catch { /* closed already */ }
  }
}
