/**
 * The one gate in front of the box's TLS listener for laptops. Every request must carry
 * `Authorization: Bearer <credential>` that the pairing store recognises, except `POST /v1/pair`, which
 * is how a laptop gets one; anything else answers 401. There is no `?token=` form: the laptop agent,
 * not a browser, is the only client here, and it can always send headers (WebSockets included).
 *
 * Revoking a laptop must end what it has open, not only refuse its next request. Each authenticated
 * request is tied to an AbortController kept per laptop ({@linkcode LaptopStreams}); revocation aborts
 * them. The abort reaches a request three ways, because no single one covers every kind of answer:
 * the request's signal (SSE, log follows, session waits and exec watch it), the streamed body, which is
 * cut here whatever its handler does, and WebSockets (attach, tunnel), which are closed with 1008.
 *
 * A WebSocket upgrade goes to the app as it came (Deno upgrades only the request it received), with
 * its tie in the app's env (`TlsEnv.tie`): the route that upgrades hands the tie's signal to its pump,
 * which closes the socket on revocation, and releases the tie when the socket is done. So an attach
 * from a laptop goes straight to the attach handler, with no second hop through the daemon's socket.
 *
 * @module
 */
import type { Hono } from "hono";
import { DockError } from "../../client/errors.ts";
import type { Box } from "../box.ts";
import type { Log } from "../../core/log.ts";
import { errorResponse } from "../../core/http.ts";
import { isWebSocketUpgrade } from "../../core/websocket.ts";
import type { TlsEnv } from "./pair.ts";
import type { Laptop } from "../../client/wire.ts";

/** One request's tie to its laptop: aborted on revocation, released when the answer is done. */
export interface Tie {
  signal: AbortSignal;
  release(): void;
}

/** The requests each laptop (or phone) has open, so a revocation can end them. */
export class LaptopStreams {
  #open = new Map<string, Set<AbortController>>();
  #device: string;

  /** `device` names who is revoked in the reason streams end with. @default {"laptop"} */
  constructor(options: { device?: "laptop" | "phone" } = {}) {
    this.#device = options.device ?? "laptop";
  }

  /** Ties a new request to `laptop`. */
  open(laptop: string): Tie {
    const controller = new AbortController();
    let ties = this.#open.get(laptop);
    if (!ties) this.#open.set(laptop, ties = new Set());
    ties.add(controller);
    const held = ties;
    return {
      signal: controller.signal,
      release: () => {
        held.delete(controller);
        if (held.size === 0 && this.#open.get(laptop) === held) this.#open.delete(laptop);
      },
    };
  }

  /** Aborts every open request of `laptop`; returns how many there were. */
  revoke(laptop: string): number {
    const ties = this.#open.get(laptop) ?? new Set();
    this.#open.delete(laptop);
    const reason = new DockError("revoked", `this ${this.#device}'s pairing with the box was revoked`, {
      status: 401,
    });
    for (const controller of ties) controller.abort(reason);
    return ties.size;
  }

  /** How many requests `laptop` has open. */
  count(laptop: string): number {
    return this.#open.get(laptop)?.size ?? 0;
  }
}

/** The only routes that are WebSockets; an upgrade anywhere else is an ordinary request. */
const WEBSOCKET_ROUTES = [/^\/v1\/sessions\/[^/]+\/attach$/, /^\/v1\/tunnel$/];

/** Builds the TLS listener's handler: the gate, then `app` (the box API) for authenticated requests. */
export function laptopGate(
  box: Box,
  app: Hono,
  streams: LaptopStreams,
): (request: Request, info: { remoteAddr: Deno.NetAddr }) => Promise<Response> {
  return credentialGate({
    app,
    streams,
    redeem: "/v1/pair",
    role: "laptop",
    credential: (request) => /^Bearer (\S+)$/.exec(request.headers.get("authorization") ?? "")?.[1] ?? null,
    authenticate: (credential) => box.pairing.authenticate(credential),
    log: box.log,
    unauthorized:
      "missing or unknown credential: pair this laptop first (`dockd pair` on the box, `dock pair LINK` on the laptop)",
  });
}

/** Options of {@linkcode credentialGate}. */
export interface CredentialGateOptions {
  /** The box API as this listener serves it. */
  app: Hono;
  /** The open requests of each caller, ended when the caller is revoked. */
  streams: LaptopStreams;
  /** The one path (a `POST`) that needs no credential: redeeming a pairing code. */
  redeem: string;
  /** Who calls: the authenticated record goes in the app's env under this name. */
  role: "laptop" | "phone";
  /** The credential a request carries, or null. */
  credential(request: Request): string | null;
  /** The paired caller a credential belongs to, or null. */
  authenticate(credential: string): Promise<Laptop | null>;
  /** What a request without a valid credential is told (a 401). */
  unauthorized: string;
  /** Where an error nothing answered goes (the box's log). */
  log: Log;
}

/**
 * The gate of a listener for paired callers (laptops, phones): the redeem route as it is; anything else
 * only with a credential the pairing store knows, tied to its caller so revocation ends it.
 */
export function credentialGate(
  options: CredentialGateOptions,
): (request: Request, info: { remoteAddr: Deno.NetAddr }) => Promise<Response> {
  return async function gate(request, info) {
    const env: TlsEnv = { remoteAddr: info.remoteAddr };
    if (request.method === "POST" && new URL(request.url).pathname === options.redeem) {
      return await options.app.fetch(request, env);
    }
    const credential = options.credential(request);
    const caller = credential ? await options.authenticate(credential) : null;
    if (!caller) {
      return errorResponse(new DockError("unauthorized", options.unauthorized, { status: 401 }));
    }
    env[options.role] = caller;
    return await fetchTied(options.app, request, env, options.streams.open(caller.id), options.log);
  };
}

/**
 * Hands an authenticated request to `app`, tied to its caller: revoking the caller aborts the tie, which
 * ends the request (its signal), cuts its streamed answer, and closes its WebSocket. Every listener with
 * revocable callers (laptops, phones) answers through this.
 */
export async function fetchTied(
  app: Hono,
  request: Request,
  env: TlsEnv,
  tie: Tie,
  log: Log,
): Promise<Response> {
  try {
    if (
      isWebSocketUpgrade(request) &&
      WEBSOCKET_ROUTES.some((route) => route.test(new URL(request.url).pathname))
    ) {
      const response = await app.fetch(request, { ...env, tie } satisfies TlsEnv);
      // Upgraded: the route holds the tie until its socket is done. Refused: nothing is open.
      if (response.status !== 101) tie.release();
      return response;
    }
    const signal = AbortSignal.any([request.signal, tie.signal]);
    return cutOnAbort(await app.fetch(new Request(request, { signal }), env), tie);
  } catch (error) {
    tie.release();
    return errorResponse(error, log);
  }
}

/**
 * Streams `response` on, cutting it off when the tie aborts. JSON answers pass as they are: they are
 * complete values whose handlers already ended on the request's signal.
 */
function cutOnAbort(response: Response, tie: Tie): Response {
  if (!response.body || (response.headers.get("content-type") ?? "").startsWith("application/json")) {
    tie.release();
    return response;
  }
  const reader = response.body.getReader();
  let finished = false;
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const finish = () => {
    if (finished) return;
    finished = true;
    tie.signal.removeEventListener("abort", cut);
    tie.release();
  };
  // Erroring the body (rather than closing it) makes the server drop the connection, so the laptop
  // sees the stream break instead of a clean end it might take for "nothing more to say".
  const cut = () => {
    try {
      controller.error(tie.signal.reason);
    } catch { /* already closed */ }
    reader.cancel(tie.signal.reason).catch(() => {});
    finish();
  };
  const body = new ReadableStream<Uint8Array>({
    start(c) {
      controller = c;
      if (tie.signal.aborted) cut();
      else tie.signal.addEventListener("abort", cut, { once: true });
    },
    async pull(c) {
      try {
        const next = await reader.read();
        if (next.done) {
          c.close();
          finish();
        } else {
          c.enqueue(next.value);
        }
      } catch (error) {
        if (finished) return;
        c.error(error);
        finish();
      }
    },
    cancel(reason) {
      finish();
      return reader.cancel(reason);
    },
  });
  return new Response(body, {
    status: response.status,
    statusText: response.statusText,
    headers: response.headers,
  });
}
