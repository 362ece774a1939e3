/**
 * One GET over a connection of its own, in plain HTTP/1.1, without `fetch`: for a short-lived process
 * (a `dock`/`dockd` command) reading JSON from the daemon's socket or the agent's loopback port. A
 * process's first `fetch` costs ~20 ms in Deno (its first `Response` alone ~10 ms: the fetch and
 * streams code loads on first use), a third of an empty `deno run`; this costs ~2 ms (issue #10: a
 * command in ≤ 1.5× the empty run). Only reads take this path, so a connection that breaks part-way
 * harms nothing; servers, which live long and keep connections, use `fetch`.
 *
 * @module
 */
import { DockError, TransportError } from "./errors.ts";

/** Where the request goes: a unix socket, or a plain-TCP (loopback) host and port. */
export type PlainTarget = { socket: string } | { hostname: string; port: number };

/** The answer: status, header fields (lower-case names) and the whole body. */
export interface PlainAnswer {
  status: number;
  headers: Map<string, string>;
  body: Uint8Array;
}

/** The most a one-shot answer may hold: the CLI's largest reads (logs, lists) are far below it. */
export const MAX_ANSWER_BYTES = 64 * 1024 * 1024;

const encoder = new TextEncoder();

/** Sends `GET path` with `headers` to `target` and reads the whole answer (until the server closes). */
export async function getOnce(
  target: PlainTarget,
  path: string,
  options: { host: string; headers?: Record<string, string>; signal?: AbortSignal },
): Promise<PlainAnswer> {
  const lines = [`GET ${path} HTTP/1.1`, `host: ${options.host}`, "connection: close"];
  for (const [name, value] of Object.entries(options.headers ?? {})) lines.push(`${name}: ${value}`);
  // Our own values (a path we built, a token, an origin); a line break in one would forge a header.
  if (lines.some((line) => /[\r\n\0]/.test(line))) {
    throw new DockError("bad_request", "a request header holds a line break or NUL", { status: 400 });
  }
  const where = "socket" in target ? target.socket : `${target.hostname}:${target.port}`;
  let conn: Deno.Conn;
  try {
    conn = "socket" in target
      ? await Deno.connect({ transport: "unix", path: target.socket })
      : await Deno.connect({ hostname: target.hostname, port: target.port });
  } catch (cause) {
    throw new TransportError(`cannot reach ${where}: ${(cause as Error).message}`, {
      neverSent: true,
      cause,
    });
  }
  // Closing the connection does not end a read already waiting on it: the abort settles the race instead.
  let abort = () => {};
  const aborted = new Promise<never>((_, reject) => {
    abort = () => reject(options.signal?.reason);
    if (options.signal?.aborted) abort();
  });
  options.signal?.addEventListener("abort", abort, { once: true });
  try {
    const exchange = (async () => {
      await writeAll(conn, encoder.encode(`${lines.join("\r\n")}\r\n\r\n`));
      return parseAnswer(await readAll(conn));
    })();
    exchange.catch(() => {}); // after an abort, its read fails on the closed connection: nobody waits for it
    return await Promise.race([aborted, exchange]);
  } catch (cause) {
    if (options.signal?.aborted) throw options.signal.reason ?? cause;
    if (cause instanceof DockError) throw cause;
    throw new TransportError(`cannot reach ${where}: ${(cause as Error).message}`, {
      neverSent: false,
      cause,
    });
  } finally {
    options.signal?.removeEventListener("abort", abort);
    try {
      conn.close();
    } catch { /* closed by an abort */ }
  }
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<void> {
  for (let written = 0; written < bytes.length;) written += await conn.write(bytes.subarray(written));
}

async function readAll(conn: Deno.Conn): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  const buffer = new Uint8Array(64 * 1024);
  while (true) {
    const read = await conn.read(buffer);
    if (read === null) break;
    size += read;
    if (size > MAX_ANSWER_BYTES) throw new Error(`the answer is larger than ${MAX_ANSWER_BYTES} bytes`);
    chunks.push(buffer.slice(0, read));
  }
  const all = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    all.set(chunk, offset);
    offset += chunk.length;
  }
  return all;
}

/** An answer's status line and header fields, as {@linkcode parseHead} reads them. */
export interface AnswerHead {
  status: number;
  /** The minor version: 1 for HTTP/1.1, 0 for HTTP/1.0. */
  minor: number;
  /** Lower-case names; a field sent twice is joined with ", " (RFC 9110 5.3). */
  headers: Map<string, string>;
}

/** Header names are tokens (RFC 9110 5.6.2): anything else is refused, never passed on. */
const TOKEN = /^[!#$%&'*+.^_`|~0-9a-z-]+$/;

/**
 * Parses an answer's head (the text before its blank line): the status line, then header fields. Throws
 * on anything that is not HTTP/1.x as it should be, naming the line: a value with CR, LF or NUL, or a name
 * that is not a token, would be a header injection if the answer were passed on (the agent's relay does).
 */
export function parseHead(text: string): AnswerHead {
  const lines = text.split("\r\n");
  const status = /^HTTP\/1\.([01]) (\d{3})(?: |$)/.exec(lines[0]);
  if (!status) throw new Error(`not an HTTP/1.1 status line: ${JSON.stringify(lines[0].slice(0, 80))}`);
  const headers = new Map<string, string>();
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(":");
    const name = line.slice(0, colon).toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (colon <= 0 || !TOKEN.test(name) || /[\0\r\n]/.test(value)) {
      throw new Error(`a malformed header line: ${JSON.stringify(line.slice(0, 80))}`);
    }
    const before = headers.get(name);
    headers.set(name, before === undefined ? value : `${before}, ${value}`);
  }
  return { status: Number(status[2]), minor: Number(status[1]), headers };
}

/** Parses a whole HTTP/1.1 answer: status line, header fields, and a body by length, chunks or close. */
export function parseAnswer(bytes: Uint8Array): PlainAnswer {
  const end = indexOf(bytes, [13, 10, 13, 10], 0);
  if (end === -1) throw new Error("the answer ended inside its header");
  const { status, headers } = parseHead(new TextDecoder().decode(bytes.subarray(0, end)));
  const rest = bytes.subarray(end + 4);
  let body: Uint8Array;
  if (/\bchunked\b/i.test(headers.get("transfer-encoding") ?? "")) body = unchunk(rest);
  else if (headers.has("content-length")) {
    const length = Number(headers.get("content-length"));
    if (!Number.isSafeInteger(length) || length < 0 || length > rest.length) {
      throw new Error(`the answer ended before its ${headers.get("content-length")} bytes`);
    }
    body = rest.subarray(0, length);
  } else body = rest;
  return { status, headers, body };
}

/** The body of a chunked transfer (RFC 9112 7.1); trailer fields are read past and dropped. */
function unchunk(bytes: Uint8Array): Uint8Array {
  const parts: Uint8Array[] = [];
  let offset = 0;
  let size = 0;
  while (true) {
    const lineEnd = indexOf(bytes, [13, 10], offset);
    if (lineEnd === -1) throw new Error("the answer ended inside a chunk's size line");
    const sizeText = new TextDecoder().decode(bytes.subarray(offset, lineEnd)).split(";")[0].trim();
    if (!/^[0-9a-fA-F]+$/.test(sizeText)) {
      throw new Error(`a malformed chunk size: ${JSON.stringify(sizeText)}`);
    }
    const length = parseInt(sizeText, 16);
    if (length === 0) break;
    const start = lineEnd + 2;
    if (start + length + 2 > bytes.length) throw new Error("the answer ended inside a chunk");
    parts.push(bytes.subarray(start, start + length));
    size += length;
    offset = start + length + 2;
  }
  const body = new Uint8Array(size);
  let at = 0;
  for (const part of parts) {
    body.set(part, at);
    at += part.length;
  }
  return body;
}

/** Where `pattern` first occurs in `bytes` at or after `from`, or -1. */
export function indexOf(bytes: Uint8Array, pattern: number[], from: number): number {
  outer: for (let i = from; i <= bytes.length - pattern.length; i++) {
    for (let j = 0; j < pattern.length; j++) if (bytes[i + j] !== pattern[j]) continue outer;
    return i;
  }
  return -1;
}
