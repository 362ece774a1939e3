/**
 * A small WebSocket client over a unix socket, for tests of the box API's attach route (the box
 * serves its API on a unix socket, and the platform WebSocket cannot dial one). RFC 6455 framing:
 * client frames masked, no extensions, no fragmentation of what it sends.
 *
 * @module
 */

/** A WebSocket message as received. */
export interface WsMessage {
  binary: boolean;
  data: Uint8Array;
}

/** An open WebSocket over a unix-socket connection. */
export class UnixWebSocket {
  #conn: Deno.UnixConn;
  #pending: Uint8Array;
  closed = false;
  closeCode: number | null = null;

  constructor(conn: Deno.UnixConn, rest: Uint8Array) {
    this.#conn = conn;
    this.#pending = rest;
  }

  /** Sends a binary message. */
  async sendBinary(data: Uint8Array): Promise<void> {
    await this.#send(0x2, data);
  }

  /** Sends a text message. */
  async sendText(text: string): Promise<void> {
    await this.#send(0x1, new TextEncoder().encode(text));
  }

  /** Sends a close frame and closes the connection. */
  async close(): Promise<void> {
    if (this.closed) return;
    await this.#send(0x8, new Uint8Array([0x03, 0xe8])).catch(() => {});
    this.closed = true;
    try {
      this.#conn.close();
    } catch { /* already closed */ }
  }

  /** The next data message, or null once the socket closed. */
  async next(): Promise<WsMessage | null> {
    while (true) {
      const header = await this.#read(2);
      if (!header) return null;
      const opcode = header[0] & 0x0f;
      let length = header[1] & 0x7f;
      if (length === 126) length = new DataView((await this.#read(2))!.buffer).getUint16(0);
      else if (length === 127) length = Number(new DataView((await this.#read(8))!.buffer).getBigUint64(0));
      const payload = length ? await this.#read(length) : new Uint8Array();
      if (!payload) return null;
      if (opcode === 0x8) {
        this.closeCode = payload.length >= 2 ? (payload[0] << 8) | payload[1] : 1005;
        this.closed = true;
        return null;
      }
      if (opcode === 0x9) await this.#send(0xa, payload); // ping → pong
      if (opcode === 0x1 || opcode === 0x2 || opcode === 0x0) {
        return { binary: opcode !== 0x1, data: payload };
      }
    }
  }

  /** Reads messages until `predicate` holds for the text received so far, or `timeoutMs` passes. */
  async readUntil(predicate: (text: string) => boolean, timeoutMs = 10_000): Promise<string> {
    const decoder = new TextDecoder();
    let text = "";
    const deadline = Date.now() + timeoutMs;
    while (!predicate(text)) {
      if (Date.now() > deadline) throw new Error(`timed out; received: ${JSON.stringify(text.slice(-500))}`);
      const message = await Promise.race([
        this.next(),
        new Promise<"tick">((resolve) => setTimeout(() => resolve("tick"), 200)),
      ]);
      if (message === null) {
        throw new Error(`closed (${this.closeCode}); received: ${JSON.stringify(text.slice(-500))}`);
      }
      if (message !== "tick") text += decoder.decode(message.data, { stream: true });
    }
    return text;
  }

  async #send(opcode: number, payload: Uint8Array): Promise<void> {
    const mask = crypto.getRandomValues(new Uint8Array(4));
    const length = payload.length;
    const head = length < 126
      ? [0x80 | opcode, 0x80 | length]
      : length < 65536
      ? [0x80 | opcode, 0x80 | 126, length >> 8, length & 0xff]
      : [
        0x80 | opcode,
        0x80 | 127,
        0,
        0,
        0,
        0,
        (length >>> 24) & 0xff,
        (length >> 16) & 0xff,
        (length >> 8) & 0xff,
        length & 0xff,
      ];
    const frame = new Uint8Array(head.length + 4 + length);
    frame.set(head);
    frame.set(mask, head.length);
    for (let i = 0; i < length; i++) frame[head.length + 4 + i] = payload[i] ^ mask[i % 4];
    let written = 0;
    while (written < frame.length) written += await this.#conn.write(frame.subarray(written));
  }

  // A pending read that loses a race in readUntil keeps its bytes: reads only append to #pending.
  #reading: Promise<boolean> | null = null;

  async #read(count: number): Promise<Uint8Array | null> {
    while (this.#pending.length < count) {
      this.#reading ??= this.#fill().finally(() => this.#reading = null);
      if (!(await this.#reading)) return null;
    }
    const out = this.#pending.slice(0, count);
    this.#pending = this.#pending.slice(count);
    return out;
  }

  async #fill(): Promise<boolean> {
    const buffer = new Uint8Array(65536);
    const n = await this.#conn.read(buffer).catch(() => null);
    if (n === null) return false;
    const joined = new Uint8Array(this.#pending.length + n);
    joined.set(this.#pending);
    joined.set(buffer.subarray(0, n), this.#pending.length);
    this.#pending = joined;
    return true;
  }
}

/** Opens a WebSocket to `path` on the HTTP server listening on the unix socket `socket`. */
export async function connectUnixWebSocket(socket: string, path: string): Promise<UnixWebSocket> {
  const conn = await Deno.connect({ transport: "unix", path: socket });
  const key = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(16))));
  const request = `GET ${path} HTTP/1.1\r\nHost: dockd\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
    `Sec-WebSocket-Key: ${key}\r\nSec-WebSocket-Version: 13\r\n\r\n`;
  await conn.write(new TextEncoder().encode(request));
  let received = new Uint8Array();
  while (true) {
    const buffer = new Uint8Array(4096);
    const n = await conn.read(buffer);
    if (n === null) throw new Error("the server closed the connection during the handshake");
    const joined = new Uint8Array(received.length + n);
    joined.set(received);
    joined.set(buffer.subarray(0, n), received.length);
    received = joined;
    const text = new TextDecoder().decode(received);
    const end = text.indexOf("\r\n\r\n");
    if (end < 0) continue;
    if (!text.startsWith("HTTP/1.1 101")) {
      conn.close();
      throw new Error(`upgrade refused: ${text.slice(0, 500)}`);
    }
    const headerBytes = new TextEncoder().encode(text.slice(0, end + 4)).length;
    return new UnixWebSocket(conn, received.slice(headerBytes));
  }
}
