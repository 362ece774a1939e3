/**
 * Services: the long-running processes of a worktree's effective config (spec 2.5 `services`, 3.3).
 *
 * How they survive the daemon: each service runs as a detached process group (its own session) under
 * a tiny `sh` wrapper that runs the service through a login shell, appends its output to the log file
 * and, when the service ends, writes its exit code beside the log. Nothing of the service is a pipe to
 * dockd, so stopping, crashing, upgrading or kill -9 of the daemon neither kills nor duplicates it.
 * The wrapper's pid and kernel start time are stored; a restarted daemon adopts every service whose
 * wrapper is still that process (a reused pid has another start time) and watches it by polling
 * /proc, and reads the exit file of those that ended meanwhile. This was chosen over tmux windows
 * because it needs nothing but `sh`, costs one small process per service, and gives exit codes and
 * plain log files without scraping a pane.
 *
 * Stopping a service signals its whole process group (SIGTERM, then SIGKILL after a grace period),
 * so a `npm run dev` that forks leaves no orphan holding the port. Where the box allows it, each
 * service also runs in a cgroup of its own (daemon/cgroups.ts), which nothing it starts can leave, and
 * that is emptied and removed too; elsewhere what left the group is found by the `DOCK_SERVICE` mark.
 * A service that ends on its own is restarted with exponential backoff; one that keeps crashing quickly
 * is marked failed.
 *
 * @module
 */
import { sleep } from "../client/timers.ts";
import { dirname, join } from "../core/posix_path.ts";
import { DockError, notFound } from "../client/errors.ts";
import type { ServiceState, StreamLine, Worktree, WorktreeService } from "../client/wire.ts";
import type { EventBus } from "../core/events.ts";
import { concatBytes } from "../core/bytes.ts";
import { readRange, readTail, statOrNull } from "../core/files.ts";
import type { Locations } from "./locations.ts";
import type { BoxPaths } from "../core/paths.ts";
import { isAlive, type Proc, processes, readProc, serviceMembers } from "./procs.ts";
import {
  cgroupPids,
  type CgroupSupport,
  killCgroup,
  makeCgroup,
  removeCgroup,
  removeIfEmpty,
  serviceCgroupName,
} from "./cgroups.ts";
import { killGroup, launch, loginShell } from "../core/runner.ts";
import type { Store } from "../core/store.ts";
import type { Worktrees } from "./worktrees.ts";

interface ServiceRow {
  location: string;
  worktree: string;
  name: string;
  desired: "running" | "stopped";
  state: ServiceState;
  pid: number | null;
  pid_start: number | null;
  restarts: number;
  crashes: number;
  started: string | null;
  exit_code: number | null;
  error: string | null;
  /** The folder of the service's cgroup while it runs in one. */
  cgroup: string | null;
}

/**
 * What is supervised and where it runs: a worktree's services (the default), or the box's units
 * (`units.ts`), which share everything else (the wrapper, adoption, backoff, stopping, logs).
 */
export interface SupervisedScope {
  /** The table of its rows (the `services` table's columns, keyed by location, worktree and name). */
  table: "services" | "units";
  /** Names its events (`service.started`, `unit.started`, …) and its errors. */
  noun: "service" | "unit";
  /** The event data naming one. */
  describe(location: string, worktree: string, name: string): Record<string, unknown>;
  /** Where one runs (404 when its place is gone); a paused place starts nothing. */
  place(location: string, worktree: string): { path: string; paused?: boolean };
  /** Its environment; `mark` is what its processes carry (`DOCK_SERVICE`). */
  environment(
    location: string,
    worktree: string,
    name: string,
    mark: string,
  ): Promise<Record<string, string>>;
  /** Its command line (404 for a name there is none of). */
  command(location: string, worktree: string, name: string): Promise<string>;
  logFile(location: string, worktree: string, name: string): string;
}

/** Tunables of {@linkcode Services}; tests shorten them. */
export interface ServicesOptions {
  store: Store;
  bus: EventBus;
  locations: Locations;
  worktrees: Worktrees;
  paths: BoxPaths;
  /** What it supervises. @default {the worktrees' services} */
  scope?: SupervisedScope;
  /** First restart delay; doubles per quick crash. @default {1000} */
  backoffMs?: number;
  /** Longest restart delay. @default {30000} */
  maxBackoffMs?: number;
  /** A run at least this long resets the crash count. @default {10000} */
  stableMs?: number;
  /** Quick crashes in a row before the service is marked failed. @default {5} */
  maxCrashes?: number;
  /** Grace period between SIGTERM and SIGKILL. @default {5000} */
  stopTimeoutMs?: number;
  /** A log larger than this is rotated to `<name>.log.1`. @default {1 MiB} */
  logBytes?: number;
  /** How often adopted services are checked. @default {500} */
  pollMs?: number;
}

// The wrapper: $1 login shell, $2 the service's command, $3 log file, $4 exit file.
const WRAPPER = '"$1" -l -c "$2" >>"$3" 2>&1 </dev/null; echo $? >"$4"';

/** Supervises every worktree's services. */
export class Services {
  #o: Required<ServicesOptions>;
  #scope: SupervisedScope;
  #owned = new Map<string, Deno.ChildProcess>();
  #restartTimers = new Map<string, ReturnType<typeof setTimeout>>();
  #busy = new Map<string, Promise<unknown>>();
  #poller?: ReturnType<typeof setInterval>;
  #rotating = false;
  #cgroups: CgroupSupport = { usable: false, reason: "the daemon has not started its services yet" };

  constructor(options: ServicesOptions) {
    this.#o = {
      backoffMs: 1000,
      maxBackoffMs: 30_000,
      stableMs: 10_000,
      maxCrashes: 5,
      stopTimeoutMs: 5000,
      logBytes: 1024 * 1024,
      pollMs: 500,
      // An option given as undefined keeps its default.
      ...Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)),
    } as Required<ServicesOptions>;
    this.#scope = options.scope ?? this.#worktreeScope();
    this.#o.store.addColumn(this.#scope.table, "cgroup TEXT"); // a box made before services had cgroups
  }

  /** The worktrees' services: in the worktree, its environment, commands from its location's config. */
  #worktreeScope(): SupervisedScope {
    return {
      table: "services",
      noun: "service",
      describe: (location, worktree, name) => ({ location, worktree, service: name }),
      place: (location, worktree) => this.#o.worktrees.get(location, worktree),
      environment: async (location, worktree, _name, mark) => {
        const { env, setsPort } = await this.#o.worktrees.environment(
          this.#o.worktrees.get(location, worktree),
        );
        // Inherited by everything the service starts, even what leaves its process group: how stop finds it.
        env.DOCK_SERVICE = mark;
        // Services also get PORT = DOCK_PORT, unless the config or the box env file sets PORT.
        if (!setsPort && env.DOCK_PORT) env.PORT = env.DOCK_PORT;
        return env;
      },
      command: async (location, _worktree, name) => {
        const services = (await this.#o.locations.effectiveConfig(location)).services ?? [];
        const service = services.find((s) => s.name === name);
        if (!service) throw notFound("service", `${name}' in the config of location '${location}`);
        return service.run;
      },
      logFile: (location, worktree, name) =>
        join(this.#o.paths.logs, location, worktree, "services", `${name}.log`),
    };
  }

  /** How services' processes are tracked: a cgroup each, or (where that is unavailable) why not. */
  get tracking(): CgroupSupport {
    return this.#cgroups;
  }

  /** The worktree's services: those of the effective config, and any record still running. */
  async list(location: string, worktree: string): Promise<WorktreeService[]> {
    this.#o.worktrees.get(location, worktree);
    const configured = (await this.#o.locations.config(location)).effective.services ?? [];
    const rows = new Map(this.#rows(location, worktree).map((row) => [row.name, row]));
    const services = configured.map((service) =>
      toService(location, worktree, service.name, rows.get(service.name), {
        run: service.run,
        autostart: service.autostart ?? false,
        configured: true,
      })
    );
    for (const [name, row] of rows) {
      if (!configured.some((s) => s.name === name) && row.state !== "stopped") {
        services.push(
          toService(location, worktree, name, row, { run: null, autostart: false, configured: false }),
        );
      }
    }
    return services;
  }

  /** Every service process group alive now (for the guard, pause and port attribution). */
  running(): { location: string; worktree: string; name: string; pgid: number }[] {
    return this.#o.store
      .all<ServiceRow>(`SELECT * FROM ${this.#scope.table} WHERE pid IS NOT NULL`)
      .filter((row) => isAlive(row.pid!, row.pid_start ?? undefined))
      .map((row) => ({ location: row.location, worktree: row.worktree, name: row.name, pgid: row.pid! }));
  }

  /** Starts a service (no-op when it already runs). */
  start(location: string, worktree: string, name: string, origin: string): Promise<WorktreeService> {
    return this.#serially(key(location, worktree, name), async () => {
      const place = this.#refuseIfPaused(location, worktree);
      const run = await this.#scope.command(location, worktree, name);
      const row = this.#row(location, worktree, name);
      if (row?.pid && isAlive(row.pid, row.pid_start ?? undefined)) {
        return this.#get(location, worktree, name);
      }
      this.#clearTimer(key(location, worktree, name));
      this.#upsert(location, worktree, name, { desired: "running", crashes: 0, restarts: 0, error: null });
      await this.#launch(location, worktree, place.path, name, run, origin);
      return this.#get(location, worktree, name);
    });
  }

  /** Stops a service and its whole process group. */
  stop(location: string, worktree: string, name: string, origin: string): Promise<WorktreeService> {
    return this.#serially(key(location, worktree, name), async () => {
      this.#scope.place(location, worktree);
      const row = this.#row(location, worktree, name);
      if (!row) {
        await this.#scope.command(location, worktree, name); // 404 for a name there is none of
        return this.#get(location, worktree, name);
      }
      await this.#stopNow(row, origin);
      return this.#get(location, worktree, name);
    });
  }

  /** Stops (if running) and starts a service. */
  async restart(location: string, worktree: string, name: string, origin: string): Promise<WorktreeService> {
    this.#refuseIfPaused(location, worktree); // before stopping: a refused restart must change nothing
    await this.stop(location, worktree, name, origin);
    return this.start(location, worktree, name, origin);
  }

  /** Starts the worktree's `autostart` services (after setup succeeded, or at once without setup). */
  async autostart(worktree: Worktree): Promise<void> {
    const services = (await this.#o.locations.config(worktree.location)).effective.services ?? [];
    for (const service of services.filter((s) => s.autostart)) {
      await this.start(worktree.location, worktree.name, service.name, "dockd").catch((error) =>
        console.error(`autostart ${worktree.location}/${worktree.name}/${service.name}:`, error.message)
      );
    }
  }

  /** Stops every service of a worktree and forgets them (before it is removed). */
  async stopAll(worktree: Worktree, origin = "dockd"): Promise<void> {
    for (const row of this.#rows(worktree.location, worktree.name)) {
      await this.#serially(key(row.location, row.worktree, row.name), () => this.#stopNow(row, origin));
    }
    this.#o.store.run(
      `DELETE FROM ${this.#scope.table} WHERE location = ? AND worktree = ?`,
      worktree.location,
      worktree.name,
    );
  }

  /** Sends SIGSTOP or SIGCONT to every running service group of a worktree (pause and resume). */
  signalAll(worktree: Worktree, signal: "SIGSTOP" | "SIGCONT"): number {
    let count = 0;
    for (const service of this.running()) {
      if (service.location === worktree.location && service.worktree === worktree.name) {
        killGroup(service.pgid, signal);
        count++;
      }
    }
    return count;
  }

  /**
   * Picks up where a previous daemon left off: adopts services still running, restarts those that
   * ended meanwhile (by the restart policy), and starts watching. Services started from now on each get
   * a cgroup when `cgroups` says the box allows it (daemon/cgroups.ts `detectCgroups`).
   */
  async adopt(options: { cgroups?: CgroupSupport } = {}): Promise<void> {
    if (options.cgroups) this.#cgroups = options.cgroups;
    for (
      const row of this.#o.store.all<ServiceRow>(
        `SELECT * FROM ${this.#scope.table} WHERE desired = 'running'`,
      )
    ) {
      const k = key(row.location, row.worktree, row.name);
      if (row.pid && isAlive(row.pid, row.pid_start ?? undefined)) continue; // the poller watches it
      if (row.state === "failed") continue;
      if (row.state === "crashed") this.#scheduleRestart(row, 0);
      else if (row.pid) await this.#serially(k, () => this.#ended(row.location, row.worktree, row.name));
    }
    this.#poller = setInterval(() => this.#poll(), this.#o.pollMs);
  }

  /** Stops watching (services keep running: they outlive the daemon). */
  close(): void {
    clearInterval(this.#poller);
    for (const timer of this.#restartTimers.values()) clearTimeout(timer);
    this.#restartTimers.clear();
  }

  /** The service's output: the newest `tail` lines, then (with `follow`) what it writes next. */
  async *log(
    location: string,
    worktree: string,
    name: string,
    options: { tail?: number; follow?: boolean; signal?: AbortSignal } = {},
  ): AsyncGenerator<StreamLine> {
    this.#scope.place(location, worktree);
    if (!this.#row(location, worktree, name)) await this.#scope.command(location, worktree, name);
    const file = this.#scope.logFile(location, worktree, name);
    const old = await readTail(`${file}.1`, 256 * 1024);
    const current = await Deno.readFile(file).catch(() => new Uint8Array());
    const text = new TextDecoder().decode(concatBytes([old, current]));
    const lines = text.split("\n");
    const partial = lines.pop() ?? "";
    for (const line of lines.slice(-(options.tail ?? 200))) yield { line };
    if (!options.follow) {
      if (partial) yield { line: partial };
      return;
    }
    let offset = current.length - new TextEncoder().encode(partial).length;
    let pending = "";
    const decoder = new TextDecoder();
    while (!options.signal?.aborted) {
      const info = await statOrNull(file);
      const size = info?.size ?? 0;
      if (size < offset) offset = 0; // rotated or truncated: read the new file from its start
      if (size > offset) {
        const chunk = await readRange(file, offset, size - offset);
        offset += chunk.length;
        const parts = (pending + decoder.decode(chunk, { stream: true })).split("\n");
        pending = parts.pop() ?? "";
        for (const line of parts) yield { line };
      } else await sleep(150, options.signal);
    }
  }

  async #launch(
    location: string,
    worktree: string,
    path: string,
    name: string,
    run: string,
    origin: string,
  ): Promise<void> {
    const log = this.#scope.logFile(location, worktree, name);
    const exitFile = `${log.slice(0, -4)}.exit`;
    await Deno.mkdir(dirname(log), { recursive: true });
    await Deno.remove(exitFile).catch(() => {});
    const env = await this.#scope.environment(location, worktree, name, this.#mark(location, worktree, name));
    const cgroup = await this.#makeCgroup(location, worktree, name);
    const child = launch("/bin/sh", [
      "-c",
      WRAPPER,
      `dock-${this.#scope.noun}`,
      loginShell(),
      run,
      log,
      exitFile,
    ], {
      cwd: path,
      env,
      clearEnv: true,
      cgroup: cgroup ?? undefined,
    });
    const k = key(location, worktree, name);
    this.#owned.set(k, child);
    const started = new Date().toISOString();
    this.#upsert(location, worktree, name, {
      state: "running",
      pid: child.pid,
      pid_start: readProc(child.pid)?.startTime ?? null,
      started,
      exit_code: null,
      cgroup,
    });
    this.#o.bus.publish({
      type: `${this.#scope.noun}.started`,
      origin,
      data: { ...this.#scope.describe(location, worktree, name), pid: child.pid },
    });
    child.status.then(() => {
      if (this.#owned.get(k) !== child) return;
      this.#owned.delete(k);
      this.#serially(k, () => this.#ended(location, worktree, name, child.pid)).catch((error) =>
        console.error(`${this.#scope.noun} ${k}:`, error)
      );
    });
  }

  /** Handles a service whose wrapper is gone: stopped on request, or crashed (restart or fail). */
  async #ended(location: string, worktree: string, name: string, pid?: number): Promise<void> {
    const row = this.#row(location, worktree, name);
    if (!row || (pid !== undefined && row.pid !== pid)) return;
    if (row.desired !== "running" || row.state === "stopping") return;
    // Whatever the service forked and left behind goes with it, so a restart finds its ports free.
    if (row.pid) signalService(row.pid, this.#members(row), "SIGKILL");
    if (row.cgroup) await this.#removeCgroup(row);
    const log = this.#scope.logFile(location, worktree, name);
    const exitText = await Deno.readTextFile(`${log.slice(0, -4)}.exit`).catch(() => "");
    const exitCode = /^\d+$/.test(exitText.trim()) ? Number(exitText.trim()) : null;
    const ranMs = row.started ? Date.now() - Date.parse(row.started) : 0;
    const crashes = ranMs >= this.#o.stableMs ? 1 : row.crashes + 1;
    const data = {
      ...this.#scope.describe(location, worktree, name),
      exit_code: exitCode,
      restarts: row.restarts,
    };
    if (crashes > this.#o.maxCrashes) {
      const error = `crashed ${crashes} times in a row (last exit code ${
        exitCode ?? "unknown"
      }); start it again`;
      this.#upsert(location, worktree, name, {
        state: "failed",
        pid: null,
        crashes,
        exit_code: exitCode,
        error,
      });
      this.#o.bus.publish({ type: `${this.#scope.noun}.failed`, origin: "dockd", data: { ...data, error } });
      return;
    }
    const delay = Math.min(this.#o.backoffMs * 2 ** (crashes - 1), this.#o.maxBackoffMs);
    this.#upsert(location, worktree, name, { state: "crashed", pid: null, crashes, exit_code: exitCode });
    this.#o.bus.publish({
      type: `${this.#scope.noun}.crashed`,
      origin: "dockd",
      data: { ...data, retry_in_ms: delay },
    });
    this.#scheduleRestart({ ...row, crashes }, delay);
  }

  #scheduleRestart(row: ServiceRow, delayMs: number): void {
    const k = key(row.location, row.worktree, row.name);
    this.#clearTimer(k);
    this.#restartTimers.set(
      k,
      setTimeout(() => {
        this.#restartTimers.delete(k);
        this.#serially(k, async () => {
          const current = this.#row(row.location, row.worktree, row.name);
          if (!current || current.desired !== "running" || current.state !== "crashed") return;
          const place = this.#scope.place(row.location, row.worktree);
          if (place.paused) return; // resume starts nothing; the user restarts it
          const run = await this.#scope.command(row.location, row.worktree, row.name);
          this.#upsert(row.location, row.worktree, row.name, { restarts: current.restarts + 1 });
          await this.#launch(row.location, row.worktree, place.path, row.name, run, "dockd");
        }).catch((error) => {
          this.#upsert(row.location, row.worktree, row.name, { state: "failed", error: error.message });
        });
      }, delayMs),
    );
  }

  async #stopNow(row: ServiceRow, origin: string): Promise<void> {
    const k = key(row.location, row.worktree, row.name);
    this.#clearTimer(k);
    const wasRunning = row.pid !== null && isAlive(row.pid, row.pid_start ?? undefined);
    this.#upsert(row.location, row.worktree, row.name, { desired: "stopped", state: "stopping" });
    if (row.pid !== null && wasRunning) {
      const members = () => this.#members(row);
      signalService(row.pid, members(), "SIGTERM");
      signalService(row.pid, members(), "SIGCONT"); // a paused group must wake up to act on SIGTERM
      const deadline = Date.now() + this.#o.stopTimeoutMs;
      while (members().length && Date.now() < deadline) await sleep(50);
      if (members().length) {
        if (row.cgroup) killCgroup(row.cgroup);
        signalService(row.pid, members(), "SIGKILL");
      }
      while (members().length) await sleep(20);
      await this.#owned.get(k)?.status;
      this.#owned.delete(k);
    }
    // Also when the wrapper was gone already: what it left in its cgroup goes now.
    if (row.cgroup) await this.#removeCgroup(row);
    this.#upsert(row.location, row.worktree, row.name, { state: "stopped", pid: null, pid_start: null });
    if (wasRunning || row.state !== "stopped") {
      this.#o.bus.publish({
        type: `${this.#scope.noun}.stopped`,
        origin,
        data: this.#scope.describe(row.location, row.worktree, row.name),
      });
    }
  }

  #poll(): void {
    // Adopted services are not our children: notice their end by looking at /proc.
    for (
      const row of this.#o.store.all<ServiceRow>(`SELECT * FROM ${this.#scope.table} WHERE state = 'running'`)
    ) {
      const k = key(row.location, row.worktree, row.name);
      if (this.#owned.has(k) || row.pid === null || this.#busy.has(k)) continue;
      if (!isAlive(row.pid, row.pid_start ?? undefined)) {
        this.#serially(k, () => this.#ended(row.location, row.worktree, row.name, row.pid!)).catch((error) =>
          console.error(`${this.#scope.noun} ${k}:`, error)
        );
      }
    }
    if (!this.#rotating) {
      this.#rotating = true;
      this.#rotateLogs().catch((error) => console.error("log rotation:", error)).finally(() =>
        this.#rotating = false
      );
    }
  }

  async #rotateLogs(): Promise<void> {
    for (
      const row of this.#o.store.all<ServiceRow>(`SELECT * FROM ${this.#scope.table} WHERE pid IS NOT NULL`)
    ) {
      const file = this.#scope.logFile(row.location, row.worktree, row.name);
      const info = await statOrNull(file);
      if (!info || info.size <= this.#o.logBytes) continue;
      // Copy then truncate: the wrapper appends (O_APPEND), so its next write lands at the new end.
      await Deno.copyFile(file, `${file}.1`);
      await Deno.truncate(file, 0);
    }
  }

  /**
   * The service's live processes: its process group, what carries its mark, and everything in its
   * cgroup (which holds the first two as well, unless the service was started before cgroups were used).
   */
  #members(row: ServiceRow): Proc[] {
    const procs = processes();
    const members = row.pid === null
      ? []
      : serviceMembers(row.pid, this.#mark(row.location, row.worktree, row.name), procs);
    if (!row.cgroup) return members;
    const inside = new Set(cgroupPids(row.cgroup));
    const known = new Set(members.map((proc) => proc.pid));
    return members.concat(
      procs.filter((proc) => inside.has(proc.pid) && !known.has(proc.pid) && proc.state !== "Z"),
    );
  }

  /** The service's cgroup, made empty; null (the process group and the mark then) where there is none. */
  async #makeCgroup(location: string, worktree: string, name: string): Promise<string | null> {
    if (!this.#cgroups.usable) return null;
    const folder = join(this.#cgroups.folder, serviceCgroupName(location, worktree, name));
    try {
      await makeCgroup(folder);
      return folder;
    } catch (error) {
      // The box's folder was usable at start; if it is not now, the service still runs, tracked as before.
      console.error(`service ${key(location, worktree, name)}: no cgroup (${(error as Error).message})`);
      return null;
    }
  }

  async #removeCgroup(row: ServiceRow): Promise<void> {
    if (!(await removeCgroup(row.cgroup!, this.#o.stopTimeoutMs))) {
      console.error(`service ${key(row.location, row.worktree, row.name)}: cgroup ${row.cgroup} stays`);
    }
    removeIfEmpty(dirname(row.cgroup!)); // the box's folder, after its last service
    this.#upsert(row.location, row.worktree, row.name, { cgroup: null });
  }

  /**
   * A service's mark: its key and this box's state folder, so two boxes of one user (or two test boxes)
   * with a service of the same name never stop each other's processes.
   */
  #mark(location: string, worktree: string, name: string): string {
    return `${key(location, worktree, name)}@${this.#o.paths.state}`;
  }

  #refuseIfPaused(location: string, worktree: string): { path: string; paused?: boolean } {
    const place = this.#scope.place(location, worktree);
    if (place.paused) {
      throw new DockError("paused", `worktree '${location}/${worktree}' is paused; resume it first`, {
        status: 409,
      });
    }
    return place;
  }

  #get(location: string, worktree: string, name: string): WorktreeService {
    return toService(location, worktree, name, this.#row(location, worktree, name), {
      run: null,
      autostart: false,
      configured: true,
    });
  }

  #rows(location: string, worktree: string): ServiceRow[] {
    return this.#o.store.all<ServiceRow>(
      `SELECT * FROM ${this.#scope.table} WHERE location = ? AND worktree = ? ORDER BY name`,
      location,
      worktree,
    );
  }

  #row(location: string, worktree: string, name: string): ServiceRow | undefined {
    return this.#o.store.get<ServiceRow>(
      `SELECT * FROM ${this.#scope.table} WHERE location = ? AND worktree = ? AND name = ?`,
      location,
      worktree,
      name,
    );
  }

  #upsert(location: string, worktree: string, name: string, fields: Partial<ServiceRow>): void {
    this.#o.store.run(
      `INSERT OR IGNORE INTO ${this.#scope.table} (location, worktree, name) VALUES (?, ?, ?)`,
      location,
      worktree,
      name,
    );
    const entries = Object.entries(fields);
    if (!entries.length) return;
    this.#o.store.run(
      `UPDATE ${this.#scope.table} SET ${entries.map(([column]) => `${column} = ?`).join(", ")}
       WHERE location = ? AND worktree = ? AND name = ?`,
      ...entries.map(([, value]) => value as string | number | null),
      location,
      worktree,
      name,
    );
  }

  #clearTimer(k: string): void {
    clearTimeout(this.#restartTimers.get(k));
    this.#restartTimers.delete(k);
  }

  /** One operation at a time per service: a start racing a stop or a crash handler would duplicate it. */
  #serially<T>(k: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.#busy.get(k) ?? Promise.resolve();
    const next = previous.catch(() => {}).then(fn);
    const settled = next.catch(() => {});
    this.#busy.set(k, settled);
    settled.then(() => {
      if (this.#busy.get(k) === settled) this.#busy.delete(k);
    });
    return next;
  }
}

/** Signals a service's process group and each of its processes that left the group. */
function signalService(pgid: number, members: { pid: number; pgid: number }[], signal: Deno.Signal): void {
  killGroup(pgid, signal);
  for (const member of members) {
    if (member.pgid === pgid) continue;
    try {
      Deno.kill(member.pid, signal);
    } catch { /* gone */ }
  }
}

function key(location: string, worktree: string, name: string): string {
  return `${location}/${worktree}/${name}`;
}

function toService(
  location: string,
  worktree: string,
  name: string,
  row: ServiceRow | undefined,
  extra: { run: string | null; autostart: boolean; configured: boolean },
): WorktreeService {
  return {
    name,
    location,
    worktree,
    ...extra,
    state: row?.state ?? "stopped",
    pid: row?.pid ?? null,
    restarts: row?.restarts ?? 0,
    started: row?.started ?? null,
    exit_code: row?.exit_code ?? null,
    error: row?.error ?? null,
    ports: [],
  };
}
