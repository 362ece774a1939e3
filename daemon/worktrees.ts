/**
 * Worktrees: creating, removing and detecting the git worktrees of each location, their port blocks and
 * their environment (spec 3.3). Their setup and archive scripts are `worktree_setup.ts`'s; noticing a
 * change made outside dock is `worktree_watch.ts`'s, which asks here to reconcile with
 * `git worktree list`. A worktree whose record is being created or removed by dock is skipped then, so
 * nothing is announced twice.
 *
 * @module
 */
import { basename, join } from "../core/posix_path.ts";
import { DockError, notFound } from "../client/errors.ts";
import type {
  SetupState,
  StreamLine,
  Worktree,
  WorktreeCreate,
  WorktreeEnvironmentLayers,
  WorktreeOrigin,
} from "../client/wire.ts";
import { buildEnv, dockVariables, readEnvForProcesses, type SecretOutcome } from "./env.ts";
import { kitDir } from "./kits.ts";
import type { EventBus } from "../core/events.ts";
import * as git from "./git.ts";
import { prepareCreate } from "./worktree_plan.ts";
import type { Locations } from "./locations.ts";
import { checkName, nameFromFolder } from "./names.ts";
import type { BoxPaths } from "../core/paths.ts";
import type { PortAllocator } from "./ports.ts";
import { exists } from "../core/files.ts";
import { run } from "../core/runner.ts";
import type { SecretResolver } from "./secrets.ts";
import type { BoxSettings } from "./settings.ts";
import type { Store } from "../core/store.ts";
import type { Clock } from "../core/clock.ts";
import { errorText, type Log } from "../core/log.ts";
import { PATH_HOLDS } from "./schema.ts";
import { setupState as nextSetup } from "./setup_state.ts";
import { type ReadyStep, WorktreeSetups } from "./worktree_setup.ts";
import { WorktreeWatch } from "./worktree_watch.ts";

interface WorktreeRow {
  location: string;
  name: string;
  path: string;
  branch: string | null;
  base: string | null;
  main: number;
  origin: WorktreeOrigin;
  setup_state: SetupState;
  setup_exit: number | null;
  setup_started: string | null;
  setup_finished: string | null;
  setup_error: string | null;
  paused: number;
  created: string;
}

/** Something that must happen before a worktree goes away (stop its services, end its sessions). */
export type RemovalStep = (worktree: Worktree) => Promise<void>;

/** Dependencies of {@linkcode Worktrees}. */
export interface WorktreesOptions {
  store: Store;
  bus: EventBus;
  ports: PortAllocator;
  locations: Locations;
  settings: BoxSettings;
  paths: BoxPaths;
  secrets: SecretResolver;
  /** Dates records and paces detection and followed setup logs. */
  clock: Clock;
  /** Told of what fails in the background (detection, stopping a vanished worktree's children). */
  log: Log;
}

/** Owns worktree records, their lifecycle and their environment. */
export class Worktrees {
  #o: WorktreesOptions;
  #creating = new Set<string>();
  #removing = new Set<string>();
  #reconciling = new Map<string, Promise<boolean>>();
  #gitQueues = new Map<string, Promise<unknown>>();
  #watch: WorktreeWatch;
  #setups: WorktreeSetups;
  readonly removalSteps: RemovalStep[] = [];
  readonly readySteps: ReadyStep[] = [];

  constructor(options: WorktreesOptions) {
    this.#o = options;
    this.#setups = new WorktreeSetups({
      store: options.store,
      bus: options.bus,
      paths: options.paths,
      environment: (worktree) => this.environment(worktree),
      current: (location, name) => {
        const row = this.#row(location, name);
        return row && toWorktree(row, this.#o.ports.portsOf(location, name));
      },
      readySteps: this.readySteps,
      clock: options.clock,
      log: options.log,
    });
    this.#watch = new WorktreeWatch({
      locations: () => this.#o.locations.list(),
      worktrees: (location) => this.list(location),
      reconcile: (location) => this.reconcile(location),
      clock: options.clock,
    });
  }

  /** The worktree holding `path` (the deepest one, since worktrees may live inside a checkout), if any. */
  containing(path: string): Worktree | undefined {
    // Asked for every event with a path (hooks, flows): one row, not the whole list with its ports.
    const row = this.#o.store.get<WorktreeRow>(
      `SELECT * FROM worktrees WHERE ${PATH_HOLDS} ORDER BY length(path) DESC LIMIT 1`,
      path,
    );
    return row && toWorktree(row, this.#o.ports.portsOf(row.location, row.name));
  }

  /** Worktrees of one location, or of all, main checkouts first. */
  list(location?: string): Worktree[] {
    const rows = location === undefined
      ? this.#o.store.all<WorktreeRow>("SELECT * FROM worktrees ORDER BY location, main DESC, name")
      : this.#o.store.all<WorktreeRow>(
        "SELECT * FROM worktrees WHERE location = ? ORDER BY main DESC, name",
        location,
      );
    const ports = new Map<string, number[]>();
    for (const row of this.#o.ports.all()) {
      const key = `${row.location}/${row.worktree}`;
      const block = ports.get(key) ?? [];
      block[row.idx] = row.port;
      ports.set(key, block);
    }
    return rows.map((row) => toWorktree(row, ports.get(`${row.location}/${row.name}`) ?? []));
  }

  /**
   * The location's main checkout, read as its own row: the whole list with every worktree's ports, which
   * finding it took before, was a create's largest step after git's spawn and grew with the list (and
   * `target` is asked for every event with a location).
   */
  #main(location: string): Worktree | undefined {
    const row = this.#o.store.get<WorktreeRow>(
      "SELECT * FROM worktrees WHERE location = ? AND main = 1 ORDER BY name LIMIT 1",
      location,
    );
    return row && toWorktree(row, this.#o.ports.portsOf(location, row.name));
  }

  /** One worktree; 404 when unknown. */
  get(location: string, name: string): Worktree {
    this.#o.locations.get(location);
    const row = this.#o.store.get<WorktreeRow>(
      "SELECT * FROM worktrees WHERE location = ? AND name = ?",
      location,
      name,
    );
    if (!row) throw notFound("worktree", `${location}/${name}`);
    return toWorktree(row, this.#o.ports.portsOf(location, name));
  }

  /** Records whether the worktree is paused (the pause module owns the signalling). */
  setPaused(location: string, name: string, paused: boolean): void {
    this.#o.store.run(
      "UPDATE worktrees SET paused = ? WHERE location = ? AND name = ?",
      paused ? 1 : 0,
      location,
      name,
    );
  }

  /** Resolves `loc` (its main checkout) or `loc/wt`. */
  target(spec: string): Worktree {
    const [location, name, extra] = spec.split("/");
    if (!location || extra !== undefined || name === "") {
      throw new DockError(
        "invalid_request",
        `location: expected LOCATION or LOCATION/WORKTREE, got "${spec}"`,
        {
          status: 400,
          detail: { field: "location" },
        },
      );
    }
    if (name !== undefined) return this.get(location, name);
    this.#o.locations.get(location);
    const main = this.#main(location);
    if (!main) throw notFound("main checkout of location", location);
    return main;
  }

  /** Creates a worktree (spec 4.2); setup starts in the background and the answer carries its state. */
  async create(location: string, request: WorktreeCreate, origin: string): Promise<Worktree> {
    const loc = this.#o.locations.get(location);
    const name = checkName("name", request.name);
    if (request.pr !== undefined && (request.ref || request.branch)) {
      throw new DockError("invalid_request", "pr: cannot be combined with branch or ref", { status: 400 });
    }
    if (this.#row(location, name)) {
      throw new DockError("exists", `worktree '${location}/${name}' already exists`, { status: 409 });
    }
    const { config, path, plan } = await prepareCreate({
      config: () => this.#o.locations.effectiveConfig(location),
      parentDir: join(this.#o.settings.worktreesDir, location),
      location: loc,
      name,
      request,
      mainBranch: () => this.#main(location)?.branch ?? null,
    });
    const setupState: SetupState = nextSetup("new", config.setup ? "plan" : "skip", this.#o.log);
    this.#creating.add(path);
    try {
      this.#o.store.transaction(() => {
        this.#o.store.run(
          `INSERT INTO worktrees (location, name, path, branch, base, main, origin, setup_state, created)
           VALUES (?, ?, ?, ?, ?, 0, 'dock', ?, ?)`,
          location,
          name,
          path,
          plan.branch,
          plan.base,
          setupState,
          this.#now(),
        );
        this.#o.ports.allocate(location, name, config.ports ?? 1);
      });
      try {
        await this.#serially(location, async () => {
          await git.git(["worktree", "add", ...plan.args(path)], { cwd: loc.path });
          if (request.pr !== undefined) await this.#checkoutPr(path, request.pr);
        });
      } catch (error) {
        this.#o.store.run("DELETE FROM worktrees WHERE location = ? AND name = ?", location, name);
        await this.#serially(
          location,
          () => git.git(["worktree", "remove", "--force", path], { cwd: loc.path }),
        )
          .catch(() => {});
        throw error;
      }
      // Only a pull request's branch is unknown until gh has checked it out. The path needs no realPath:
      // its parent was resolved and git made the folder itself.
      if (request.pr !== undefined) {
        const branch = await git.currentBranch(path);
        this.#o.store.run(
          "UPDATE worktrees SET branch = ? WHERE location = ? AND name = ?",
          branch,
          location,
          name,
        );
      }
    } finally {
      this.#creating.delete(path);
    }
    const worktree = this.get(location, name);
    this.#o.bus.publish({
      type: "worktree.created",
      origin,
      data: { location, worktree: name, path: worktree.path, branch: worktree.branch, ports: worktree.ports },
    });
    if (config.setup) this.#setups.start(worktree, config.setup);
    else this.#setups.ready(worktree);
    return worktree;
  }

  /**
   * Removes a worktree: stops what runs in it, runs `archive`, then `git worktree remove`. Without
   * force, a failing archive or uncommitted changes keep it (409). With force, archive still runs but
   * its failure is ignored, uncommitted and untracked files are discarded and a locked worktree is
   * removed too. The branch is kept either way.
   */
  async remove(
    location: string,
    name: string,
    options: { force?: boolean },
    origin: string,
  ): Promise<Worktree> {
    const loc = this.#o.locations.get(location);
    const worktree = this.get(location, name);
    if (worktree.main) {
      throw new DockError(
        "main_checkout",
        `'${name}' is the main checkout of '${location}'; remove the location instead`,
        {
          status: 409,
        },
      );
    }
    if (this.#removing.has(worktree.path)) {
      throw new DockError("busy", `worktree '${location}/${name}' is already being removed`, { status: 409 });
    }
    this.#removing.add(worktree.path);
    try {
      for (const step of this.removalSteps) await step(worktree);
      const config = await this.#o.locations.config(location);
      const archive = config.effective.archive;
      if (archive && await exists(worktree.path)) {
        const result = await this.#setups.script(worktree, "archive", archive);
        if (result.code !== 0 && !options.force) {
          throw new DockError(
            "archive_failed",
            `archive failed (exit ${result.code}); the worktree is kept. Output:\n${
              result.output.slice(-4000)
            }`,
            { status: 409, detail: { exit_code: result.code, output: result.output.slice(-4000) } },
          );
        }
      }
      const args = options.force ? ["worktree", "remove", "--force", "--force", worktree.path] : [
        "worktree",
        "remove",
        worktree.path,
      ];
      try {
        await this.#serially(location, async () => {
          if (await exists(worktree.path)) await git.git(args, { cwd: loc.path });
          await git.git(["worktree", "prune"], { cwd: loc.path });
        });
      } catch (error) {
        if (options.force) throw error;
        throw new DockError(
          "worktree_dirty",
          `git refused to remove ${worktree.path}: ${
            (error as Error).message
          } (commit or stash, or remove with force)`,
          { status: 409, cause: error },
        );
      }
      this.#o.store.run("DELETE FROM worktrees WHERE location = ? AND name = ?", location, name);
      this.#o.bus.publish({
        type: "worktree.removed",
        origin,
        data: { location, worktree: name, path: worktree.path, branch: worktree.branch },
      });
      return worktree;
    } finally {
      this.#removing.delete(worktree.path);
    }
  }

  /**
   * The worktree's whole environment (spec 2.10); unresolved secrets are reported, never values. Each
   * secret resolved anew (not from the cache) or failed is announced (`secret.resolved`,
   * `secret.failed`: the variable and the reference's scheme, never the value); `onSecret` hears every one.
   */
  async environment(
    worktree: Worktree,
    options: { onSecret?: (outcome: SecretOutcome) => void } = {},
  ): Promise<WorktreeEnvironment> {
    const layers = await this.environmentLayers(worktree);
    const built = await buildEnv({
      base: Deno.env.toObject(),
      boxEnv: layers.box,
      dock: layers.dock,
      config: layers.config,
      secrets: this.#o.secrets,
      onSecret: (outcome) => {
        options.onSecret?.(outcome);
        if (outcome.cached) return;
        this.#o.bus.publish({
          type: outcome.ok ? "secret.resolved" : "secret.failed",
          origin: "dockd",
          data: {
            location: worktree.location,
            worktree: worktree.name,
            variable: outcome.variable,
            scheme: outcome.scheme,
            ...(outcome.ok ? {} : { error: outcome.error }),
          },
        });
      },
    });
    return { ...built, setsPort: "PORT" in layers.config || "PORT" in layers.box };
  }

  /**
   * The layers the worktree's environment is built from, secret references unresolved: what
   * {@linkcode Worktrees.environment} resolves here and `dockd secret exec` in its own process.
   */
  async environmentLayers(worktree: Worktree): Promise<WorktreeEnvironmentLayers> {
    const location = this.#o.locations.get(worktree.location);
    const config = (await this.#o.locations.config(worktree.location)).effective;
    const dock = dockVariables(
      {
        box: this.#o.settings.name,
        location: worktree.location,
        rootPath: location.path,
        name: worktree.name,
        path: worktree.path,
        branch: worktree.branch,
        ports: worktree.ports,
        kitDir: location.kit ? kitDir(this.#o.paths, location.name) : undefined,
      },
      this.#o.settings.compatPrefix,
    );
    const box = await readEnvForProcesses(this.#o.paths.envFile, this.#o.log);
    return { location: worktree.location, worktree: worktree.name, dock, box, config: config.env ?? {} };
  }

  /** Setup output, as lines; with `follow`, goes on until setup ends. */
  setupLog(
    location: string,
    name: string,
    options: { follow?: boolean; signal?: AbortSignal } = {},
  ): AsyncGenerator<StreamLine> {
    return this.#setups.log(this.get(location, name), options);
  }

  /**
   * Brings a location's records in line with `git worktree list` (registration and detection).
   * Resolves false when git could not be read (the next tick tries again).
   */
  reconcile(location: string): Promise<boolean> {
    const previous = this.#reconciling.get(location) ?? Promise.resolve(true);
    const next = previous.then(() => this.#reconcileNow(location)).then(() => true, (error) => {
      if (!(error instanceof DockError && error.code === "not_found")) {
        this.#o.log.error(`reconcile ${location}: ${(error as Error).message}`);
      }
      return false;
    });
    this.#reconciling.set(location, next);
    return next;
  }

  /** Starts watching every location for worktrees made or removed outside dock. */
  watch(intervalMs = 1000): void {
    this.#watch.start(intervalMs);
  }

  /** Stops watching. */
  stop(): void {
    this.#watch.stop();
  }

  /** Marks setups that a previous daemon left running as failed: nobody is waiting for them now. */
  recoverInterrupted(): void {
    this.#setups.recoverInterrupted();
  }

  /** Resolves when every setup started so far has finished (tests, shutdown). */
  async settled(): Promise<void> {
    await this.#setups.settled();
  }

  async #reconcileNow(locationName: string): Promise<void> {
    const location = this.#o.locations.get(locationName);
    const listed = (await this.#serially(locationName, () => git.listWorktrees(location.path)))
      .filter((w) => !w.bare && !w.prunable);
    const live = await Promise.all(
      listed.map(async (w) => ({ ...w, path: await Deno.realPath(w.path).catch(() => w.path) })),
    );
    const rows = this.#o.store.all<WorktreeRow>("SELECT * FROM worktrees WHERE location = ?", locationName);
    const byPath = new Map(rows.map((row) => [row.path, row]));
    let ports = 1;
    try {
      ports = (await this.#o.locations.effectiveConfig(locationName)).ports ?? 1;
    } catch {
      // a broken config must not stop detection; one port until it is fixed
    }
    for (const [index, w] of live.entries()) {
      const main = index === 0 || w.path === location.path;
      const row = byPath.get(w.path);
      if (row) {
        if (row.branch !== w.branch) {
          this.#o.store.run(
            "UPDATE worktrees SET branch = ? WHERE location = ? AND name = ?",
            w.branch,
            locationName,
            row.name,
          );
        }
        continue;
      }
      if (this.#creating.has(w.path)) continue;
      const name = this.#freeName(locationName, main ? locationName : nameFromFolder(basename(w.path)));
      this.#o.store.transaction(() => {
        this.#o.store.run(
          `INSERT INTO worktrees (location, name, path, branch, main, origin, created) VALUES (?, ?, ?, ?, ?, ?, ?)`,
          locationName,
          name,
          w.path,
          w.branch,
          main ? 1 : 0,
          main ? "main" : "detected",
          this.#now(),
        );
        this.#o.ports.allocate(locationName, name, ports);
      });
      if (!main) {
        const worktree = this.get(locationName, name);
        this.#o.bus.publish({
          type: "worktree.created",
          origin: "detected",
          data: {
            location: locationName,
            worktree: name,
            path: w.path,
            branch: w.branch,
            ports: worktree.ports,
          },
        });
      }
    }
    const livePaths = new Set(live.map((w) => w.path));
    for (const row of rows) {
      if (
        row.main || livePaths.has(row.path) || this.#creating.has(row.path) || this.#removing.has(row.path)
      ) continue;
      // Its folder is gone, but what ran in it may still be running: stop that first.
      const gone = toWorktree(row, this.#o.ports.portsOf(locationName, row.name));
      for (const step of this.removalSteps) {
        await step(gone).catch((error) =>
          this.#o.log.error(`stopping ${locationName}/${row.name}: ${errorText(error)}`)
        );
      }
      this.#o.store.run("DELETE FROM worktrees WHERE location = ? AND name = ?", locationName, row.name);
      this.#o.bus.publish({
        type: "worktree.removed",
        origin: "detected",
        data: { location: locationName, worktree: row.name, path: row.path, branch: row.branch },
      });
    }
  }

  /**
   * Runs git worktree operations of one repository one at a time: concurrent `git worktree add`s
   * read each other's half-written `.git/worktrees/<id>` and fail ("failed to read … commondir").
   */
  #serially<T>(location: string, fn: () => Promise<T>): Promise<T> {
    const previous = this.#gitQueues.get(location) ?? Promise.resolve();
    const next = previous.catch(() => {}).then(fn);
    this.#gitQueues.set(location, next.catch(() => {}));
    return next;
  }

  #freeName(location: string, wanted: string): string {
    let name = wanted;
    for (let n = 2; this.#row(location, name); n++) name = `${wanted.slice(0, 60)}-${n}`;
    return name;
  }

  #row(location: string, name: string): WorktreeRow | undefined {
    return this.#o.store.get<WorktreeRow>(
      "SELECT * FROM worktrees WHERE location = ? AND name = ?",
      location,
      name,
    );
  }

  async #checkoutPr(path: string, pr: number): Promise<void> {
    const result = await run("gh", ["pr", "checkout", String(pr)], { cwd: path, timeoutMs: 120_000 });
    if (result.code !== 0) {
      throw new DockError(
        "pr_checkout_failed",
        `gh pr checkout ${pr} failed: ${result.output.trim().slice(-2000)}`,
        {
          status: 422,
        },
      );
    }
  }

  #now(): string {
    return new Date(this.#o.clock.now()).toISOString();
  }
}

/** A worktree's environment, what could not be resolved (names only), and whether `env` sets PORT. */
export interface WorktreeEnvironment {
  env: Record<string, string>;
  problems: { key: string; error: string }[];
  /** The config's or the box env file's `env` sets `PORT` (services then keep it). */
  setsPort: boolean;
}

function toWorktree(row: WorktreeRow, ports: number[]): Worktree {
  const setup: Worktree["setup"] = { state: row.setup_state };
  if (row.setup_exit !== null) setup.exit_code = row.setup_exit;
  if (row.setup_started) setup.started = row.setup_started;
  if (row.setup_finished) setup.finished = row.setup_finished;
  if (row.setup_error) setup.error = row.setup_error;
  return {
    name: row.name,
    location: row.location,
    path: row.path,
    branch: row.branch,
    base: row.base,
    main: row.main === 1,
    origin: row.origin,
    ports,
    setup,
    paused: row.paused === 1,
    created: row.created,
  };
}
