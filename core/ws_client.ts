/**
 * The client's side of a WebSocket's opening: the HTTP/1.1 upgrade over an already connected
 * `Deno.Conn` (checking `Sec-WebSocket-Accept`, reading a refusal's body so a caller can answer with the
 * server's own error), and connecting to a box's unix socket or over TLS pinned to its CA. What the open
 * socket does is core/websocket.ts's {@linkcode ConnWebSocket}.
 *
 * Its timers are guards on a socket (the upgrade's and the connection's deadlines, a refusal's body).
 *
 * @module
 */
import { concatBytes } from "./bytes.ts";
import { webSocketsSocket } from "./paths.ts";
import {
  ByteQueue,
  ConnWebSocket,
  WebSocketConnectionError,
  WebSocketHandshakeError,
  type WebSocketOptions,
} from "./websocket.ts";

const MAX_HEADER_BYTES = 64 * 1024;
const MAX_ERROR_BODY = 64 * 1024;
const GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/**
 * Performs the upgrade on an already connected `conn` and returns the open socket. The connection is
 * closed when the upgrade fails. Throws {@linkcode WebSocketHandshakeError} when the server answers
 * with another status, {@linkcode WebSocketConnectionError} when the connection fails or times out.
 */
export async function openWebSocket(conn: Deno.Conn, options: WebSocketOptions): Promise<ConnWebSocket> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  let timer: ReturnType<typeof setTimeout> | undefined;
  let timedOut = false;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      timedOut = true;
      try {
        conn.close();
      } catch { /* closed */ }
      reject(new WebSocketConnectionError(`the server did not answer the upgrade within ${timeoutMs} ms`));
    }, timeoutMs);
  });
  try {
    return await Promise.race([handshake(conn, options), timeout]);
  } catch (error) {
    if (!timedOut) {
      try {
        conn.close();
      } catch { /* closed */ }
    }
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

async function handshake(conn: Deno.Conn, options: WebSocketOptions): Promise<ConnWebSocket> {
  const key = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(16))));
  const lines = [
    `GET ${options.path} HTTP/1.1`,
    `Host: ${options.host ?? "localhost"}`,
    "Upgrade: websocket",
    "Connection: Upgrade",
    `Sec-WebSocket-Key: ${key}`,
    "Sec-WebSocket-Version: 13",
  ];
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    if (/[\r\n]/.test(name + value)) throw new TypeError(`header ${name}: must not contain line breaks`);
    lines.push(`${name}: ${value}`);
  }
  const request = encoder.encode(lines.join("\r\n") + "\r\n\r\n");
  try {
    let written = 0;
    while (written < request.length) written += await conn.write(request.subarray(written));
  } catch (cause) {
    throw new WebSocketConnectionError(`cannot send the upgrade: ${(cause as Error).message}`, { cause });
  }
  const received = new ByteQueue();
  const buffer = new Uint8Array(16 * 1024);
  let headEnd = -1;
  while (headEnd < 0) {
    let n: number | null;
    try {
      n = await conn.read(buffer);
    } catch (cause) {
      throw new WebSocketConnectionError(
        `the connection failed during the upgrade: ${(cause as Error).message}`,
        {
          cause,
        },
      );
    }
    if (n === null) throw new WebSocketConnectionError("the server closed the connection during the upgrade");
    received.push(buffer.subarray(0, n));
    headEnd = indexOfBlankLine(received.peek());
    if (headEnd < 0 && received.length > MAX_HEADER_BYTES) {
      throw new WebSocketConnectionError("the upgrade answer's headers are too long");
    }
  }
  const head = decoder.decode(received.take(headEnd + 4));
  const [statusLine, ...headerLines] = head.slice(0, -4).split("\r\n");
  const status = /^HTTP\/1\.[01] (\d{3})/.exec(statusLine);
  const headers = new Headers();
  for (const line of headerLines) {
    const colon = line.indexOf(":");
    if (colon > 0) headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
  }
  if (!status) {
    throw new WebSocketHandshakeError(0, headers, new Uint8Array(), `not an HTTP answer: ${statusLine}`);
  }
  const code = Number(status[1]);
  if (code !== 101) {
    throw new WebSocketHandshakeError(code, headers, await readBody(conn, headers, received));
  }
  const expected = await acceptKey(key);
  if (headers.get("sec-websocket-accept") !== expected) {
    throw new WebSocketConnectionError("the server's Sec-WebSocket-Accept does not match the key");
  }
  if (headers.get("sec-websocket-extensions")) {
    throw new WebSocketConnectionError("the server negotiated an extension that was not offered");
  }
  return new ConnWebSocket(conn, received.take(received.length), {
    maxMessageBytes: options.maxMessageBytes,
  });
}

function indexOfBlankLine(bytes: Uint8Array): number {
  for (let i = 0; i + 3 < bytes.length; i++) {
    if (bytes[i] === 13 && bytes[i + 1] === 10 && bytes[i + 2] === 13 && bytes[i + 3] === 10) return i;
  }
  return -1;
}

/** The body of a refused upgrade: by content-length or chunked, up to 64 KiB; empty when unreadable. */
async function readBody(conn: Deno.Conn, headers: Headers, received: ByteQueue): Promise<Uint8Array> {
  const length = Number(headers.get("content-length") ?? NaN);
  const chunked = /chunked/i.test(headers.get("transfer-encoding") ?? "");
  const buffer = new Uint8Array(16 * 1024);
  const complete = (): boolean => {
    if (Number.isInteger(length)) return received.length >= Math.min(length, MAX_ERROR_BODY);
    if (chunked) return dechunk(received.peek()) !== null;
    return false;
  };
  // A server that sends neither keeps the connection open; wait briefly for what it sends.
  const deadline = Date.now() + 2000;
  try {
    while (!complete() && received.length < MAX_ERROR_BODY && Date.now() < deadline) {
      const n = await conn.read(buffer);
      if (n === null) break;
      received.push(buffer.subarray(0, n));
    }
  } catch { /* what arrived is all there is */ }
  const bytes = received.peek();
  if (Number.isInteger(length)) return bytes.slice(0, Math.min(length, MAX_ERROR_BODY));
  if (chunked) return dechunk(bytes) ?? bytes.slice(0, MAX_ERROR_BODY);
  return bytes.slice(0, MAX_ERROR_BODY);
}

/** Decodes a complete chunked body, or null while it is incomplete. */
function dechunk(bytes: Uint8Array): Uint8Array | null {
  const parts: Uint8Array[] = [];
  let offset = 0;
  while (true) {
    let lineEnd = -1;
    for (let i = offset; i + 1 < bytes.length; i++) {
      if (bytes[i] === 13 && bytes[i + 1] === 10) {
        lineEnd = i;
        break;
      }
    }
    if (lineEnd < 0) return null;
    const size = parseInt(decoder.decode(bytes.subarray(offset, lineEnd)).split(";")[0], 16);
    if (!Number.isFinite(size)) return null;
    const start = lineEnd + 2;
    if (size === 0) break;
    if (start + size + 2 > bytes.length) return null;
    parts.push(bytes.subarray(start, start + size));
    offset = start + size + 2;
  }
  return concatBytes(parts);
}

async function acceptKey(key: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-1", encoder.encode(key + GUID));
  return btoa(String.fromCharCode(...new Uint8Array(digest)));
}

/**
 * Opens a WebSocket to `path` on the daemon whose API socket is `socket`: on the socket beside it that
 * serves WebSockets ({@linkcode webSocketsSocket}).
 */
export async function connectUnixWebSocket(
  socket: string,
  path: string,
  options: Omit<WebSocketOptions, "path"> = {},
): Promise<ConnWebSocket> {
  const conn = await Deno.connect({ transport: "unix", path: webSocketsSocket(socket) });
  return await openWebSocket(conn, { host: "dockd", ...options, path });
}

/** Options of {@linkcode connectTlsWebSocket}. */
export interface TlsWebSocketOptions extends WebSocketOptions {
  hostname: string;
  port: number;
  /** Root certificates (PEM) to trust besides the system's: the pinned box CA. */
  caCerts?: string[];
}

/**
 * Opens a WebSocket over TLS (`wss://hostname:port/path`). The TLS handshake completes before the
 * upgrade is written, so a certificate that does not verify fails here with nothing sent.
 */
export async function connectTlsWebSocket(options: TlsWebSocketOptions): Promise<ConnWebSocket> {
  const timeoutMs = options.timeoutMs ?? 10_000;
  const connecting = (async () => {
    const conn = await Deno.connectTls({
      hostname: options.hostname,
      port: options.port,
      caCerts: options.caCerts,
    });
    try {
      await conn.handshake();
    } catch (error) {
      try {
        conn.close();
      } catch { /* closed */ }
      throw error;
    }
    return conn;
  })();
  let timer: ReturnType<typeof setTimeout> | undefined;
  let conn: Deno.TlsConn;
  try {
    conn = await Promise.race([
      connecting,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          // A connection that completes after all is closed at once.
          connecting.then((late) => late.close(), () => {});
          reject(new Deno.errors.TimedOut(`connecting to ${options.hostname}:${options.port} timed out`));
        }, timeoutMs);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
  const host = options.hostname.includes(":") ? `[${options.hostname}]` : options.hostname;
  return await openWebSocket(conn, { host: `${host}:${options.port}`, ...options });
}
