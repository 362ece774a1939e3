/**
 * WebSockets both ways. The server's side is the one check every upgrading route makes
 * ({@linkcode acceptWebSocket}); the client's is a small RFC 6455 client over any `Deno.Conn`: a box's
 * unix socket (which the platform `WebSocket` cannot dial) or a TLS connection pinned to a box's CA and
 * carrying an `Authorization` header (which the platform `WebSocket` cannot send). The agent's attach
 * relay and tunnels use it to reach a box; tests and benchmarks use it to talk to a box's socket
 * directly. What is relayed over either goes through the one pump (core/pump.ts).
 *
 * What it does: the HTTP/1.1 upgrade (checking `Sec-WebSocket-Accept`), masked client frames, receiving
 * fragmented messages (reassembled, up to a size limit), answering pings, and the closing handshake.
 * What it does not: extensions (no compression is offered, so none can be negotiated), subprotocols,
 * or fragmenting what it sends.
 *
 * The client's upgrade (and its connecting over a unix socket or TLS) is in core/ws_client.ts. A refused
 * upgrade throws {@linkcode WebSocketHandshakeError} carrying the server's status, headers and body, so a
 * caller can answer with the server's own error.
 *
 * @module
 */
import { DockError } from "../client/errors.ts";
import { fitReason, sendableCloseCode } from "./pump.ts";

/**
 * True for a WebSocket opening handshake: GET with `Upgrade: websocket`, `Connection: upgrade` and a
 * key. Only such a request may carry the agent's token as `?token=` (agent/api/gate.ts).
 */
export function isWebSocketUpgrade(request: Request): boolean {
  return request.method === "GET" &&
    request.headers.get("upgrade")?.toLowerCase() === "websocket" &&
    /(^|,)\s*upgrade\s*(,|$)/i.test(request.headers.get("connection") ?? "") &&
    Boolean(request.headers.get("sec-websocket-key"));
}

/** Refuses a request that does not ask to become a WebSocket: 400 `upgrade_required`, naming `what`. */
export function requireWebSocket(request: Request, what: string): void {
  if (!isWebSocketUpgrade(request)) {
    throw new DockError("upgrade_required", `${what} is a WebSocket: send Upgrade: websocket`, {
      status: 400,
    });
  }
}

/**
 * Upgrades `request` to a WebSocket (binary messages as ArrayBuffers); a request that does not ask to
 * is refused as {@linkcode requireWebSocket} does, naming `what` ("attach", "the tunnel").
 */
export function acceptWebSocket(request: Request, what: string): { socket: WebSocket; response: Response } {
  requireWebSocket(request, what);
  const upgraded = Deno.upgradeWebSocket(request);
  upgraded.socket.binaryType = "arraybuffer";
  return upgraded;
}

/** A WebSocket message as received. */
export interface WsMessage {
  binary: boolean;
  data: Uint8Array;
}

/** Options of `openWebSocket` and the `connect…` functions (core/ws_client.ts). */
export interface WebSocketOptions {
  /** The request target: path and query (`/v1/sessions/a/attach?cols=80`). */
  path: string;
  /** The Host header. @default {"localhost"} */
  host?: string;
  /** Extra request headers (such as `authorization`). */
  headers?: Record<string, string>;
  /** Give up when the server has not answered the upgrade by then. @default {10_000} */
  timeoutMs?: number;
  /** Largest message accepted (a larger one closes the socket with 1009). @default {16 MiB} */
  maxMessageBytes?: number;
}

/** The server answered the upgrade with something other than `101 Switching Protocols`. */
export class WebSocketHandshakeError extends Error {
  /** The HTTP status (0 when the answer was not HTTP at all). */
  readonly status: number;
  readonly headers: Headers;
  /** The answer's body (at most 64 KiB of it). */
  readonly body: Uint8Array;

  constructor(status: number, headers: Headers, body: Uint8Array, message?: string) {
    super(message ?? `upgrade refused: HTTP ${status} ${new TextDecoder().decode(body.subarray(0, 500))}`);
    this.name = "WebSocketHandshakeError";
    this.status = status;
    this.headers = headers;
    this.body = body;
  }
}

/** The connection failed or timed out after the upgrade request was (maybe partly) written. */
export class WebSocketConnectionError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = "WebSocketConnectionError";
  }
}

const OP_CONTINUATION = 0x0;
const OP_TEXT = 0x1;
const OP_BINARY = 0x2;
const OP_CLOSE = 0x8;
const OP_PING = 0x9;
const OP_PONG = 0xa;

const DEFAULT_MAX_MESSAGE = 16 * 1024 * 1024;
const CLOSE_WAIT_MS = 2000;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Growable receive buffer: bytes are appended at the end and consumed from the front without copying
 * the rest on every frame.
 */
export class ByteQueue {
  #buffer = new Uint8Array(64 * 1024);
  #start = 0;
  #end = 0;

  get length(): number {
    return this.#end - this.#start;
  }

  push(bytes: Uint8Array): void {
    if (this.#end + bytes.length > this.#buffer.length) {
      const needed = this.length + bytes.length;
      if (needed > this.#buffer.length / 2) {
        const grown = new Uint8Array(Math.max(needed * 2, this.#buffer.length));
        grown.set(this.#buffer.subarray(this.#start, this.#end));
        this.#buffer = grown;
      } else {
        this.#buffer.copyWithin(0, this.#start, this.#end);
      }
      this.#end = this.length;
      this.#start = 0;
    }
    this.#buffer.set(bytes, this.#end);
    this.#end += bytes.length;
  }

  /** A copy of the first `count` bytes, consumed. */
  take(count: number): Uint8Array {
    const out = this.#buffer.slice(this.#start, this.#start + count);
    this.#start += count;
    if (this.#start === this.#end) this.#start = this.#end = 0;
    return out;
  }

  peek(): Uint8Array {
    return this.#buffer.subarray(this.#start, this.#end);
  }
}

/** An open WebSocket over a connection. Read it with one consumer of {@linkcode next} at a time. */
export class ConnWebSocket {
  #conn: Deno.Conn;
  #pending = new ByteQueue();
  #readBuffer = new Uint8Array(64 * 1024);
  #maxMessage: number;
  #writes: Promise<void> = Promise.resolve();
  #reads: Promise<unknown> = Promise.resolve();
  #closeSent = false;
  #connClosed = false;
  #ended = Promise.withResolvers<void>();
  #buffered = 0;
  #fragments: Uint8Array[] = [];
  #fragmentOpcode = 0;
  #fragmentBytes = 0;
  /** True once the socket is closed or closing (a close frame went either way, or the connection ended). */
  closed = false;
  /** The code of the peer's close frame (1005 when it had none, 1006 when the connection just ended). */
  closeCode: number | null = null;
  /** The reason of the peer's close frame. */
  closeReason = "";

  constructor(
    conn: Deno.Conn,
    rest: Uint8Array = new Uint8Array(),
    options: { maxMessageBytes?: number } = {},
  ) {
    this.#conn = conn;
    this.#pending.push(rest);
    this.#maxMessage = options.maxMessageBytes ?? DEFAULT_MAX_MESSAGE;
  }

  /** Bytes handed to a send method and not yet written to the connection. */
  get bufferedAmount(): number {
    return this.#buffered;
  }

  /** Resolves once the connection is closed (either side, any reason). */
  get ended(): Promise<void> {
    return this.#ended.promise;
  }

  /** Sends a binary message. */
  sendBinary(data: Uint8Array): Promise<void> {
    return this.#send(OP_BINARY, data);
  }

  /** Sends a text message. */
  sendText(text: string): Promise<void> {
    return this.#send(OP_TEXT, encoder.encode(text));
  }

  /**
   * Starts the closing handshake with `code` (none when omitted or 1005) and `reason`, and resolves
   * once the connection is closed: after the peer's close frame, or `CLOSE_WAIT_MS` at most.
   * Messages still arriving meanwhile are discarded unless another reader takes them first.
   */
  async close(code?: number, reason = ""): Promise<void> {
    if (this.#connClosed) return;
    if (!this.#closeSent) {
      this.#closeSent = true;
      this.closed = true;
      let payload = new Uint8Array();
      if (code !== undefined && code !== 1005) {
        if (!sendableCloseCode(code)) throw new RangeError(`close code ${code} cannot be sent`);
        const text = encoder.encode(fitReason(reason));
        payload = new Uint8Array(2 + text.length);
        payload[0] = code >> 8;
        payload[1] = code & 0xff;
        payload.set(text, 2);
      }
      await this.#frame(OP_CLOSE, payload).catch(() => {});
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const deadline = new Promise<void>((resolve) => timer = setTimeout(resolve, CLOSE_WAIT_MS));
    const drain = (async () => {
      while (await this.next().catch(() => null) !== null) { /* discarded */ }
    })();
    await Promise.race([this.#ended.promise, deadline]);
    clearTimeout(timer);
    this.#closeConn();
    await drain;
  }

  /** The next data message, or null once the socket is closed. */
  next(): Promise<WsMessage | null> {
    // One parser at a time: two would split each other's frames.
    const result = this.#reads.then(() => this.#next());
    this.#reads = result.catch(() => {});
    return result;
  }

  /** Reads messages until `predicate` holds for the text received so far, or `timeoutMs` passes. */
  async readUntil(predicate: (text: string) => boolean, timeoutMs = 10_000): Promise<string> {
    const textDecoder = new TextDecoder();
    let text = "";
    const deadline = Date.now() + timeoutMs;
    // The pending read is kept across timeouts, so no message is lost to an abandoned read.
    let pending: Promise<WsMessage | null> | null = null;
    while (!predicate(text)) {
      if (Date.now() > deadline) throw new Error(`timed out; received: ${JSON.stringify(text.slice(-500))}`);
      pending ??= this.next();
      let timer: ReturnType<typeof setTimeout> | undefined;
      const message = await Promise.race([
        pending,
        new Promise<"tick">((resolve) => timer = setTimeout(() => resolve("tick"), 200)),
      ]);
      clearTimeout(timer);
      if (message === "tick") continue;
      pending = null;
      if (message === null) {
        throw new Error(`closed (${this.closeCode}); received: ${JSON.stringify(text.slice(-500))}`);
      }
      text += textDecoder.decode(message.data, { stream: true });
    }
    return text;
  }

  async #next(): Promise<WsMessage | null> {
    while (true) {
      if (this.#connClosed) return null;
      const frame = await this.#readFrame();
      if (frame === null) {
        this.closed = true;
        this.closeCode ??= 1006;
        this.#closeConn();
        return null;
      }
      const { fin, opcode, payload } = frame;
      if (opcode === OP_CLOSE) {
        this.closed = true;
        this.closeCode = payload.length >= 2 ? (payload[0] << 8) | payload[1] : 1005;
        this.closeReason = decoder.decode(payload.subarray(2));
        // Answer the close (echoing its code) unless this side started it, then hang up.
        if (!this.#closeSent) {
          this.#closeSent = true;
          await this.#frame(OP_CLOSE, payload.subarray(0, 2)).catch(() => {});
        }
        this.#closeConn();
        return null;
      }
      if (opcode === OP_PING) {
        if (!this.#closeSent) await this.#frame(OP_PONG, payload).catch(() => {});
        continue;
      }
      if (opcode === OP_PONG) continue;
      if (opcode === OP_TEXT || opcode === OP_BINARY) {
        if (this.#fragments.length > 0) {
          return await this.#fail(1002, "a new message inside a fragmented one");
        }
        if (fin) return { binary: opcode === OP_BINARY, data: payload };
        this.#fragmentOpcode = opcode;
        this.#fragments = [payload];
        this.#fragmentBytes = payload.length;
        continue;
      }
      if (opcode === OP_CONTINUATION) {
        if (this.#fragments.length === 0) {
          return await this.#fail(1002, "a continuation with nothing to continue");
        }
        this.#fragmentBytes += payload.length;
        if (this.#fragmentBytes > this.#maxMessage) return await this.#fail(1009, "message too big");
        this.#fragments.push(payload);
        if (!fin) continue;
        const data = new Uint8Array(this.#fragmentBytes);
        let offset = 0;
        for (const part of this.#fragments) {
          data.set(part, offset);
          offset += part.length;
        }
        this.#fragments = [];
        return { binary: this.#fragmentOpcode === OP_BINARY, data };
      }
      return await this.#fail(1002, `unknown opcode ${opcode}`);
    }
  }

  /** Closes with `code` after a protocol error of the peer. */
  async #fail(code: number, reason: string): Promise<null> {
    this.closed = true;
    this.closeCode = code;
    this.closeReason = reason;
    if (!this.#closeSent) {
      this.#closeSent = true;
      const text = encoder.encode(fitReason(reason));
      const payload = new Uint8Array(2 + text.length);
      payload[0] = code >> 8;
      payload[1] = code & 0xff;
      payload.set(text, 2);
      await this.#frame(OP_CLOSE, payload).catch(() => {});
    }
    this.#closeConn();
    return null;
  }

  async #readFrame(): Promise<{ fin: boolean; opcode: number; payload: Uint8Array } | null> {
    const head = await this.#read(2);
    if (!head) return null;
    const fin = (head[0] & 0x80) !== 0;
    const opcode = head[0] & 0x0f;
    const masked = (head[1] & 0x80) !== 0;
    let length = head[1] & 0x7f;
    if (length === 126) {
      const bytes = await this.#read(2);
      if (!bytes) return null;
      length = (bytes[0] << 8) | bytes[1];
    } else if (length === 127) {
      const bytes = await this.#read(8);
      if (!bytes) return null;
      const big = new DataView(bytes.buffer, bytes.byteOffset, 8).getBigUint64(0);
      if (big > BigInt(this.#maxMessage)) {
        await this.#fail(1009, "message too big");
        return null;
      }
      length = Number(big);
    }
    if (length > this.#maxMessage) {
      await this.#fail(1009, "message too big");
      return null;
    }
    const mask = masked ? await this.#read(4) : null;
    if (masked && !mask) return null;
    const payload = length ? await this.#read(length) : new Uint8Array();
    if (!payload) return null;
    if (mask) { for (let i = 0; i < payload.length; i++) payload[i] ^= mask[i % 4]; }
    return { fin, opcode, payload };
  }

  async #read(count: number): Promise<Uint8Array | null> {
    while (this.#pending.length < count) {
      if (!(await this.#fill())) return null;
    }
    return this.#pending.take(count);
  }

  async #fill(): Promise<boolean> {
    if (this.#connClosed) return false;
    // One read buffer for the socket's life: its bytes are copied into the queue at once.
    const n = await this.#conn.read(this.#readBuffer).catch(() => null);
    if (n === null) return false;
    this.#pending.push(this.#readBuffer.subarray(0, n));
    return true;
  }

  #send(opcode: number, payload: Uint8Array): Promise<void> {
    if (this.#closeSent || this.#connClosed) {
      return Promise.reject(new Error("the WebSocket is closed"));
    }
    return this.#frame(opcode, payload);
  }

  /** Writes one masked frame; frames are written one after another, never interleaved. */
  #frame(opcode: number, payload: Uint8Array): Promise<void> {
    const frame = encodeFrame(opcode, payload);
    this.#buffered += frame.length;
    const write = this.#writes.then(async () => {
      try {
        let written = 0;
        while (written < frame.length) written += await this.#conn.write(frame.subarray(written));
      } finally {
        this.#buffered -= frame.length;
      }
    });
    // A failed write fails its caller; the frames after it fail on their own.
    this.#writes = write.catch(() => {});
    return write;
  }

  #closeConn(): void {
    if (this.#connClosed) return;
    this.#connClosed = true;
    this.closed = true;
    try {
      this.#conn.close();
    } catch { /* already closed */ }
    this.#ended.resolve();
  }
}

function encodeFrame(opcode: number, payload: Uint8Array): Uint8Array {
  const mask = crypto.getRandomValues(new Uint8Array(4));
  const length = payload.length;
  const headLength = length < 126 ? 2 : length < 65536 ? 4 : 10;
  const frame = new Uint8Array(headLength + 4 + length);
  frame[0] = 0x80 | opcode;
  if (length < 126) {
    frame[1] = 0x80 | length;
  } else if (length < 65536) {
    frame[1] = 0x80 | 126;
    frame[2] = length >> 8;
    frame[3] = length & 0xff;
  } else {
    frame[1] = 0x80 | 127;
    new DataView(frame.buffer).setBigUint64(2, BigInt(length));
  }
  frame.set(mask, headLength);
  const body = headLength + 4;
  for (let i = 0; i < length; i++) frame[body + i] = payload[i] ^ mask[i & 3];
  return frame;
}
