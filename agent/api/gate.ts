/**
 * The one gate in front of every route of the agent's loopback API (spec 5): the Host check (DNS
 * rebinding), CORS for the desktop shell's and the development server's origins, the bearer token
 * (`?token=` only on WebSocket upgrades, which browsers cannot give headers), and security headers.
 * Handlers never check any of this again.
 *
 * @module
 */
import type { MiddlewareHandler } from "hono";
import { DockError } from "../../client/errors.ts";
import { errorResponse } from "../../core/http.ts";
import { isWebSocketUpgrade } from "../../core/websocket.ts";
import { sameSecret } from "../../core/bytes.ts";

/** Options of {@linkcode gate}. */
export interface GateOptions {
  /** The port the API listens on (the Host header must name it). */
  port: number;
  /** The current token (read per request, so a rotated token applies at once). */
  token: () => string;
  /**
   * Paths of the routes that answer a WebSocket upgrade: the only requests that may carry the token as
   * `?token=` (a browser cannot give a WebSocket headers). @default {[]}
   */
  websockets?: RegExp[];
  /**
   * Requests that need no token: the app's static files, which hold no data (the Host check still
   * applies). @default {() => false}
   */
  open?: (method: string, path: string) => boolean;
}

const SECURITY_HEADERS: Record<string, string> = {
  "x-content-type-options": "nosniff",
  "x-frame-options": "DENY",
  "referrer-policy": "no-referrer",
  "cache-control": "no-store",
  "cross-origin-resource-policy": "same-origin",
};
const SECURITY_ENTRIES = Object.entries(SECURITY_HEADERS);

/** True for the origins spec 5 allows: the desktop shell and the development server (1420–1439). */
export function allowedOrigin(origin: string): boolean {
  if (
    origin === "tauri://localhost" || origin === "http://tauri.localhost" ||
    origin === "https://tauri.localhost"
  ) {
    return true;
  }
  const dev = /^http:\/\/localhost:(\d{4})$/.exec(origin);
  return dev !== null && Number(dev[1]) >= 1420 && Number(dev[1]) <= 1439;
}

/** True when `host` (a Host header) is the loopback address or localhost with the API's port. */
export function allowedHost(host: string | undefined, port: number): boolean {
  return host === `127.0.0.1:${port}` || host === `localhost:${port}` || host === `[::1]:${port}`;
}

/** Builds the gate; the options are checked once, here. */
export function gate(options: GateOptions): MiddlewareHandler {
  if (!Number.isInteger(options.port) || options.port < 1 || options.port > 65535) {
    throw new RangeError(
      `Cannot build the gate: 'port' must be a TCP port, current value is ${options.port}`,
    );
  }
  // The token's bytes, encoded again only when the token changes (every request compares against it).
  let known = { token: "", bytes: new Uint8Array() };
  const matches = (given: string) => {
    const token = options.token();
    if (known.token !== token) known = { token, bytes: new TextEncoder().encode(token) };
    return sameSecret(given, known.bytes);
  };
  return async function agentGate(c, next) {
    const refuse = (error: DockError) => withHeaders(errorResponse(error), corsHeaders(origin));
    const origin = c.req.header("origin");
    if (!allowedHost(c.req.header("host"), options.port)) {
      return refuse(
        new DockError("forbidden_host", "this API answers only to 127.0.0.1 and localhost", { status: 403 }),
      );
    }
    // The page the agent serves itself (`/app/`) is same-origin, not CORS: its POSTs and WebSockets carry
    // its own origin, which names the Host the check above has just accepted.
    const sameOrigin = origin !== undefined && origin === `http://${c.req.header("host")}`;
    if (origin !== undefined && !sameOrigin && !allowedOrigin(origin)) {
      return withHeaders(
        errorResponse(new DockError("forbidden_origin", `origin ${origin} is not allowed`, { status: 403 })),
        {},
      );
    }
    if (c.req.method === "OPTIONS") {
      // A preflight carries no token; it only learns which methods and headers are allowed.
      return withHeaders(new Response(null, { status: 204 }), {
        ...corsHeaders(origin),
        "access-control-allow-methods": "GET, POST, PUT, PATCH, DELETE, OPTIONS",
        "access-control-allow-headers": "authorization, content-type, last-event-id, x-dock-origin",
        "access-control-max-age": "600",
      });
    }
    if (options.open?.(c.req.method, c.req.path)) {
      await next();
      return;
    }
    const bearer = /^Bearer (.+)$/.exec(c.req.header("authorization") ?? "")?.[1];
    // `?token=` only for a real upgrade to a WebSocket route: an `Upgrade` header alone once opened every
    // GET route, and POST /v1/refresh, to a token in a URL (which logs and histories keep).
    const upgrade = !bearer && isWebSocketUpgrade(c.req.raw) &&
      (options.websockets ?? []).some((route) => route.test(c.req.path));
    const given = bearer ?? (upgrade ? c.req.query("token") : undefined);
    if (!given || !matches(given)) {
      return refuse(
        new DockError("unauthorized", "missing or wrong token: send Authorization: Bearer <ui-token>", {
          status: 401,
        }),
      );
    }
    await next();
    // A WebSocket upgrade's response cannot take new headers.
    if (c.res.status === 101) return;
    const headers = c.res.headers;
    // An answer marked no-transform (a small JSON one: core/http.ts json(), the relay's from a box) stays
    // so: compressing it cost the agent ~0.2 ms of CPU a relayed `GET info` (0.38 → 0.59 ms) on loopback.
    const noTransform = headers.get("cache-control")?.includes("no-transform");
    for (const [key, value] of SECURITY_ENTRIES) headers.set(key, value);
    if (noTransform) headers.set("cache-control", "no-store, no-transform");
    if (origin !== undefined) {
      for (const [key, value] of Object.entries(corsHeaders(origin))) headers.set(key, value);
    }
  };
}

function corsHeaders(origin: string | undefined): Record<string, string> {
  if (!origin || !allowedOrigin(origin)) return {};
  return {
    "access-control-allow-origin": origin,
    vary: "origin",
    "access-control-allow-credentials": "true",
  };
}

function withHeaders(response: Response, headers: Record<string, string>): Response {
  for (const [key, value] of Object.entries({ ...SECURITY_HEADERS, ...headers })) {
    response.headers.set(key, value);
  }
  return response;
}
