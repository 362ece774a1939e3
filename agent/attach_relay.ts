/**
 * The terminal relay: `GET /v1/boxes/{box}/sessions/{name}/attach?cols&rows&token` on the agent
 * becomes the box's own attach WebSocket (`/v1/sessions/{name}/attach?cols&rows`, spec 4.3), and the
 * two sockets are piped into each other.
 *
 * - **The box first.** The box's upgrade is made before the client's is accepted, so a box that refuses
 *   (404 unknown session, 400 bad size, 401 credential) or cannot be reached (503) or fails mid-upgrade
 *   (502) is answered as an ordinary HTTP error with a JSON body, the same statuses as the API relay.
 *   A box's refusal is passed through with its own status and body.
 * - **Frames unchanged.** Binary frames go both ways as they are (terminal output out, keystrokes in);
 *   text frames (resize control) go client → box. Nothing is decoded or re-chunked.
 * - **Closing and backpressure** are the one pump's (core/pump.ts): either side closing closes the other
 *   with the same code and reason (none for none, 1011 for a dropped connection). The box → client
 *   direction stops reading the box's socket while the client's `bufferedAmount` is above a high-water
 *   mark (4 MiB) and resumes below a low-water mark (1 MiB); the unread bytes back up in the kernel's
 *   socket buffers and then in the box's own pump, which pauses the tmux client; tmux redraws once it
 *   catches up. Client → box carries keystrokes and resizes; a client that outruns the box by more
 *   than the high-water mark is closed (1008) rather than buffered.
 * - **The agent's token stays here.** Only `cols` and `rows` go on to the box; a TLS box gets the
 *   laptop's credential in `Authorization`, pinned to the box's CA.
 *
 * @module
 */
import { DockError, notFound } from "../client/errors.ts";
import type { Boxes } from "./boxes.ts";
import { messageSocketEnd, pump, webSocketEnd } from "../core/pump.ts";
import { connectTlsWebSocket, connectUnixWebSocket } from "../core/ws_client.ts";
import {
  acceptWebSocket,
  type ConnWebSocket,
  requireWebSocket,
  WebSocketConnectionError,
  WebSocketHandshakeError,
} from "../core/websocket.ts";

/** How the agent reaches one box's API. */
export type BoxTarget =
  | { kind: "socket"; /** The daemon's unix socket. */ path: string }
  | {
    kind: "tls";
    hostname: string;
    port: number;
    /** The box's CA (PEM), pinned. */
    caCerts: string[];
    /** The laptop's credential for this box (sent as `Authorization: Bearer`). */
    credential: string;
  };

/** Options of {@linkcode attachRelay}. */
export interface AttachRelayOptions {
  /** The box's name, for error messages. */
  box: string;
  target: BoxTarget;
  /** The session's name (sent percent-encoded). */
  session: string;
  /** `cols` and `rows` as the client sent them (the box validates them); null when absent. */
  cols?: string | null;
  rows?: string | null;
  /** Stop reading the box once this many bytes wait unsent to the client. @default {4 MiB} */
  highWaterBytes?: number;
  /** Read the box again once the client's backlog drains to this. @default {1 MiB} */
  lowWaterBytes?: number;
  /** Milliseconds between backlog checks while paused. @default {5} */
  drainPollMs?: number;
  /** Give up on the box's upgrade after this long. @default {10_000} */
  timeoutMs?: number;
  /** Told when backpressure pauses (`true`) or resumes (`false`) reading the box: for metrics and tests. */
  onFlow?: (paused: boolean) => void;
}

/** Parses a TLS box's address (`https://host:port`) into the parts of a {@linkcode BoxTarget}. */
export function tlsTarget(
  address: string,
  credentials: { caCerts: string[]; credential: string },
): BoxTarget {
  const url = new URL(address);
  if (url.protocol !== "https:") {
    throw new DockError("invalid_request", `a TLS box's address must be https://HOST:PORT, got ${address}`);
  }
  return {
    kind: "tls",
    hostname: url.hostname.replace(/^\[(.*)\]$/, "$1"),
    port: Number(url.port || 443),
    caCerts: credentials.caCerts,
    credential: credentials.credential,
  };
}

/**
 * Opens the box's attach WebSocket, then accepts `request`'s upgrade and pipes the two. Throws a
 * DockError (503, 502, 400) or returns the box's own error answer when the box's upgrade fails.
 */
export async function attachRelay(request: Request, options: AttachRelayOptions): Promise<Response> {
  requireWebSocket(request, "attach");
  const query = new URLSearchParams();
  if (options.cols != null) query.set("cols", options.cols);
  if (options.rows != null) query.set("rows", options.rows);
  const search = query.size ? `?${query}` : "";
  const path = `/v1/sessions/${encodeURIComponent(options.session)}/attach${search}`;
  let box: ConnWebSocket;
  try {
    box = await openBoxWebSocket(options.target, path, {
      timeoutMs: options.timeoutMs ?? 10_000,
      headers: { "x-dock-origin": "dock" },
    });
  } catch (error) {
    return refusal(options.box, error);
  }
  let upgraded: { socket: WebSocket; response: Response };
  try {
    upgraded = acceptWebSocket(request, "attach");
  } catch (error) {
    await box.close(1011, "the client's upgrade failed");
    throw error;
  }
  pump(
    webSocketEnd(upgraded.socket, "the client", { drainPollMs: options.drainPollMs }),
    messageSocketEnd(box, `box '${options.box}'`),
    { highWaterBytes: options.highWaterBytes, lowWaterBytes: options.lowWaterBytes, onFlow: options.onFlow },
  );
  return upgraded.response;
}

/**
 * Opens a WebSocket to `path` on a box's API: over its socket, or over TLS pinned to its CA with this
 * laptop's credential. The attach relay and the tunnels (forwards, proxy) reach a box this way.
 */
export function openBoxWebSocket(
  target: BoxTarget,
  path: string,
  options: { timeoutMs?: number; headers?: Record<string, string> } = {},
): Promise<ConnWebSocket> {
  if (target.kind === "socket") {
    return connectUnixWebSocket(target.path, path, {
      timeoutMs: options.timeoutMs,
      headers: options.headers,
    });
  }
  return connectTlsWebSocket({
    hostname: target.hostname,
    port: target.port,
    caCerts: target.caCerts,
    path,
    timeoutMs: options.timeoutMs,
    headers: { ...options.headers, authorization: `Bearer ${target.credential}` },
  });
}

/** The HTTP answer for a box upgrade that failed. */
function refusal(box: string, error: unknown): Response {
  if (error instanceof WebSocketHandshakeError && error.status >= 400 && error.status <= 599) {
    // The box's own answer (its JSON error), with its status: 404 session, 400 size, 401 credential.
    const type = error.headers.get("content-type") ?? "";
    if (type.includes("json") && isErrorBody(error.body)) {
      return new Response(error.body.slice(), { status: error.status, headers: { "content-type": type } });
    }
    return Response.json(
      {
        error: {
          code: "box_refused",
          message: `box '${box}' refused the attach: HTTP ${error.status} ${snippet(error.body)}`.trim(),
          box,
        },
      },
      { status: error.status },
    );
  }
  if (error instanceof WebSocketHandshakeError || error instanceof WebSocketConnectionError) {
    // The upgrade went out: the box may have started a tmux client (it ends with the connection).
    throw new DockError("box_connection_failed", `the attach to box '${box}' failed: ${error.message}`, {
      status: 502,
      cause: error,
      detail: { box },
    });
  }
  throw new DockError(
    "box_unreachable",
    `box '${box}' cannot be reached: ${(error as Error)?.message ?? String(error)}`,
    { status: 503, cause: error, detail: { box } },
  );
}

function isErrorBody(body: Uint8Array): boolean {
  try {
    const parsed = JSON.parse(new TextDecoder().decode(body));
    return typeof parsed?.error?.code === "string" && typeof parsed.error.message === "string";
  } catch {
    return false;
  }
}

function snippet(body: Uint8Array): string {
  return new TextDecoder().decode(body.subarray(0, 300)).replace(/\s+/g, " ");
}

/** What a TLS box's attach needs beyond its address: the pinned CA and this laptop's credential. */
export interface TlsCredentials {
  tlsCredentials(name: string): { caCerts: string[]; credential: string } | null;
}

/**
 * How the agent reaches `name`: its daemon's socket, or its TLS address with the CA and credential the
 * registry keeps (read through a `tlsCredentials(name)` method on {@linkcode Boxes} when it has one).
 */
export function boxTarget(boxes: Boxes, name: string): BoxTarget {
  const record = boxes.list().find((box) => box.name === name);
  if (!record) throw notFound("box", name);
  if (record.kind === "socket") return { kind: "socket", path: record.address };
  const credentials = (boxes as Boxes & Partial<TlsCredentials>).tlsCredentials?.(name);
  if (!credentials) {
    throw new DockError(
      "unsupported",
      `box '${name}': attaching over TLS needs the box's CA and credential`,
      {
        status: 422,
      },
    );
  }
  return tlsTarget(record.address, credentials);
}
