/**
 * The box's process table, read from the kernel (`/proc`), never from `ps` output: what runs, in which
 * process group, how much memory it holds, where it was started, and which process owns which
 * listening socket. From those facts {@linkcode attributePorts} tells which worktree and service each
 * listening port belongs to (SPEC 2.10: a port in a worktree's block is the worktree's, whatever
 * listens there).
 *
 * Every reader tolerates processes that exit while they are being read: a process is a moment's
 * snapshot, and a vanished one is simply left out. Without `/proc` (macOS) the readers answer empty.
 *
 * @module
 */
import type { Port } from "../client/wire.ts";
import { type Listener, readListeners } from "./ports.ts";
import { parseMeminfo } from "./system.ts";

/** One process as the kernel reports it in `/proc/<pid>/stat`. */
export interface Proc {
  pid: number;
  /** Parent process. */
  ppid: number;
  /** Process group: services run in their own group, so the whole tree can be signalled at once. */
  pgid: number;
  /** Session. */
  sid: number;
  /** One letter: R running, S sleeping, D disk wait, Z zombie, T stopped, t traced, I idle, X dead. */
  state: string;
  /** Start time in clock ticks since boot (field 22); with the pid it names one process for good. */
  startTime: number;
  /** Resident memory in bytes. */
  rss: number;
  /** Executable name, at most 15 bytes, as the kernel keeps it (may contain spaces and parentheses). */
  comm: string;
}

/** Who listens on a port and which worktree and service it counts for (the wire's `Port`). */
export type PortUse = Port;

/** A worktree as {@linkcode attributePorts} needs it. */
export interface PortWorktree {
  location: string;
  name: string;
  /** Real path (symlinks resolved) of the worktree's folder. */
  path: string;
  /** Its port block. */
  ports: number[];
}

/** A running service as {@linkcode attributePorts} needs it. */
export interface PortService {
  location: string;
  worktree: string;
  name: string;
  /** Process group the service runs in. */
  pgid: number;
}

/** Options of {@linkcode attributePorts}. */
export interface AttributePortsOptions {
  /** Listening sockets, as {@linkcode readListeners} returns them. */
  listeners: Listener[];
  /** Socket inode → owning pid, as {@linkcode socketOwners} returns it. */
  owners: Map<number, number>;
  /** Processes by pid. */
  procs: Map<number, Proc>;
  /** Real working directory of a process, or null when unknown. */
  cwd: (pid: number) => string | null;
  worktrees: PortWorktree[];
  /** Running services. @default {[]} */
  services?: PortService[];
  /** Command line of a process; without it the process's `comm` is used. */
  command?: (pid: number) => string | null;
}

/** Parses the text of `/proc/<pid>/stat`; the memory is left in pages (`rssPages`). */
export function parseStat(text: string): Omit<Proc, "rss"> & { rssPages: number } {
  // comm is free text (a program may name itself "a) (b"), so it spans from the first '(' to the
  // LAST ')'; every field after it is a number or the state letter, separated by single spaces.
  const open = text.indexOf("(");
  const close = text.lastIndexOf(")");
  if (open < 1 || close < open) {
    throw new SyntaxError(
      `Cannot parse /proc/<pid>/stat: no '(comm)' in ${JSON.stringify(text.slice(0, 80))}`,
    );
  }
  const pid = Number(text.slice(0, open).trim());
  // rest[0] is field 3 (state), so field N is rest[N - 3].
  const rest = text.slice(close + 1).trim().split(" ");
  const field = (n: number): number => Number(rest[n - 3]);
  const parsed = {
    pid,
    ppid: field(4),
    pgid: field(5),
    sid: field(6),
    state: rest[0] ?? "",
    startTime: field(22),
    rssPages: field(24),
    comm: text.slice(open + 1, close),
  };
  const numbers = [parsed.pid, parsed.ppid, parsed.pgid, parsed.sid, parsed.startTime, parsed.rssPages];
  if (!/^[A-Za-z]$/.test(parsed.state) || !numbers.every(Number.isInteger)) {
    throw new SyntaxError(
      `Cannot parse /proc/<pid>/stat: bad fields in ${JSON.stringify(text.slice(0, 80))}`,
    );
  }
  return parsed;
}

/** The process `pid`, or null when it is gone (or there is no `/proc`). */
export function readProc(pid: number): Proc | null {
  const text = readProcText(`/proc/${pid}/stat`);
  // A process reaped between open and read leaves an empty file behind.
  if (text === null || text === "") return null;
  const { rssPages, ...rest } = parseStat(text);
  return { ...rest, rss: rssPages * pageSize() };
}

/** Every process on the box (those that exit during the scan are left out); empty without `/proc`. */
export function processes(): Proc[] {
  const procs: Proc[] = [];
  for (const pid of pids()) {
    const proc = readProc(pid);
    if (proc !== null) procs.push(proc);
  }
  return procs;
}

/** Whether `pid` runs: false when gone, a zombie, or (given `startTime`) a newer process reusing the pid. */
export function isAlive(pid: number, startTime?: number): boolean {
  const proc = readProc(pid);
  if (proc === null || isDead(proc)) return false;
  return startTime === undefined || proc.startTime === startTime;
}

/**
 * Looks every `everyMs` until `done()` holds (true) or `timeoutMs` passes (false; none: no limit). For
 * waits on real processes and what they write, which give no event to await (a pid this daemon did not
 * spawn has no status promise, a cgroup no exit notice, a log no signal): a kill's grace, a tunnel's URL,
 * an upgrade's hand-over. On real time, not an injected clock: a fake one would hold a real process's
 * grace forever (allow-listed in tests/imports_test.ts).
 */
export async function pollUntil(
  done: () => boolean | Promise<boolean>,
  options: { everyMs: number; timeoutMs?: number },
): Promise<boolean> {
  const deadline = performance.now() + (options.timeoutMs ?? Infinity);
  while (!(await done())) {
    if (performance.now() >= deadline) return false;
    await new Promise((resolve) => setTimeout(resolve, options.everyMs));
  }
  return true;
}

/** The live (non-zombie) processes of process group `pgid`. */
export function groupMembers(pgid: number, procs: Proc[] = processes()): Proc[] {
  return procs.filter((proc) => proc.pgid === pgid && !isDead(proc));
}

/**
 * The live processes of a service: its process group, and anything that left the group (`setsid`, a
 * daemonizing double fork) but still carries the service's `DOCK_SERVICE=<id>` in its environment.
 */
export function serviceMembers(pgid: number, id: string, procs: Proc[] = processes()): Proc[] {
  const marker = new TextEncoder().encode(`DOCK_SERVICE=${id}\0`);
  return procs.filter((proc) => !isDead(proc) && (proc.pgid === pgid || environHas(proc.pid, marker)));
}

function environHas(pid: number, entry: Uint8Array): boolean {
  let bytes: Uint8Array;
  try {
    bytes = Deno.readFileSync(`/proc/${pid}/environ`);
  } catch {
    return false; // gone, or another user's
  }
  // Entries are NUL-terminated; match whole entries only (at the start or after a NUL).
  outer: for (
    let i = bytes.indexOf(entry[0]);
    i >= 0 && i + entry.length <= bytes.length;
    i = bytes.indexOf(entry[0], i + 1)
  ) {
    if (i > 0 && bytes[i - 1] !== 0) continue;
    for (let j = 1; j < entry.length; j++) if (bytes[i + j] !== entry[j]) continue outer;
    return true;
  }
  return false;
}

/** Resident memory in bytes of the live processes of group `pgid`. */
export function groupRss(pgid: number, procs: Proc[] = processes()): number {
  return groupMembers(pgid, procs).reduce((sum, proc) => sum + proc.rss, 0);
}

/** Working directory of `pid` as the kernel resolves it, or null when gone or not permitted. */
export function cwdOf(pid: number): string | null {
  try {
    return Deno.readLinkSync(`/proc/${pid}/cwd`);
  } catch {
    // NotFound (gone), PermissionDenied (another user's process): both just mean "unknown".
    return null;
  }
}

/** Command line of `pid`, arguments joined with spaces; its `comm` when it has none; null when gone. */
export function commandOf(pid: number): string | null {
  const text = readProcText(`/proc/${pid}/cmdline`);
  if (text === null) return null;
  const command = text.split("\0").filter((arg) => arg !== "").join(" ");
  // Kernel threads and zombies have an empty command line; their comm is all there is.
  return command !== "" ? command : readProc(pid)?.comm ?? null;
}

/**
 * Socket inode → pid of the process holding it, from the `socket:[INODE]` links in `/proc/<pid>/fd`.
 * Processes whose descriptors cannot be read (another user's, gone) are skipped. A socket shared by
 * several processes (a server's forked workers) is given to the lowest pid, usually the one that
 * opened it. This reads one link per open descriptor on the box, so call it once per answer.
 */
export function socketOwners(): Map<number, number> {
  const owners = new Map<number, number>();
  // Ascending pids, so the first holder seen is the lowest.
  for (const pid of pids().sort((a, b) => a - b)) {
    const dir = `/proc/${pid}/fd`;
    let entries: Deno.DirEntry[];
    try {
      entries = [...Deno.readDirSync(dir)];
    } catch {
      continue;
    }
    for (const entry of entries) {
      let target: string;
      try {
        target = Deno.readLinkSync(`${dir}/${entry.name}`);
      } catch {
        continue; // closed since the listing, or the process is gone
      }
      if (!target.startsWith("socket:[")) continue;
      const inode = Number(target.slice(8, -1));
      if (Number.isInteger(inode) && !owners.has(inode)) owners.set(inode, pid);
    }
  }
  return owners;
}

let cachedPageSize: number | undefined;

/** The kernel's memory page size in bytes, the unit of `rss` in `/proc/<pid>/stat`. */
export function pageSize(): number {
  cachedPageSize ??= detectPageSize();
  return cachedPageSize;
}

/** Memory in use on the box, in percent of the total (from `/proc/meminfo`, so it counts page cache as free). */
export function memoryPercent(): number {
  const text = readProcText("/proc/meminfo");
  if (text !== null) return parseMeminfo(text).used_percent;
  const info = Deno.systemMemoryInfo(); // no /proc (macOS)
  return info.total > 0 ? Math.round(((info.total - info.available) / info.total) * 1000) / 10 : 0;
}

/**
 * Which worktree and service each listening port counts for; one entry per port, lowest port first.
 * A port in a worktree's block is that worktree's whatever listens there (via "block"); otherwise the
 * deepest worktree whose folder holds the owning process's working directory (via "cwd"). Paths are
 * compared as given, so pass real paths for both.
 */
export function attributePorts(options: AttributePortsOptions): PortUse[] {
  const { owners, procs, cwd, services = [], command } = options;
  const blocks = new Map<number, PortWorktree>();
  for (const worktree of options.worktrees) {
    for (const port of worktree.ports) if (!blocks.has(port)) blocks.set(port, worktree);
  }
  // Deepest first, so the first folder that holds a directory is the most specific one.
  const byDepth = [...options.worktrees].sort((a, b) => trimSlash(b.path).length - trimSlash(a.path).length);

  const byPort = new Map<number, Listener[]>();
  for (const listener of options.listeners) {
    const same = byPort.get(listener.port);
    if (same) same.push(listener);
    else byPort.set(listener.port, [listener]);
  }

  const uses: PortUse[] = [];
  for (const [port, listeners] of byPort) {
    // One entry per port: a dual-stack server (0.0.0.0 and ::) or docker-proxy's two processes show up
    // twice. Show a listener whose owner is known, the IPv4 one when there is a choice.
    const listener = listeners.sort((a, b) =>
      Number(owners.has(b.inode)) - Number(owners.has(a.inode)) || a.family - b.family ||
      a.address.localeCompare(b.address)
    )[0];
    const pid = owners.get(listener.inode) ?? null;
    const proc = pid === null ? undefined : procs.get(pid);

    let worktree: PortWorktree | undefined = blocks.get(port);
    let via: PortUse["via"] = worktree ? "block" : null;
    if (!worktree && pid !== null) {
      const dir = cwd(pid);
      if (dir !== null) {
        worktree = byDepth.find((candidate) =>
          isInside(dir, candidate.path)
        );
        if (worktree) via = "cwd";
      }
    }
    const service = proc && services.find((candidate) => candidate.pgid === proc.pgid);

    uses.push({
      port,
      address: listener.address,
      family: listener.family,
      pid,
      command: pid === null ? null : command ? command(pid) : proc?.comm ?? null,
      location: worktree?.location ?? null,
      worktree: worktree?.name ?? null,
      service: service?.name ?? null,
      via,
    });
  }
  return uses.sort((a, b) => a.port - b.port);
}

/** Every listening port on the box with its owner, worktree and service, read from `/proc` now. */
export function portsInUse(worktrees: PortWorktree[], services: PortService[] = []): PortUse[] {
  const listeners = readListeners();
  if (listeners.length === 0) return [];
  const owners = socketOwners();
  const procs = new Map(processes().map((proc) => [proc.pid, proc]));
  return attributePorts({
    listeners,
    owners,
    procs,
    // The kernel's cwd link is already resolved, but the worktree paths may go through a symlink
    // (/tmp → /private/tmp), so both sides are made real.
    cwd: (pid) => {
      const dir = cwdOf(pid);
      return dir === null ? null : realPathOr(dir);
    },
    worktrees: worktrees.map((worktree) => ({ ...worktree, path: realPathOr(worktree.path) })),
    services,
    command: commandOf,
  });
}

function isDead(proc: Proc): boolean {
  return proc.state === "Z" || proc.state === "X";
}

// "/a/app" holds "/a/app" and "/a/app/x", not "/a/app2".
function isInside(dir: string, folder: string): boolean {
  const base = trimSlash(folder);
  return dir === base || dir.startsWith(`${base}/`);
}

function trimSlash(path: string): string {
  return path.replace(/\/+$/, "");
}

function realPathOr(path: string): string {
  try {
    return Deno.realPathSync(path);
  } catch {
    return path; // gone, or inside another mount namespace: compare it as written
  }
}

function pids(): number[] {
  let entries: Deno.DirEntry[];
  try {
    entries = [...Deno.readDirSync("/proc")];
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return [];
    throw error;
  }
  const found: number[] = [];
  for (const entry of entries) if (/^\d+$/.test(entry.name)) found.push(Number(entry.name));
  return found;
}

// The text of a /proc file, or null when the process is gone or the file cannot be read.
function readProcText(path: string): string | null {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    // NotFound, or ESRCH when the process exits between open and read: both mean "gone".
    return null;
  }
}

function detectPageSize(): number {
  // x86-64 Linux has only 4 KiB base pages. arm64 kernels are built with 4, 16 or 64 KiB pages, so
  // there the size is read from this process's first mapping (cheaper than spawning getconf).
  if (Deno.build.arch === "x86_64") return 4096;
  try {
    const file = Deno.openSync("/proc/self/smaps");
    try {
      const buffer = new Uint8Array(4096);
      const read = file.readSync(buffer) ?? 0;
      const match = /KernelPageSize:\s+(\d+) kB/.exec(new TextDecoder().decode(buffer.subarray(0, read)));
      if (match) return Number(match[1]) * 1024;
    } finally {
      file.close();
    }
  } catch {
    // no /proc (macOS): nothing reads rss pages there anyway
  }
  return 4096;
}
