/**
 * The box's one supervisor of long-running children: worktrees' services (`services.ts`), the box's units
 * (`units.ts`) and shares' tunnels (`shares.ts`) each use it with a {@linkcode SupervisedScope}.
 *
 * How they survive the daemon: each runs as a detached process group (its own session) under a tiny
 * `sh` wrapper that runs the command through a login shell, appends its output to the log file and,
 * when it ends, writes its exit code beside the log. Nothing of it is a pipe to dockd, so stopping,
 * crashing, upgrading or kill -9 of the daemon neither kills nor duplicates it. The wrapper's pid and
 * kernel start time are stored; a restarted daemon adopts every child whose wrapper is still that process
 * (a reused pid has another start time) and watches it by polling /proc, and reads the exit file of those
 * that ended meanwhile. This was chosen over tmux windows because it needs nothing but `sh`, costs one
 * small process per child, and gives exit codes and plain log files without scraping a pane.
 *
 * Stopping signals the whole process group (SIGTERM, then SIGKILL after a grace period), so a
 * `npm run dev` that forks leaves no orphan holding the port. Where the box allows it, each child also
 * runs in a cgroup of its own (daemon/cgroups.ts), which nothing it starts can leave, and that is emptied
 * and removed too; elsewhere what left the group is found by the `DOCK_SERVICE` mark. A child that ends on
 * its own is restarted with exponential backoff (one that keeps crashing quickly is marked failed), or,
 * with the `never` policy, left stopped and its scope told. Its state changes only through the lifecycle
 * table (`supervised.ts` `SUPERVISED_LIFECYCLE`).
 *
 * @module
 */
import { dirname, join } from "../core/posix_path.ts";
import { DockError } from "../client/errors.ts";
import type { ServiceState, StreamLine } from "../client/wire.ts";
import { type Clock, every } from "../core/clock.ts";
import type { EventBus } from "../core/events.ts";
import type { Log } from "../core/log.ts";
import type { BoxPaths } from "../core/paths.ts";
import { transition } from "../core/transition.ts";
import {
  exitFileOf,
  followLog,
  rotateLog,
  SUPERVISED_LIFECYCLE,
  type SupervisedChange,
  type SupervisedEvent,
  type SupervisedRow,
  type SupervisedScope,
  type SupervisorTunables,
} from "./supervised.ts";
import { isAlive, pollUntil, type Proc, processes, readProc, serviceMembers } from "./procs.ts";
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

/** Dependencies of {@linkcode Supervisor}. */
export interface SupervisorOptions extends SupervisorTunables {
  store: Store;
  bus: Pick<EventBus, "publish">;
  paths: Pick<BoxPaths, "state">;
  scope: SupervisedScope;
  /** Times restarts' backoff, a run's length (a crash after a stable run starts the count again) and the watch of adopted children. */
  clock: Clock;
  /** Told of a refused state change and of what goes wrong in the background. */
  log: Log;
  /** Told of each state change it makes (diagnostics; the lifecycle's conformance test). */
  trace?: (change: SupervisedChange) => void;
}

// The wrapper: $1 login shell, $2 the command, $3 log file, $4 exit file.
const WRAPPER = '"$1" -l -c "$2" >>"$3" 2>&1 </dev/null; echo $? >"$4"';

/** Supervises the children of one scope. */
export class Supervisor {
  #o: Required<SupervisorTunables> & SupervisorOptions;
  #scope: SupervisedScope;
  #log: Log;
  #owned = new Map<string, Deno.ChildProcess>();
  /** What cancels each child's pending restart. */
  #restartTimers = new Map<string, () => void>();
  #busy = new Map<string, Promise<unknown>>();
  #stopPolling = () => {};
  #rotating = false;
  #cgroups: CgroupSupport = { usable: false, reason: "the daemon has not started its services yet" };

  constructor(options: SupervisorOptions) {
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
    } as Required<SupervisorTunables> & SupervisorOptions;
    this.#scope = options.scope;
    this.#log = options.log;
    this.#o.store.addColumn(this.#scope.table, "cgroup TEXT"); // a box made before services had cgroups
  }

  /** How its children's processes are tracked: a cgroup each, or (where that is unavailable) why not. */
  get tracking(): CgroupSupport {
    return this.#cgroups;
  }

  /** Every child of a place, by name. */
  rows(location: string, worktree: string): SupervisedRow[] {
    return this.#o.store.all<SupervisedRow>(
      `SELECT * FROM ${this.#scope.table} WHERE location = ? AND worktree = ? ORDER BY name`,
      location,
      worktree,
    );
  }

  /** One child's row, if it has one. */
  row(location: string, worktree: string, name: string): SupervisedRow | undefined {
    return this.#o.store.get<SupervisedRow>(
      `SELECT * FROM ${this.#scope.table} WHERE location = ? AND worktree = ? AND name = ?`,
      location,
      worktree,
      name,
    );
  }

  /** Every child's process group alive now. */
  running(): { location: string; worktree: string; name: string; pgid: number }[] {
    return this.#o.store
      .all<SupervisedRow>(`SELECT * FROM ${this.#scope.table} WHERE pid IS NOT NULL`)
      .filter((row) => isAlive(row.pid!, row.pid_start ?? undefined))
      .map((row) => ({ location: row.location, worktree: row.worktree, name: row.name, pgid: row.pid! }));
  }

  /** Starts a child (no-op when it already runs); 409 when its place is paused. */
  start(location: string, worktree: string, name: string, origin: string): Promise<SupervisedRow> {
    return this.#serially(key(location, worktree, name), async () => {
      const place = this.refuseIfPaused(location, worktree);
      const run = await this.#scope.command(location, worktree, name);
      const row = this.row(location, worktree, name);
      if (row?.pid && isAlive(row.pid, row.pid_start ?? undefined)) return row;
      this.#clearTimer(key(location, worktree, name));
      this.#upsert(location, worktree, name, { desired: "running", crashes: 0, restarts: 0, error: null });
      await this.#launch(location, worktree, place.path, name, run, origin);
      return this.row(location, worktree, name)!;
    });
  }

  /** Stops a child and its whole process group (404 for a name its scope has none of). */
  stop(location: string, worktree: string, name: string, origin: string): Promise<SupervisedRow | undefined> {
    return this.#serially(key(location, worktree, name), async () => {
      this.#scope.place(location, worktree);
      const row = this.row(location, worktree, name);
      if (!row) {
        await this.#scope.command(location, worktree, name); // 404 for a name there is none of
        return undefined;
      }
      await this.#stopNow(row, origin);
      return this.row(location, worktree, name);
    });
  }

  /** Stops (if running) and starts a child. */
  async restart(location: string, worktree: string, name: string, origin: string): Promise<SupervisedRow> {
    this.refuseIfPaused(location, worktree); // before stopping: a refused restart must change nothing
    await this.stop(location, worktree, name, origin);
    return this.start(location, worktree, name, origin);
  }

  /** Stops a child (if it has a row) and forgets it. */
  async remove(location: string, worktree: string, name: string, origin: string): Promise<void> {
    await this.#serially(key(location, worktree, name), async () => {
      const row = this.row(location, worktree, name);
      if (row) await this.#stopNow(row, origin);
      this.#o.store.run(
        `DELETE FROM ${this.#scope.table} WHERE location = ? AND worktree = ? AND name = ?`,
        location,
        worktree,
        name,
      );
    });
  }

  /** Stops every child of a place and forgets them (before the place is removed). */
  async removeAll(location: string, worktree: string, origin: string): Promise<void> {
    for (const row of this.rows(location, worktree)) {
      await this.#serially(key(row.location, row.worktree, row.name), () => this.#stopNow(row, origin));
    }
    this.#o.store.run(
      `DELETE FROM ${this.#scope.table} WHERE location = ? AND worktree = ?`,
      location,
      worktree,
    );
  }

  /**
   * Picks up where a previous daemon left off: adopts children still running, restarts (or ends) those
   * that ended meanwhile by the restart policy, and starts watching. Children started from now on each
   * get a cgroup when `cgroups` says the box allows it (daemon/cgroups.ts `detectCgroups`).
   */
  async adopt(options: { cgroups?: CgroupSupport } = {}): Promise<void> {
    if (options.cgroups) this.#cgroups = options.cgroups;
    for (
      const row of this.#o.store.all<SupervisedRow>(
        `SELECT * FROM ${this.#scope.table} WHERE desired = 'running'`,
      )
    ) {
      const k = key(row.location, row.worktree, row.name);
      if (row.pid && isAlive(row.pid, row.pid_start ?? undefined)) continue; // the poller watches it
      if (row.state === "failed") continue;
      if (row.state === "crashed") this.#scheduleRestart(row, 0);
      else if (row.pid) {
        await this.#serially(k, () => this.#ended(row.location, row.worktree, row.name, { whileDown: true }));
      }
    }
    this.#stopPolling();
    this.#stopPolling = every(this.#o.clock, this.#o.pollMs, () => this.#poll());
  }

  /** Stops watching (children keep running: they outlive the daemon). */
  close(): void {
    this.#stopPolling();
    for (const cancel of this.#restartTimers.values()) cancel();
    this.#restartTimers.clear();
  }

  /** The child's output: the newest `tail` lines, then (with `follow`) what it writes next. */
  async *log(
    location: string,
    worktree: string,
    name: string,
    options: { tail?: number; follow?: boolean; signal?: AbortSignal } = {},
  ): AsyncGenerator<StreamLine> {
    this.#scope.place(location, worktree);
    if (!this.row(location, worktree, name)) await this.#scope.command(location, worktree, name);
    yield* followLog(this.#scope.logFile(location, worktree, name), { ...options, clock: this.#o.clock });
  }

  /** Its place, or a 409 when that is paused. */
  refuseIfPaused(location: string, worktree: string): { path: string; paused?: boolean } {
    const place = this.#scope.place(location, worktree);
    if (place.paused) {
      throw new DockError("paused", `worktree '${location}/${worktree}' is paused; resume it first`, {
        status: 409,
      });
    }
    return place;
  }

  async #launch(
    location: string,
    worktree: string,
    path: string,
    name: string,
    run: string,
    origin: string,
  ): Promise<void> {
    const k = key(location, worktree, name);
    const from = this.row(location, worktree, name)?.state ?? "stopped";
    if (!this.#allowed(k, from, "launch")) return;
    const log = this.#scope.logFile(location, worktree, name);
    const exitFile = exitFileOf(log);
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
    this.#owned.set(k, child);
    this.#upsert(location, worktree, name, {
      state: "running",
      pid: child.pid,
      pid_start: readProc(child.pid)?.startTime ?? null,
      started: new Date(this.#o.clock.now()).toISOString(),
      exit_code: null,
      cgroup,
    });
    this.#publish("started", origin, { ...this.#scope.describe(location, worktree, name), pid: child.pid });
    child.status.then(() => {
      if (this.#owned.get(k) !== child) return;
      this.#owned.delete(k);
      this.#serially(k, () => this.#ended(location, worktree, name, { pid: child.pid })).catch((error) =>
        this.#log.error(`${this.#scope.noun} ${k}: ${error}`)
      );
    });
  }

  /** Handles a child whose wrapper is gone: stopped on request, or ended (restart, fail or exit). */
  async #ended(
    location: string,
    worktree: string,
    name: string,
    options: { pid?: number; whileDown?: boolean },
  ): Promise<void> {
    const row = this.row(location, worktree, name);
    if (!row || (options.pid !== undefined && row.pid !== options.pid)) return;
    if (row.desired !== "running" || row.state === "stopping") return;
    const k = key(location, worktree, name);
    // Whatever it forked and left behind goes with it, so a restart finds its ports free.
    if (row.pid) signalService(row.pid, this.#members(row), "SIGKILL");
    if (row.cgroup) await this.#removeCgroup(row);
    const exitText = await Deno.readTextFile(exitFileOf(this.#scope.logFile(location, worktree, name)))
      .catch(() => "");
    const exitCode = /^\d+$/.test(exitText.trim()) ? Number(exitText.trim()) : null;
    if (this.#scope.restart === "never") {
      if (!this.#allowed(k, row.state, "exit")) return;
      this.#upsert(location, worktree, name, {
        state: "stopped",
        pid: null,
        pid_start: null,
        exit_code: exitCode,
      });
      const ended = this.#scope.ended;
      // After this step has left the key's queue: what the scope does next may stop or remove it.
      if (ended) {
        queueMicrotask(() =>
          ended(location, worktree, name, options.whileDown ?? false).catch((error) =>
            this.#log.error(`${this.#scope.noun} ${k}: ${error}`)
          )
        );
      }
      return;
    }
    const ranMs = row.started ? this.#o.clock.now() - Date.parse(row.started) : 0;
    const crashes = ranMs >= this.#o.stableMs ? 1 : row.crashes + 1;
    const data = {
      ...this.#scope.describe(location, worktree, name),
      exit_code: exitCode,
      restarts: row.restarts,
    };
    if (crashes > this.#o.maxCrashes) {
      if (!this.#allowed(k, row.state, "fail")) return;
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
      this.#publish("failed", "dockd", { ...data, error });
      return;
    }
    if (!this.#allowed(k, row.state, "crash")) return;
    const delay = Math.min(this.#o.backoffMs * 2 ** (crashes - 1), this.#o.maxBackoffMs);
    this.#upsert(location, worktree, name, { state: "crashed", pid: null, crashes, exit_code: exitCode });
    this.#publish("crashed", "dockd", { ...data, retry_in_ms: delay });
    this.#scheduleRestart({ ...row, crashes }, delay);
  }

  #scheduleRestart(row: SupervisedRow, delayMs: number): void {
    const k = key(row.location, row.worktree, row.name);
    this.#clearTimer(k);
    this.#restartTimers.set(
      k,
      this.#o.clock.after(delayMs, () => {
        this.#restartTimers.delete(k);
        this.#serially(k, async () => {
          const current = this.row(row.location, row.worktree, row.name);
          if (!current || current.desired !== "running" || current.state !== "crashed") return;
          const place = this.#scope.place(row.location, row.worktree);
          if (place.paused) return; // resume starts nothing; the user restarts it
          const run = await this.#scope.command(row.location, row.worktree, row.name);
          this.#upsert(row.location, row.worktree, row.name, { restarts: current.restarts + 1 });
          await this.#launch(row.location, row.worktree, place.path, row.name, run, "dockd");
        }).catch((error) => {
          const current = this.row(row.location, row.worktree, row.name);
          if (current && this.#allowed(k, current.state, "fail")) {
            this.#upsert(row.location, row.worktree, row.name, { state: "failed", error: error.message });
          }
        });
      }),
    );
  }

  async #stopNow(row: SupervisedRow, origin: string): Promise<void> {
    const k = key(row.location, row.worktree, row.name);
    this.#clearTimer(k);
    if (!this.#allowed(k, row.state, "stop")) return;
    const wasRunning = row.pid !== null && isAlive(row.pid, row.pid_start ?? undefined);
    this.#upsert(row.location, row.worktree, row.name, { desired: "stopped", state: "stopping" });
    if (row.pid !== null && wasRunning) {
      const members = () => this.#members(row);
      signalService(row.pid, members(), "SIGTERM");
      signalService(row.pid, members(), "SIGCONT"); // a paused group must wake up to act on SIGTERM
      // The grace is on real time: it waits on real processes (procs.ts `pollUntil`).
      if (!(await pollUntil(() => !members().length, { everyMs: 50, timeoutMs: this.#o.stopTimeoutMs }))) {
        if (row.cgroup) killCgroup(row.cgroup);
        signalService(row.pid, members(), "SIGKILL");
      }
      await pollUntil(() => !members().length, { everyMs: 20 });
      await this.#owned.get(k)?.status;
      this.#owned.delete(k);
    }
    // Also when the wrapper was gone already: what it left in its cgroup goes now.
    if (row.cgroup) await this.#removeCgroup(row);
    this.#allowed(k, "stopping", "done");
    this.#upsert(row.location, row.worktree, row.name, { state: "stopped", pid: null, pid_start: null });
    if (wasRunning || row.state !== "stopped") {
      this.#publish("stopped", origin, this.#scope.describe(row.location, row.worktree, row.name));
    }
  }

  #poll(): void {
    // Adopted children are not ours: notice their end by looking at /proc.
    for (
      const row of this.#o.store.all<SupervisedRow>(
        `SELECT * FROM ${this.#scope.table} WHERE state = 'running'`,
      )
    ) {
      const k = key(row.location, row.worktree, row.name);
      if (this.#owned.has(k) || row.pid === null || this.#busy.has(k)) continue;
      if (!isAlive(row.pid, row.pid_start ?? undefined)) {
        this.#serially(k, () => this.#ended(row.location, row.worktree, row.name, { pid: row.pid! }))
          .catch((error) => this.#log.error(`${this.#scope.noun} ${k}: ${error}`));
      }
    }
    if (!this.#rotating) {
      this.#rotating = true;
      this.#rotateLogs().catch((error) => this.#log.error(`log rotation: ${error}`)).finally(() =>
        this.#rotating = false
      );
    }
  }

  async #rotateLogs(): Promise<void> {
    for (
      const row of this.#o.store.all<SupervisedRow>(
        `SELECT * FROM ${this.#scope.table} WHERE pid IS NOT NULL`,
      )
    ) {
      await rotateLog(this.#scope.logFile(row.location, row.worktree, row.name), this.#o.logBytes);
    }
  }

  /** True when the lifecycle allows `event` from `from`; a refusal is logged and changes nothing. */
  #allowed(k: string, from: ServiceState, event: SupervisedEvent): boolean {
    const to = transition(SUPERVISED_LIFECYCLE, from, event, {
      name: `${this.#scope.noun} ${k}`,
      log: (message) => this.#log.warn(message),
    });
    if (to !== null) this.#o.trace?.({ key: k, from, event, to });
    return to !== null;
  }

  #publish(
    what: "started" | "stopped" | "crashed" | "failed",
    origin: string,
    data: Record<string, unknown>,
  ) {
    if (this.#scope.events === false) return;
    this.#o.bus.publish({ type: `${this.#scope.noun}.${what}`, origin, data });
  }

  /**
   * Its live processes: its process group, what carries its mark, and everything in its cgroup (which
   * holds the first two as well, unless it was started before cgroups were used).
   */
  #members(row: SupervisedRow): Proc[] {
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

  /** Its cgroup, made empty; null (the process group and the mark then) where there is none. */
  async #makeCgroup(location: string, worktree: string, name: string): Promise<string | null> {
    if (!this.#cgroups.usable) return null;
    const folder = join(this.#cgroups.folder, this.#scoped(serviceCgroupName(location, worktree, name)));
    try {
      await makeCgroup(folder);
      return folder;
    } catch (error) {
      // The box's folder was usable at start; if it is not now, the child still runs, tracked as before.
      this.#log.warn(
        `${this.#scope.noun} ${key(location, worktree, name)}: no cgroup (${(error as Error).message})`,
      );
      return null;
    }
  }

  async #removeCgroup(row: SupervisedRow): Promise<void> {
    if (!(await removeCgroup(row.cgroup!, this.#o.stopTimeoutMs))) {
      this.#log.warn(
        `${this.#scope.noun} ${key(row.location, row.worktree, row.name)}: cgroup ${row.cgroup} stays`,
      );
    }
    removeIfEmpty(dirname(row.cgroup!)); // the box's folder, after its last child
    this.#upsert(row.location, row.worktree, row.name, { cgroup: null });
  }

  /**
   * A child's mark: its key and this box's state folder, so two boxes of one user (or two test boxes)
   * with a service of the same name never stop each other's processes.
   */
  #mark(location: string, worktree: string, name: string): string {
    return `${this.#scoped(key(location, worktree, name))}@${this.#o.paths.state}`;
  }

  /**
   * A name unique across scopes. Services and units keep their names of before (services always have a
   * location, units never), so children started by an older daemon are still found; other scopes are
   * prefixed by their table.
   */
  #scoped(name: string): string {
    return this.#scope.table === "services" || this.#scope.table === "units"
      ? name
      : `${this.#scope.table}:${name}`;
  }

  #upsert(location: string, worktree: string, name: string, fields: Partial<SupervisedRow>): void {
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
    this.#restartTimers.get(k)?.();
    this.#restartTimers.delete(k);
  }

  /** One operation at a time per child: a start racing a stop or a crash handler would duplicate it. */
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

/** Signals a process group and each of its processes that left the group. */
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
