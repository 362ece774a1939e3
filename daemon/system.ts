/**
 * Facts about the box itself: what it is (`GET info`), how loaded it is (`GET stats`), whether dock can
 * work on it (`GET doctor`), and its folders (`GET fs`). Linux facts come from `/proc` and POSIX `df`
 * output; the parsers are pure and tested on captured output in `tests/fixtures/system/`.
 *
 * @module
 */
import { exists } from "../core/files.ts";
import { dirname, isAbsolute, join, resolve } from "../core/posix_path.ts";
import type { AgentPreset, BoxInfo, Check, FsEntry, FsListing, Stats } from "../client/wire.ts";
import { DockError } from "../client/errors.ts";
import { run, which as whichOnPath } from "../core/runner.ts";
import { pathTools } from "./tools.ts";

/** Tools `GET info` looks for on `PATH`. */
export const TOOLS = [
  "git",
  "tmux",
  "gh",
  "glab",
  "docker",
  "node",
  "deno",
  "claude",
  "codex",
  "opencode",
  "gemini",
  "cursor-agent",
  "op",
  // Tunnel CLIs a share goes through (shares.ts).
  "cloudflared",
  "tailscale",
] as const;

const GIB = 1024 ** 3;

// ---------------------------------------------------------------------------------------------------
// Info

/** Options for {@linkcode boxInfo}. */
export interface BoxInfoOptions {
  /** The box's name for itself. */
  name: string;
  /** The daemon's build (version) string. */
  build: string;
  /** Agent presets available on the box. */
  agents: AgentPreset[];
  /** Finds a tool on `PATH`. @default {a lookup of the daemon's cached PATH listings (`tools.ts`)} */
  which?: (name: string) => string | null;
}

/** What the box is: OS, architecture, user, home and which known tools are installed (`GET info`). */
export async function boxInfo(options: BoxInfoOptions): Promise<BoxInfo> {
  const which = options.which ?? pathTools.lookup();
  const info: BoxInfo = {
    name: options.name,
    os: Deno.build.os,
    arch: Deno.build.arch,
    build: options.build,
    tools: TOOLS.filter((tool) => which(tool) !== null),
    agents: options.agents,
  };
  const user = await currentUser();
  if (user) info.user = user;
  const home = Deno.env.get("HOME");
  if (home) info.home = home;
  return info;
}

// The user does not change while the daemon runs: ask `id` once, not on every `GET info` (health checks).
let knownUser: Promise<string | null> | undefined;

function currentUser(): Promise<string | null> {
  knownUser ??= lookUpUser();
  return knownUser;
}

async function lookUpUser(): Promise<string | null> {
  const user = Deno.env.get("USER") || Deno.env.get("LOGNAME");
  if (user) return user;
  // Services started by init often run without USER set.
  try {
    const result = await run("id", ["-un"], { timeoutMs: 5_000 });
    return result.code === 0 && result.stdout.trim() ? result.stdout.trim() : null;
  } catch {
    return null;
  }
}

// ---------------------------------------------------------------------------------------------------
// Stats

/** Memory in bytes, from `/proc/meminfo`. */
export interface MemoryInfo {
  total: number;
  available: number;
  /** Share of memory not available, 0 to 100 with one decimal. */
  used_percent: number;
}

/** Parses `/proc/meminfo` (values in kB) into bytes. */
export function parseMeminfo(text: string): MemoryInfo {
  const kb = new Map<string, number>();
  for (const line of text.split("\n")) {
    const match = /^([A-Za-z0-9_()]+):\s+(\d+)/.exec(line);
    if (match) kb.set(match[1], Number(match[2]));
  }
  const total = (kb.get("MemTotal") ?? 0) * 1024;
  // MemAvailable exists since Linux 3.14; before it, free plus page cache is the usual estimate.
  const available = (kb.get("MemAvailable") ??
    (kb.get("MemFree") ?? 0) + (kb.get("Buffers") ?? 0) + (kb.get("Cached") ?? 0)) * 1024;
  return { total, available, used_percent: percent(total - available, total) };
}

/** One line of `df -P -k`, in bytes. */
export interface DfEntry {
  filesystem: string;
  total: number;
  used: number;
  free: number;
  mount: string;
}

/** Parses POSIX `df -P -k` output (1024-byte blocks) into bytes; the header line is skipped. */
export function parseDf(text: string): DfEntry[] {
  const entries: DfEntry[] = [];
  for (const line of text.split("\n").slice(1)) {
    // Filesystem and mount point may contain spaces; the four numbers between them cannot.
    const match = /^(.+?)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+|-)%?\s+(\/.*)$/.exec(line);
    if (!match) continue;
    entries.push({
      filesystem: match[1],
      total: Number(match[2]) * 1024,
      used: Number(match[3]) * 1024,
      free: Number(match[4]) * 1024,
      mount: match[6],
    });
  }
  return entries;
}

/** Parses `/proc/loadavg` into the 1, 5 and 15 minute load averages. */
export function parseLoadavg(text: string): number[] {
  return text.trim().split(/\s+/).slice(0, 3).map(Number).filter((n) => Number.isFinite(n));
}

/** Parses `/proc/uptime` into whole seconds since boot. */
export function parseUptime(text: string): number {
  const seconds = Number(text.trim().split(/\s+/)[0]);
  return Number.isFinite(seconds) ? Math.floor(seconds) : 0;
}

/** Options for {@linkcode stats}. */
export interface StatsOptions {
  /** Folders whose disks are reported (state dir, home, locations); one entry per distinct mount. */
  paths: string[];
}

/** Memory, disks, load and uptime of the box (`GET stats`, without dock's own counts). */
export async function stats(
  options: StatsOptions,
): Promise<Omit<Stats, "locations" | "worktrees" | "agents">> {
  const [memory, load, uptime, disks] = await Promise.all([
    readProc("/proc/meminfo", parseMeminfo, () => {
      // No /proc (macOS): Deno asks the kernel itself.
      const info = Deno.systemMemoryInfo();
      return {
        total: info.total,
        available: info.available,
        used_percent: percent(info.total - info.available, info.total),
      };
    }),
    readProc("/proc/loadavg", parseLoadavg, () => Deno.loadavg()),
    readProc("/proc/uptime", parseUptime, () => Deno.osUptime()),
    diskUsage(options.paths),
  ]);
  return { memory, disks, load, uptime };
}

async function readProc<T>(path: string, parse: (text: string) => T, fallback: () => T): Promise<T> {
  try {
    return parse(await Deno.readTextFile(path));
  } catch {
    return fallback();
  }
}

/** Total and free bytes of the disk holding each path; paths on an already-listed mount are dropped. */
async function diskUsage(paths: string[]): Promise<{ path: string; total: number; free: number }[]> {
  const existing: string[] = [];
  for (const path of paths) {
    try {
      await Deno.stat(path);
      if (!existing.includes(path)) existing.push(path);
    } catch {
      // A location whose folder is gone has no disk to report.
    }
  }
  if (existing.length === 0) return [];
  let rows = await df(existing);
  // df prints one line per argument, in order, unless one failed; then ask path by path.
  if (rows.length !== existing.length) {
    rows = [];
    for (const path of existing) rows.push((await df([path]))[0]);
  }
  const seen = new Set<string>();
  const disks: { path: string; total: number; free: number }[] = [];
  existing.forEach((path, i) => {
    const row = rows[i];
    if (!row || seen.has(`${row.filesystem}\0${row.mount}`)) return;
    seen.add(`${row.filesystem}\0${row.mount}`);
    disks.push({ path, total: row.total, free: row.free });
  });
  return disks;
}

async function df(paths: string[]): Promise<DfEntry[]> {
  try {
    // "--" so a path starting with "-" is not read as an option.
    const result = await run("df", ["-P", "-k", "--", ...paths], { timeoutMs: 10_000 });
    return parseDf(result.stdout);
  } catch {
    return [];
  }
}

function percent(part: number, whole: number): number {
  return whole > 0 ? Math.round((part / whole) * 1000) / 10 : 0;
}

// ---------------------------------------------------------------------------------------------------
// Doctor

/** The oldest git dock's adapter works with (`worktree list --porcelain -z`). */
const MIN_GIT: [number, number] = [2, 36];

/** Free space on the state dir's disk under which the disk check fails. */
const MIN_FREE = GIB;

/** Options for {@linkcode doctor}. */
export interface DoctorOptions {
  /** The daemon's API socket. */
  socket: string;
  /** The daemon's state directory. */
  stateDir: string;
  /** Finds a tool on `PATH`. @default {the runner's `which`} */
  which?: (name: string) => string | null;
}

/** Checks that dock can work on this box: git, tmux, the socket's mode, the state dir and its disk. */
export async function doctor(options: DoctorOptions): Promise<Check[]> {
  const which = options.which ?? whichOnPath;
  return await Promise.all([
    toolCheck("git", which, ["--version"], (version) => {
      const match = /(\d+)\.(\d+)/.exec(version);
      const [major, minor] = match ? [Number(match[1]), Number(match[2])] : [0, 0];
      const tooOld = major < MIN_GIT[0] || (major === MIN_GIT[0] && minor < MIN_GIT[1]);
      return tooOld ? `git ${MIN_GIT.join(".")} or newer is needed` : null;
    }),
    toolCheck("tmux", which, ["-V"], () => null),
    socketCheck(options.socket),
    writableCheck(options.stateDir),
    diskCheck(options.stateDir),
  ]);
}

/** The exact command that installs `tool`, shown when it is missing. */
export function installHint(tool: string): string {
  return `install ${tool}: apt-get install ${tool} (Debian/Ubuntu) or brew install ${tool} (macOS)`;
}

async function toolCheck(
  name: string,
  which: (name: string) => string | null,
  versionArgs: string[],
  problem: (version: string) => string | null,
): Promise<Check> {
  const path = which(name);
  if (!path) return { name, ok: false, detail: `${name} not found on PATH; ${installHint(name)}` };
  try {
    const result = await run(path, versionArgs, { timeoutMs: 10_000 });
    const version = result.stdout.trim().split("\n")[0] || result.stderr.trim().split("\n")[0];
    if (result.code !== 0) {
      return { name, ok: false, detail: `${path} ${versionArgs.join(" ")} failed: ${version}` };
    }
    const issue = problem(version);
    const found = version ? `${version} (${path})` : path;
    return { name, ok: issue === null, detail: issue ? `${found}: ${issue}` : found };
  } catch (error) {
    return { name, ok: false, detail: `${path} could not be run: ${(error as Error).message}` };
  }
}

async function socketCheck(socket: string): Promise<Check> {
  const name = "socket";
  try {
    const info = await Deno.stat(socket);
    const mode = (info.mode ?? 0) & 0o777;
    const octal = mode.toString(8).padStart(4, "0");
    // Anyone who can open the socket can drive every session on the box.
    return mode === 0o600
      ? { name, ok: true, detail: `${socket} is mode ${octal}` }
      : { name, ok: false, detail: `${socket} is mode ${octal}, should be 0600: chmod 600 ${socket}` };
  } catch {
    return { name, ok: false, detail: `${socket} does not exist (is dockd running?)` };
  }
}

async function writableCheck(dir: string): Promise<Check> {
  const name = "state_dir";
  try {
    const probe = await Deno.makeTempFile({ dir, prefix: ".doctor-" });
    await Deno.remove(probe);
    return { name, ok: true, detail: `${dir} is writable` };
  } catch (error) {
    return { name, ok: false, detail: `${dir} is not writable: ${(error as Error).message}` };
  }
}

async function diskCheck(dir: string): Promise<Check> {
  const name = "disk";
  const row = (await df([dir]))[0];
  if (!row) return { name, ok: false, detail: `could not read free space of ${dir}` };
  const detail = `${formatGiB(row.free)} free of ${formatGiB(row.total)} on ${row.mount}`;
  return row.free < MIN_FREE
    ? { name, ok: false, detail: `${detail}: under 1 GiB left for ${dir}` }
    : { name, ok: true, detail };
}

function formatGiB(bytes: number): string {
  return `${(bytes / GIB).toFixed(1)} GiB`;
}

// ---------------------------------------------------------------------------------------------------
// Folders

/** Options for {@linkcode listFolder}. */
export interface ListFolderOptions {
  /** Folder to list; `~` and relative paths are taken from home. @default {"<home>/work", else home} */
  path?: string;
  /** The box user's home; nothing outside it is listed. */
  home: string;
}

/**
 * The visible entries of a folder under the home directory (`GET fs`), folders first. Symbolic links
 * are resolved first, so neither `..` nor a link can reach outside home.
 */
export async function listFolder(options: ListFolderOptions): Promise<FsListing> {
  const home = await realPath(options.home, options.home);
  let requested: string;
  if (options.path === undefined || options.path === "") {
    requested = await isDirectory(join(home, "work")) ? join(home, "work") : home;
  } else {
    const path = options.path === "~" ? home : options.path.replace(/^~\//, `${home}/`);
    requested = isAbsolute(path) ? resolve(path) : resolve(home, path);
  }
  // Checked before touching the disk, so a path outside home reveals nothing about whether it exists.
  // Either form of home counts, in case home itself is reached through a link (/home -> /usr/home).
  if (!inside(home, requested) && !inside(resolve(options.home), requested)) throw outsideHome(options.path);
  const real = await realPath(requested, options.path ?? requested);
  if (!inside(home, real)) throw outsideHome(options.path);
  if (!(await isDirectory(real))) {
    throw new DockError("not_a_folder", `'${options.path ?? real}' is not a folder`, { status: 400 });
  }

  const entries: FsEntry[] = [];
  for (const entry of await readDir(real, options.path ?? real)) {
    // Dot entries are config and caches, not places to open a project.
    if (entry.name.startsWith(".")) continue;
    const path = join(real, entry.name);
    let dir = entry.isDirectory;
    if (entry.isSymlink) {
      // A link is shown only when it leads somewhere the listing could follow.
      const target = await Deno.realPath(path).catch(() => null);
      if (target === null || !inside(home, target)) continue;
      dir = await isDirectory(target);
    }
    entries.push({ name: entry.name, path, dir, git: dir && await exists(join(path, ".git")) });
  }
  entries.sort((a, b) => Number(b.dir) - Number(a.dir) || compareNames(a.name, b.name));
  return { path: real, parent: real === home ? null : dirname(real), entries };
}

async function readDir(path: string, shown: string): Promise<Deno.DirEntry[]> {
  try {
    return await Array.fromAsync(Deno.readDir(path));
  } catch (error) {
    if (error instanceof Deno.errors.PermissionDenied) {
      throw new DockError("forbidden", `'${shown}' cannot be read`, { status: 403, cause: error });
    }
    throw error;
  }
}

function compareNames(a: string, b: string): number {
  const byLocale = a.localeCompare(b, "en", { sensitivity: "base", numeric: true });
  return byLocale || (a < b ? -1 : a > b ? 1 : 0);
}

function inside(home: string, path: string): boolean {
  return path === home || path.startsWith(home.endsWith("/") ? home : `${home}/`);
}

function outsideHome(path: string | undefined): DockError {
  return new DockError("outside_home", `'${path}' is outside the home directory`, { status: 403 });
}

async function realPath(path: string, shown: string): Promise<string> {
  try {
    return await Deno.realPath(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) {
      throw new DockError("not_found", `folder '${shown}' not found`, { status: 404, cause: error });
    }
    if (error instanceof Deno.errors.PermissionDenied) {
      throw new DockError("forbidden", `'${shown}' cannot be read`, { status: 403, cause: error });
    }
    throw error;
  }
}

async function isDirectory(path: string): Promise<boolean> {
  try {
    return (await Deno.stat(path)).isDirectory;
  } catch {
    return false;
  }
}
