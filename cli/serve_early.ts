/**
 * What `dockd serve` begins before it loads the daemon (~100 ms of modules and opening its state): the
 * work its start waits on outside this process. The laptop listener's certificates, which a fresh box
 * makes with three openssl runs (~60 ms on the VM this was measured on), and whether services can have
 * cgroups (a probe process, ~20 ms); then the process's TLS stack, set up on another thread. A module
 * of its own, small, so that beginning them waits for little.
 *
 * @module
 */
import { listenerCertificatesAside, localAddresses } from "../daemon/tls.ts";
import { parseListenAddress } from "../core/listen.ts";
import type { BoxPaths } from "../core/paths.ts";
import { boxCgroups, type CgroupSupport } from "../daemon/cgroups.ts";

/** Where `DOCK_LISTEN` asks the laptop listener to bind; null for `off`. */
export function listenAddress(
  value = Deno.env.get("DOCK_LISTEN") ?? "",
): { hostname: string; port: number } | null {
  return parseListenAddress(value, { what: "DOCK_LISTEN", fallback: "0.0.0.0:1379" });
}

/** The laptop listener as this environment asks for it, and its certificates' making begun. */
export interface LaptopListener {
  /** Where it binds; null when `DOCK_LISTEN=off`. */
  where: { hostname: string; port: number } | null;
  /** The hosts a laptop may dial: this machine's addresses and `DOCK_TLS_HOSTS`. */
  addresses: string[];
  /** Settles once the certificates are there, or failed to be (the listener reports it). */
  certificates: Promise<unknown>;
}

/** What a daemon's start waits on, begun (see the module's comment). */
export interface EarlyStart {
  listener: LaptopListener;
  cgroups: Promise<CgroupSupport>;
}

/** Begins what the daemon at `paths` waits on as it starts. */
export function beginStart(paths: Pick<BoxPaths, "box" | "state">): EarlyStart {
  return { listener: laptopListener(paths), cgroups: boxCgroups(paths) };
}

/** Reads the listener's settings and starts making or checking its certificates under `paths.box`. */
function laptopListener(paths: Pick<BoxPaths, "box">): LaptopListener {
  const extra = (Deno.env.get("DOCK_TLS_HOSTS") ?? "").split(",").map((h) => h.trim()).filter(Boolean);
  const addresses = [...localAddresses(), ...extra];
  const where = listenAddress();
  // Made on another thread, which then warms the process's TLS stack (daemon/tls.ts).
  const certificates = where
    ? listenerCertificatesAside(paths.box, { hostname: where.hostname, addresses }).catch(() => {})
    : Promise.resolve();
  return { where, addresses, certificates };
}
