/**
 * The phone companion's routes, what a phone may do, and the gate of the phone listener.
 *
 * - On the daemon's socket and the laptop listener (spec 4.2, `GET phone`, `PUT phone`): the setting
 *   and the paired phones; `POST phone/code` makes a one-time link, `DELETE phone/devices/{id}` revokes a
 *   phone and closes what it has open. A laptop may do these: it can already do all a phone can, and
 *   more, so it pairs the owner's phone from wherever the owner is.
 * - On the phone listener, without a credential: `POST phone/pair` trades a code for the phone's
 *   credential, set as a cookie; rate-limited per address by the pairing store, like a laptop's.
 * - On the phone listener, with the cookie: only the routes in {@linkcode PHONE_SCOPE}; every other
 *   route of the box answers 403 before its handler (or its body reader, or its gates) runs.
 *
 * Why a cookie and not a token the page keeps in `localStorage`: the page needs the credential on
 * `EventSource` (events) and on the attach WebSocket, neither of which can send an `Authorization`
 * header, so a token would ride in URLs (history, logs); and an `HttpOnly` cookie cannot be read by
 * script, so even a bug that ran script in the page could not carry the credential away. The cookie is
 * `__Host-` (this origin only, `Secure`, `Path=/`), `SameSite=Strict`. Cookies bring CSRF, closed
 * twice: every state-changing request must carry the header {@linkcode PHONE_CSRF_HEADER} (a page
 * elsewhere cannot add a custom header to a cross-site request without a CORS preflight, which this
 * listener never grants), and a request whose `Origin` is not this listener's own is refused (which also
 * covers WebSocket upgrades, whose `Origin` browsers always send and which no header rule reaches).
 *
 * @module
 */
import type { Hono } from "hono";
import { DockError, notFound } from "../../client/errors.ts";
import type { PhoneDevice, PhonePairCode, PhoneRedeemed } from "../../client/wire.ts";
import { PAIR_CODE_REQUEST, PHONE_REDEEM, PHONE_SETTINGS } from "../../client/schemas.ts";
import type { EventBus } from "../../core/events.ts";
import { body, errorResponse, json, param, requestOrigin, RouteTable } from "../../core/http.ts";
import type { Log } from "../../core/log.ts";
import type { PhoneCompanion } from "../phone.ts";
import { urlHost } from "../phone.ts";
import { credentialGate, type LaptopStreams } from "./laptop_gate.ts";
import { linkHost, remoteAddress } from "./pair.ts";

/**
 * What a phone may do, as `METHOD /path` exactly as the box's route tables declare them: read sessions
 * and events, attach, send prompts and keys and answer "needs you" (a permission prompt too), plus the
 * read-only status the board shows beside them (locations, worktrees' git status, services' states and
 * ports). Not exec, config, hooks, flows, env, plugins, services' logs or control, worktree changes or
 * pairing. The one place this is decided;
 * a listed route that no table declares throws when the phone listener is built, so a renamed route
 * cannot silently fall out of (or stay in) the scope.
 */
export const PHONE_SCOPE: readonly string[] = [
  "GET /info",
  "GET /locations",
  "GET /worktrees",
  "GET /services",
  "GET /locations/:name/worktrees/:wt/services",
  "GET /sessions",
  "GET /sessions/:name",
  "GET /sessions/:name/screen",
  "GET /sessions/:name/wait",
  "GET /sessions/:name/attach",
  "POST /sessions/:name/send",
  // Needs you's answers and quick keys: keystrokes, as send is input.
  "POST /sessions/:name/keys",
  "POST /sessions/:name/answer",
  "GET /events",
  // Needs no credential: the gate lets it through to pair the phone.
  "POST /phone/pair",
];

/** The cookie a phone's credential lives in. */
export const PHONE_COOKIE = "__Host-dock-phone";
/** The header every state-changing request from the phone page carries (value `1`): the CSRF check. */
export const PHONE_CSRF_HEADER = "x-dock-phone";

/** A cookie lives at most 400 days in browsers; pairing again after that is acceptable. */
const COOKIE_MAX_AGE_S = 400 * 24 * 3600;
/** An unauthenticated body has no reason to be large. */
const MAX_REDEEM_BODY = 4096;

/** What the phone routes use of the box. */
export interface PhoneRoutesBackend {
  bus: Pick<EventBus, "publish">;
  phone: Pick<PhoneCompanion, "state" | "configure" | "listener"> & {
    devices: Pick<PhoneCompanion["devices"], "createCode" | "list" | "revoke" | "redeem">;
  };
  settings: { readonly name: string };
}

/** `GET phone`, `PUT phone`, `POST phone/code`, `DELETE phone/devices/{id}`: the box's own side. */
export function phoneRoutes(box: PhoneRoutesBackend): RouteTable {
  return new RouteTable("phone")
    .add("GET", "/phone", () => json(box.phone.state()))
    .add(
      "PUT",
      "/phone",
      async (c) => json(await box.phone.configure(await body(c, PHONE_SETTINGS), requestOrigin(c))),
    )
    .add("POST", "/phone/code", async (c) => {
      const request = await body(c, PAIR_CODE_REQUEST);
      const listener = box.phone.listener;
      if (!listener) {
        const state = box.phone.state();
        throw new DockError(
          "not_listening",
          `Cannot make a phone link: the phone companion is ${
            state.enabled
              ? `on but not listening (${state.error ?? "starting"})`
              : "off; run `dockd phone on`"
          }`,
          { status: 409 },
        );
      }
      const host = linkHost(listener, request?.host, "a phone link");
      const { code, expires } = await box.phone.devices.createCode();
      return json(
        {
          link: `https://${urlHost(host)}:${listener.port}/pair#${code}`,
          expires: expires.toISOString(),
          fingerprint: listener.fingerprint,
        } satisfies PhonePairCode,
      );
    })
    .add("DELETE", "/phone/devices/:id", (c) => {
      const id = param(c, "id");
      const phone = box.phone.devices.list().find((p) => p.id === id);
      if (!phone) throw notFound("phone", id);
      // The pairing store's revoke listeners close the phone's open streams before it returns.
      box.phone.devices.revoke(id);
      box.bus.publish({ type: "phone.revoked", origin: requestOrigin(c), data: { id, name: phone.name } });
      return json(phone satisfies PhoneDevice);
    });
}

/** `POST phone/pair` on the phone listener: a phone trades its one-time code for the cookie. */
export function phoneRedeemRoutes(box: PhoneRoutesBackend): RouteTable {
  return new RouteTable("phone-redeem").add("POST", "/phone/pair", async (c) => {
    const { code, name } = await body(c, PHONE_REDEEM, { limit: MAX_REDEEM_BODY });
    const paired = await box.phone.devices.redeem(code, { name: name ?? "phone", address: remoteAddress(c) });
    const phone = box.phone.devices.list().find((p) => p.id === paired.id);
    box.bus.publish({ type: "phone.paired", origin: "phone", data: { id: paired.id, name: phone?.name } });
    const response = json({ id: paired.id, box: box.settings.name } satisfies PhoneRedeemed, 201);
    response.headers.set(
      "set-cookie",
      `${PHONE_COOKIE}=${paired.credential}; Path=/; Secure; HttpOnly; SameSite=Strict; Max-Age=${COOKIE_MAX_AGE_S}`,
    );
    return response;
  });
}

/**
 * The same tables with every route outside {@linkcode PHONE_SCOPE} answering 403 in place of its
 * handler. Throws when a scope entry names a route no table declares.
 */
export function phoneScoped(tables: RouteTable[]): RouteTable[] {
  const declared = new Set(tables.flatMap((t) => t.routes.map((r) => `${r.method} ${r.path}`)));
  const unknown = PHONE_SCOPE.filter((entry) => !declared.has(entry));
  if (unknown.length) throw new Error(`PHONE_SCOPE names routes no table declares: ${unknown.join(", ")}`);
  return tables.map((table) => {
    const scoped = new RouteTable(table.resource);
    for (const route of table.routes) {
      if (PHONE_SCOPE.includes(`${route.method} ${route.path}`)) {
        scoped.route({ ...route, gates: [...route.gates] });
      } else {
        scoped.add(route.method, route.path, () => {
          throw new DockError(
            "phone_forbidden",
            `a phone cannot ${route.method} /v1${route.path}; use the laptop or the box itself`,
            { status: 403 },
          );
        });
      }
    }
    return scoped;
  });
}

/** What the phone listener serves outside `/v1/`: the app and its files (no credential, no data). */
export type PhonePages = (request: Request) => Response | Promise<Response>;

/**
 * Builds the phone listener's handler: pages for anything outside `/v1/`; for the API the origin and
 * CSRF checks, then `POST phone/pair` as it is, and everything else only with a paired phone's cookie,
 * tied to that phone so its revocation ends what it has open.
 */
export function phoneGate(
  box: { phone: { devices: Pick<PhoneCompanion["devices"], "authenticate"> }; log: Log },
  app: Hono,
  streams: LaptopStreams,
  pages: PhonePages,
): (request: Request, info: { remoteAddr: Deno.NetAddr }) => Promise<Response> {
  const paired = credentialGate({
    app,
    streams,
    redeem: "/v1/phone/pair",
    role: "phone",
    credential: (request) => cookieValue(request.headers.get("cookie"), PHONE_COOKIE),
    authenticate: (credential) => box.phone.devices.authenticate(credential),
    log: box.log,
    unauthorized:
      "this phone is not paired (or was revoked): run `dockd phone pair` on the box and open its link",
  });
  return async function gate(request, info) {
    const url = new URL(request.url);
    if (!url.pathname.startsWith("/v1/")) return await pages(request);
    const origin = request.headers.get("origin");
    if (origin !== null && origin !== url.origin) {
      return errorResponse(
        new DockError("cross_origin", `requests from ${origin} are refused: only the phone page may call`, {
          status: 403,
        }),
      );
    }
    if (
      request.method !== "GET" && request.method !== "HEAD" && request.headers.get(PHONE_CSRF_HEADER) !== "1"
    ) {
      return errorResponse(
        new DockError("csrf", `a ${request.method} must carry the header '${PHONE_CSRF_HEADER}: 1'`, {
          status: 403,
        }),
      );
    }
    return await paired(request, info);
  };
}

/** One cookie's value out of a `Cookie` header, or null. */
export function cookieValue(header: string | null, name: string): string | null {
  for (const part of (header ?? "").split(";")) {
    const eq = part.indexOf("=");
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return null;
}
