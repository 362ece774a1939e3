/**
 * One JSON object per line over a stream connection, both ways: how the parent and its plugin-host
 * process talk. Lines longer than {@linkcode MAX_FRAME_BYTES} end the connection (a peer that sends one
 * is broken or hostile; nothing it says after that can be trusted to be framed right).
 *
 * @module
 */
import { MAX_FRAME_BYTES } from "./protocol.ts";

const NEWLINE = 0x0a;

/** Reads and writes newline-delimited JSON on a connection. */
export class FrameConnection<In, Out> {
  #conn: Deno.Conn;
  #encoder = new TextEncoder();
  #writing: Promise<void> = Promise.resolve();
  #closed = false;
  #done = Promise.withResolvers<void>();
  /** The longest line it accepts now; a peer not yet trusted is held to less (plugins/lanes.ts). */
  maxFrameBytes = MAX_FRAME_BYTES;

  constructor(conn: Deno.Conn) {
    this.#conn = conn;
  }

  /** Whether it is closed (by either side, or by a broken frame). */
  get closed(): boolean {
    return this.#closed;
  }

  /** Resolves once it is closed. */
  get done(): Promise<void> {
    return this.#done.promise;
  }

  /**
   * Sends one message; messages go out in the order sent. A closed connection drops it. Throws, sending
   * nothing, when the message is not JSON (a cycle, a BigInt) or would be a frame over
   * {@linkcode MAX_FRAME_BYTES} (which would end the connection).
   */
  send(message: Out): Promise<void> {
    if (this.#closed) return Promise.resolve();
    const bytes = this.#encoder.encode(JSON.stringify(message) + "\n");
    if (bytes.length > MAX_FRAME_BYTES) {
      throw new RangeError(
        `a message of ${bytes.length} bytes is over the ${MAX_FRAME_BYTES}-byte frame limit`,
      );
    }
    this.#writing = this.#writing.then(() => writeAll(this.#conn, bytes)).catch(() => this.close());
    return this.#writing;
  }

  /** Every message received, until the peer closes or sends something that is not a frame. */
  async *messages(): AsyncGenerator<In> {
    const decoder = new TextDecoder();
    let pending: Uint8Array[] = [];
    let pendingBytes = 0;
    const buffer = new Uint8Array(64 * 1024);
    while (!this.#closed) {
      let n: number | null;
      try {
        n = await this.#conn.read(buffer);
      } catch {
        break;
      }
      if (n === null) break;
      let chunk = buffer.subarray(0, n);
      let newline = chunk.indexOf(NEWLINE);
      while (newline >= 0) {
        const line = concat([...pending, chunk.subarray(0, newline)], pendingBytes + newline);
        pending = [];
        pendingBytes = 0;
        let message: In;
        try {
          message = JSON.parse(decoder.decode(line));
        } catch {
          this.close();
          return;
        }
        yield message;
        chunk = chunk.subarray(newline + 1);
        newline = chunk.indexOf(NEWLINE);
      }
      if (chunk.length) {
        pendingBytes += chunk.length;
        if (pendingBytes > this.maxFrameBytes) break;
        pending.push(chunk.slice());
      }
    }
    this.close();
  }

  /** Closes the connection (idempotent). */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    try {
      this.#conn.close();
    } catch {
      // already closed
    }
    this.#done.resolve();
  }
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  let written = 0;
  while (written < bytes.length) written += await conn.write(bytes.subarray(written));
}

function concat(parts: Uint8Array[], length: number): Uint8Array {
  if (parts.length === 1) return parts[0];
  const out = new Uint8Array(length);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}
