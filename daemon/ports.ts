/**
 * Port blocks for worktrees (SPEC 2.10). Each worktree owns a contiguous block (`DOCK_PORT`,
 * `DOCK_PORT_1`, ...) that is stored in the box database, so it is stable for the worktree's life and
 * across daemon restarts, and freed when the worktree row goes (the `ports` rows cascade).
 *
 * A port counts as free only when no worktree holds it and nothing on the box listens on it. "Listens"
 * is read from the kernel's socket tables (`/proc/net/tcp{,6}`), which see every process and every
 * container publishing on the host, without the race of binding port 0 and closing it again.
 *
 * @module
 */
import { DockError } from "../client/errors.ts";
import type { Store } from "../core/store.ts";

/** A listening TCP socket as the kernel reports it. */
export interface Listener {
  /** Local port. */
  port: number;
  /** Local address in text form (`0.0.0.0`, `127.0.0.1`, `::`, `::1`, `::ffff:10.0.0.1`). */
  address: string;
  /** Socket inode, to map the socket to its process through `/proc/<pid>/fd`. */
  inode: number;
  /** Which table the socket came from. */
  family: 4 | 6;
}

/** A stored port of a worktree's block. */
export interface PortRow {
  port: number;
  location: string;
  worktree: string;
  /** Position in the block: 0 is `DOCK_PORT`, 1 is `DOCK_PORT_1`, ... */
  idx: number;
}

/** The range port blocks are allocated from when none is configured. */
export const DEFAULT_PORT_RANGE: readonly [number, number] = [20000, 29999];

/** Most ports one worktree may hold (SPEC 2.10: max 10, min 1). */
export const MAX_PORTS_PER_WORKTREE = 10;

// TCP_LISTEN in the kernel's tcp_states.h, as /proc/net/tcp prints it.
const STATE_LISTEN = "0A";

/** Parses the text of `/proc/net/tcp` (family 4) or `/proc/net/tcp6` (family 6) into its listeners. */
export function parseProcNetTcp(text: string, family: 4 | 6): Listener[] {
  const listeners: Listener[] = [];
  for (const line of text.split("\n")) {
    // Columns: sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode ...
    const columns = line.trim().split(/\s+/);
    if (columns.length < 10 || !/^\d+:$/.test(columns[0])) continue; // header or blank line
    if (columns[3].toUpperCase() !== STATE_LISTEN) continue;
    const [hexAddress, hexPort] = columns[1].split(":");
    if (hexAddress === undefined || hexPort === undefined) continue;
    const port = parseInt(hexPort, 16);
    const inode = parseInt(columns[9], 10);
    if (!Number.isInteger(port) || !Number.isInteger(inode)) continue;
    const address = family === 4 ? ipv4FromProc(hexAddress) : ipv6FromProc(hexAddress);
    if (address === undefined) continue;
    listeners.push({ port, address, inode, family });
  }
  return listeners;
}

/** Every listening TCP socket on the box (IPv4 and IPv6); empty where there is no `/proc` (macOS). */
export function readListeners(): Listener[] {
  const listeners: Listener[] = [];
  for (const [path, family] of [["/proc/net/tcp", 4], ["/proc/net/tcp6", 6]] as const) {
    const text = readProcFile(path);
    // tcp6 is absent when IPv6 is disabled; tcp is absent only without procfs.
    if (text !== undefined) listeners.push(...parseProcNetTcp(text, family));
  }
  return listeners;
}

/** The set of TCP ports something listens on, on any address. */
export function listeningPorts(): Set<number> {
  // Without /proc (macOS) this is empty: the allocator then falls back to a bind probe (canBind).
  return new Set(readListeners().map((listener) => listener.port));
}

/** Whether the kernel's socket table can be read here (false on macOS and other systems without procfs). */
export function hasProcNet(): boolean {
  return readProcFile("/proc/net/tcp") !== undefined;
}

/** Whether `port` can be bound right now on 0.0.0.0 and on 127.0.0.1 (each bind is closed at once). */
export function canBind(port: number): boolean {
  for (const hostname of ["0.0.0.0", "127.0.0.1"]) {
    let listener: Deno.Listener;
    try {
      listener = Deno.listen({ hostname, port, transport: "tcp" });
    } catch (error) {
      if (
        error instanceof Deno.errors.AddrInUse || error instanceof Deno.errors.PermissionDenied ||
        error instanceof Deno.errors.AddrNotAvailable
      ) return false;
      throw error;
    }
    listener.close();
  }
  return true;
}

/** Options of {@linkcode findBlock}. */
export interface FindBlockOptions {
  /** Inclusive range to search. */
  range: [number, number];
  /** Ports in the block; clamped to at least 1. */
  count: number;
  /** Ports held by worktrees. */
  taken: Set<number>;
  /** Ports something listens on. */
  busy: Set<number>;
}

/** The lowest contiguous block of `count` ports in `range` that is neither taken nor busy, or null. */
export function findBlock(options: FindBlockOptions): number[] | null {
  const { range: [low, high], taken, busy } = options;
  const count = clampCount(options.count, Infinity);
  let run = 0;
  for (let port = low; port <= high; port++) {
    run = taken.has(port) || busy.has(port) ? 0 : run + 1;
    if (run === count) return blockFrom(port - count + 1, count);
  }
  return null;
}

/** Options of {@linkcode PortAllocator}. */
export interface PortAllocatorOptions {
  /** Inclusive range blocks are allocated from. @default {[20000, 29999]} */
  range?: [number, number];
  /** Ports something listens on; injectable for tests. @default {listeningPorts} */
  listening?: () => Set<number>;
  /**
   * Last check of a candidate port before it is handed out, or null for none. The default probes
   * with {@linkcode canBind} only where the kernel table cannot be read, since the table is complete
   * and a probe is a real bind that may briefly collide with a service starting at the same moment.
   * @default {hasProcNet() ? null : canBind}
   */
  probe?: ((port: number) => boolean) | null;
}

/** Hands out, keeps and frees the worktrees' port blocks in the store. */
export class PortAllocator {
  #store: Store;
  #range: [number, number];
  #listening: () => Set<number>;
  #probe: ((port: number) => boolean) | null;

  constructor(store: Store, options: PortAllocatorOptions = {}) {
    const range = options.range ?? [...DEFAULT_PORT_RANGE] as [number, number];
    const [low, high] = range;
    if (!isPort(low) || !isPort(high) || low > high) {
      throw new RangeError(
        `Cannot allocate ports: 'range' must be two ports from 1 to 65535, low first, current value is ${
          JSON.stringify(range)
        }`,
      );
    }
    this.#store = store;
    this.#range = [low, high];
    this.#listening = options.listening ?? listeningPorts;
    this.#probe = options.probe !== undefined ? options.probe : (hasProcNet() ? null : canBind);
  }

  /**
   * The worktree's block of `count` ports (clamped to 1..10), allocating it if needed. Idempotent: a
   * block of the right size is returned as is, even when its ports are now in use (by the worktree's
   * own services). A block of another size is resized keeping its first ports when possible: a
   * smaller count drops the tail; a larger one grows in place when the following ports are free, and
   * otherwise moves to the lowest block that fits (the old ports count as free for that search).
   */
  allocate(location: string, worktree: string, count: number): number[] {
    const wanted = clampCount(count, MAX_PORTS_PER_WORKTREE);
    return this.#store.transaction(() => {
      const exists = this.#store.get(
        "SELECT 1 FROM worktrees WHERE location = ? AND name = ?",
        location,
        worktree,
      );
      if (exists === undefined) {
        throw new DockError("not_found", `worktree '${worktree}' not found in location '${location}'`, {
          status: 404,
        });
      }
      const current = this.#ports(location, worktree);
      if (current.length === wanted) return current;
      if (current.length > wanted) {
        this.#store.run(
          "DELETE FROM ports WHERE location = ? AND worktree = ? AND idx >= ?",
          location,
          worktree,
          wanted,
        );
        return current.slice(0, wanted);
      }

      const own = new Set(current);
      const taken = new Set<number>();
      for (const row of this.#store.all<{ port: number }>("SELECT port FROM ports")) {
        if (!own.has(row.port)) taken.add(row.port);
      }
      // The worktree's own listeners are its own use, not a reason to avoid its own ports.
      const busy = new Set([...this.#listening()].filter((port) => !own.has(port)));

      const block = this.#grown(current, wanted, taken, busy) ?? this.#search(wanted, taken, busy);
      if (block === null) {
        const [low, high] = this.#range;
        throw new DockError(
          "ports_exhausted",
          `Cannot allocate ${wanted} port${wanted === 1 ? "" : "s"} for worktree '${worktree}' ` +
            `in location '${location}': no free block left in ${low}-${high}`,
          { status: 409, detail: { range: [low, high], count: wanted } },
        );
      }
      this.#store.run("DELETE FROM ports WHERE location = ? AND worktree = ?", location, worktree);
      block.forEach((port, idx) => {
        this.#store.run(
          "INSERT INTO ports (port, location, worktree, idx) VALUES (?, ?, ?, ?)",
          port,
          location,
          worktree,
          idx,
        );
      });
      return block;
    });
  }

  /** Frees the worktree's block (removing the worktree row frees it too, by cascade). */
  release(location: string, worktree: string): void {
    this.#store.run("DELETE FROM ports WHERE location = ? AND worktree = ?", location, worktree);
  }

  /** The worktree's ports in block order (`DOCK_PORT` first); empty when it has none. */
  portsOf(location: string, worktree: string): number[] {
    return this.#ports(location, worktree);
  }

  /** Every allocated port, lowest first. */
  all(): PortRow[] {
    return this.#store.all<PortRow>(
      "SELECT port, location, worktree, idx FROM ports ORDER BY port",
    ).map((row) => ({
      port: Number(row.port),
      location: String(row.location),
      worktree: String(row.worktree),
      idx: Number(row.idx),
    }));
  }

  #ports(location: string, worktree: string): number[] {
    return this.#store.all<{ port: number }>(
      "SELECT port FROM ports WHERE location = ? AND worktree = ? ORDER BY idx",
      location,
      worktree,
    ).map((row) => Number(row.port));
  }

  // The current block extended in place, if it is contiguous and the ports after it are free.
  #grown(current: number[], wanted: number, taken: Set<number>, busy: Set<number>): number[] | null {
    if (current.length === 0) return null;
    const block = blockFrom(current[0], wanted);
    if (current.some((port, i) => port !== block[i])) return null;
    if (block[block.length - 1] > this.#range[1]) return null;
    const extra = block.slice(current.length);
    if (extra.some((port) => taken.has(port) || busy.has(port))) return null;
    const probe = this.#probe;
    if (probe !== null && !extra.every((port) => probe(port))) return null;
    return block;
  }

  // The lowest free block; a candidate the probe rejects is marked busy and the search goes on.
  #search(wanted: number, taken: Set<number>, busy: Set<number>): number[] | null {
    const probe = this.#probe;
    for (;;) {
      const block = findBlock({ range: this.#range, count: wanted, taken, busy });
      if (block === null || probe === null) return block;
      const refused = block.filter((port) => !probe(port));
      if (refused.length === 0) return block;
      for (const port of refused) busy.add(port);
    }
  }
}

function clampCount(count: number, max: number): number {
  const whole = Number.isFinite(count) ? Math.floor(count) : 1;
  return Math.min(Math.max(whole, 1), max);
}

function blockFrom(first: number, count: number): number[] {
  return Array.from({ length: count }, (_, i) => first + i);
}

function isPort(value: number): boolean {
  return Number.isInteger(value) && value >= 1 && value <= 65535;
}

function readProcFile(path: string): string | undefined {
  try {
    return Deno.readTextFileSync(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return undefined;
    throw error;
  }
}

// /proc prints an IPv4 address as one 32-bit word in host byte order: 0100007F is 127.0.0.1 on
// little-endian machines (every Linux box dock targets: x86-64 and arm64).
function ipv4FromProc(hex: string): string | undefined {
  if (!/^[0-9A-Fa-f]{8}$/.test(hex)) return undefined;
  return wordBytes(hex).join(".");
}

// An IPv6 address is four such 32-bit words, each in host byte order.
function ipv6FromProc(hex: string): string | undefined {
  if (!/^[0-9A-Fa-f]{32}$/.test(hex)) return undefined;
  const bytes: number[] = [];
  for (let i = 0; i < 32; i += 8) bytes.push(...wordBytes(hex.slice(i, i + 8)));
  const groups = Array.from({ length: 8 }, (_, i) => (bytes[2 * i] << 8) | bytes[2 * i + 1]);
  // IPv4-mapped (::ffff:a.b.c.d): what a dual-stack socket bound to an IPv4 address shows.
  if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
    return `::ffff:${bytes.slice(12).join(".")}`;
  }
  return compressIpv6(groups);
}

function wordBytes(hex: string): number[] {
  const bytes = [0, 2, 4, 6].map((i) => parseInt(hex.slice(i, i + 2), 16));
  return bytes.reverse();
}

// RFC 5952 text form: lowercase, the longest run of two or more zero groups (first on a tie) as "::".
function compressIpv6(groups: number[]): string {
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLength) [bestStart, bestLength] = [i, j - i];
    i = j;
  }
  const text = groups.map((group) => group.toString(16));
  if (bestStart === -1) return text.join(":");
  const head = text.slice(0, bestStart).join(":");
  const tail = text.slice(bestStart + bestLength).join(":");
  return `${head}::${tail}`;
}
