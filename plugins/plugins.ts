/**
 * The plugin host of one process (the box daemon, or the laptop agent): the plugins in
 * `~/.dock/plugins/<id>/`, which of them are enabled and with what grant (`<state>/plugins.json`, kept
 * across restarts), and everything they run: module hooks on events, module gates, `fetch` functions,
 * each call in a sandboxed worker (see `module_host.ts`) with a deadline, a concurrency limit and a
 * bounded backlog. What a plugin asks of dock (`ctx.api`, `ctx.emit`, `ctx.kv`) is answered here, within
 * the scopes its grant names; everything else is refused and counted.
 *
 * A plugin's worker starts on its first call and stops after it has been idle (5 minutes by default),
 * so installed plugins cost nothing while nothing calls them. One that fails or times out 5 times in a
 * row is `failed` until it is enabled again. Nothing a plugin does can hold up the event bus: events are
 * only queued here, on the publishing path.
 *
 * Module hooks of `hooks.json` and a location's config run under the same sandbox, through
 * {@linkcode Plugins.executor}: read of the module's folder and of the worktree, nothing else.
 *
 * @module
 */
import { basename, dirname, extname, join, relative } from "../core/posix_path.ts";
import type {
  DockEvent,
  HookConfig,
  PanelApiRequest,
  PanelApiResult,
  PluginInfo,
  PluginPermissions,
  PluginState,
} from "../client/wire.ts";
import { DockError } from "../client/errors.ts";
import { describePermissions } from "../client/plugin.ts";
import type { EventBus } from "../core/events.ts";
import { readTextOrNull, writeAtomic } from "../core/files.ts";
import { readLimited } from "../core/http.ts";
import {
  type ExtraHook,
  type HookExecutor,
  type HookResult,
  hooksFor,
  hookTimeoutMs,
  isGate,
  shellExecutor,
} from "../core/hooks.ts";
import { ConfigError } from "../core/user_files.ts";
import { CallError, callErrorToDock, type CallResult, ModuleHost } from "./module_host.ts";
import {
  grantCovers,
  MANIFEST_FILE,
  normalizePermissions,
  PLUGIN_ID,
  type PluginManifest,
  readManifest,
} from "./manifest.ts";
import { PluginKv } from "./kv.ts";
import { PluginLog } from "./log.ts";
import {
  type CallKind,
  type ContextOp,
  type EventsOutput,
  type FetchOutput,
  fromBase64,
  handlerOf,
  MAX_FETCH_BODY,
  toBase64,
  type WorkerGrant,
  type WorkerSpec,
} from "./protocol.ts";
import { type ApiSide, requiredScope } from "./scopes.ts";

/** Failures in a row that make a plugin `failed`. */
export const FAILURES_TO_FAIL = 5;
/** Default idle time before a worker is stopped. */
export const IDLE_MS = 5 * 60_000;
/** Default calls one plugin runs at once. */
export const PLUGIN_CONCURRENCY = 4;
/** Default calls one plugin may have waiting (fetch, gates); past it a call is refused with 429. */
export const PLUGIN_BACKLOG = 1000;
/**
 * Events one plugin may have waiting; past it the oldest are dropped and counted. As many as the
 * journal keeps: a queued event is the bus's own object, shared by every plugin that waits for it.
 */
export const PLUGIN_EVENT_BACKLOG = 10_000;
/** `ctx.api` calls one plugin may have waiting for an answer. */
export const API_IN_FLIGHT = 64;
/** Events a module may announce at once, and then per second. */
export const EMIT_BURST = 1000;
export const EMIT_PER_SECOND = 200;
/** Events one call carries at most. */
export const EVENT_BATCH = 64;
/** Deadline of a `fetch` call. */
export const FETCH_TIMEOUT_MS = 60_000;

/** Options of {@linkcode Plugins}. */
export interface PluginsOptions {
  /** `DOCK_HOME`: plugins are in its `plugins/`. */
  home: string;
  /** The process's own state folder (the box's, or the laptop's): grants, data, logs. */
  state: string;
  /** `laptop`, or the box's name (`PluginInfo.where`). */
  where: string;
  /** Which API `ctx.api` reaches. */
  side: ApiSide;
  bus: EventBus;
  /** V8 heap cap per worker and host, MB. @default {128} */
  memoryMb?: number;
  /** Resident memory at which the host process is killed, MB. @default {1024} */
  rssLimitMb?: number;
  /** How long a worker is kept warm after its last call. @default {IDLE_MS} */
  idleMs?: number;
  /** How long the host process is kept with no worker. @default {the worker's idleMs} */
  hostIdleMs?: number;
  /** @default {PLUGIN_CONCURRENCY} */
  concurrency?: number;
  /** How often plugin folders are checked for changes. @default {500} */
  scanMs?: number;
  /** Folders module hooks of hooks files and configs may be in (so one host covers them). */
  baseRead?: () => string[];
}

type Counters = PluginInfo["counters"];

interface Job {
  module: string;
  kind: CallKind;
  input: unknown;
  deadlineMs: number;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/** One plugin folder, valid or not, and what it is doing. */
class Plugin {
  readonly id: string;
  readonly dir: string;
  manifest?: PluginManifest;
  /** Why its manifest does not load. */
  invalid?: string;
  /** The folder's real path (what workers are granted and modules are checked against). */
  realDir = "";
  signature = "";
  counters: Counters = {
    calls: 0,
    failures: 0,
    timeouts: 0,
    restarts: 0,
    cold_starts: 0,
    refused: 0,
    dropped: 0,
  };
  inARow = 0;
  /** Set while failed: why. */
  failed?: string;
  lastError?: string;
  starting = 0;
  running = 0;
  queue: Job[] = [];
  /** Events waiting in the queue's batches. */
  queuedEvents = 0;
  apiInFlight = 0;
  readonly idle = new Map<string, ReturnType<typeof setTimeout>>();
  /** Keys of the workers it has started (running or warm). */
  readonly workers = new Set<string>();
  /** Calls in flight, by worker key (a worker is never stopped as idle while one runs). */
  readonly busy = new Map<string, number>();
  readonly log: PluginLog;
  readonly kv: PluginKv;

  constructor(id: string, dir: string, logs: string, data: string) {
    this.id = id;
    this.dir = dir;
    this.log = new PluginLog(logs, id);
    this.kv = new PluginKv(data);
  }
}

interface EnabledFile {
  enabled: Record<string, { permissions: PluginPermissions; time: string }>;
}

/** The plugins of one process and their sandboxed workers. */
export class Plugins {
  readonly dir: string;
  #o: PluginsOptions;
  #plugins = new Map<string, Plugin>();
  #enabled: EnabledFile = { enabled: {} };
  #enabledPath: string;
  #dataRoot: string;
  #logs: string;
  #host: ModuleHost;
  #api?: (request: Request) => Promise<Response>;
  #timer?: ReturnType<typeof setInterval>;
  #unsubscribe?: () => void;
  #scanning: Promise<void> | null = null;
  #emitBuckets = new Map<string, { tokens: number; at: number; refusing: boolean }>();
  #incoming: DockEvent[] = [];
  #closed = false;

  constructor(options: PluginsOptions) {
    this.#o = options;
    this.dir = join(options.home, "plugins");
    this.#enabledPath = join(options.state, "plugins.json");
    this.#dataRoot = join(options.state, "plugins");
    this.#logs = join(options.state, "plugin-logs");
    this.#host = new ModuleHost({
      dir: join(options.state, "plugin-host"),
      memoryMb: options.memoryMb,
      rssLimitMb: options.rssLimitMb,
      idleMs: options.hostIdleMs ?? options.idleMs,
      baseRead: options.baseRead,
      knownGrants: () => this.#knownGrants(),
      env: (names) =>
        Object.fromEntries(names.flatMap((n) => {
          const value = Deno.env.get(n);
          return value === undefined ? [] : [[n, value]];
        })),
      onRequest: (spec, op, args) => this.#answer(spec, op, args),
      onLog: (spec, level, text) => {
        const plugin = this.#pluginOf(spec);
        if (plugin) plugin.log.write(level, text);
        else console.error(`${spec.label}: ${text}`); // a hook file's module: the process's own log
      },
      onHostOutput: (line) => console.error(`plugin host: ${line}`),
      onWorkerStopped: (spec, error) => {
        const plugin = this.#pluginOf(spec);
        if (!plugin) return;
        clearTimeout(plugin.idle.get(spec.key));
        plugin.idle.delete(spec.key);
        plugin.workers.delete(spec.key);
        if (error) plugin.log.write("error", `worker ended: ${error}`);
      },
    });
  }

  /** Reads the plugin folders and the grants, follows the bus, and checks the folders for changes. */
  async start(): Promise<void> {
    const text = await readTextOrNull(this.#enabledPath);
    try {
      if (text) this.#enabled = { enabled: JSON.parse(text).enabled ?? {} };
    } catch (error) {
      console.error(
        `plugins: ${this.#enabledPath} does not parse (${(error as Error).message}); all plugins off`,
      );
    }
    await this.scan();
    this.#unsubscribe = this.#o.bus.subscribe((event) => this.#onEvent(event));
    this.#timer = setInterval(
      () => this.scan().catch((e) => console.error("plugins:", e)),
      this.#o.scanMs ?? 500,
    );
  }

  /** Stops following events and kills the host (calls in flight fail). */
  close(): void {
    this.#closed = true;
    clearInterval(this.#timer);
    this.#unsubscribe?.();
    for (const plugin of this.#plugins.values()) {
      for (const timer of plugin.idle.values()) clearTimeout(timer);
      plugin.log.close();
      plugin.queuedEvents = 0;
      for (const job of plugin.queue.splice(0)) {
        job.reject(new DockError("plugin_closed", "the plugin host is closing", { status: 503 }));
      }
    }
    this.#host.close();
  }

  /** Where `ctx.api` calls go: the process's own API app (set once it is built). */
  connectApi(api: (request: Request) => Promise<Response>): void {
    this.#api = api;
  }

  /** The host's counters (generations, restarts, workers). */
  hostStats(): ReturnType<ModuleHost["stats"]> {
    return this.#host.stats();
  }

  // -------------------------------------------------------------------------------------------------
  // Folders

  /** Checks every plugin folder now; a changed one is read again and its workers stopped. */
  scan(): Promise<void> {
    this.#scanning ??= this.#scan().finally(() => this.#scanning = null);
    return this.#scanning;
  }

  async #scan(): Promise<void> {
    const seen = new Set<string>();
    let entries: Deno.DirEntry[] = [];
    try {
      entries = await Array.fromAsync(Deno.readDir(this.dir));
    } catch {
      // no plugins folder: no plugins
    }
    for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      if (!PLUGIN_ID.test(entry.name)) continue;
      const dir = join(this.dir, entry.name);
      const signature = await folderSignature(dir);
      if (signature === null) continue;
      seen.add(entry.name);
      let plugin = this.#plugins.get(entry.name);
      if (plugin && plugin.signature === signature) continue;
      // Read first, then put in place: a listing meanwhile sees the old state or the new, never half.
      const fresh = plugin ?? new Plugin(entry.name, dir, this.#logs, join(this.#dataRoot, entry.name));
      const loaded = await this.#load(fresh);
      plugin = this.#plugins.get(entry.name) ?? fresh;
      this.#plugins.set(entry.name, plugin);
      this.#stopWorkers(plugin);
      Object.assign(plugin, loaded, { signature });
      this.#o.bus.publish({
        type: "plugin.changed",
        origin: "dock",
        data: { id: plugin.id, where: this.#o.where },
      });
    }
    for (const [id, plugin] of this.#plugins) {
      if (seen.has(id)) continue;
      this.#stopWorkers(plugin);
      this.#plugins.delete(id);
      this.#o.bus.publish({ type: "plugin.removed", origin: "dock", data: { id, where: this.#o.where } });
    }
  }

  /** A plugin folder's manifest (every module it names checked to be inside), or why it does not load. */
  async #load(
    plugin: Plugin,
  ): Promise<{ manifest: PluginManifest | undefined; invalid: string | undefined; realDir: string }> {
    let realDir = plugin.realDir;
    try {
      realDir = await Deno.realPath(plugin.dir);
      const manifest = await readManifest(join(plugin.dir, MANIFEST_FILE), plugin.id);
      // Deno checks a path as given, not where a symlink leads: a link in the folder to ~/.ssh would be
      // readable through the folder's own grant. A plugin holding one does not run.
      const escape = await symlinkOut(plugin.dir, realDir);
      if (escape) {
        throw new DockError(
          "invalid_plugin",
          `${plugin.dir}: ${escape}; a plugin's files stay in its folder`,
        );
      }
      // Every module it names must really be inside its folder (a symlink out is refused here).
      for (const module of modulesOf(manifest)) await this.#modulePath({ dir: plugin.dir, realDir }, module);
      return { manifest, invalid: undefined, realDir };
    } catch (error) {
      const invalid = error instanceof ConfigError || error instanceof DockError
        ? error.message
        : `${join(plugin.dir, MANIFEST_FILE)}: ${(error as Error).message}`;
      return { manifest: undefined, invalid, realDir };
    }
  }

  async #modulePath(plugin: { dir: string; realDir: string }, module: string): Promise<string> {
    const path = join(plugin.dir, module);
    let real: string;
    try {
      real = await Deno.realPath(path);
    } catch {
      throw new DockError(
        "invalid_plugin",
        `${join(plugin.dir, MANIFEST_FILE)}: module ${module} does not exist`,
      );
    }
    if (!inside(real, plugin.realDir)) {
      throw new DockError(
        "invalid_plugin",
        `${join(plugin.dir, MANIFEST_FILE)}: module ${module} leads outside the plugin's folder`,
      );
    }
    return real;
  }

  // -------------------------------------------------------------------------------------------------
  // Listing, enabling

  /** Every plugin folder, valid or not. */
  list(): PluginInfo[] {
    return [...this.#plugins.values()].map((plugin) => this.#info(plugin));
  }

  /** One plugin, with its newest log lines. */
  get(id: string, logLines = 100): PluginInfo {
    const plugin = this.#plugin(id);
    return { ...this.#info(plugin), log: plugin.log.tail(logLines) };
  }

  /**
   * Enables a plugin, granting `permissions`, which must be exactly what it asks for (the caller shows
   * them and confirms): a manifest that changed since it was shown is refused with 409.
   */
  async enable(id: string, permissions: PluginPermissions, origin = "api"): Promise<PluginInfo> {
    await this.scan();
    const plugin = this.#plugin(id);
    if (!plugin.manifest) {
      throw new DockError("invalid_plugin", plugin.invalid ?? "the plugin does not load", { status: 422 });
    }
    const asked = normalizePermissions(plugin.manifest.permissions);
    if (JSON.stringify(normalizePermissions(permissions)) !== JSON.stringify(asked)) {
      throw new DockError(
        "permissions_changed",
        `plugin '${id}' asks for ${describePermissions(asked)}; confirm exactly that`,
        { status: 409, detail: { permissions: asked } },
      );
    }
    await Deno.mkdir(join(this.#dataRoot, id), { recursive: true, mode: 0o700 });
    for (const path of [...asked.read, ...asked.write]) {
      if (path !== ".") {
        await Deno.mkdir(join(this.#dataRoot, id, path), { recursive: true, mode: 0o700 }).catch(() => {});
      }
    }
    this.#enabled.enabled[id] = { permissions: asked, time: new Date().toISOString() };
    await this.#saveEnabled();
    plugin.failed = undefined;
    plugin.inARow = 0;
    this.#stopWorkers(plugin);
    plugin.log.write("info", `enabled, granted ${describePermissions(asked)}`);
    this.#o.bus.publish({ type: "plugin.enabled", origin, data: { id, where: this.#o.where } });
    return this.#info(plugin);
  }

  /** Disables a plugin: its workers stop and it receives nothing. */
  async disable(id: string, origin = "api"): Promise<PluginInfo> {
    const plugin = this.#plugin(id);
    delete this.#enabled.enabled[id];
    await this.#saveEnabled();
    this.#stopWorkers(plugin);
    plugin.queuedEvents = 0;
    for (const job of plugin.queue.splice(0)) {
      job.reject(new DockError("plugin_off", `plugin '${id}' was disabled`, { status: 409 }));
    }
    plugin.log.write("info", "disabled");
    this.#o.bus.publish({ type: "plugin.disabled", origin, data: { id, where: this.#o.where } });
    return this.#info(plugin);
  }

  async #saveEnabled(): Promise<void> {
    await Deno.mkdir(dirname(this.#enabledPath), { recursive: true, mode: 0o700 });
    await writeAtomic(this.#enabledPath, JSON.stringify(this.#enabled, null, 2) + "\n", 0o600);
  }

  #plugin(id: string): Plugin {
    const plugin = PLUGIN_ID.test(id) ? this.#plugins.get(id) : undefined;
    if (!plugin) throw new DockError("not_found", `no plugin '${id}' in ${this.dir}`, { status: 404 });
    return plugin;
  }

  /** Why a plugin may not run now, or null when it may. */
  #offReason(plugin: Plugin): string | null {
    if (!plugin.manifest) return plugin.invalid ?? "its manifest does not load";
    const grant = this.#enabled.enabled[plugin.id];
    if (!grant) return "not enabled";
    if (!grantCovers(grant.permissions, plugin.manifest.permissions ?? {})) {
      return `it now asks for ${
        describePermissions(normalizePermissions(plugin.manifest.permissions))
      }, more than was granted; enable it again`;
    }
    return null;
  }

  #runnable(plugin: Plugin): boolean {
    return !plugin.failed && this.#offReason(plugin) === null;
  }

  #info(plugin: Plugin): PluginInfo {
    const manifest = plugin.manifest;
    const grant = this.#enabled.enabled[plugin.id];
    const off = this.#offReason(plugin);
    const running = [...modulesOf(manifest)].some((m) => this.#host.running(workerKey(plugin, m)));
    const state: PluginState = plugin.failed
      ? "failed"
      : off
      ? "off"
      : plugin.starting > 0
      ? "starting"
      : running
      ? "running"
      : "idle";
    const error = plugin.failed ?? (off && off !== "not enabled" ? off : plugin.lastError);
    return {
      id: plugin.id,
      ...(manifest ? { name: manifest.name, version: manifest.version } : {}),
      ...(manifest?.description ? { description: manifest.description } : {}),
      where: this.#o.where,
      path: plugin.dir,
      enabled: grant !== undefined,
      state,
      ...(error ? { error } : {}),
      ...(manifest ? { permissions: normalizePermissions(manifest.permissions) } : {}),
      ...(grant ? { granted: grant.permissions } : {}),
      ...(manifest?.main ? { main: manifest.main } : {}),
      ...(manifest?.hooks ? { hooks: manifest.hooks } : {}),
      ...(manifest?.themes ? { themes: manifest.themes } : {}),
      ...(manifest?.ui ? { ui: manifest.ui } : {}),
      counters: { ...plugin.counters },
    };
  }

  // -------------------------------------------------------------------------------------------------
  // Calls

  /** Runs one handler of a plugin's module, waiting for a slot (the plugin's concurrency). */
  #call(
    plugin: Plugin,
    module: string,
    kind: CallKind,
    input: unknown,
    deadlineMs: number,
  ): Promise<unknown> {
    const { promise, resolve, reject } = Promise.withResolvers<unknown>();
    plugin.queue.push({ module, kind, input, deadlineMs, resolve, reject });
    if (plugin.queue.length > PLUGIN_BACKLOG) {
      plugin.counters.dropped++;
      plugin.queue.pop();
      reject(
        new DockError("plugin_busy", `plugin '${plugin.id}' has ${PLUGIN_BACKLOG} calls waiting`, {
          status: 429,
        }),
      );
    }
    this.#next(plugin);
    return promise;
  }

  /**
   * Queues an event for a module: joined to the batch waiting for that module (one call for many
   * events when they come faster than the plugin's calls return). Past the backlog, the oldest queued
   * events are dropped and counted.
   */
  #deliver(plugin: Plugin, module: string, event: DockEvent, deadlineMs: number): void {
    const last = plugin.queue.findLast((job) => job.kind === "events" && job.module === module);
    if (last && last.deadlineMs === deadlineMs && (last.input as DockEvent[]).length < EVENT_BATCH) {
      (last.input as DockEvent[]).push(event);
    } else {
      plugin.queue.push({
        module,
        kind: "events",
        input: [event],
        deadlineMs,
        resolve: () => {},
        reject: () => {},
      });
    }
    plugin.queuedEvents++;
    while (plugin.queuedEvents > PLUGIN_EVENT_BACKLOG) {
      const oldest = plugin.queue.find((job) => job.kind === "events")!;
      const events = oldest.input as DockEvent[];
      events.shift();
      plugin.queuedEvents--;
      plugin.counters.dropped++;
      if (events.length === 0) plugin.queue.splice(plugin.queue.indexOf(oldest), 1);
    }
    this.#next(plugin);
  }

  #next(plugin: Plugin): void {
    const limit = this.#o.concurrency ?? PLUGIN_CONCURRENCY;
    while (plugin.running < limit && plugin.queue.length) {
      const job = plugin.queue.shift()!;
      if (job.kind === "events") plugin.queuedEvents -= (job.input as DockEvent[]).length;
      plugin.running++;
      this.#run(plugin, job).then(job.resolve, job.reject).finally(() => {
        plugin.running--;
        this.#next(plugin);
      });
    }
  }

  async #run(plugin: Plugin, job: Job): Promise<unknown> {
    const count = job.kind === "events" ? (job.input as DockEvent[]).length : 1;
    if (!this.#runnable(plugin)) {
      if (job.kind === "events") plugin.counters.dropped += count;
      throw new DockError("plugin_off", `plugin '${plugin.id}' is ${plugin.failed ? "failed" : "off"}`, {
        status: 409,
      });
    }
    const spec = await this.#spec(plugin, job.module);
    const cold = !this.#host.running(spec.key);
    if (cold) plugin.starting++;
    plugin.counters.calls += count;
    plugin.workers.add(spec.key);
    plugin.busy.set(spec.key, (plugin.busy.get(spec.key) ?? 0) + 1);
    clearTimeout(plugin.idle.get(spec.key));
    let result: CallResult;
    try {
      result = await this.#host.call(spec, job.kind, job.input, job.deadlineMs);
    } catch (error) {
      this.#failure(plugin, job, error, count);
      throw error;
    } finally {
      if (cold) plugin.starting--;
      const busy = (plugin.busy.get(spec.key) ?? 1) - 1;
      if (busy > 0) plugin.busy.set(spec.key, busy);
      else {
        plugin.busy.delete(spec.key);
        this.#keepWarm(plugin, spec.key);
      }
    }
    if (result.coldMs !== undefined) plugin.counters.cold_starts++;
    if (job.kind === "events") {
      const errors = (result.value as EventsOutput | null)?.errors ?? [];
      if (errors.length > 0) {
        const [, first] = errors[0];
        this.#failure(plugin, job, new CallError("failed", first), errors.length);
        if (errors.length < count) plugin.inARow = 0; // some of the batch went through
        return result.value;
      }
    }
    plugin.inARow = 0;
    return result.value;
  }

  /** Counts a failed call (`count` events, for a batch) and fails the plugin after too many in a row. */
  #failure(plugin: Plugin, job: Job, error: unknown, count = 1): void {
    plugin.counters.failures += count;
    plugin.inARow++;
    const failure = error instanceof CallError ? error.failure : "failed";
    if (failure === "timeout") plugin.counters.timeouts++;
    if (failure === "crashed") plugin.counters.restarts++;
    const message = (error as Error).message ?? String(error);
    plugin.lastError = `${handlerOf(job.kind)} ${failure === "timeout" ? "timed out" : "failed"}: ${message}`
      .slice(
        0,
        1000,
      );
    plugin.log.write("error", plugin.lastError);
    // A module that does not load will not load on the next call either: failed at once.
    const broken = failure === "failed" && message.startsWith("the module did not load");
    if ((plugin.inARow >= FAILURES_TO_FAIL || broken) && !plugin.failed) {
      plugin.failed = broken
        ? `${plugin.lastError}; fix it and enable it again`
        : `failed ${FAILURES_TO_FAIL} times in a row (last: ${plugin.lastError}); enable it again`;
      plugin.log.write("error", plugin.failed);
      this.#stopWorkers(plugin);
      this.#o.bus.publish({
        type: "plugin.failed",
        origin: "dock",
        data: { id: plugin.id, where: this.#o.where, error: plugin.lastError },
      });
    }
  }

  #keepWarm(plugin: Plugin, key: string): void {
    clearTimeout(plugin.idle.get(key));
    if (this.#closed) return;
    const timer = setTimeout(() => {
      plugin.idle.delete(key);
      this.#host.stop(key);
    }, this.#o.idleMs ?? IDLE_MS);
    plugin.idle.set(key, timer);
  }

  #stopWorkers(plugin: Plugin): void {
    for (const timer of plugin.idle.values()) clearTimeout(timer);
    plugin.idle.clear();
    for (const key of plugin.workers) this.#host.stop(key);
    plugin.workers.clear();
  }

  async #spec(plugin: Plugin, module: string): Promise<WorkerSpec> {
    const path = await this.#modulePath(plugin, module);
    return {
      key: workerKey(plugin, module),
      module: path,
      grant: this.#grant(plugin),
      label: `plugin:${plugin.id}`,
    };
  }

  /** What a plugin's workers get: its folder, and in its data folder what it was granted. */
  #grant(plugin: Plugin): WorkerGrant {
    const grant = normalizePermissions(this.#enabled.enabled[plugin.id]?.permissions);
    const data = join(this.#dataRoot, plugin.id);
    const inData = (p: string) => p === "." ? data : join(data, p);
    return {
      read: [plugin.realDir, ...grant.read.map(inData), ...grant.write.map(inData)],
      write: grant.write.map(inData),
      net: grant.net,
      env: grant.env,
    };
  }

  /** Every runnable plugin's grant: a host is started with them all, so enabling one rarely restarts it. */
  #knownGrants(): WorkerGrant[] {
    return [...this.#plugins.values()].filter((p) => this.#runnable(p)).map((p) => this.#grant(p));
  }

  #pluginOf(spec: WorkerSpec): Plugin | undefined {
    return spec.label.startsWith("plugin:")
      ? this.#plugins.get(spec.label.slice("plugin:".length))
      : undefined;
  }

  // -------------------------------------------------------------------------------------------------
  // Events and gates

  /**
   * Called by the bus as it publishes: only keeps the event. Matching and queueing for every plugin
   * happen in a microtask after the publish, so the bus's other subscribers (SSE clients) never wait
   * for them.
   */
  #onEvent(event: DockEvent): void {
    if (event.type.startsWith("hook.")) return;
    this.#incoming.push(event);
    if (this.#incoming.length === 1) queueMicrotask(() => this.#dispatchIncoming());
  }

  #dispatchIncoming(): void {
    for (const event of this.#incoming.splice(0)) this.#dispatch(event);
  }

  #dispatch(event: DockEvent): void {
    for (const plugin of this.#plugins.values()) {
      const hooks = plugin.manifest?.hooks;
      if (!hooks || event.origin === `plugin:${plugin.id}` || !this.#runnable(plugin)) continue;
      for (const hook of hooksFor(hooks, event)) {
        if (!hook.module) continue; // shell hooks run with the host's own (see `extraHooks`)
        this.#deliver(plugin, hook.module, event, hookTimeoutMs(hook));
      }
    }
  }

  /** Enabled plugins' gates (module and shell) and shell hooks, for the host's hooks engine. */
  extraHooks(): ExtraHook[] {
    const extra: ExtraHook[] = [];
    for (const plugin of this.#plugins.values()) {
      if (!plugin.manifest?.hooks || !this.#runnable(plugin)) continue;
      for (const hook of plugin.manifest.hooks) {
        const source = `plugin '${plugin.id}'`;
        const ownOrigin = `plugin:${plugin.id}`;
        if (hook.run !== undefined) {
          extra.push({ hook, source, ownOrigin });
        } else if (isGate(hook)) {
          extra.push({ hook, source, ownOrigin, run: (input) => this.#gate(plugin, hook, input) });
        }
      }
    }
    return extra;
  }

  async #gate(plugin: Plugin, hook: HookConfig, input: string): Promise<HookResult> {
    const started = performance.now();
    try {
      const answer = await this.#call(
        plugin,
        hook.module!,
        "gate",
        JSON.parse(input),
        hookTimeoutMs(hook),
      ) as {
        allow?: boolean;
        reason?: string;
      };
      const allow = answer?.allow !== false;
      return {
        code: allow ? 0 : 1,
        timedOut: false,
        durationMs: performance.now() - started,
        stderr: allow ? "" : (answer.reason || `refused by plugin '${plugin.id}'`),
      };
    } catch (error) {
      // A gate that cannot answer refuses: a broken guard must not let everything through.
      const timedOut = error instanceof CallError && error.failure === "timeout";
      return {
        code: timedOut ? null : 1,
        timedOut,
        durationMs: performance.now() - started,
        stderr: `plugin '${plugin.id}' could not answer its gate: ${(error as Error).message}`,
      };
    }
  }

  /**
   * Runs module hooks and gates of hooks files and configs (`"module": "./hooks/x.ts"`) in the sandbox,
   * with read of the module's folder and of where it runs; shell hooks go to `shell`.
   */
  executor(shell: HookExecutor = shellExecutor): HookExecutor {
    return {
      run: (hook, input, context) => {
        if (hook.module === undefined) return shell.run(hook, input, context);
        return this.#runFileModule(hook, input, context.moduleBase, context.moduleRoot, context.cwd);
      },
    };
  }

  async #runFileModule(
    hook: HookConfig,
    input: string,
    base: string | undefined,
    root: string | undefined,
    cwd: string | undefined,
  ): Promise<HookResult> {
    const started = performance.now();
    if (!base || !root) throw new Error(`module hook ${hook.module}: no folder to find it in`);
    const spec = await fileModuleSpec({ module: hook.module!, base, root, cwd }, "hook");
    const gate = isGate(hook);
    try {
      const { value } = await this.#host.call(
        spec,
        gate ? "gate" : "event",
        JSON.parse(input),
        hookTimeoutMs(hook),
      );
      this.#host.stop(spec.key); // a hook file's module is not kept warm: files change under it
      const answer = value as { allow?: boolean; reason?: string } | null;
      const refused = gate && answer?.allow === false;
      return {
        code: refused ? 1 : 0,
        timedOut: false,
        durationMs: performance.now() - started,
        stderr: refused ? answer?.reason || `refused by ${hook.module}` : "",
      };
    } catch (error) {
      this.#host.stop(spec.key);
      const timedOut = error instanceof CallError && error.failure === "timeout";
      return {
        code: timedOut ? null : 1,
        timedOut,
        durationMs: performance.now() - started,
        stderr: `${hook.module}: ${(error as Error).message}`,
      };
    }
  }

  /**
   * Runs a flow's `module` step: the module's default export `step(vars, ctx)` in the sandbox, with read
   * of the module's folder and of `cwd`; what it returns is the step's output. Its `ctx.emit` events
   * carry `origin` = `label` (`flow:<id>`). Throws on failure; a timeout is a `CallError` "timeout".
   */
  async runStep(options: StepRun): Promise<unknown> {
    const spec = { ...await fileModuleSpec(options, "step"), label: options.label };
    try {
      return (await this.#host.call(spec, "step", options.input, options.timeoutMs)).value;
    } finally {
      this.#host.stop(spec.key); // not kept warm: the module's file may change before the next run
    }
  }

  // -------------------------------------------------------------------------------------------------
  // fetch, files, themes

  /** Runs a plugin's `fetch` with `request`; the plugin sees the path after `/fn` (`subpath`). */
  async fetch(id: string, subpath: string, request: Request): Promise<Response> {
    const plugin = this.#plugin(id);
    if (!this.#runnable(plugin)) {
      throw new DockError("plugin_off", `plugin '${id}' is ${plugin.failed ? "failed" : "not enabled"}`, {
        status: 409,
      });
    }
    if (!plugin.manifest?.main) {
      throw new DockError("not_found", `plugin '${id}' has no main module`, { status: 404 });
    }
    const body = request.method === "GET" || request.method === "HEAD"
      ? undefined
      : await readBounded(request);
    const url = new URL(request.url);
    const headers = [...request.headers].filter(([name]) => !PRIVATE_HEADERS.has(name.toLowerCase()));
    let answer: FetchOutput;
    try {
      answer = await this.#call(plugin, plugin.manifest.main, "fetch", {
        method: request.method,
        url: `http://${id}.plugin${subpath}${url.search}`,
        headers,
        ...(body ? { body: toBase64(body) } : {}),
      }, FETCH_TIMEOUT_MS) as FetchOutput;
    } catch (error) {
      throw callErrorToDock(error, `plugin '${id}'`);
    }
    const status = Number.isInteger(answer?.status) && answer.status >= 200 && answer.status <= 599
      ? answer.status
      : 502;
    const responseHeaders = new Headers();
    for (const [name, value] of Array.isArray(answer?.headers) ? answer.headers : []) {
      try {
        if (!HOP_HEADERS.has(String(name).toLowerCase())) responseHeaders.append(String(name), String(value));
      } catch {
        // a header the plugin got wrong is left out
      }
    }
    const bytes = typeof answer?.body === "string" ? fromBase64(answer.body) : new Uint8Array();
    const noBody = status === 204 || status === 304 || request.method === "HEAD";
    return new Response(noBody ? null : bytes, { status, headers: responseHeaders });
  }

  /**
   * A call a plugin's `ui` panel asks the app to make (`POST plugins/{id}/ui-api`): the panel runs in a
   * sandboxed frame with no token and no network, so what it may reach is exactly what the plugin's own
   * `ctx.api` may, by the same scopes, counted the same way when refused (403).
   */
  async panelApi(id: string, request: PanelApiRequest): Promise<PanelApiResult> {
    const plugin = this.#plugin(id);
    if (!plugin.manifest?.ui?.length) {
      throw new DockError("no_panel", `plugin '${id}' offers no ui panel`, { status: 404 });
    }
    const off = this.#offReason(plugin);
    if (off !== null) throw new DockError("plugin_off", `plugin '${id}' is off: ${off}`, { status: 409 });
    const grant = normalizePermissions(this.#enabled.enabled[plugin.id]?.permissions);
    const refuse = (message: string): never => {
      plugin.counters.refused++;
      plugin.log.write("warn", `refused (ui panel): ${message}`);
      throw new DockError("refused", message.replace(/^ctx\.api: /, ""), { status: 403 });
    };
    if (plugin.apiInFlight >= API_IN_FLIGHT) refuse(`more than ${API_IN_FLIGHT} calls at once`);
    plugin.apiInFlight++;
    try {
      return await this.#apiCall(plugin, grant.scopes, [request.method, request.path, request.body], refuse);
    } finally {
      plugin.apiInFlight--;
    }
  }

  /** True when the plugin is enabled and may run (what serving its panel without a token needs). */
  isOn(id: string): boolean {
    const plugin = this.#plugins.get(id);
    return plugin !== undefined && this.#offReason(plugin) === null;
  }

  /** A file of a plugin's folder listed in its `ui` (or `themes`): never outside it. */
  async file(id: string, path: string): Promise<Response> {
    const plugin = this.#plugin(id);
    if (!plugin.manifest) {
      throw new DockError("invalid_plugin", plugin.invalid ?? "the plugin does not load", { status: 422 });
    }
    const segments = path.split("/");
    if (
      path.length === 0 || path.length > 1024 || path.includes("\0") || path.includes("\\") ||
      segments.some((s) => s === "" || s === "." || s === "..")
    ) {
      throw new DockError("invalid_path", "a plugin file is a path inside its folder, without . or ..", {
        status: 400,
      });
    }
    const listed = [...(plugin.manifest.ui ?? []), ...(plugin.manifest.themes ?? [])].some((entry) =>
      entry.endsWith("/") ? path.startsWith(entry) : path === entry
    );
    if (!listed) throw new DockError("not_found", `plugin '${id}' does not offer ${path}`, { status: 404 });
    const real = await Deno.realPath(join(plugin.dir, path)).catch(() => null);
    if (!real || !inside(real, plugin.realDir)) {
      throw new DockError("not_found", `plugin '${id}' has no file ${path}`, { status: 404 });
    }
    const info = await Deno.stat(real);
    if (!info.isFile) throw new DockError("not_found", `plugin '${id}' has no file ${path}`, { status: 404 });
    if (info.size > MAX_FETCH_BODY) {
      throw new DockError("too_large", `${path} is larger than ${MAX_FETCH_BODY} bytes`, { status: 413 });
    }
    return new Response(await Deno.readFile(real), {
      headers: { "content-type": CONTENT_TYPES[extname(real).toLowerCase()] ?? "application/octet-stream" },
    });
  }

  /** Themes of enabled plugins, each `{ ...theme, id: "<plugin>/<file>", plugin }`. */
  async themes(): Promise<Record<string, unknown>[]> {
    const themes: Record<string, unknown>[] = [];
    for (const plugin of this.#plugins.values()) {
      if (!plugin.manifest?.themes || this.#offReason(plugin) !== null) continue;
      for (const file of plugin.manifest.themes) {
        const id = `${plugin.id}/${basename(file, extname(file))}`;
        try {
          const real = await Deno.realPath(join(plugin.dir, file));
          if (!inside(real, plugin.realDir)) throw new Error("leads outside the plugin's folder");
          const theme = JSON.parse(await Deno.readTextFile(real));
          if (!theme || typeof theme !== "object" || Array.isArray(theme)) {
            throw new Error("is not a JSON object");
          }
          themes.push({ ...theme, id, plugin: plugin.id });
        } catch (error) {
          themes.push({ id, plugin: plugin.id, error: `${file}: ${(error as Error).message}` });
        }
      }
    }
    return themes;
  }

  // -------------------------------------------------------------------------------------------------
  // What workers ask of dock

  async #answer(spec: WorkerSpec, op: ContextOp, args: unknown[]): Promise<unknown> {
    const plugin = this.#pluginOf(spec);
    if (!plugin) {
      // A hook file's module: it may announce events (as its file's shell hooks may), nothing more.
      if (op !== "emit") throw new Error(`ctx.${op} is for plugins; a hook file's module may emit and log`);
      return this.#emit(spec.label, args, (message) => {
        throw new Error(message);
      });
    }
    const grant = normalizePermissions(this.#enabled.enabled[plugin.id]?.permissions);
    const refuse = (message: string): never => {
      plugin.counters.refused++;
      plugin.log.write("warn", `refused: ${message}`);
      throw new Error(message);
    };
    switch (op) {
      case "api": {
        // A worker can ask faster than the API answers: bounded, so it cannot pile work on the daemon.
        if (plugin.apiInFlight >= API_IN_FLIGHT) refuse(`ctx.api: more than ${API_IN_FLIGHT} calls at once`);
        plugin.apiInFlight++;
        try {
          return await this.#apiCall(plugin, grant.scopes, args, refuse);
        } finally {
          plugin.apiInFlight--;
        }
      }
      case "emit":
        if (!grant.scopes.includes("events:emit")) {
          refuse("ctx.emit needs the scope events:emit, not granted");
        }
        return this.#emit(`plugin:${plugin.id}`, args, refuse, () => {
          plugin.counters.refused++;
          throw new Error(`ctx.emit: more than ${EMIT_PER_SECOND} events a second`);
        });
      case "kv.get":
        return await plugin.kv.get(args[0]);
      case "kv.set":
        return await plugin.kv.set(args[0], args[1]);
      case "kv.delete":
        return await plugin.kv.delete(args[0]);
      case "kv.list":
        return await plugin.kv.list(args[0]);
      default:
        return refuse(`unknown request ${String(op).slice(0, 40)}`);
    }
  }

  /**
   * Announces what a module asked to, as `origin`: a valid event type (not `hook.*`), object data, and at
   * most {@linkcode EMIT_BURST} at once then {@linkcode EMIT_PER_SECOND} a second per origin (a loop that
   * emits must not flood the journal every client reads).
   */
  #emit(
    origin: string,
    args: unknown[],
    refuse: (message: string) => never,
    quiet: () => never = () => refuse("ctx.emit: too many events"),
  ): { id?: number } {
    const [type, data] = args;
    if (typeof type !== "string" || !/^[a-z0-9_-]+(\.[a-z0-9_-]+)*$/.test(type) || type.startsWith("hook.")) {
      refuse(`ctx.emit: ${JSON.stringify(type)?.slice(0, 80)} is not an event type a module may announce`);
    }
    if (data !== undefined && (typeof data !== "object" || data === null || Array.isArray(data))) {
      refuse("ctx.emit: data must be an object");
    }
    const now = performance.now();
    const bucket = this.#emitBuckets.get(origin) ?? { tokens: EMIT_BURST, at: now, refusing: false };
    bucket.tokens = Math.min(EMIT_BURST, bucket.tokens + ((now - bucket.at) / 1000) * EMIT_PER_SECOND);
    bucket.at = now;
    this.#emitBuckets.set(origin, bucket);
    if (bucket.tokens < 1) {
      // Counted every time, said once per flood: a refusal log line per event would be its own flood, and
      // would push what else the plugin was refused out of its (bounded) log.
      if (!bucket.refusing) {
        bucket.refusing = true;
        refuse(`ctx.emit: more than ${EMIT_PER_SECOND} events a second (further ones refused quietly)`);
      }
      quiet();
    }
    // A flood goes on while the events that trickle through at the rate take every token as it comes;
    // it is over once the bucket has filled up again (the plugin kept below the rate for a while).
    if (bucket.tokens >= EMIT_BURST - 1) bucket.refusing = false;
    bucket.tokens--;
    const event = this.#o.bus.publish({
      type: type as string,
      origin,
      data: data as Record<string, unknown>,
    });
    return { id: event.id };
  }

  async #apiCall(
    plugin: Plugin,
    scopes: string[],
    args: unknown[],
    refuse: (message: string) => never,
  ): Promise<{ status: number; body: unknown }> {
    const [method, path, body] = args;
    if (
      typeof method !== "string" || !["GET", "POST", "PUT", "PATCH", "DELETE"].includes(method.toUpperCase())
    ) {
      refuse("ctx.api: the method must be GET, POST, PUT, PATCH or DELETE");
    }
    if (typeof path !== "string" || path.length > 2048 || path.includes("\0")) {
      refuse("ctx.api: the path must be a string");
    }
    const verb = (method as string).toUpperCase();
    // The URL is parsed first and the scope checked on what it resolves to (`a/%2e%2e/exec` is `exec`).
    const url = new URL(
      `/v1/${(path as string).replace(/^\/+/, "").replace(/^v1\//, "")}`,
      "http://127.0.0.1",
    );
    const route = url.pathname.slice("/v1/".length);
    const scope = url.pathname.startsWith("/v1/") ? requiredScope(this.#o.side, verb, route) : null;
    if (!scope) refuse(`ctx.api: ${verb} ${route} is not open to plugins`);
    if (!scopes.includes(scope!)) refuse(`ctx.api: ${verb} ${route} needs the scope ${scope}, not granted`);
    if (!this.#api) throw new Error("the API is not ready");
    const response = await this.#api(
      new Request(url, {
        method: verb,
        headers: { "content-type": "application/json", "x-dock-origin": `plugin:${plugin.id}` },
        body: body === undefined || verb === "GET" ? undefined : JSON.stringify(body),
      }),
    );
    if ((response.headers.get("content-type") ?? "").includes("text/event-stream")) {
      await response.body?.cancel();
      refuse(`ctx.api: ${verb} ${route} is a stream; plugins receive events through their hooks`);
    }
    const bytes = await readBounded(response);
    const text = new TextDecoder().decode(bytes);
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: the text as it is
    }
    return { status: response.status, body: parsed };
  }
}

/** Headers a plugin's `fetch` never sees: the caller's credentials are dock's, not the plugin's. */
const PRIVATE_HEADERS = new Set(["authorization", "cookie", "proxy-authorization", "x-dock-token"]);
const HOP_HEADERS = new Set(["connection", "keep-alive", "transfer-encoding", "upgrade", "content-length"]);

const CONTENT_TYPES: Record<string, string> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".jpg": "image/jpeg",
  ".jpeg": "image/jpeg",
  ".gif": "image/gif",
  ".webp": "image/webp",
  ".ico": "image/x-icon",
  ".txt": "text/plain; charset=utf-8",
  ".md": "text/markdown; charset=utf-8",
  ".woff2": "font/woff2",
};

/** A flow's `module` step, as `Plugins.runStep` runs it. */
export interface StepRun {
  /** The module, relative to `base`. */
  module: string;
  base: string;
  /** The folder it must stay inside (symlinks included). */
  root: string;
  /** Where it runs: readable too. */
  cwd?: string;
  /** Its events' origin (`flow:<id>`). */
  label: string;
  input: Record<string, string>;
  timeoutMs: number;
}

/**
 * The worker of a module named by a file outside any plugin (a hook file, a flow step): found relative to
 * `base`, never outside `root`, granted read of its own folder and of `cwd`, nothing else.
 */
async function fileModuleSpec(
  where: { module: string; base: string; root: string; cwd?: string },
  kind: "hook" | "step",
): Promise<WorkerSpec> {
  const path = await Deno.realPath(join(where.base, where.module)).catch(() => null);
  const realRoot = await Deno.realPath(where.root).catch(() => where.root);
  if (!path || !inside(path, realRoot)) {
    throw new Error(`module ${where.module}: ${path ? "leads outside " + realRoot : "does not exist"}`);
  }
  const cwd = where.cwd ? await Deno.realPath(where.cwd).catch(() => where.cwd!) : undefined;
  const read = [dirname(path), ...(cwd ? [cwd] : [])];
  return {
    key: `${kind}:${path}:${read.join(":")}`,
    module: path,
    grant: { read, write: [], net: [], env: [] },
    label: `${kind}:${relative(realRoot, path)}`,
  };
}

function workerKey(plugin: Plugin, module: string): string {
  return `plugin:${plugin.id}:${module}`;
}

/** Every module a manifest names (main and module hooks). */
function modulesOf(manifest: PluginManifest | undefined): Set<string> {
  const modules = new Set<string>();
  if (manifest?.main) modules.add(manifest.main);
  for (const hook of manifest?.hooks ?? []) if (hook.module) modules.add(hook.module);
  return modules;
}

function inside(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith("/") ? root : `${root}/`);
}

/** A body read whole, refused past {@linkcode MAX_FETCH_BODY}. */
function readBounded(message: Request | Response): Promise<Uint8Array<ArrayBuffer>> {
  return readLimited(
    message.body,
    MAX_FETCH_BODY,
    () => new DockError("body_too_large", `the body is larger than ${MAX_FETCH_BODY} bytes`, { status: 413 }),
  );
}

/** The deepest and the most entries {@linkcode symlinkOut} walks before it gives up (and refuses). */
const SYMLINK_WALK = { depth: 32, entries: 20_000 };

/**
 * The first symlink under `dir` that leads outside `realDir` (or nowhere), described, or null. Every
 * entry is looked at, `node_modules` included; a folder too big to check is refused the same way.
 */
async function symlinkOut(dir: string, realDir: string): Promise<string | null> {
  let seen = 0;
  const walk = async (folder: string, depth: number): Promise<string | null> => {
    if (depth > SYMLINK_WALK.depth) return `${relative(dir, folder)} is nested too deep to check`;
    for await (const entry of Deno.readDir(folder)) {
      if (++seen > SYMLINK_WALK.entries) return `more than ${SYMLINK_WALK.entries} files to check`;
      const path = join(folder, entry.name);
      if (entry.isSymlink) {
        const target = await Deno.realPath(path).catch(() => null);
        if (!target || !inside(target, realDir)) {
          return `${relative(dir, path)} is a symlink ${
            target ? `out of its folder (to ${target})` : "to nothing"
          }`;
        }
      } else if (entry.isDirectory) {
        const found = await walk(path, depth + 1);
        if (found) return found;
      }
    }
    return null;
  };
  return await walk(dir, 0);
}

/**
 * What changes when a plugin's files change: the path, size and mtime of each file in its folder (a
 * bounded walk). Null when the folder is not a folder.
 */
async function folderSignature(dir: string): Promise<string | null> {
  const info = await Deno.stat(dir).catch(() => null);
  if (!info?.isDirectory) return null;
  const parts: string[] = [];
  const walk = async (folder: string, depth: number) => {
    if (depth > 6 || parts.length > 2000) return;
    let entries: Deno.DirEntry[];
    try {
      entries = await Array.fromAsync(Deno.readDir(folder));
    } catch {
      return;
    }
    for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      if (entry.name === "node_modules" || entry.name === ".git") continue;
      const path = join(folder, entry.name);
      const stat = await Deno.stat(path).catch(() => null);
      if (!stat) continue;
      if (stat.isDirectory) await walk(path, depth + 1);
      else parts.push(`${relative(dir, path)}:${stat.size}:${stat.mtime?.getTime()}`);
    }
  };
  await walk(dir, 0);
  return parts.join("|");
}
