/**
 * What `dockd serve` begins before it loads the daemon (~100 ms of modules and opening its state): the
 * work its start waits on outside this thread. The laptop listener's certificates, which a fresh box
 * makes with openssl (~25 ms of processes on the VM this was measured on), the process's TLS stack
 * (~35 ms, set up on another thread), and whether services can have cgroups (a probe process, ~20 ms).
 * A module of its own, small and importing nothing of Node's (the first such import costs ~5 ms,
 * node:crypto ~20), so that beginning them waits for little.
 *
 * @module
 */
import { type BoxCertificates, listenerCertificates, localAddresses } from "../daemon/tls.ts";
import { warmTls } from "../core/tls_warm.ts";
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
  /**
   * The certificates and the addresses they cover, once made or checked; undefined when that failed
   * (the listener tries again, and reports why).
   */
  certificates: Promise<{ addresses: string[]; certificates: BoxCertificates } | undefined>;
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
  // A fresh box's openssl runs start before this returns (daemon/tls.ts).
  const certificates = where
    ? listenerCertificates(paths.box, { hostname: where.hostname, addresses }).catch(() => undefined)
    : Promise.resolve(undefined);
  if (where) warmTls();
  return { where, addresses, certificates };
}
