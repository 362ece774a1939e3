/**
 * What plugins run, and how it ends: each call of a plugin's module (an event batch, a gate, a `fetch`)
 * in a sandboxed worker (see `module_host.ts`) with a deadline, a concurrency limit and a bounded
 * backlog; workers started on the first call and stopped after being idle (5 minutes by default), so
 * installed plugins cost nothing while nothing calls them; failures counted, and a plugin that fails or
 * times out 5 times in a row made `failed` until it is enabled again. Events only queue here, on the
 * publishing path, so nothing a plugin does holds up the bus.
 *
 * Module hooks of `hooks.json` and a location's config, and flows' `module` steps, run under the same
 * sandbox: read of the module's folder and of the worktree, nothing else.
 *
 * @module
 */
import type { DockEvent, HookConfig } from "../client/wire.ts";
import { DockError } from "../client/errors.ts";
import type { Clock } from "../core/clock.ts";
import { ClockDeadlines } from "../core/deadlines.ts";
import type { EventBus } from "../core/events.ts";
import type { Log } from "../core/log.ts";
import {
  type ExtraHook,
  type HookExecutor,
  type HookResult,
  hooksFor,
  hookTimeoutMs,
  isGate,
  shellExecutor,
} from "../core/hooks.ts";
import { CallError, callErrorToDock, type CallResult } from "./call_error.ts";
import { ModuleHost, type ModuleHostStats } from "./module_host.ts";
import {
  type CallKind,
  type ContextOp,
  type EventsOutput,
  type FetchOutput,
  handlerOf,
  type WorkerSpec,
} from "./protocol.ts";
import { answeredHook, failedHook, fetchInput, fetchResponse, fileModuleSpec } from "./module_io.ts";
import type { JobWork, Plugin } from "./plugin_state.ts";
import { modulesOf, type PluginRegistry, workerKey } from "./registry.ts";
import {
  EVENT_BATCH,
  FAILURES_TO_FAIL,
  FETCH_TIMEOUT_MS,
  HOST_IDLE_MS,
  PLUGIN_BACKLOG,
  PLUGIN_CONCURRENCY,
  PLUGIN_EVENT_BACKLOG,
  WORK_AFTER_RESPONSE_MS,
} from "./knobs.ts";

/** Options of {@linkcode PluginSupervisor}. */
export interface SupervisorOptions {
  registry: PluginRegistry;
  bus: EventBus;
  /** `laptop`, or the box's name (in `plugin.failed`). */
  where: string;
  /** The host's private folder (its socket). */
  dir: string;
  /** What calls' deadlines and workers' idle stops run on. */
  clock: Clock;
  /** The process's own log: output of a hook file's module, or of the host, that no plugin owns. */
  log: Log;
  /** What a worker asks of dock (its `ctx`). */
  onRequest(spec: WorkerSpec, op: ContextOp, args: unknown[]): Promise<unknown>;
  /** V8 heap cap per worker and host, MB. @default {128} */
  memoryMb?: number;
  /** Resident memory at which the host process is killed, MB. @default {1024} */
  rssLimitMb?: number;
  /** How long a worker is kept after its last call; never more than the default. @default {WORK_AFTER_RESPONSE_MS} */
  idleMs?: number;
  /** How long the host process is kept with no worker. @default {idleMs when set, else HOST_IDLE_MS} */
  hostIdleMs?: number;
  /** @default {PLUGIN_CONCURRENCY} */
  concurrency?: number;
  /** Folders module hooks of hooks files and configs may be in (so one host covers them). */
  baseRead?: () => string[];
  /** Whether another process's copy of plugin `id` handles `event` instead (the laptop and a local box). */
  shadowed?: (id: string, event: DockEvent) => boolean;
}

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

/** Runs plugins' calls in the module host, within their limits. */
export class PluginSupervisor {
  #o: SupervisorOptions;
  #host: ModuleHost;
  #incoming: DockEvent[] = [];
  #closed = false;
  /** The worker spec of each module of a plugin whose workers run (see `#spec`). */
  #specs = new WeakMap<Plugin, Map<string, WorkerSpec>>();
  /** Workers' keep-warm deadlines, put off by every call: on one timer (see ClockDeadlines). */
  #warmth: ClockDeadlines;

  constructor(options: SupervisorOptions) {
    this.#o = options;
    this.#warmth = new ClockDeadlines(options.clock);
    const registry = options.registry;
    this.#host = new ModuleHost({
      dir: options.dir,
      clock: options.clock,
      log: options.log,
      memoryMb: options.memoryMb,
      rssLimitMb: options.rssLimitMb,
      idleMs: options.hostIdleMs ?? options.idleMs ?? HOST_IDLE_MS,
      baseRead: options.baseRead,
      knownGrants: () => registry.knownGrants(),
      env: (names) =>
        Object.fromEntries(names.flatMap((n) => {
          const value = Deno.env.get(n);
          return value === undefined ? [] : [[n, value]];
        })),
      onRequest: (spec, op, args) => options.onRequest(spec, op, args),
      onLog: (spec, level, text) => {
        const plugin = registry.pluginOf(spec);
        if (plugin) plugin.log.write(level, text);
        else options.log.info(`${spec.label}: ${text}`); // a hook file's module: the process's own log
      },
      onHostOutput: (line, spec) => {
        // Written past its console (straight to the process's stdout): into its log when it can only be
        // its; the process's own log otherwise (bounded by the host's output budget either way).
        const plugin = spec && registry.pluginOf(spec);
        if (plugin) plugin.log.write("info", `output: ${line}`);
        else options.log.info(`plugin host: ${line}`);
      },
      onWorkerStopped: (spec, error) => {
        const plugin = registry.pluginOf(spec);
        if (!plugin) return;
        plugin.idle.get(spec.key)?.();
        plugin.idle.delete(spec.key);
        plugin.workers.delete(spec.key);
        if (error) plugin.log.write("error", `worker ended: ${error}`);
      },
    });
  }

  /** The host's counters (generations, restarts, workers). */
  stats(): ModuleHostStats {
    return this.#host.stats();
  }

  /** Whether one of the plugin's workers runs now. */
  running(plugin: Plugin): boolean {
    return [...modulesOf(plugin.manifest)].some((m) => this.#host.running(workerKey(plugin, m)));
  }

  /** Fails what is queued and kills the host (calls in flight fail). */
  close(): void {
    this.#closed = true;
    for (const plugin of this.#o.registry.all()) {
      for (const cancel of plugin.idle.values()) cancel();
      plugin.log.close();
      plugin.queuedEvents = 0;
      for (const job of plugin.queue.splice(0)) {
        job.reject(new DockError("plugin_closed", "the plugin host is closing", { status: 503 }));
      }
    }
    this.#host.close();
  }

  /** Stops a plugin's workers and fails what it has queued (it was disabled). */
  halt(plugin: Plugin): void {
    this.stopWorkers(plugin);
    plugin.queuedEvents = 0;
    for (const job of plugin.queue.splice(0)) {
      job.reject(new DockError("plugin_off", `plugin '${plugin.id}' was disabled`, { status: 409 }));
    }
  }

  /** Stops a plugin's workers (the next call starts them again). */
  stopWorkers(plugin: Plugin): void {
    plugin.context = undefined;
    this.#specs.delete(plugin);
    for (const cancel of plugin.idle.values()) cancel();
    plugin.idle.clear();
    for (const key of plugin.workers) this.#host.stop(key);
    plugin.workers.clear();
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
    // One that may run now runs at once, its result the caller's: no queue, no promise around its run.
    if (plugin.queue.length === 0 && plugin.running < this.#concurrency) {
      return this.#start(plugin, { module, kind, input, deadlineMs });
    }
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
    while (plugin.running < this.#concurrency && plugin.queue.length) {
      const job = plugin.queue.shift()!;
      if (job.kind === "events") plugin.queuedEvents -= (job.input as DockEvent[]).length;
      this.#start(plugin, job).then(job.resolve, job.reject);
    }
  }

  /** Calls a plugin runs at once. */
  get #concurrency(): number {
    return this.#o.concurrency ?? PLUGIN_CONCURRENCY;
  }

  /** Runs `job` in one of the plugin's slots, which its end gives back to the next in the queue. */
  #start(plugin: Plugin, job: JobWork): Promise<unknown> {
    plugin.running++;
    const run = this.#run(plugin, job);
    const done = () => {
      plugin.running--;
      this.#next(plugin);
    };
    run.then(done, done);
    return run;
  }

  async #run(plugin: Plugin, job: JobWork): Promise<unknown> {
    const count = job.kind === "events" ? (job.input as DockEvent[]).length : 1;
    if (!this.#o.registry.runnable(plugin)) {
      if (job.kind === "events") plugin.counters.dropped += count;
      throw new DockError("plugin_off", `plugin '${plugin.id}' is ${plugin.failed ? "failed" : "off"}`, {
        status: 409,
      });
    }
    const guarded = this.#o.registry.guard(plugin);
    const unsafe = guarded instanceof Promise ? await guarded : guarded;
    if (unsafe) {
      if (job.kind === "events") plugin.counters.dropped += count;
      throw new DockError("plugin_off", `plugin '${plugin.id}' is off: ${unsafe}`, { status: 409 });
    }
    const spec = this.#specs.get(plugin)?.get(job.module) ?? await this.#spec(plugin, job.module);
    const cold = !this.#host.running(spec.key);
    if (cold) plugin.starting++;
    plugin.counters.calls += count;
    plugin.workers.add(spec.key);
    plugin.busy.set(spec.key, (plugin.busy.get(spec.key) ?? 0) + 1);
    plugin.idle.get(spec.key)?.();
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
    plugin.lastError = undefined; // a call went through: the last one's error is stale
    return result.value;
  }

  /** Counts a failed call (`count` events, for a batch) and fails the plugin after too many in a row. */
  #failure(plugin: Plugin, job: JobWork, error: unknown, count = 1): void {
    plugin.counters.failures += count;
    const failure = error instanceof CallError ? error.failure : "failed";
    const message = (error as Error).message ?? String(error);
    const broken = failure === "failed" && message.startsWith("the module did not load");
    // A `fetch` handler's own throw answers its caller 500 and is logged, but never counts toward
    // switching the plugin off: the caller chose the request, and a stranger's malformed ones must not
    // be able to turn a plugin off. What is the plugin's alone counts: a load failure, a timeout, a crash,
    // a throw of an event or gate handler (whose input is dock's).
    const callersDoing = job.kind === "fetch" && failure === "failed" && !broken;
    if (!callersDoing) plugin.inARow++;
    if (failure === "timeout") plugin.counters.timeouts++;
    if (failure === "crashed") plugin.counters.restarts++;
    plugin.lastError = `${handlerOf(job.kind)} ${failure === "timeout" ? "timed out" : "failed"}: ${message}`
      .slice(0, 1000);
    plugin.log.write("error", plugin.lastError);
    // A module that does not load will not load on the next call either: failed at once (until its
    // files change: the registry tries it again then).
    // Only a loaded plugin fails: calls still in flight when it failed (or its files broke) end quietly.
    if ((plugin.inARow >= FAILURES_TO_FAIL || broken) && plugin.phase === "loaded") {
      plugin.move(
        "fail",
        broken
          ? `${plugin.lastError}; fix it (it is tried again when its files change)`
          : `failed ${FAILURES_TO_FAIL} times in a row (last: ${plugin.lastError}); change its files or enable it again`,
      );
      plugin.log.write("error", plugin.failed!);
      this.stopWorkers(plugin);
      this.#o.bus.publish({
        type: "plugin.failed",
        origin: "dock",
        data: { id: plugin.id, where: this.#o.where, error: plugin.lastError },
      });
    }
  }

  #keepWarm(plugin: Plugin, key: string): void {
    plugin.idle.get(key)?.();
    if (this.#closed) return;
    const cancel = this.#warmth.after(
      Math.min(this.#o.idleMs ?? WORK_AFTER_RESPONSE_MS, WORK_AFTER_RESPONSE_MS),
      () => {
        plugin.idle.delete(key);
        this.#host.stop(key);
      },
    );
    plugin.idle.set(key, cancel);
  }

  /**
   * The spec of a plugin module's worker, made once per start of its workers and kept for its warm calls
   * (`#run` takes it from `#specs` without awaiting): what it is made of changes only with what stops
   * them (`stopWorkers` drops it). A module that becomes a link out changes its folder, which the guard
   * before every call sees; a new grant, new settings or a data folder over its quota are a reload.
   */
  async #spec(plugin: Plugin, module: string): Promise<WorkerSpec> {
    // Taken before the awaits: a stop meanwhile drops this map, and what is made with what it stopped is
    // not kept.
    let specs = this.#specs.get(plugin);
    if (!specs) this.#specs.set(plugin, specs = new Map());
    const spec: WorkerSpec = {
      key: workerKey(plugin, module),
      module: await this.#o.registry.modulePath(plugin, module),
      grant: this.#o.registry.workerGrant(plugin),
      label: `plugin:${plugin.id}`,
      // Read once per start, not per call (a warm call costs no file read).
      context: plugin.context ??= await this.#o.registry.workerContext(plugin),
    };
    specs.set(module, spec);
    return spec;
  }

  // -------------------------------------------------------------------------------------------------
  // Events and gates

  /**
   * Called by the bus as it publishes: only keeps the event. Matching and queueing for every plugin
   * happen in a microtask after the publish, so the bus's other subscribers (SSE clients) never wait
   * for them.
   */
  onEvent(event: DockEvent): void {
    if (event.type.startsWith("hook.")) return;
    this.#incoming.push(event);
    if (this.#incoming.length === 1) queueMicrotask(() => this.#dispatchIncoming());
  }

  #dispatchIncoming(): void {
    for (const event of this.#incoming.splice(0)) this.#dispatch(event);
  }

  #dispatch(event: DockEvent): void {
    for (const plugin of this.#o.registry.all()) {
      const hooks = plugin.manifest?.hooks;
      if (!hooks || event.origin === `plugin:${plugin.id}` || !this.#o.registry.runnable(plugin)) continue;
      if (this.#o.shadowed?.(plugin.id, event)) continue;
      for (const hook of hooksFor(hooks, event)) {
        if (!hook.module) continue; // shell hooks run with the host's own (see `extraHooks`)
        this.#deliver(plugin, hook.module, event, hookTimeoutMs(hook));
      }
    }
  }

  /**
   * Sends one event to one plugin's module hooks that match its type, and to nothing else (never the
   * bus: other plugins, flows and clients do not see it), waiting for each call; what failed is said per
   * module. Counted like any event call: it is the plugin's handler that runs.
   */
  async testEvent(plugin: Plugin, event: DockEvent): Promise<{ module: string; error?: string }[]> {
    if (!this.#o.registry.runnable(plugin)) {
      throw new DockError(
        "plugin_off",
        `plugin '${plugin.id}' is ${plugin.failed ? "failed" : "not enabled"}`,
        {
          status: 409,
        },
      );
    }
    const hooks = (plugin.manifest?.hooks ?? []).filter((hook) => hook.module && !isGate(hook));
    const modules = [...new Set(hooksFor(hooks, event).map((hook) => hook.module!))];
    if (modules.length === 0) {
      const on = [...new Set(hooks.map((hook) => hook.on))];
      throw new DockError(
        "no_hook",
        `plugin '${plugin.id}' has no module hook on ${event.type}; it listens to ${
          on.join(", ") || "nothing"
        }`,
        { status: 422 },
      );
    }
    return await Promise.all(modules.map(async (module) => {
      const timeout = hookTimeoutMs(hooks.find((hook) => hook.module === module)!);
      try {
        const answer = await this.#call(plugin, module, "events", [event], timeout) as EventsOutput | null;
        const error = answer?.errors?.[0]?.[1];
        return error === undefined ? { module } : { module, error };
      } catch (error) {
        return { module, error: (error as Error).message };
      }
    }));
  }

  /** Enabled plugins' gates (module and shell) and shell hooks, for the host's hooks engine. */
  extraHooks(): ExtraHook[] {
    const extra: ExtraHook[] = [];
    for (const plugin of this.#o.registry.all()) {
      if (!plugin.manifest?.hooks || !this.#o.registry.runnable(plugin)) continue;
      for (const hook of plugin.manifest.hooks) {
        const source = `plugin '${plugin.id}'`;
        const ownOrigin = `plugin:${plugin.id}`;
        if (hook.run !== undefined) {
          // Outside the sandbox: only a command its grant names exactly (runnable says so already).
          if (this.#o.registry.granted(plugin).commands.includes(hook.run)) {
            extra.push({ hook, source, ownOrigin });
          }
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
      const answer = await this.#call(plugin, hook.module!, "gate", JSON.parse(input), hookTimeoutMs(hook));
      return answeredHook(answer, true, started, `plugin '${plugin.id}'`);
    } catch (error) {
      // A gate that cannot answer refuses: a broken guard must not let everything through.
      return failedHook(error, started, `plugin '${plugin.id}' could not answer its gate`);
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
      // Shell hooks of one event start together (one shell for several: core/hook_exec.ts).
      runMany(hooks, input, context) {
        if (!shell.runMany || hooks.some((hook) => hook.module !== undefined)) {
          return hooks.map((hook) => this.run(hook, input, context));
        }
        return shell.runMany(hooks, input, context);
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
      return answeredHook(value, gate, started, hook.module!);
    } catch (error) {
      this.#host.stop(spec.key);
      return failedHook(error, started, hook.module!);
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
  // fetch

  /** Runs a plugin's `fetch` with `request`; the plugin sees the path after `/fn` (`subpath`). */
  async fetch(plugin: Plugin, subpath: string, request: Request): Promise<Response> {
    const id = plugin.id;
    if (!this.#o.registry.runnable(plugin)) {
      throw new DockError("plugin_off", `plugin '${id}' is ${plugin.failed ? "failed" : "not enabled"}`, {
        status: 409,
      });
    }
    if (!plugin.manifest?.main) {
      throw new DockError("not_found", `plugin '${id}' has no main module`, { status: 404 });
    }
    let answer: FetchOutput;
    try {
      const read = fetchInput(id, subpath, request);
      const input = read instanceof Promise ? await read : read;
      answer = await this.#call(
        plugin,
        plugin.manifest.main,
        "fetch",
        input,
        FETCH_TIMEOUT_MS,
      ) as FetchOutput;
    } catch (error) {
      throw callErrorToDock(error, `plugin '${id}'`);
    }
    return fetchResponse(answer, request);
  }
}
