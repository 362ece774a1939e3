/**
 * Routes of pairing laptops with this box.
 *
 * - On the daemon's own socket only (whoever can open it is the box's user): `POST pair/code` makes a
 *   one-time link, `GET laptops` lists the paired laptops, `DELETE laptops/{id}` revokes one. On the TLS
 *   listener these answer 403: a paired laptop can neither pair further laptops nor revoke others.
 * - On the TLS listener, without a credential: `POST pair` trades a code for a credential, rate-limited
 *   per remote address by the pairing store.
 * - On the TLS listener, with its credential: `DELETE pair` unpairs the calling laptop (what `dock forget`
 *   sends, so a forgotten box does not keep trusting the laptop). The laptop is the one the gate
 *   authenticated, never one named in the request: a laptop can remove itself and no other.
 *
 * @module
 */
import type { Context } from "hono";
import { DockError, notFound } from "../../client/errors.ts";
import type { Laptop, PairCode, PairRedeemed, PhoneDevice } from "../../client/wire.ts";
import { PAIR_CODE_REQUEST, PAIR_REDEEM } from "../../client/schemas.ts";
import type { TlsListener } from "../box.ts";
import type { EventBus } from "../../core/events.ts";
import type { PairingStore } from "../pairing.ts";
import type { BoxSettings } from "../settings.ts";
import { link } from "../../core/pairing_link.ts";
import { coveredHost, defaultLinkHost } from "../tls.ts";
import { body, json, param, requestOrigin, RouteTable } from "../../core/http.ts";

/** What the TLS listener hands its app as `c.env`. */
export interface TlsEnv {
  /** The caller's address: the pairing rate limit counts failures per IP. */
  remoteAddr: Deno.NetAddr;
  /** The laptop the gate authenticated (absent only on `POST pair`, which needs no credential). */
  laptop?: Laptop;
  /** On the phone listener: the phone the gate authenticated (absent only on `POST phone/pair`). */
  phone?: PhoneDevice;
  /**
   * On a WebSocket upgrade: the request's tie to its laptop, aborted when the laptop is revoked. The
   * route that upgrades closes its socket on the abort and releases the tie once the socket is done.
   */
  tie?: { signal: AbortSignal; release(): void };
}

/** An unauthenticated body has no reason to be large; reading 8 MB from anyone would be a gift. */
const MAX_REDEEM_BODY = 4096;

/** What the socket-only pairing routes use of the box. */
export interface PairingRoutesBackend {
  bus: Pick<EventBus, "publish">;
  pairing: Pick<PairingStore, "createCode" | "list" | "revoke">;
  /** The laptop listener once it listens, else null (read at each request). */
  readonly tls: TlsListener | null;
  /** Why the laptop listener is not running. */
  readonly tlsDown: string | null;
}

/** What a laptop's own pairing routes use of the box. */
export interface RedeemRoutesBackend {
  bus: Pick<EventBus, "publish">;
  pairing: Pick<PairingStore, "redeem" | "list" | "revoke">;
  settings: Pick<BoxSettings, "name">;
}

/** The socket-only routes: make a pairing link, list and revoke laptops. */
export function pairingRoutes(box: PairingRoutesBackend): RouteTable {
  return new RouteTable("pairing")
    .add("POST", "/pair/code", async (c) => {
      const request = await body(c, PAIR_CODE_REQUEST);
      const listener = box.tls;
      if (!listener) {
        throw new DockError(
          "not_listening",
          `Cannot make a pairing link: the box does not listen for laptops (${
            box.tlsDown ?? "not started yet"
          })`,
          { status: 409 },
        );
      }
      const host = linkHost(listener, request?.host, "a pairing link");
      const { code, expires } = await box.pairing.createCode();
      return json(
        {
          link: link(host, listener.port, code, listener.fingerprint),
          expires: expires.toISOString(),
        } satisfies PairCode,
      );
    })
    .add("GET", "/laptops", () => json(box.pairing.list()))
    .add("DELETE", "/laptops/:id", (c) => {
      const id = param(c, "id");
      const laptop = box.pairing.list().find((l) => l.id === id);
      if (!laptop) throw notFound("laptop", id);
      return revoke(box, laptop, requestOrigin(c));
    });
}

/**
 * The routes of a laptop's own pairing on the TLS listener: `POST pair` `{ code, name }` pairs it,
 * `DELETE pair` unpairs the laptop whose credential the request carries.
 */
export function redeemRoutes(box: RedeemRoutesBackend): RouteTable {
  return new RouteTable("redeem").add("POST", "/pair", async (c) => {
    const { code, name } = await body(c, PAIR_REDEEM, { limit: MAX_REDEEM_BODY });
    const paired = await box.pairing.redeem(code, { name, address: remoteAddress(c) });
    const laptop = box.pairing.list().find((l) => l.id === paired.id);
    box.bus.publish({
      type: "laptop.paired",
      origin: "dock",
      data: { id: paired.id, name: laptop?.name ?? name },
    });
    return json(
      { id: paired.id, credential: paired.credential, box: box.settings.name } satisfies PairRedeemed,
      201,
    );
  }).add("DELETE", "/pair", (c) => {
    const laptop = (c.env as TlsEnv | undefined)?.laptop;
    // The gate authenticates every request but POST pair; without a laptop this app is mis-wired.
    if (!laptop) throw new Error("DELETE /v1/pair needs the authenticated laptop in c.env.laptop");
    // This answer is JSON, which the gate lets through whole while the laptop's streams are cut.
    return revoke(box, laptop, requestOrigin(c));
  });
}

/**
 * Removes a laptop and announces `laptop.revoked`. The pairing store closes the laptop's open streams
 * (through its revoke listeners) before it returns.
 */
function revoke(
  box: { bus: Pick<EventBus, "publish">; pairing: Pick<PairingStore, "revoke"> },
  laptop: Laptop,
  origin: string,
): Response {
  if (!box.pairing.revoke(laptop.id)) throw notFound("laptop", laptop.id);
  box.bus.publish({ type: "laptop.revoked", origin, data: { id: laptop.id, name: laptop.name } });
  return json(laptop);
}

/** A copy of `table` whose every route answers 403: how the TLS listener refuses socket-only routes. */
export function socketOnly(table: RouteTable): RouteTable {
  const refusing = new RouteTable(table.resource);
  for (const route of table.routes) {
    refusing.add(route.method, route.path, () => {
      throw new DockError(
        "socket_only",
        `${route.method} /v1${route.path} works only on the box itself (dockd's socket), not over the network`,
        { status: 403 },
      );
    });
  }
  return refusing;
}

/**
 * The host a link names: the one asked for, or the listener's default; a 400 when the box's certificate
 * does not cover it (the phone or laptop would refuse the connection).
 */
export function linkHost(
  listener: { hostname: string; addresses: string[] },
  requested: string | undefined,
  what: string,
): string {
  const host = requested ?? defaultLinkHost(listener);
  if (!coveredHost(listener, host)) {
    throw new DockError(
      "host_not_in_certificate",
      `Cannot make ${what} for '${host}': the box's certificate covers only ${
        listener.addresses.join(", ")
      }; name one of those with --host, or add it to DOCK_TLS_HOSTS and restart dockd`,
      { status: 400, detail: { field: "host" } },
    );
  }
  return host;
}

/** The caller's address (the TLS listeners set it), which the pairing rate limit counts failures by. */
export function remoteAddress(c: Context): string {
  const env = c.env as TlsEnv | undefined;
  // Without an address every caller would share one failure counter; the TLS listener always sets it.
  if (!env?.remoteAddr) {
    throw new Error(`${c.req.method} ${c.req.path} needs the caller's address in c.env.remoteAddr`);
  }
  return env.remoteAddr.hostname;
}
