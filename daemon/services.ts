/**
 * Services: the long-running processes of a worktree's effective config (spec 2.5 `services`, 3.3):
 * each runs in its worktree's folder with the worktree's environment (`DOCK_PORT`, `PORT`, the config's
 * env), its command from its location's effective config. Running, adopting after a daemon restart,
 * stopping (TERM, then KILL after a grace period, the whole process group and cgroup), restarting with
 * backoff and the state a service is in are the box's one supervisor's (`supervisor.ts`), here with the
 * worktrees' scope; units (`units.ts`) and shares' tunnels (`shares.ts`) use it with theirs.
 *
 * @module
 */
import { join } from "../core/posix_path.ts";
import { notFound } from "../client/errors.ts";
import type { StreamLine, Worktree, WorktreeService } from "../client/wire.ts";
import type { Clock } from "../core/clock.ts";
import type { EventBus } from "../core/events.ts";
import type { Log } from "../core/log.ts";
import type { Locations } from "./locations.ts";
import type { BoxPaths } from "../core/paths.ts";
import type { CgroupSupport } from "./cgroups.ts";
import { killGroup } from "../core/runner.ts";
import type { Store } from "../core/store.ts";
import type { Worktrees } from "./worktrees.ts";
import { Supervisor } from "./supervisor.ts";
import type { SupervisedRow, SupervisedScope, SupervisorTunables } from "./supervised.ts";

/** Tunables of {@linkcode Services}; tests shorten them. */
export interface ServicesOptions extends SupervisorTunables {
  store: Store;
  bus: EventBus;
  locations: Locations;
  worktrees: Worktrees;
  paths: BoxPaths;
  /** The supervisor's clock (restarts' backoff, the watch of adopted services). */
  clock: Clock;
  /** Told of what goes wrong in the background (an autostart that failed, a refused state change). */
  log: Log;
}

/** Supervises every worktree's services. */
export class Services {
  #o: ServicesOptions;
  #supervisor: Supervisor;

  constructor(options: ServicesOptions) {
    this.#o = options;
    this.#supervisor = new Supervisor({ ...options, scope: this.#worktreeScope() });
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
    return this.#supervisor.tracking;
  }

  /** The worktree's services: those of the effective config, and any record still running. */
  async list(location: string, worktree: string): Promise<WorktreeService[]> {
    this.#o.worktrees.get(location, worktree);
    const configured = (await this.#o.locations.config(location)).effective.services ?? [];
    const rows = new Map(this.#supervisor.rows(location, worktree).map((row) => [row.name, row]));
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
    return this.#supervisor.running();
  }

  /** Starts a service (no-op when it already runs). */
  async start(location: string, worktree: string, name: string, origin: string): Promise<WorktreeService> {
    await this.#supervisor.start(location, worktree, name, origin);
    return this.#get(location, worktree, name);
  }

  /** Stops a service and its whole process group. */
  async stop(location: string, worktree: string, name: string, origin: string): Promise<WorktreeService> {
    await this.#supervisor.stop(location, worktree, name, origin);
    return this.#get(location, worktree, name);
  }

  /** Stops (if running) and starts a service. */
  async restart(location: string, worktree: string, name: string, origin: string): Promise<WorktreeService> {
    await this.#supervisor.restart(location, worktree, name, origin);
    return this.#get(location, worktree, name);
  }

  /** Starts the worktree's `autostart` services (after setup succeeded, or at once without setup). */
  async autostart(worktree: Worktree): Promise<void> {
    const services = (await this.#o.locations.config(worktree.location)).effective.services ?? [];
    for (const service of services.filter((s) => s.autostart)) {
      await this.start(worktree.location, worktree.name, service.name, "dockd").catch((error) =>
        this.#o.log.error(`autostart ${worktree.location}/${worktree.name}/${service.name}: ${error.message}`)
      );
    }
  }

  /** Stops every service of a worktree and forgets them (before it is removed). */
  stopAll(worktree: Worktree, origin = "dockd"): Promise<void> {
    return this.#supervisor.removeAll(worktree.location, worktree.name, origin);
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
  adopt(options: { cgroups?: CgroupSupport } = {}): Promise<void> {
    return this.#supervisor.adopt(options);
  }

  /** Stops watching (services keep running: they outlive the daemon). */
  close(): void {
    this.#supervisor.close();
  }

  /** The service's output: the newest `tail` lines, then (with `follow`) what it writes next. */
  log(
    location: string,
    worktree: string,
    name: string,
    options: { tail?: number; follow?: boolean; signal?: AbortSignal } = {},
  ): AsyncGenerator<StreamLine> {
    return this.#supervisor.log(location, worktree, name, options);
  }

  #get(location: string, worktree: string, name: string): WorktreeService {
    return toService(location, worktree, name, this.#supervisor.row(location, worktree, name), {
      run: null,
      autostart: false,
      configured: true,
    });
  }
}

function toService(
  location: string,
  worktree: string,
  name: string,
  row: SupervisedRow | undefined,
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
