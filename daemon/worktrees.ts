/**
 * Worktrees: creating, removing and detecting the git worktrees of each location, their port blocks,
 * their environment, and their setup and archive scripts (spec 3.3).
 *
 * Detection does not poll git. Once a second it reads what git itself keeps per worktree
 * (`<common dir>/worktrees/*` and each HEAD's mtime) and whether each known worktree's folder still
 * exists; only when that signature changes does it ask `git worktree list`. A worktree whose record is
 * being created or removed by dock is skipped, so nothing is announced twice.
 *
 * @module
 */
import { basename, dirname, join } from "../core/posix_path.ts";
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
import type { LocationRecord, Locations } from "./locations.ts";
import { checkName, nameFromFolder } from "./names.ts";
import type { BoxPaths } from "../core/paths.ts";
import type { PortAllocator } from "./ports.ts";
import { exists, statOrNull } from "../core/files.ts";
import { run, shell } from "../core/runner.ts";
import type { SecretResolver } from "./secrets.ts";
import type { BoxSettings } from "./settings.ts";
import type { Store } from "../core/store.ts";
import { sleep } from "../client/timers.ts";
import { PATH_HOLDS } from "./schema.ts";
import { setupState as nextSetup } from "./setup_state.ts";

/** Setup scripts may run this long (spec 8), then they are killed. */
export const SETUP_TIMEOUT_MS = 30 * 60_000;

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

/** Something to do once a worktree's setup succeeded, or at once when it has none (autostart). */
export type ReadyStep = (worktree: Worktree) => void | Promise<void>;

/** Dependencies of {@linkcode Worktrees}. */
export interface WorktreesOptions {
  store: Store;
  bus: EventBus;
  ports: PortAllocator;
  locations: Locations;
  settings: BoxSettings;
  paths: BoxPaths;
  secrets: SecretResolver;
}

/** Owns worktree records, their lifecycle and their environment. */
export class Worktrees {
  #o: WorktreesOptions;
  #creating = new Set<string>();
  #removing = new Set<string>();
  #reconciling = new Map<string, Promise<boolean>>();
  #gitQueues = new Map<string, Promise<unknown>>();
  #signatures = new Map<string, string>();
  #timer?: ReturnType<typeof setInterval>;
  #ticking = false;
  #setups = new Map<string, Promise<void>>();
  readonly removalSteps: RemovalStep[] = [];
  readonly readySteps: ReadyStep[] = [];

  constructor(options: WorktreesOptions) {
    this.#o = options;
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
    const main = this.list(location).find((w) => w.main);
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
      mainBranch: () => this.list(location).find((w) => w.main)?.branch ?? null,
    });
    const setupState: SetupState = config.setup ? nextSetup("new", "plan") : nextSetup("new", "skip");
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
          new Date().toISOString(),
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
    if (config.setup) this.#startSetup(worktree, config.setup);
    else this.#ready(worktree);
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
        const result = await this.#script(worktree, "archive", archive);
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
    const box = await readEnvForProcesses(this.#o.paths.envFile);
    return { location: worktree.location, worktree: worktree.name, dock, box, config: config.env ?? {} };
  }

  /** Setup output, as lines; with `follow`, goes on until setup ends. */
  async *setupLog(location: string, name: string, options: { follow?: boolean; signal?: AbortSignal } = {}) {
    const worktree = this.get(location, name);
    const file = this.#logFile(worktree, "setup");
    let offset = 0;
    let partial = "";
    const decoder = new TextDecoder();
    while (!options.signal?.aborted) {
      const state = this.#row(location, name)?.setup_state;
      const chunk = await readFrom(file, offset);
      offset += chunk.length;
      const text = partial + decoder.decode(chunk, { stream: true });
      const lines = text.split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) yield { line } satisfies StreamLine;
      const running = state === "pending" || state === "running";
      if (chunk.length === 0 && (!options.follow || !running)) {
        if (partial) yield { line: partial };
        const row = this.#row(location, name);
        yield { done: true, exit_code: row?.setup_exit ?? undefined } satisfies StreamLine;
        return;
      }
      if (chunk.length === 0) await sleep(100, options.signal);
    }
  }

  /**
   * Brings a location's records in line with `git worktree list` (registration and detection).
   * Resolves false when git could not be read (the next tick tries again).
   */
  reconcile(location: string): Promise<boolean> {
    const previous = this.#reconciling.get(location) ?? Promise.resolve(true);
    const next = previous.then(() => this.#reconcileNow(location)).then(() => true, (error) => {
      if (!(error instanceof DockError && error.code === "not_found")) {
        console.error(`reconcile ${location}:`, (error as Error).message);
      }
      return false;
    });
    this.#reconciling.set(location, next);
    return next;
  }

  /** Starts watching every location for worktrees made or removed outside dock. */
  watch(intervalMs = 1000): void {
    this.#timer = setInterval(() => this.#tick(), intervalMs);
  }

  /** Stops watching. */
  stop(): void {
    clearInterval(this.#timer);
  }

  /** Marks setups that a previous daemon left running as failed: nobody is waiting for them now. */
  recoverInterrupted(): void {
    this.#o.store.run(
      `UPDATE worktrees SET setup_state = ?, setup_error = 'interrupted by a daemon restart',
       setup_finished = ? WHERE setup_state IN ('pending', 'running')`,
      nextSetup("running", "interrupt"),
      new Date().toISOString(),
    );
  }

  /** Resolves when every setup started so far has finished (tests, shutdown). */
  async settled(): Promise<void> {
    await Promise.all(this.#setups.values());
  }

  async #tick(): Promise<void> {
    if (this.#ticking) return;
    this.#ticking = true;
    try {
      for (const location of this.#o.locations.list()) {
        const signature = await this.#signature(location);
        if (this.#signatures.get(location.name) !== signature && await this.reconcile(location.name)) {
          this.#signatures.set(location.name, signature);
        }
      }
    } finally {
      this.#ticking = false;
    }
  }

  async #signature(location: LocationRecord): Promise<string> {
    const parts: string[] = [];
    const common = join(location.path, ".git");
    parts.push(String((await statOrNull(join(common, "HEAD")))?.mtime?.getTime()));
    try {
      for await (const entry of Deno.readDir(join(common, "worktrees"))) {
        const dir = join(common, "worktrees", entry.name);
        const head = await statOrNull(join(dir, "HEAD"));
        const gitdir = await Deno.readTextFile(join(dir, "gitdir")).catch(() => "");
        const alive = gitdir ? (await statOrNull(gitdir.trim())) !== null : false;
        parts.push(`${entry.name}:${head?.mtime?.getTime()}:${gitdir.trim()}:${alive}`);
      }
    } catch {
      // no worktrees folder yet
    }
    for (const worktree of this.list(location.name)) {
      parts.push(`${worktree.path}:${(await statOrNull(worktree.path)) !== null}`);
    }
    return parts.sort().join("|");
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
          new Date().toISOString(),
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
        await step(gone).catch((error) => console.error(`stopping ${locationName}/${row.name}:`, error));
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

  #startSetup(worktree: Worktree, script: string): void {
    const key = `${worktree.location}/${worktree.name}`;
    const job = (async () => {
      const started = new Date().toISOString();
      this.#setSetup(worktree, { state: nextSetup("pending", "start"), started });
      this.#o.bus.publish({
        type: "worktree.setup.started",
        origin: "dockd",
        data: { location: worktree.location, worktree: worktree.name },
      });
      let code = -1;
      let timedOut = false;
      let error: string | undefined;
      try {
        const result = await this.#script(worktree, "setup", script, SETUP_TIMEOUT_MS);
        code = result.code;
        timedOut = result.timedOut;
      } catch (cause) {
        error = (cause as Error).message;
      }
      const ok = code === 0;
      this.#setSetup(worktree, {
        state: nextSetup("running", ok ? "succeed" : "fail"),
        exit: code,
        finished: new Date().toISOString(),
        error: error ?? (timedOut ? "setup timed out after 30m and was killed" : undefined),
      });
      this.#o.bus.publish({
        type: ok ? "worktree.setup.finished" : "worktree.setup.failed",
        origin: "dockd",
        data: { location: worktree.location, worktree: worktree.name, exit_code: code, timed_out: timedOut },
      });
      if (ok && this.#row(worktree.location, worktree.name)) {
        this.#ready(this.get(worktree.location, worktree.name));
      }
    })().finally(() => this.#setups.delete(key));
    this.#setups.set(key, job);
  }

  #ready(worktree: Worktree): void {
    for (const step of this.readySteps) {
      Promise.resolve(step(worktree)).catch((error) =>
        console.error(`after setup of ${worktree.name}:`, error)
      );
    }
  }

  #setSetup(
    worktree: Worktree,
    update: { state: SetupState; started?: string; finished?: string; exit?: number; error?: string },
  ): void {
    this.#o.store.run(
      `UPDATE worktrees SET setup_state = ?, setup_started = coalesce(?, setup_started), setup_finished = ?,
       setup_exit = ?, setup_error = ? WHERE location = ? AND name = ?`,
      update.state,
      update.started ?? null,
      update.finished ?? null,
      update.exit ?? null,
      update.error ?? null,
      worktree.location,
      worktree.name,
    );
  }

  #logFile(worktree: Worktree, kind: "setup" | "archive"): string {
    return join(this.#o.paths.logs, worktree.location, worktree.name, `${kind}.log`);
  }

  /** Runs a setup or archive script in the worktree through a login shell, its output logged. */
  async #script(worktree: Worktree, kind: "setup" | "archive", script: string, timeoutMs = SETUP_TIMEOUT_MS) {
    const file = this.#logFile(worktree, kind);
    await Deno.mkdir(dirname(file), { recursive: true });
    const log = await Deno.open(file, { write: true, create: true, truncate: true });
    try {
      const { env } = await this.environment(worktree);
      return await shell(script, {
        cwd: worktree.path,
        env,
        clearEnv: true,
        timeoutMs,
        maxOutput: 64 * 1024,
        onOutput: (chunk) => log.writeSync(chunk),
      });
    } finally {
      log.close();
    }
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

async function readFrom(path: string, offset: number): Promise<Uint8Array> {
  let file: Deno.FsFile;
  try {
    file = await Deno.open(path, { read: true });
  } catch {
    return new Uint8Array();
  }
  try {
    await file.seek(offset, Deno.SeekMode.Start);
    const buffer = new Uint8Array(64 * 1024);
    const read = await file.read(buffer);
    return read ? buffer.subarray(0, read) : new Uint8Array();
  } finally {
    file.close();
  }
}
