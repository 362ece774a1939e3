/**
 * `dockd serve`: runs the box daemon in the foreground until SIGINT or SIGTERM: its API on its own
 * socket, and for paired laptops on TCP+TLS at `DOCK_LISTEN` (default `0.0.0.0:1379`; `off` disables
 * it; `127.0.0.1:0` lets the system pick a port, for tests). Once its socket answers it prints one ready
 * line on stdout naming what it bound (cli/ready.ts). `DOCK_TLS_HOSTS` (comma-separated) adds
 * names the box's certificate must cover beyond its own addresses (a DNS name, a NAT's public address).
 *
 * Loaded only by `dockd serve` and `dock up` (see `lazy.ts`): it brings the whole daemon.
 *
 * @module
 */
import { BoxClient } from "../client/box.ts";
import { DockError } from "../client/errors.ts";
import { Box } from "../daemon/box.ts";
import { servePhone, serveSocket, serveTls, type ServeTlsOptions } from "../daemon/api/server.ts";
import { phonePages } from "../daemon/phone_pages.ts";
import { type GuardedServer, listenLimitsFromEnv } from "../core/listen.ts";
import { beginStart, type EarlyStart, type LaptopListener } from "./serve_early.ts";
import { boxPaths } from "../core/paths.ts";
import { takeOver } from "../daemon/upgrade.ts";
import { STDERR_LOG } from "../core/log.ts";
import { printReady } from "./ready.ts";

/** Runs the box daemon on this machine until SIGINT or SIGTERM. */
export async function serveBox(early?: EarlyStart): Promise<void> {
  // After an upgrade this daemon takes over from the one before (daemon/upgrade.ts).
  const started = await takeOver(boxPaths(), () => startBox(early), { log: STDERR_LOG });
  await started.finished;
  // Services are detached children that outlive the daemon: exit without waiting for them.
  Deno.exit(0);
}

/**
 * Starts the box daemon in this process; resolves once its socket listens. `finished` resolves when a
 * SIGINT or SIGTERM has stopped it. `early`: what its start waits on, as `dockd serve` began it before
 * it loaded this module (cli/serve_early.ts); begun here otherwise.
 */
export async function startBox(
  early?: EarlyStart,
): Promise<{ finished: Promise<void>; bus: Box["bus"] }> {
  const paths = boxPaths();
  const { listener, cgroups } = early ?? beginStart(paths);
  const { where, addresses, certificates } = listener;
  await refuseSecondDaemon(paths.socket);
  const box = new Box(paths);
  await box.start({ watchMs: Number(Deno.env.get("DOCK_WATCH_MS") ?? 1000), cgroups });
  const stopping = new AbortController();
  // The laptop listener comes up before the socket: once the socket answers, `dockd pair` finds it.
  const tls = await listenForLaptops(box, where, { addresses, made: await certificates }, stopping.signal);
  // The phone companion, when it was left on; `PUT phone` starts and stops it later.
  const limits = listenLimitsFromEnv();
  let pages: ReturnType<typeof phonePages> | undefined;
  box.phone.attach((where, signal) =>
    servePhone(box, {
      ...where,
      signal: AbortSignal.any([signal, stopping.signal]),
      addresses,
      limits,
      pages: (request) => (pages ??= phonePages({ box: box.settings.name }))(request),
    })
  );
  await box.phone.start();
  const sockets = await serveSocket(box, { signal: stopping.signal, limits: listenLimitsFromEnv() });
  await box.replaySpool();
  console.error(`dockd: box '${box.settings.name}' serving on ${paths.socket}`);
  const laptops = box.tls
    ? `${box.tls.hostname.includes(":") ? `[${box.tls.hostname}]` : box.tls.hostname}:${box.tls.port}`
    : null;
  printReady({ ready: "dockd", pid: Deno.pid, socket: paths.socket, laptops });
  const stop = () => stopping.abort();
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
  box.upgrades.attach(stop);
  const finished = Promise.all([sockets.api.finished, sockets.webSockets.finished, tls?.finished]).then(
    async () => {
      await box.close();
      console.error("dockd: stopped");
    },
  );
  return { finished, bus: box.bus };
}

/**
 * Starts the TLS listener for laptops. A failure (port taken, no openssl) leaves the box serving its
 * socket: its own user and local tools keep working, and `dockd pair` reports why laptops cannot.
 */
async function listenForLaptops(
  box: Box,
  where: LaptopListener["where"],
  certificates: Pick<ServeTlsOptions, "addresses" | "made">,
  signal: AbortSignal,
): Promise<GuardedServer | null> {
  if (!where) {
    box.tlsDown = "DOCK_LISTEN=off";
    return null;
  }
  try {
    const server = await serveTls(box, { ...where, ...certificates, signal, limits: listenLimitsFromEnv() });
    console.error(`dockd: listening for laptops on ${where.hostname}:${box.tls?.port} (TLS)`);
    return server;
  } catch (error) {
    const reason = error instanceof Deno.errors.AddrInUse
      ? "the address is in use; set DOCK_LISTEN to another HOST:PORT, or off"
      : (error as Error).message;
    box.tlsDown = `cannot listen on ${where.hostname}:${where.port}: ${reason}`;
    console.error(`dockd: not listening for laptops: ${box.tlsDown}`);
    return null;
  }
}

async function refuseSecondDaemon(socket: string): Promise<void> {
  // No socket, no daemon (a fresh box's first start): not worth a client (~5 ms).
  try {
    Deno.lstatSync(socket);
  } catch {
    return;
  }
  const client = new BoxClient({ socket });
  try {
    const info = await Promise.race([
      client.info(),
      new Promise<never>((_, reject) => setTimeout(() => reject(new Error("timeout")), 1000)),
    ]);
    throw new DockError("already_running", `a daemon for box '${info.name}' already serves ${socket}`);
  } catch (error) {
    if (error instanceof DockError && error.code === "already_running") throw error;
  } finally {
    client.close();
  }
}
