/**
 * `dockd serve`: runs the box daemon in the foreground until SIGINT or SIGTERM: its API on its own
 * socket, and for paired laptops on TCP+TLS at `DOCK_LISTEN` (default `0.0.0.0:1379`; `off` disables
 * it; `127.0.0.1:0` lets the system pick a port, for tests). `DOCK_TLS_HOSTS` (comma-separated) adds
 * names the box's certificate must cover beyond its own addresses (a DNS name, a NAT's public address).
 *
 * Loaded only by `dockd serve` and `dock up` (see `lazy.ts`): it brings the whole daemon.
 *
 * @module
 */
import { BoxClient } from "../client/box.ts";
import { DockError } from "../client/errors.ts";
import { Box } from "../daemon/box.ts";
import { serveSocket, serveTls } from "../daemon/api/server.ts";
import { localAddresses } from "../daemon/tls.ts";
import { type GuardedServer, listenLimitsFromEnv } from "../core/listen.ts";
import { boxPaths } from "../core/paths.ts";

/** Runs the box daemon on this machine until SIGINT or SIGTERM. */
export async function serveBox(): Promise<void> {
  await (await startBox()).finished;
  // Services are detached children that outlive the daemon: exit without waiting for them.
  Deno.exit(0);
}

/**
 * Starts the box daemon in this process; resolves once its socket listens. `finished` resolves when a
 * SIGINT or SIGTERM has stopped it.
 */
export async function startBox(): Promise<{ finished: Promise<void> }> {
  const paths = boxPaths();
  await refuseSecondDaemon(paths.socket);
  const box = new Box(paths);
  await box.start({ watchMs: Number(Deno.env.get("DOCK_WATCH_MS") ?? 1000) });
  const stopping = new AbortController();
  // The laptop listener comes up before the socket: once the socket answers, `dockd pair` finds it.
  const tls = await listenForLaptops(box, stopping.signal);
  const server = await serveSocket(box, { signal: stopping.signal, limits: listenLimitsFromEnv() });
  await box.replaySpool();
  console.error(`dockd: box '${box.settings.name}' serving on ${paths.socket}`);
  const stop = () => stopping.abort();
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
  const finished = Promise.all([server.finished, tls?.finished]).then(async () => {
    await box.close();
    console.error("dockd: stopped");
  });
  return { finished };
}

/** Where `DOCK_LISTEN` asks the laptop listener to bind; null for `off`. */
export function listenAddress(
  value = Deno.env.get("DOCK_LISTEN") ?? "",
): { hostname: string; port: number } | null {
  const text = value.trim() || "0.0.0.0:1379";
  if (text === "off") return null;
  const match = /^(?:\[([0-9A-Fa-f:.]+)\]|([^:\s]+)):(\d{1,5})$/.exec(text) ?? /^()()(\d{1,5})$/.exec(text);
  const port = Number(match?.[3]);
  if (!match || port > 65535) {
    throw new DockError(
      "usage",
      `DOCK_LISTEN must be HOST:PORT (such as 0.0.0.0:1379 or [::]:1379) or off, got ${
        JSON.stringify(value)
      }`,
    );
  }
  return { hostname: match[1] || match[2] || "0.0.0.0", port };
}

/**
 * Starts the TLS listener for laptops. A failure (port taken, no openssl) leaves the box serving its
 * socket: its own user and local tools keep working, and `dockd pair` reports why laptops cannot.
 */
async function listenForLaptops(box: Box, signal: AbortSignal): Promise<GuardedServer | null> {
  const where = listenAddress();
  if (!where) {
    box.tlsDown = "DOCK_LISTEN=off";
    return null;
  }
  const extra = (Deno.env.get("DOCK_TLS_HOSTS") ?? "").split(",").map((h) => h.trim()).filter(Boolean);
  try {
    const server = await serveTls(box, {
      ...where,
      signal,
      addresses: [...localAddresses(), ...extra],
      limits: listenLimitsFromEnv(),
    });
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
