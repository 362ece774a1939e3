/**
 * HTTP/1.1 answers read off one kept connection (for `box_http.ts`): the connection with what was read
 * past the last answer, the status line and header fields (bounded), and bodies by length, by chunks
 * (RFC 9112 7.1) or up to the end of the connection.
 *
 * @module
 */
import { type AnswerHead, indexOf, parseHead } from "../client/http1.ts";

/**
 * Each connection's read buffer (kept while idle: the read that watches it waits in it). 16 KiB: an
 * answer's header and a small body come in one read. Idle, a box's kept connections hold 1 MiB at most
 * (64, `box_http.ts`); only a box that had that many requests at once keeps that many.
 */
const READ_SIZE = 16 * 1024;
const decoder = new TextDecoder();

/** An answer that is not HTTP/1.1 as it should be: the box's own fault, so never a reason to retry. */
export class MalformedAnswer extends Error {}

/** One connection and what was read from it past the last answer. */
export class Connection {
  conn: Deno.Conn;
  busy = true;
  closed = false;
  /** True once an answer came back on it: a failure on it may be a box that closed it meanwhile. */
  reused = false;
  /** The box ended it (or sent bytes nobody asked for) while it was idle. */
  ended = false;
  idleSince = 0;
  #buffer: Uint8Array = new Uint8Array(0);
  #pending: Promise<Uint8Array | null> | null = null;
  #readBuffer = new Uint8Array(READ_SIZE);

  constructor(conn: Deno.Conn) {
    this.conn = conn;
  }

  /** While idle, a read waits on the connection: it settling means the box closed it. */
  watch(onEnd: () => void): void {
    if (this.#buffer.length) {
      this.ended = true;
      onEnd();
      return;
    }
    const pending = this.#pending = this.#read();
    pending.then((chunk) => {
      if (this.busy || this.#pending !== pending) return; // taken meanwhile: its reader sees the chunk
      this.ended = true;
      if (chunk) this.#buffer = chunk;
      onEnd();
    }, () => {
      if (this.busy || this.#pending !== pending) return;
      this.ended = true;
      onEnd();
    });
  }

  /** The next bytes: what is buffered, else a read; null at the end. */
  async next(max = Infinity): Promise<Uint8Array | null> {
    if (!this.#buffer.length) {
      const pending = this.#pending ?? this.#read();
      this.#pending = null;
      const chunk = await pending;
      if (!chunk) return null;
      this.#buffer = chunk;
    }
    const out = this.#buffer.subarray(0, Math.min(max, this.#buffer.length));
    this.#buffer = this.#buffer.subarray(out.length);
    return out;
  }

  /** Puts bytes back in front of what is still to be read. */
  unread(bytes: Uint8Array): void {
    this.#buffer = this.#buffer.length ? join(bytes, this.#buffer) : bytes;
  }

  /** Reads into the connection's one buffer and copies out what came: cheaper than a fresh zeroed one. */
  async #read(): Promise<Uint8Array | null> {
    const read = await this.conn.read(this.#readBuffer);
    return read === null ? null : this.#readBuffer.slice(0, read);
  }
}

export interface Head {
  status: number;
  headers: Map<string, string>;
  keepAlive: boolean;
}

/** Reads a status line and header fields (at most `max` bytes); what follows stays unread. */
export async function readHead(connection: Connection, max: number): Promise<Head> {
  let bytes: Uint8Array = new Uint8Array(0);
  for (;;) {
    const chunk = await connection.next();
    if (!chunk) {
      throw new Error(
        bytes.length
          ? "the box closed the connection inside its answer's header"
          : "the box closed the connection before answering",
      );
    }
    const from = Math.max(0, bytes.length - 3);
    bytes = bytes.length ? join(bytes, chunk) : chunk;
    const end = indexOf(bytes, CRLFCRLF, from);
    if (end < 0) {
      if (bytes.length > max) {
        throw new MalformedAnswer(`the box's answer header passed ${max} bytes`);
      }
      continue;
    }
    if (end > max) {
      throw new MalformedAnswer(`the box's answer header passed ${max} bytes`);
    }
    connection.unread(bytes.subarray(end + 4));
    let head: AnswerHead;
    try {
      head = parseHead(decoder.decode(bytes.subarray(0, end)));
    } catch (error) {
      throw new MalformedAnswer((error as Error).message);
    }
    const connectionHeader = (head.headers.get("connection") ?? "").toLowerCase();
    const keepAlive = head.minor === 1
      ? !/\bclose\b/.test(connectionHeader)
      : /\bkeep-alive\b/.test(connectionHeader);
    return { status: head.status, headers: head.headers, keepAlive };
  }
}

/** A body read piece by piece; `size` is Infinity for one that ends when the box closes. */
export interface Body {
  readonly size: number;
  next(): Promise<Uint8Array | null>;
}

/** A body of `size` bytes (or up to the end of the connection). */
export class LengthBody implements Body {
  readonly size: number;
  #left: number;
  #connection: Connection;

  constructor(connection: Connection, size: number) {
    this.#connection = connection;
    this.size = size;
    this.#left = size;
  }

  async next(): Promise<Uint8Array | null> {
    if (this.#left === 0) return null;
    const chunk = await this.#connection.next(this.#left);
    if (!chunk) {
      if (this.size === Infinity) return null;
      throw new Error(`the box closed the connection ${this.#left} bytes before the answer's end`);
    }
    this.#left -= chunk.length;
    return chunk;
  }
}

/** A chunked body (RFC 9112 7.1); trailer fields are read past and dropped. */
export class ChunkedBody implements Body {
  readonly size = 0;
  #connection: Connection;
  #left = 0;
  #done = false;

  constructor(connection: Connection) {
    this.#connection = connection;
  }

  async next(): Promise<Uint8Array | null> {
    if (this.#done) return null;
    if (this.#left === 0) {
      const line = await this.#line();
      const size = line.split(";")[0].trim();
      if (!/^[0-9a-fA-F]{1,12}$/.test(size)) {
        throw new Error(`a malformed chunk size: ${JSON.stringify(size.slice(0, 20))}`);
      }
      this.#left = parseInt(size, 16);
      if (this.#left === 0) {
        while ((await this.#line()) !== "") { /* trailer fields */ }
        this.#done = true;
        return null;
      }
    }
    const chunk = await this.#connection.next(this.#left);
    if (!chunk) throw new Error("the box closed the connection inside a chunk");
    this.#left -= chunk.length;
    if (this.#left === 0 && (await this.#line()) !== "") throw new Error("a chunk did not end with CRLF");
    return chunk;
  }

  /** One line (without its CRLF), at most 4 KiB. */
  async #line(): Promise<string> {
    let bytes: Uint8Array = new Uint8Array(0);
    for (;;) {
      const chunk = await this.#connection.next();
      if (!chunk) throw new Error("the box closed the connection inside a chunk's framing");
      const from = Math.max(0, bytes.length - 1);
      bytes = bytes.length ? join(bytes, chunk) : chunk;
      const end = indexOf(bytes, CRLF, from);
      if (end >= 0) {
        this.#connection.unread(bytes.subarray(end + 2));
        return decoder.decode(bytes.subarray(0, end));
      }
      if (bytes.length > 4096) throw new Error("a chunk's framing line passed 4 KiB");
    }
  }
}

const CRLF = [13, 10];
const CRLFCRLF = [13, 10, 13, 10];

/** `a` then `b` in one array (`a` itself when `b` is empty). */
export function join(a: Uint8Array, b: Uint8Array | undefined): Uint8Array {
  if (!b?.length) return a;
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
