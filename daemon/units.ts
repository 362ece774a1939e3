/**
 * Units (issue 16): the box's own long-running processes, which belong to no worktree (a database, a
 * tunnel, a queue worker for every project). They are supervised exactly as services are, by the box's
 * one supervisor (`supervisor.ts`) with the units' scope: a process group of their own under the same wrapper, so
 * they survive daemon restarts and upgrades and are adopted, not doubled; restarted with backoff when
 * they crash and marked failed when they keep crashing; logs rotated. They run in the home folder with
 * the daemon's environment, `~/.dock/env.json` and their own `env` (secret references resolved) and
 * `DOCK_BOX`. `autostart` starts one again when the daemon starts after it was stopped by a reboot.
 * Events: `unit.created`, `unit.removed`, and the supervisor's `unit.started|stopped|crashed|failed`.
 *
 * @module
 */
import { join } from "../core/posix_path.ts";
import { DockError } from "../client/errors.ts";
import type { StreamLine, Unit, UnitCreate } from "../client/wire.ts";
import type { Clock } from "../core/clock.ts";
import type { EventBus } from "../core/events.ts";
import type { Log } from "../core/log.ts";
import type { BoxPaths } from "../core/paths.ts";
import type { Store } from "../core/store.ts";
import { buildEnv, readEnvForProcesses } from "./env.ts";
import type { SecretResolver } from "./secrets.ts";
import { Supervisor } from "./supervisor.ts";
import type { SupervisedRow, SupervisorTunables } from "./supervised.ts";
import type { CgroupSupport } from "./cgroups.ts";

/** A unit's row: the supervisor's columns and the unit's definition. */
interface UnitRow extends SupervisedRow {
  run: string;
  env: string;
  autostart: number;
  created: string;
}

/** Dependencies of {@linkcode Units}. */
export interface UnitsOptions extends SupervisorTunables {
  store: Store;
  bus: EventBus;
  paths: BoxPaths;
  secrets: SecretResolver;
  /** The box's name (`DOCK_BOX`). */
  box: () => string;
  /** The supervisor's clock (restarts' backoff, the watch of adopted units). */
  clock: Clock;
  /** Told of what goes wrong in the background (an autostart that failed, a refused state change). */
  log: Log;
}

/** A unit's key in the supervisor: no location, no worktree. */
const NONE = "";

/** The box's units. */
export class Units {
  #o: UnitsOptions;
  #supervisor: Supervisor;

  constructor(options: UnitsOptions) {
    this.#o = options;
    this.#supervisor = new Supervisor({
      ...options,
      scope: {
        table: "units",
        noun: "unit",
        describe: (_location, _worktree, name) => ({ unit: name }),
        place: () => ({ path: options.paths.userHome }),
        environment: (_location, _worktree, name, mark) => this.#environment(name, mark),
        command: (_location, _worktree, name) => Promise.resolve(this.#row(name).run),
        logFile: (_location, _worktree, name) => join(options.paths.logs, "units", `${name}.log`),
      },
    });
  }

  /** Every unit, by name. */
  list(): Unit[] {
    return this.#o.store.all<UnitRow>("SELECT * FROM units WHERE created IS NOT NULL ORDER BY name").map(
      toUnit,
    );
  }

  /** One unit; 404 when there is none. */
  get(name: string): Unit {
    return toUnit(this.#row(name));
  }

  /** Defines a unit and starts it; 409 when one of that name exists. */
  async create(request: UnitCreate, origin: string): Promise<Unit> {
    if (this.#find(request.name)) {
      throw new DockError("exists", `unit '${request.name}' exists already; remove it first`, {
        status: 409,
      });
    }
    this.#o.store.run(
      `INSERT INTO units (location, worktree, name, run, env, autostart, created) VALUES (?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT (location, worktree, name) DO UPDATE SET run = excluded.run, env = excluded.env,
         autostart = excluded.autostart, created = excluded.created`,
      NONE,
      NONE,
      request.name,
      request.run,
      JSON.stringify(request.env ?? {}),
      request.autostart ? 1 : 0,
      new Date(this.#o.clock.now()).toISOString(),
    );
    this.#o.bus.publish({ type: "unit.created", origin, data: { unit: request.name } });
    await this.#supervisor.start(NONE, NONE, request.name, origin);
    return this.get(request.name);
  }

  /** Starts a unit (no-op when it runs). */
  async start(name: string, origin: string): Promise<Unit> {
    this.#row(name);
    await this.#supervisor.start(NONE, NONE, name, origin);
    return this.get(name);
  }

  /** Stops a unit and its whole process group. */
  async stop(name: string, origin: string): Promise<Unit> {
    this.#row(name);
    await this.#supervisor.stop(NONE, NONE, name, origin);
    return this.get(name);
  }

  /** Stops (if running) and starts a unit. */
  async restart(name: string, origin: string): Promise<Unit> {
    this.#row(name);
    await this.#supervisor.restart(NONE, NONE, name, origin);
    return this.get(name);
  }

  /** Stops a unit and forgets it (its log goes too). */
  async remove(name: string, origin: string): Promise<Unit> {
    const unit = this.get(name);
    await this.#supervisor.stop(NONE, NONE, name, origin);
    this.#o.store.run("DELETE FROM units WHERE location = ? AND worktree = ? AND name = ?", NONE, NONE, name);
    for (const suffix of [".log", ".log.1", ".exit"]) {
      await Deno.remove(join(this.#o.paths.logs, "units", `${name}${suffix}`)).catch(() => {});
    }
    this.#o.bus.publish({ type: "unit.removed", origin, data: { unit: name } });
    return unit;
  }

  /** A unit's output: the newest `tail` lines, then (with `follow`) what it writes next. */
  log(
    name: string,
    options: { tail?: number; follow?: boolean; signal?: AbortSignal } = {},
  ): AsyncGenerator<StreamLine> {
    this.#row(name);
    return this.#supervisor.log(NONE, NONE, name, options);
  }

  /**
   * Adopts units still running, restarts crashed ones by the restart policy, and starts the `autostart`
   * units a reboot stopped (those the person stopped stay stopped).
   */
  async adopt(options: { cgroups?: CgroupSupport } = {}): Promise<void> {
    await this.#supervisor.adopt(options);
    for (
      const row of this.#o.store.all<UnitRow>(
        "SELECT * FROM units WHERE autostart = 1 AND created IS NOT NULL",
      )
    ) {
      if (row.desired === "running" && row.state !== "running") {
        await this.#supervisor.start(NONE, NONE, row.name, "dockd").catch((error) =>
          this.#o.log.error(`autostart unit ${row.name}: ${(error as Error).message}`)
        );
      }
    }
  }

  /** Stops watching (units keep running: they outlive the daemon). */
  close(): void {
    this.#supervisor.close();
  }

  async #environment(name: string, mark: string): Promise<Record<string, string>> {
    const row = this.#row(name);
    const built = await buildEnv({
      base: Deno.env.toObject(),
      boxEnv: await readEnvForProcesses(this.#o.paths.envFile, this.#o.log),
      dock: { DOCK_BOX: this.#o.box(), DOCK_UNIT: name },
      config: JSON.parse(row.env),
      secrets: this.#o.secrets,
    });
    // What its processes carry: how stop finds what left its process group.
    built.env.DOCK_SERVICE = mark;
    return built.env;
  }

  #find(name: string): UnitRow | undefined {
    return this.#o.store.get<UnitRow>(
      "SELECT * FROM units WHERE location = ? AND worktree = ? AND name = ? AND created IS NOT NULL",
      NONE,
      NONE,
      name,
    );
  }

  #row(name: string): UnitRow {
    const row = this.#find(name);
    if (!row) throw new DockError("not_found", `no unit '${name}'`, { status: 404 });
    return row;
  }
}

function toUnit(row: UnitRow): Unit {
  return {
    name: row.name,
    run: row.run,
    env: JSON.parse(row.env),
    autostart: row.autostart === 1,
    state: row.state,
    pid: row.pid,
    restarts: row.restarts,
    started: row.started,
    exit_code: row.exit_code,
    error: row.error,
    created: row.created,
  };
}
