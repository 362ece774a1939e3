/**
 * A cgroup (v2) per service, where the box lets the daemon make one (issue 11): every process a service
 * starts is born inside it and cannot leave it by `setsid`, a double fork or clearing its environment, so
 * stopping the service ends them all (`cgroup.kill`). Where it cannot, services fall back to their process
 * group plus the `DOCK_SERVICE` mark in the environment (daemon/procs.ts `serviceMembers`), and `dockd
 * doctor` says which of the two is in force and why.
 *
 * Layout: `<the daemon's own cgroup>/dock-<hash of the state folder>/<location>:<worktree>:<service>`.
 * The daemon stays in its own cgroup: dock enables no controller, and the kernel's "no internal
 * processes" rule binds only a cgroup whose `cgroup.subtree_control` enables one, so a populated cgroup
 * may have children (Documentation/admin-guide/cgroup-v2.rst, "No Internal Process Constraint"). One
 * folder per box keeps two boxes of one user (or many test boxes) apart; it exists only while one of the
 * box's services runs, so a daemon killed for good leaves no empty folder behind. The name of a service's cgroup
 * holds `:`, which no name dock accepts does, so it is unique without a hash, and it never collides with
 * the kernel's files (`cgroup.*`, `<controller>.*`).
 *
 * Usable means: a v2 hierarchy is mounted (alone at /sys/fs/cgroup, or beside v1 at
 * /sys/fs/cgroup/unified), this process's cgroup is visible in it, and the daemon can make a folder
 * there and move a process in. Moving needs write access to `cgroup.procs` of the cgroup the process
 * leaves as well (the common ancestor, "Delegation Containment"): a systemd unit with `Delegate=yes`,
 * a container whose tree is writable, or root. Detection tries exactly that with a real child, so a
 * `yes` is never a guess.
 *
 * @module
 */
import { sha256Hex } from "../core/bytes.ts";
import { join } from "../core/posix_path.ts";
import type { Check } from "../client/wire.ts";
import { CGROUP_ENTRY_FAILED, run } from "../core/runner.ts";
import { pollUntil } from "./procs.ts";

/** Which mechanism tracks services' processes on this box, and why. */
export type CgroupSupport =
  | {
    usable: true;
    /** The box's folder; each service's cgroup is made inside it. */
    folder: string;
    /** Whether the kernel has `cgroup.kill` (Linux 5.14); before it, each process is killed in turn. */
    kill: boolean;
  }
  | { usable: false; reason: string };

/** A cgroup2 mount, from `/proc/self/mountinfo`. */
export interface Cgroup2Mount {
  /** The cgroup shown at the mount point (`/` unless a subtree was mounted or bind-mounted). */
  root: string;
  /** Where it is mounted. */
  mountPoint: string;
  readOnly: boolean;
}

/**
 * The cgroup v2 path in `/proc/<pid>/cgroup` text (its `0::/path` line), or null when the process is in
 * no v2 hierarchy (a v1-only system). Under a cgroup namespace the path is relative to the namespace's
 * root, and starts with `/..` when the process is outside it.
 */
export function parseProcCgroup(text: string): string | null {
  for (const line of text.split("\n")) {
    if (line.startsWith("0::")) return line.slice(3);
  }
  return null;
}

/** The cgroup2 mounts in `/proc/<pid>/mountinfo` text (see proc(5) for its fields). */
export function parseCgroup2Mounts(text: string): Cgroup2Mount[] {
  const mounts: Cgroup2Mount[] = [];
  for (const line of text.split("\n")) {
    // Optional fields come before " - "; after it: file system type, source, super options.
    const [before, after] = line.split(" - ");
    if (after === undefined) continue;
    const fields = before.split(" ");
    const [type] = after.split(" ");
    if (type !== "cgroup2" || fields.length < 6) continue;
    mounts.push({
      root: unescapeMountPath(fields[3]),
      mountPoint: unescapeMountPath(fields[4]),
      readOnly: fields[5].split(",").includes("ro"),
    });
  }
  return mounts;
}

/** The folder that shows cgroup `path` through one of `mounts` (the first that does), or null. */
export function cgroupFolder(
  mounts: Cgroup2Mount[],
  path: string,
): { folder: string; mount: Cgroup2Mount } | null {
  for (const mount of mounts) {
    const root = mount.root.replace(/\/+$/, "");
    if (path !== root && !path.startsWith(`${root}/`) && root !== "") continue;
    const rest = path.slice(root.length).replace(/^\/+/, "");
    return { folder: rest ? join(mount.mountPoint, rest) : mount.mountPoint, mount };
  }
  return null;
}

/** The name of a box's folder under the daemon's cgroup: the same for every daemon of one state folder. */
export async function boxCgroupName(stateDir: string): Promise<string> {
  return `dock-${await sha256Hex(stateDir, 6)}`;
}

/** The name of a service's cgroup inside its box's folder. */
export function serviceCgroupName(location: string, worktree: string, name: string): string {
  return `${location}:${worktree}:${name}`;
}

/** Where the box of `stateDir` keeps its services' cgroups, or why it cannot; reads /proc, changes nothing. */
export async function boxCgroupFolder(stateDir: string): Promise<{ folder: string } | { reason: string }> {
  const own = ownCgroupFolder();
  return "reason" in own ? own : { folder: join(own.folder, await boxCgroupName(stateDir)) };
}

/** The folder of this process's own cgroup (where boxes' folders go), or why it cannot hold any. */
function ownCgroupFolder(): { folder: string } | { reason: string } {
  if (Deno.build.os !== "linux") return { reason: `${Deno.build.os} has no cgroups` };
  const cgroupText = readText("/proc/self/cgroup");
  if (cgroupText === null) return { reason: "/proc/self/cgroup cannot be read" };
  const path = parseProcCgroup(cgroupText);
  if (path === null) {
    return { reason: "this process is in no cgroup v2 hierarchy (/proc/self/cgroup has no 0:: line)" };
  }
  if (path.startsWith("/..")) return { reason: `its cgroup ${path} is outside this cgroup namespace` };
  const mounts = parseCgroup2Mounts(readText("/proc/self/mountinfo") ?? "");
  if (mounts.length === 0) return { reason: "no cgroup2 file system is mounted" };
  const found = cgroupFolder(mounts, path);
  if (found === null) return { reason: `its cgroup ${path} is under no cgroup2 mount` };
  if (found.mount.readOnly) return { reason: `${found.mount.mountPoint} is mounted read-only` };
  return { folder: found.folder };
}

/** Options of {@linkcode detectCgroups}. */
export interface DetectCgroupsOptions {
  /** The box's state folder (names its cgroup folder). */
  stateDir: string;
  /** Why cgroups are not to be used even if they could be (`DOCK_CGROUPS=off`). */
  disabled?: string;
}

/**
 * Whether services can each get a cgroup here: moves a short-lived child into a probe cgroup beside the
 * boxes' folders through the runner, as a service will be moved into one inside its box's. Never throws.
 * The probe starts before this returns to the event loop: `dockd serve` begins this before it loads the
 * daemon's modules (beside the box's folder, not in it: that folder's name takes a hash, which WebCrypto
 * makes asynchronously).
 */
export async function detectCgroups(options: DetectCgroupsOptions): Promise<CgroupSupport> {
  if (options.disabled) return { usable: false, reason: options.disabled };
  const own = ownCgroupFolder();
  if ("reason" in own) return { usable: false, reason: own.reason };
  const probe = join(own.folder, `dock-probe-${Deno.pid}`);
  try {
    Deno.mkdirSync(probe, { recursive: true });
  } catch (error) {
    return { usable: false, reason: `a cgroup cannot be made in ${own.folder}: ${(error as Error).message}` };
  }
  const probing = run("/bin/sh", ["-c", "exit 0"], { cgroup: probe, group: false, timeoutMs: 10_000 }).then(
    (result) => {
      if (result.code === CGROUP_ENTRY_FAILED) {
        return `a process cannot be moved into ${probe}: ${result.stderr.trim() || "no reason given"}`;
      }
      return result.code === 0 ? null : `the probe in ${probe} exited with ${result.code}`;
    },
    (error) => `the probe in ${probe} could not start: ${(error as Error).message}`,
  );
  const folder = join(own.folder, await boxCgroupName(options.stateDir));
  const failure = await probing;
  const kill = exists(join(probe, "cgroup.kill"));
  await removeCgroup(probe);
  return failure === null ? { usable: true, folder, kill } : { usable: false, reason: failure };
}

/** The `GET doctor` check naming how services' processes are tracked. */
export function cgroupCheck(support: CgroupSupport): Check {
  // Both are working setups (the fallback is all macOS has): the detail says what holds.
  if (support.usable) {
    const kill = support.kill ? "" : " (no cgroup.kill before Linux 5.14: each process is killed in turn)";
    return {
      name: "services",
      ok: true,
      detail: `cgroup v2 at ${support.folder}: stopping a service ends every process it started, even one ` +
        `that clears its environment and calls setsid${kill}`,
    };
  }
  return {
    name: "services",
    ok: true,
    detail: "process groups and the DOCK_SERVICE mark: a process that clears its environment and calls " +
      `setsid escapes; cgroups unavailable because ${support.reason}`,
  };
}

/** Makes the cgroup `folder` and its parents; one left over from an earlier run is emptied first. */
export async function makeCgroup(folder: string): Promise<void> {
  if (populated(folder)) await emptyCgroup(folder);
  // Another service's removal may take the shared box folder away between mkdir -p's two steps.
  for (let attempt = 1;; attempt++) {
    try {
      await Deno.mkdir(folder, { recursive: true });
      return;
    } catch (error) {
      if (!(error instanceof Deno.errors.NotFound) || attempt === 3) throw error;
    }
  }
}

/** Removes the cgroup `folder` if nothing is in it and no cgroup is below it (a box's, after its last service). */
export function removeIfEmpty(folder: string): void {
  try {
    Deno.removeSync(folder);
  } catch { /* EBUSY: something still runs in it, or a cgroup is below it; or gone already */ }
}

/** Pids of the processes in cgroup `folder` and the cgroups below it; empty when it is gone. */
export function cgroupPids(folder: string): number[] {
  const pids: number[] = [];
  const text = readText(join(folder, "cgroup.procs"));
  if (text === null) return pids;
  for (const line of text.split("\n")) if (/^\d+$/.test(line)) pids.push(Number(line));
  for (const child of subfolders(folder)) pids.push(...cgroupPids(child));
  return pids;
}

/** Sends `signal` to every process in cgroup `folder` and below. */
export function signalCgroup(folder: string, signal: Deno.Signal): void {
  for (const pid of cgroupPids(folder)) {
    try {
      Deno.kill(pid, signal);
    } catch { /* gone */ }
  }
}

/**
 * SIGKILLs everything in cgroup `folder` and below: `cgroup.kill` where the kernel has it (it also
 * catches a process forked meanwhile), else each process in turn. Returns at once; see `emptyCgroup`.
 */
export function killCgroup(folder: string): void {
  try {
    Deno.writeTextFileSync(join(folder, "cgroup.kill"), "1");
    return;
  } catch { /* before Linux 5.14, or gone */ }
  signalCgroup(folder, "SIGKILL");
}

/** Kills everything in cgroup `folder` and waits (at most `timeoutMs`) until none of it is left. */
export function emptyCgroup(folder: string, timeoutMs = 5000): Promise<boolean> {
  return pollUntil(() => {
    if (!populated(folder)) return true;
    killCgroup(folder); // again: without cgroup.kill, a process forked meanwhile was missed
    return false;
  }, { everyMs: 10, timeoutMs });
}

/**
 * Empties and removes cgroup `folder` with the cgroups below it. False when something stays (a process
 * that will not die in `timeoutMs`, or no right to remove it); a folder already gone is not an error.
 */
export async function removeCgroup(folder: string, timeoutMs = 5000): Promise<boolean> {
  let removed = false as boolean | "busy";
  const done = await pollUntil(() => {
    if (populated(folder)) {
      killCgroup(folder); // again: without cgroup.kill, a process forked meanwhile was missed
      return false;
    }
    removed = removeFolders(folder);
    // "busy": not empty after all: a process that is exiting has left cgroup.procs, but rmdir says EBUSY
    // until it has left the cgroup.
    return removed !== "busy";
  }, { everyMs: 10, timeoutMs });
  return done && removed === true;
}

/**
 * Whether cgroup `folder` or one below it holds a live process (zombies do not count). Read from
 * `cgroup.events`, not `cgroup.procs`: an exiting process leaves the list first (measured here: right
 * after SIGKILL of a `deno` process, the list was empty while the cgroup was still populated in 8 of 20
 * tries, and rmdir failed with EBUSY).
 */
function populated(folder: string): boolean {
  const events = readText(join(folder, "cgroup.events"));
  // No cgroup.events: the folder is gone, or it is a root (never one of ours); then ask cgroup.procs.
  if (events === null) return cgroupPids(folder).length > 0;
  return /^populated 1$/m.test(events);
}

function removeFolders(folder: string): boolean | "busy" {
  for (const child of subfolders(folder)) {
    const removed = removeFolders(child);
    if (removed !== true) return removed;
  }
  try {
    Deno.removeSync(folder); // rmdir: a cgroup's files are the kernel's, never removed one by one
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return true;
    return error instanceof Deno.errors.Busy ? "busy" : false;
  }
}

function subfolders(folder: string): string[] {
  try {
    return [...Deno.readDirSync(folder)].filter((entry) => entry.isDirectory).map((e) =>
      join(folder, e.name)
    );
  } catch {
    return [];
  }
}

// mountinfo escapes space, tab, newline and backslash as octal (\040 …).
function unescapeMountPath(path: string): string {
  return path.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(parseInt(octal, 8)));
}

function readText(path: string): string | null {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    return null;
  }
}

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * Whether this box's services can each get a cgroup ({@linkcode detectCgroups}), for the daemon at `paths`.
 * `DOCK_CGROUPS=off`: the fallback on a box that has cgroups (tests of it; a box whose tree misbehaves).
 */
export function boxCgroups(paths: { state: string }): Promise<CgroupSupport> {
  const disabled = Deno.env.get("DOCK_CGROUPS") === "off" ? "DOCK_CGROUPS=off" : undefined;
  return detectCgroups({ stateDir: paths.state, disabled });
}
