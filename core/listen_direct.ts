/**
 * Serving a connection by the runtime's own HTTP server (`Deno[Deno.internal].serveHttpOnConnection`, what
 * `Deno.serve` runs on each connection it accepts), for a guarded listener (`listen.ts`) whose connections
 * never become WebSockets. `Deno.serveHttp`, which the other listeners keep, answers an idle process's
 * request ~0.25 ms later: measured on Deno 2.9.6, a small JSON over a unix socket from another process with
 * 1 ms between requests, p50 0.46–0.49 ms by `Deno.serveHttp` against 0.22–0.23 by this server and
 * 0.21–0.23 by a bare `Deno.serve` (back to back, 0.19–0.22 against 0.10–0.11). This server cannot hand a
 * connection to a WebSocket: the upgrade goes through, and the socket is closed as its connection's HTTP
 * ends (the runtime ends its one-connection server then, and with it what the connection carried), so a
 * WebSocket request is refused here, naming where WebSockets are served instead.
 *
 * @module
 */
import { DockError } from "../client/errors.ts";
import type { Deadlines } from "./deadlines.ts";
import type { Closable, Slot } from "./listen_slots.ts";
import { isWebSocketUpgrade } from "./websocket.ts";

/** What a request's handler is told of it by the runtime's server. */
interface ServedRequestInfo {
  /** Settles once the answer has gone out whole (rejects when it could not). */
  readonly completed: Promise<void>;
}

/** The runtime's server on one connection. */
interface ConnectionServer {
  /** Settles once the connection has ended. */
  finished: Promise<void>;
  /** Ends the connection once no answer is in flight (at once when none is). */
  shutdown(): Promise<void>;
}

type ServeHttpOnConnection = (
  connection: Deno.Conn,
  signal: AbortSignal | undefined,
  handler: (request: Request, info: ServedRequestInfo) => Response | Promise<Response>,
  onError: (error: unknown) => Response,
  onListen: () => void,
) => ConnectionServer;

/** The runtime's server on one connection, or undefined where this Deno has none (then `Deno.serveHttp` serves). */
export const serveHttpOnConnection: ServeHttpOnConnection | undefined = (() => {
  const internal = (Deno as unknown as { internal?: symbol }).internal;
  const found = internal
    ? (Deno as unknown as Record<symbol, { serveHttpOnConnection?: unknown } | undefined>)[internal]
      ?.serveHttpOnConnection
    : undefined;
  return typeof found === "function" ? found as ServeHttpOnConnection : undefined;
})();

/** What serving HTTP on a listener's connections needs, by either server. */
export interface HttpServing {
  handler: (request: Request, info: { remoteAddr: Deno.NetAddr }) => Response | Promise<Response>;
  onError?: (error: unknown) => Response;
  deadlines: Deadlines;
  limits: { headerMs: number; idleMs: number };
  stats: { timedOut: number };
  /** The requests came over TLS (through the hop), where the runtime saw plain HTTP. */
  secure: boolean;
}

/** What serving a connection directly needs besides. */
export interface DirectServing extends HttpServing {
  /** Where WebSockets are served, said to a WebSocket request here. */
  webSocketsAt: string;
}

/** The handler's answer to `request` (a handler that threw: `onError`'s), by either server. */
export async function answer(
  request: Request,
  info: { remoteAddr: Deno.NetAddr },
  serving: HttpServing,
): Promise<Response> {
  // Behind the TLS hop the runtime saw plain HTTP and says `http:`; the stranger spoke TLS. The request
  // itself must stay the runtime's (an upgrade to a WebSocket needs it), so only its `url` is shadowed.
  if (serving.secure) {
    Object.defineProperty(request, "url", { value: request.url.replace(/^http:/, "https:") });
  }
  try {
    return await serving.handler(request, info);
  } catch (error) {
    return failed(serving, error);
  }
}

/** The answer when the handler threw (or, on the runtime's server, the answer itself failed). */
function failed(serving: HttpServing, error: unknown): Response {
  return serving.onError?.(error) ?? new Response("internal error", { status: 500 });
}

/**
 * A connection served directly: closing it ends its HTTP (the runtime holds the socket once it serves it).
 * Its server is ended by `shutdown()`, which closes an idle connection or one still sending its headers at
 * once (measured) and lets an answer in flight finish: deadlines close only connections with none, and
 * the runtime's other way, an abort signal, throws from its listener (uncaught: the process ends) once the
 * connection has ended on its own and a deadline or a shutdown comes after.
 */
export class DirectConn implements Closable {
  #conn: Deno.Conn;
  #server: ConnectionServer | undefined;

  constructor(conn: Deno.Conn) {
    this.#conn = conn;
  }

  /** Serves the connection with `serve`'s server. */
  serve(serve: (conn: Deno.Conn) => ConnectionServer): ConnectionServer {
    return this.#server = serve(this.#conn);
  }

  close(): void {
    if (this.#server) return void this.#server.shutdown().catch(() => {});
    try {
      this.#conn.close();
    } catch { /* closed */ }
  }
}

/**
 * Serves HTTP on `socket` (a plain connection this listener accepted, or the loopback end of a TLS pipe:
 * `piped`) by the runtime's server, closing it at the header deadline and when idle, as `Deno.serveHttp`'s
 * connections are. Its end gives `slot` back; behind the TLS hop the pipe does, once it has relayed the
 * last answer (the runtime's server has written it to the pipe, not yet to the stranger).
 */
export function serveDirect(socket: DirectConn, slot: Slot, serving: DirectServing, piped = false): void {
  const { deadlines, limits, stats } = serving;
  let inFlight = 0;
  const deadline = deadlines.add(() => {
    stats.timedOut++;
    slot.close();
  });
  deadline.arm(limits.headerMs);
  const settled = () => {
    if (--inFlight === 0) deadline.arm(limits.idleMs);
  };
  const info = { remoteAddr: slot.peer };
  // A WebSocket would open and be closed at once here: refused, saying where they are served.
  const refusal = new DockError(
    "websocket_elsewhere",
    `WebSockets are not served on this connection: they are served on ${serving.webSocketsAt}`,
    { status: 400 },
  ).toBody();
  const server = socket.serve((conn) =>
    serveHttpOnConnection!(
      conn,
      undefined,
      (request, served) => {
        deadline.disarm();
        inFlight++;
        // An answer in flight (a stream: SSE, NDJSON) keeps the connection from idling until it is whole.
        served.completed.then(settled, settled);
        if (isWebSocketUpgrade(request)) return Response.json(refusal, { status: 400 });
        return answer(request, info, serving);
      },
      (error) => failed(serving, error),
      () => {},
    )
  );
  server.finished.catch(() => {}).finally(() => {
    deadline.disarm();
    if (!piped) slot.close();
  });
}
