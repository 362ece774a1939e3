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
 * - **Closing.** Either side closing closes the other with the same code and reason; codes that cannot
 *   travel in a close frame (1005 none, 1006 dropped) become none and 1001 / 1011.
 * - **Backpressure.** The box → client direction stops reading the box's socket while the client's
 *   `bufferedAmount` is above a high-water mark (4 MiB) and resumes below a low-water mark (1 MiB). The
 *   unread bytes back up in the kernel's socket buffers and then in the box's bridge, which pauses the
 *   tmux client; tmux redraws once it catches up. Client → box carries keystrokes and resizes; a client
 *   that outruns the box by more than the same high-water mark is closed (1008) rather than buffered.
 * - **The agent's token stays here.** Only `cols` and `rows` go on to the box; a TLS box gets the
 *   laptop's credential in `Authorization`, pinned to the box's CA.
 *
 * @module
 */
import { DockError, notFound } from "../client/errors.ts";
import type { Boxes } from "./boxes.ts";
import {
  connectTlsWebSocket,
  connectUnixWebSocket,
  type ConnWebSocket,
  HIGH_WATER_BYTES,
  sendableCloseCode,
  WebSocketConnectionError,
  WebSocketHandshakeError,
  whileBacklogged,
} from "../client/websocket.ts";

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

const LOW_WATER = 1024 * 1024;

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
  if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
    throw new DockError("upgrade_required", "attach is a WebSocket: send Upgrade: websocket", {
      status: 400,
    });
  }
  const query = new URLSearchParams();
  if (options.cols != null) query.set("cols", options.cols);
  if (options.rows != null) query.set("rows", options.rows);
  const search = query.size ? `?${query}` : "";
  const path = `/v1/sessions/${encodeURIComponent(options.session)}/attach${search}`;
  let box: ConnWebSocket;
  try {
    box = await openBox(options.target, path, options.timeoutMs ?? 10_000);
  } catch (error) {
    return refusal(options.box, error);
  }
  let upgraded: { socket: WebSocket; response: Response };
  try {
    upgraded = Deno.upgradeWebSocket(request);
  } catch (error) {
    await box.close(1011, "the client's upgrade failed");
    throw error;
  }
  upgraded.socket.binaryType = "arraybuffer";
  new Pipe(upgraded.socket, box, options);
  return upgraded.response;
}

function openBox(target: BoxTarget, path: string, timeoutMs: number): Promise<ConnWebSocket> {
  if (target.kind === "socket") {
    return connectUnixWebSocket(target.path, path, { timeoutMs, headers: { "x-dock-origin": "dock" } });
  }
  return connectTlsWebSocket({
    hostname: target.hostname,
    port: target.port,
    caCerts: target.caCerts,
    path,
    timeoutMs,
    headers: { authorization: `Bearer ${target.credential}`, "x-dock-origin": "dock" },
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

/** One client WebSocket piped to one box attach WebSocket. */
class Pipe {
  #client: WebSocket;
  #box: ConnWebSocket;
  #options: AttachRelayOptions;
  #done = false;

  constructor(client: WebSocket, box: ConnWebSocket, options: AttachRelayOptions) {
    this.#client = client;
    this.#box = box;
    this.#options = options;
    // Reading the box starts once the client can take output; until then it waits in the socket.
    client.onopen = () => this.#pump();
    client.onmessage = (event) => this.#toBox(event.data);
    client.onclose = (event) => this.#clientClosed(event.code, event.reason);
    // An error is followed by close, which does the work.
    client.onerror = () => {};
  }

  async #pump(): Promise<void> {
    const client = this.#client;
    const high = this.#options.highWaterBytes ?? HIGH_WATER_BYTES;
    try {
      while (true) {
        const message = await this.#box.next();
        if (message === null || client.readyState !== WebSocket.OPEN) break;
        client.send(message.binary ? message.data : new TextDecoder().decode(message.data));
        if (client.bufferedAmount > high) await this.#drain();
      }
    } catch {
      // A failed read is a lost connection: handled as the box closing.
    }
    this.#boxClosed(this.#box.closeCode ?? 1006, this.#box.closeReason);
  }

  /** Waits (not reading the box) until the client's backlog is down to the low-water mark. */
  async #drain(): Promise<void> {
    const client = this.#client;
    const low = this.#options.lowWaterBytes ?? LOW_WATER;
    this.#options.onFlow?.(true);
    // WebSocket has no drain event, so the backlog is polled.
    await whileBacklogged(client, {
      mark: low,
      stop: () => client.readyState !== WebSocket.OPEN,
      pollMs: this.#options.drainPollMs,
    });
    this.#options.onFlow?.(false);
  }

  #toBox(data: unknown): void {
    if (this.#done) return;
    const sent = data instanceof ArrayBuffer
      ? this.#box.sendBinary(new Uint8Array(data))
      : this.#box.sendText(String(data));
    // A failed write means the box connection is gone; the pump sees that and closes the client.
    sent.catch(() => {});
    if (this.#box.bufferedAmount > (this.#options.highWaterBytes ?? HIGH_WATER_BYTES)) {
      this.#done = true;
      this.#client.close(1008, "input arrives faster than the box takes it");
      this.#box.close(1001, "the client sent too much input").catch(() => {});
    }
  }

  #clientClosed(code: number, reason: string): void {
    if (this.#done) return;
    this.#done = true;
    // The box detaches its tmux client when its socket closes; the session runs on.
    const [boxCode, boxReason] = code === 1005
      ? [undefined, ""]
      : sendableCloseCode(code)
      ? [code, reason]
      : [1001, "the client went away"];
    this.#box.close(boxCode, boxReason).catch(() => {});
  }

  #boxClosed(code: number, reason: string): void {
    this.#done = true;
    const client = this.#client;
    if (client.readyState === WebSocket.CLOSING || client.readyState === WebSocket.CLOSED) return;
    if (code === 1005) client.close();
    else if (sendableCloseCode(code)) client.close(code, reason);
    else client.close(1011, `the connection to box '${this.#options.box}' was lost`);
  }
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
