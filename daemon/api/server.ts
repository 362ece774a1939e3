/**
 * The box API: one hono app with every route table mounted under `/v1`, served on the daemon's own
 * unix socket (mode 0600: the socket's permissions are its authentication) and, for paired laptops,
 * on TCP+TLS behind the laptop gate (`laptop_gate.ts`). The two differ only where they must: the
 * socket alone makes pairing links and revokes laptops, the TLS listener alone redeems pairing codes.
 *
 * @module
 */
import { Hono } from "hono";
import { DockError } from "../../client/errors.ts";
import type { Box, TlsListener } from "../box.ts";
import type { PhoneListener } from "../phone.ts";
import { type BoxCertificates, listenerCertificates, localAddresses } from "../tls.ts";
import { eventRoutes } from "./events.ts";
import { execRoutes } from "./exec.ts";
import { hooksRoutes } from "./hooks.ts";
import { flowRoutes } from "./flows.ts";
import { errorResponse, mount, type RouteTable } from "../../core/http.ts";
import {
  type GuardedHandler,
  type GuardedServer,
  type ListenLimits,
  serveGuarded,
} from "../../core/listen.ts";
import { laptopGate, LaptopStreams } from "./laptop_gate.ts";
import { pairingRoutes, redeemRoutes, socketOnly } from "./pair.ts";
import { phoneGate, type PhonePages, phoneRedeemRoutes, phoneRoutes, phoneScoped } from "./phone.ts";
import { locationRoutes } from "./locations.ts";
import { kitRoutes } from "./kits.ts";
import { reviewRoutes } from "./review.ts";
import { secretRoutes } from "./secrets.ts";
import { shareRoutes } from "./shares.ts";
import { unitRoutes } from "./units.ts";
import { serviceRoutes } from "./services.ts";
import { tunnelRoutes } from "./tunnel.ts";
import { sessionRoutes } from "./sessions.ts";
import { skillRoutes } from "./skills.ts";
import { systemRoutes } from "./system.ts";
import { worktreeRoutes } from "./worktrees.ts";
import { fnTarget, pluginRoutes } from "../../plugins/routes.ts";
import { webSocketsSocket } from "../../core/paths.ts";

/** Options of {@linkcode boxApp}. */
export interface BoxAppOptions {
  /**
   * Which listener the app serves: the daemon's socket, the laptops' TLS listener, or the phones' (whose
   * routes are held to the phone scope). @default {"socket"}
   */
  listener?: "socket" | "tls" | "phone";
}

/** Where the box API's routes are. */
const API_PREFIX = "/v1";

/** Builds the box API app for one listener. */
export function boxApp(box: Box, options: BoxAppOptions = {}): Hono {
  const app = new Hono();
  app.onError((error) => errorResponse(error, box.log));
  app.notFound((c) =>
    errorResponse(
      new DockError("not_found", `no such endpoint: ${c.req.method} ${c.req.path}`, { status: 404 }),
    )
  );
  // The one place the box's `before:` gates run: each gated route declares its gates in its table.
  mount(app, API_PREFIX, boxRoutes(box, options), {
    gate: (action, target, context) => box.hooks.gate(action, target, context),
  });
  return app;
}

/** Every route table of the box API on one listener. */
export function boxRoutes(box: Box, options: BoxAppOptions = {}): RouteTable[] {
  const listener = options.listener ?? "socket";
  const tables = [
    locationRoutes(box),
    kitRoutes(box),
    reviewRoutes(box),
    shareRoutes(box),
    unitRoutes(box),
    worktreeRoutes(box),
    execRoutes(box),
    hooksRoutes(box),
    flowRoutes(box),
    eventRoutes(box),
    systemRoutes(box),
    serviceRoutes(box),
    sessionRoutes(box),
    skillRoutes(box),
    pluginRoutes(box.plugins, { gated: true }),
    tunnelRoutes(),
    phoneRoutes(box),
    ...(listener === "socket"
      ? [pairingRoutes(box), secretRoutes(box)]
      : [socketOnly(pairingRoutes(box)), socketOnly(secretRoutes(box)), redeemRoutes(box)]),
  ];
  // The phone listener answers every route the laptops' does, and refuses what a phone may not do.
  return listener === "phone" ? phoneScoped([...tables, phoneRedeemRoutes(box)]) : tables;
}

/**
 * Serves the app on the daemon's socket and, for attach and tunnels, on the socket beside it
 * ({@linkcode webSocketsSocket}); resolves once both listen.
 */
export async function serveSocket(
  box: Box,
  options: { signal?: AbortSignal; limits?: ListenLimits } = {},
): Promise<{ api: GuardedServer; webSockets: GuardedServer }> {
  const app = boxApp(box);
  // What a plugin asks through `ctx.api` goes to this app, as a request on the daemon's own socket would
  // (gates and all); the plugin host checks its scopes first.
  box.plugins.connectApi(async (request) => await app.fetch(request));
  // A plugin's `fn`, a page's hot path, is found before the router: the same call its route makes.
  const answer = (request: Request) => {
    const fn = fnTarget(request, API_PREFIX);
    return fn ? box.plugins.fetch(fn.id, fn.subpath, request) : app.fetch(request);
  };
  const listen = async (path: string, webSocketsAt?: string) => {
    await Deno.remove(path).catch(() => {});
    // The guarded loop here too: `Deno.serve` ends the whole process when an accept meets EMFILE
    // (measured on a unix socket at `ulimit -n 64`), and a daemon near its limit must refuse, not die.
    const server = serveGuarded({ path }, answer, {
      signal: options.signal,
      onError: (error) => errorResponse(error, box.log),
      log: (line) => box.log.warn(line),
      webSocketsAt,
      ...options.limits,
    });
    // Created with the process's umask; only the box's user may talk to the daemon.
    await Deno.chmod(path, 0o600);
    return server;
  };
  // The API socket's connections are served by the runtime's own server, which cannot carry a
  // WebSocket: the socket beside it serves the same app by one that can.
  const webSockets = await listen(webSocketsSocket(box.paths.socket));
  return { api: await listen(box.paths.socket, webSocketsSocket(box.paths.socket)), webSockets };
}

/** Options of {@linkcode serveTls}. */
export interface ServeTlsOptions {
  /** The address to bind (`0.0.0.0`, `::`, or one address). */
  hostname: string;
  /** The port; 0 lets the system choose (tests). */
  port: number;
  /** Stops the listener. */
  signal?: AbortSignal;
  /** Deadlines and caps of the listener. @default {core/listen.ts's defaults} */
  limits?: ListenLimits;
  /**
   * The hosts laptops may dial, which the certificate must list.
   * @default {localAddresses(), plus `hostname` when it is one address}
   */
  addresses?: string[];
  /**
   * The certificates made or checked for this listener already, and the addresses they cover
   * (`dockd serve` begins them before it loads the daemon: cli/serve_early.ts). @default {made here}
   */
  made?: { addresses: string[]; certificates: BoxCertificates };
}

/**
 * Serves the box API to paired laptops on TCP+TLS; resolves once it listens, with `box.tls` set.
 * Revoking a laptop closes its open streams on this listener.
 */
export async function serveTls(box: Box, options: ServeTlsOptions): Promise<GuardedServer> {
  const streams = new LaptopStreams();
  const app = boxApp(box, { listener: "tls" });
  const { server, listener } = await serveWithBoxCertificate(box, {
    ...options,
    addresses: options.addresses ?? localAddresses(),
  }, laptopGate(box, app, streams));
  const unsubscribe = box.pairing.onRevoke((laptop) => streams.revoke(laptop.id));
  box.tls = listener;
  box.tlsDown = null;
  server.finished.then(() => {
    unsubscribe();
    box.tls = null;
    box.tlsDown = "stopped";
  });
  return server;
}

/**
 * Serves `handler` on TCP+TLS with the box's certificate, issued (when needed) for `addresses` and the
 * bound address; resolves once it listens. The laptop and phone listeners both start here.
 */
async function serveWithBoxCertificate(
  box: Box,
  options: {
    hostname: string;
    port: number;
    addresses: string[];
    made?: ServeTlsOptions["made"];
    signal?: AbortSignal;
    limits?: ListenLimits;
  },
  handler: GuardedHandler,
): Promise<{ server: GuardedServer; listener: TlsListener }> {
  const { addresses, certificates } = options.made ?? await listenerCertificates(box.paths.box, options);
  // A port any stranger on the network can reach: handshake, header and idle deadlines, connection caps,
  // and an accept loop that outlives running out of file descriptors (core/listen.ts).
  const server = serveGuarded(
    {
      hostname: options.hostname,
      port: options.port,
      // The chain includes the CA: the laptop pins it by fingerprint straight from the handshake, before
      // it sends anything (see agent/pairing.ts).
      cert: certificates.certPem + certificates.caPem,
      key: certificates.keyPem,
    },
    handler,
    {
      signal: options.signal,
      onError: (error) => errorResponse(error, box.log),
      log: (line) => box.log.warn(line),
      ...options.limits,
    },
  );
  return {
    server,
    listener: {
      hostname: options.hostname,
      port: server.addr.port,
      addresses,
      fingerprint: certificates.fingerprint,
    },
  };
}

/** Options of {@linkcode servePhone}. */
export interface ServePhoneOptions {
  /** The address to bind (`0.0.0.0`, `::`, or one address). */
  hostname: string;
  /** The port; 0 lets the system choose (tests). */
  port: number;
  /** Stops the listener. */
  signal: AbortSignal;
  /** The hosts phones may dial, which the certificate must list (the laptop listener's list). */
  addresses: string[];
  /** What the listener serves outside `/v1/`: the app, the pairing page, the manifest. */
  pages: PhonePages;
  /** Deadlines and caps of the listener. @default {core/listen.ts's defaults} */
  limits?: ListenLimits;
}

/**
 * Serves the phone companion on TCP+TLS with the box's certificate (the same CA as the laptop
 * listener); resolves once it listens. Revoking a phone closes its open streams on this listener.
 */
export async function servePhone(
  box: Box,
  options: ServePhoneOptions,
): Promise<{ server: GuardedServer; listener: PhoneListener }> {
  const streams = new LaptopStreams({ device: "phone" });
  const app = boxApp(box, { listener: "phone" });
  const started = await serveWithBoxCertificate(box, options, phoneGate(box, app, streams, options.pages));
  const unsubscribe = box.phone.devices.onRevoke((phone) => streams.revoke(phone.id));
  started.server.finished.then(unsubscribe);
  return started;
}
