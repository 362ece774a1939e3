/**
 * Hooks and `before:` gates (spec 2.5, 2.9, 6): the person's own scripts, run on events and before
 * actions.
 *
 * - **Hooks** run for events: the box's `~/.dock/hooks.json`, and each location's effective config
 *   (repository, kit and box layers concatenated) for that repository's events only, run in the
 *   worktree. The event bus only hands each event to a queue here; matching, reading config and
 *   spawning happen off the publishing path, with a bound on concurrent hooks, so a slow or hanging
 *   hook never slows event delivery or the API.
 * - **Gates** (`on: "before:<action>"`) run before an API request acts. Every gate must exit 0; the
 *   first that does not refuses the request with 403 `gate_refused` (the message is the first line of
 *   its stderr), and one that outlives its timeout (30 s by default) refuses with `gate_timeout`.
 *
 * `hook.*` events (a hook failed) never run hooks, so a failing `*` hook cannot feed itself.
 *
 * This is the engine the box (`daemon/hooks.ts`) and the laptop (`agent/hooks.ts`) share: matching,
 * the watched hooks file (`hooks_file.ts`), and the bounded runner. What runs a hook is behind {@linkcode HookExecutor}:
 * {@linkcode shellExecutor} (`/bin/sh -c`) is the first; the plugin host adds modules.
 *
 * @module
 */
import type { Check, DockEvent, HookConfig, HooksState } from "../client/wire.ts";
import { HOOKS_FILE, type HooksFile } from "./config.ts";
import type { EventBus } from "./events.ts";
import { validateUserFile } from "./user_files.ts";
import {
  type HookExecutor,
  type HookResult,
  type HookRunContext,
  isGate,
  shellExecutor,
} from "./hook_exec.ts";
import type { Clock } from "./clock.ts";
import type { Log } from "./log.ts";
import { HooksFileWatcher } from "./hooks_file.ts";

// Where a hook is run (the executor seam, the shell) is `hook_exec.ts`; what its users import from here.
export {
  GATE_TIMEOUT_MS,
  HOOK_TIMEOUT_MS,
  type HookExecutor,
  type HookResult,
  type HookRunContext,
  hookTimeoutMs,
  isGate,
  shellExecutor,
} from "./hook_exec.ts";
/** Hooks running at once, per process; 16 lets ten matching one event all start (8: the 10th waited, 15.9 ms vs 2.9). */
export const HOOK_CONCURRENCY = 16;
/** Hook runs waiting for a slot before the oldest are dropped (and counted). */
export const HOOK_BACKLOG = 10_000;

/**
 * Actions a `before:` gate can guard (spec 6, plus worktree create/remove, session create, and opening a
 * public share).
 */
export const GATE_ACTIONS = [
  "skills.install",
  "skills.uninstall",
  "session.create",
  "session.send",
  "exec",
  "config.change",
  "worktree.create",
  "worktree.remove",
  "share.open",
] as const;

/** One of {@linkcode GATE_ACTIONS}. */
export type GateAction = typeof GATE_ACTIONS[number];

/** Who asked for a gated action, and where. */
export interface GateContext {
  /** The request's origin (`X-Dock-Origin`, default `api`). */
  origin: string;
  /** The location the action targets, when there is one: its config's gates run too. */
  location?: string;
  /** The worktree the action targets, when there is one (gates run in it). */
  worktree?: string;
}

// ---------------------------------------------------------------------------------------------------
// Matching and variables (pure)

/** Whether a hook's `on` selects an event type: exact, a prefix such as `worktree.*`, or `*`. */
export function hookMatches(on: string, type: string): boolean {
  if (on.startsWith("before:")) return false;
  if (on === "*") return true;
  if (on.endsWith(".*")) return type.startsWith(on.slice(0, -1));
  return on === type;
}

/** The hooks of `hooks` that run for `event`: matching, and not written for the tool it came from. */
export function hooksFor(
  hooks: readonly HookConfig[],
  event: Pick<DockEvent, "type" | "origin">,
): HookConfig[] {
  return hooks.filter((hook) =>
    hookMatches(hook.on, event.type) && !(hook.tool && hook.tool === event.origin)
  );
}

/** The gates of `hooks` for `action`, skipping those written for the requesting tool. */
export function gatesFor(hooks: readonly HookConfig[], action: string, origin: string): HookConfig[] {
  return hooks.filter((hook) => hook.on === `before:${action}` && !(hook.tool && hook.tool === origin));
}

/**
 * The `DOCK_*` variables dock itself reads as its settings (where its state lives, which program, box
 * and port it calls, the origin it reports, its tuning knobs). An event's data field never takes one of
 * these names: a field `state_dir` or `bin` in an event (anyone who may emit one can choose it) would
 * otherwise point the `dock` commands a hook runs at another state folder or program. Such a field is
 * still in `DOCK_EVENT_DATA`. `core/hooks_test.ts` checks that every name the sources read from the
 * environment is here, but for the few that say what an event is about (`DOCK_LOCATION`,
 * `DOCK_WORKTREE_NAME`, `DOCK_WORKTREE_PATH`, `DOCK_SESSION`), which a field may set where the worktree's
 * own environment does not.
 */
export const DOCK_SETTINGS: ReadonlySet<string> = new Set([
  "DOCK_AGENT_HEALTH_MS",
  "DOCK_AGENT_PORT",
  "DOCK_BIN",
  "DOCK_BOX",
  "DOCK_BOX_PORT",
  "DOCK_CGROUPS",
  "DOCK_CLOCK_OFFSET_MS",
  "DOCK_DESKTOP_NOTIFY",
  "DOCK_EXIT_POLL_MS",
  "DOCK_FORGE_POLL_MS",
  "DOCK_FORWARD_MAX_CONNECTIONS",
  "DOCK_GUARD_INTERVAL_MS",
  "DOCK_HOME",
  "DOCK_HOOK_CONCURRENCY",
  "DOCK_JOURNAL_BYTES",
  "DOCK_JOURNAL_EVENTS",
  "DOCK_LISTEN",
  "DOCK_LISTEN_HANDSHAKE_MS",
  "DOCK_LISTEN_HEADER_MS",
  "DOCK_LISTEN_IDLE_MS",
  "DOCK_LISTEN_MAX_CONNECTIONS",
  "DOCK_LISTEN_MAX_PER_PEER",
  "DOCK_ORIGIN",
  "DOCK_PLUGIN_CONCURRENCY",
  "DOCK_PLUGIN_DATA_QUOTA_MB",
  "DOCK_PLUGIN_HOST_MEMORY_MB",
  "DOCK_PLUGIN_IDLE_MS",
  "DOCK_PLUGIN_MEMORY_MB",
  "DOCK_PLUGIN_SCAN_MS",
  "DOCK_PORT_RANGE",
  "DOCK_PROXY_PORT",
  "DOCK_QUEUE_TEST_SEND_DELAY_MS",
  "DOCK_SERVICE_BACKOFF_MS",
  "DOCK_SERVICE_LOG_BYTES",
  "DOCK_SSH_CONFIG",
  "DOCK_SSH_PORT",
  "DOCK_STATE_DIR",
  "DOCK_TLS_HOSTS",
  "DOCK_WATCH_MS",
]);

/** `DOCK_<FIELD>` for a data field: upper case, anything but letters, digits and `_` becomes `_`. */
export function fieldVariable(key: string): string {
  return `DOCK_${key.toUpperCase().replace(/[^A-Z0-9_]/g, "_")}`;
}

/**
 * The event as `DOCK_*` variables: `DOCK_EVENT_TYPE`, `_TIME`, `_ORIGIN`, `_ID`, `_BOX`, `_DATA` (the
 * data as JSON), and `DOCK_<FIELD>` for each scalar data field (`DOCK_PATH`, `DOCK_AGENT`,
 * `DOCK_SESSION_ID` for agent events). Fields named like a variable in `keep`, or like one of
 * {@linkcode DOCK_SETTINGS}, do not replace it.
 */
export function eventVariables(
  event: DockEvent,
  options: { box?: string; keep?: Record<string, string> } = {},
): Record<string, string> {
  const vars: Record<string, string> = {};
  for (const [key, value] of Object.entries(event.data ?? {})) {
    if (typeof value !== "string" && typeof value !== "number" && typeof value !== "boolean") continue;
    const name = fieldVariable(key);
    if (DOCK_SETTINGS.has(name) || name.startsWith("DOCK_EVENT_")) continue;
    if (options.keep && name in options.keep) continue;
    vars[name] = String(value);
  }
  vars.DOCK_EVENT_TYPE = event.type;
  vars.DOCK_EVENT_TIME = event.time;
  vars.DOCK_EVENT_ORIGIN = event.origin ?? "";
  vars.DOCK_EVENT_ID = event.id === undefined ? "" : String(event.id);
  vars.DOCK_EVENT_BOX = event.box ?? options.box ?? "";
  vars.DOCK_EVENT_DATA = JSON.stringify(event.data ?? {});
  return vars;
}

/** The first non-empty line of a gate's stderr, cut to a readable length. */
export function firstLine(text: string): string {
  const line = text.split("\n").map((l) => l.trim()).find((l) => l.length > 0) ?? "";
  return line.length > 300 ? `${line.slice(0, 299)}…` : line;
}

// ---------------------------------------------------------------------------------------------------
// The hooks file

/** What `GET hooks` answers: the file, its hooks, why it does not load (the last good hooks stay), runs. */
export type HooksFileState = HooksState;

/**
 * The `onFailure` of a {@linkcode HookRunner} that logs a failed run and announces it as `hook.failed`
 * (`origin` is the announcing process: `dockd` or `dock`), never with the hook's output: a hook sees
 * the worktree's secrets and may print them.
 */
export function announceHookFailure(
  bus: EventBus,
  origin: string,
  log: Log,
): (job: HookJob, outcome: HookOutcome) => void {
  return (job, outcome) => {
    const what = outcome.timedOut
      ? `was killed at its timeout (${job.hook.timeout ?? "1m"})`
      : outcome.error
      ? `could not start: ${outcome.error}`
      : `exited with ${outcome.exitCode}`;
    log.warn(`hook '${job.hook.on}' in ${job.source} for ${job.event.type} ${what}`);
    bus.publish({
      type: "hook.failed",
      origin,
      data: {
        on: job.hook.on,
        source: job.source,
        event: job.event.type,
        exit_code: outcome.exitCode,
        timed_out: outcome.timedOut,
        duration_ms: Math.round(outcome.durationMs),
      },
    });
  };
}

/** The `GET doctor` check of a hooks file: it parses (else its error, the last good hooks in force). */
export function hooksCheck(state: HooksFileState): Check {
  if (state.error) {
    return { name: "hooks", ok: false, detail: `${state.error} (the last good hooks stay in force)` };
  }
  const gates = state.hooks.filter(isGate).length;
  return {
    name: "hooks",
    ok: true,
    detail: `${state.hooks.length - gates} hooks and ${gates} gates in ${state.path}`,
  };
}

/** Validates a `PUT hooks` body (`{ hooks }`); a wrong field is a 400 naming it. */
export function hooksBody(body: unknown): HooksFile {
  // An API body with a wrong field is a bad request, not an unprocessable file.
  return validateUserFile(body, "body", HOOKS_FILE, { code: "invalid_hooks", status: 400 });
}

// ---------------------------------------------------------------------------------------------------
// The bounded runner

/** One hook run. */
export interface HookJob {
  hook: HookConfig;
  /** Where the hook is written: `hooks.json`, `config of location 'app'`. */
  source: string;
  event: DockEvent;
  cwd?: string;
  /** See {@linkcode HookRunContext.moduleBase}. */
  moduleBase?: string;
  /** See {@linkcode HookRunContext.moduleRoot}. */
  moduleRoot?: string;
  /** The child's whole environment. */
  env: Record<string, string>;
}

/** How a hook run ended; never its output (it may hold secrets). */
export interface HookOutcome {
  exitCode: number | null;
  timedOut: boolean;
  durationMs: number;
  /** Set when the hook could not start. */
  error?: string;
}

/** Counters of a {@linkcode HookRunner}. */
export interface HookRunnerStats {
  running: number;
  queued: number;
  started: number;
  failed: number;
  dropped: number;
}

/** Options of {@linkcode HookRunner}. */
export interface HookRunnerOptions {
  /** Told once when the backlog starts dropping runs. */
  log: Log;
  /** Hooks running at once. @default {HOOK_CONCURRENCY} */
  concurrency?: number;
  /** Runs waiting before the oldest are dropped. @default {HOOK_BACKLOG} */
  backlog?: number;
  /** Called as each hook process starts (benchmarks measure event → start). */
  onStart?: (job: HookJob) => void;
  /** Called when a run fails (non-zero exit, timeout, or it could not start). */
  onFailure?: (job: HookJob, outcome: HookOutcome) => void;
  /** What runs each hook. @default {shellExecutor} */
  executor?: HookExecutor;
  /**
   * Asked as a queued run is about to start: false drops it (counted in `dropped`). A hook removed from
   * its file must not go on running its backlog (seen: 2,984 queued runs after the hook was gone).
   */
  stillWanted?: (job: HookJob) => boolean;
}

/** Runs hook jobs through its executor (`/bin/sh -c` by default), at most `concurrency` at once, each killed (whole group) at its timeout. */
export class HookRunner {
  #queue: HookJob[] = [];
  #running = 0;
  #o: HookRunnerOptions;
  #stats = { started: 0, failed: 0, dropped: 0 };
  #idle: (() => void)[] = [];
  #abort = new AbortController();

  constructor(options: HookRunnerOptions) {
    this.#o = options;
  }

  /**
   * Queues runs; returns at once. The runs of one event are given in one call, so that those that can
   * start together do (`#starts`).
   */
  submit(...jobs: HookJob[]): void {
    if (this.#abort.signal.aborted) return;
    this.#queue.push(...jobs);
    const backlog = this.#o.backlog ?? HOOK_BACKLOG;
    if (this.#queue.length > backlog) {
      const dropped = this.#queue.splice(0, this.#queue.length - backlog);
      if (this.#stats.dropped === 0) {
        this.#o.log.warn(`hooks: more than ${backlog} waiting; dropping the oldest`);
      }
      this.#stats.dropped += dropped.length;
    }
    this.#next();
  }

  /** Current counters. */
  stats(): HookRunnerStats {
    return { running: this.#running, queued: this.#queue.length, ...this.#stats };
  }

  /** Resolves when nothing runs or waits. */
  idle(): Promise<void> {
    if (this.#running === 0 && this.#queue.length === 0) return Promise.resolve();
    return new Promise((resolve) => this.#idle.push(resolve));
  }

  /** Kills running hooks and drops the queue. */
  close(): void {
    this.#queue = [];
    this.#abort.abort();
  }

  #next(): void {
    const concurrency = this.#o.concurrency ?? HOOK_CONCURRENCY;
    const starting: HookJob[] = [];
    while (this.#running < concurrency && this.#queue.length > 0) {
      const job = this.#queue.shift()!;
      if (this.#o.stillWanted && !this.#o.stillWanted(job)) {
        this.#stats.dropped++;
        continue;
      }
      this.#running++;
      starting.push(job);
    }
    for (const [job, start] of this.#starts(starting)) {
      this.#run(job, start).finally(() => {
        this.#running--;
        this.#next();
      });
    }
    if (this.#running === 0 && this.#queue.length === 0) {
      for (const resolve of this.#idle.splice(0)) resolve();
    }
  }

  /**
   * How each job starts, in their order: shell hooks for one event with the same folder and environment
   * start together through the executor's `runMany` (one shell forks the builtin-only ones: hook_exec.ts
   * says what that saves), any other alone.
   */
  #starts(jobs: HookJob[]): [HookJob, () => Promise<HookResult>][] {
    const executor = this.#o.executor ?? shellExecutor;
    const context = (job: HookJob): HookRunContext => ({
      cwd: job.cwd,
      moduleBase: job.moduleBase,
      moduleRoot: job.moduleRoot,
      env: job.env,
      signal: this.#abort.signal,
    });
    const groups: HookJob[][] = [];
    for (const job of jobs) {
      // Module hooks start alone (each in its plugin's sandbox); where modules are found means nothing
      // to a shell hook, so the box file's and a repository config's shell hooks go together.
      const group = executor.runMany && job.hook.module === undefined &&
        groups.find(([first]) =>
          first.hook.module === undefined && first.event === job.event && first.env === job.env &&
          first.cwd === job.cwd
        );
      if (group) group.push(job);
      else groups.push([job]);
    }
    const starts = new Map<HookJob, () => Promise<HookResult>>();
    for (const group of groups) {
      const input = JSON.stringify(group[0].event);
      if (group.length === 1) {
        starts.set(group[0], () => executor.run(group[0].hook, input, context(group[0])));
        continue;
      }
      let results: Promise<HookResult>[] | undefined;
      const all = () => {
        if (results) return results;
        try {
          results = executor.runMany!(group.map((job) => job.hook), input, context(group[0]));
        } catch (error) {
          results = group.map(() => Promise.reject(error));
        }
        return results;
      };
      group.forEach((job, i) => starts.set(job, () => all()[i]));
    }
    return jobs.map((job) => [job, starts.get(job)!]);
  }

  async #run(job: HookJob, start: () => Promise<HookResult>): Promise<void> {
    const started = performance.now();
    let outcome: HookOutcome;
    try {
      this.#stats.started++;
      const result = start();
      this.#o.onStart?.(job);
      const done = await result;
      outcome = { exitCode: done.code, timedOut: done.timedOut, durationMs: done.durationMs };
    } catch (error) {
      outcome = {
        exitCode: null,
        timedOut: false,
        durationMs: performance.now() - started,
        error: String(error),
      };
    }
    if (outcome.exitCode !== 0 || outcome.timedOut) {
      this.#stats.failed++;
      this.#o.onFailure?.(job, outcome);
    }
  }
}

/**
 * A hook from elsewhere than a hooks file: an enabled plugin's manifest. Gates of both kinds and shell
 * hooks for events run where the host's own hooks run; a plugin's module hooks for events are delivered
 * by the plugin host itself (straight to its workers, without building a shell environment per event).
 */
export interface ExtraHook {
  hook: HookConfig;
  /** Where it is written (`plugin 'notify'`). */
  source: string;
  /** The origin whose events it never runs for (its own `plugin:<id>`), besides `hook.tool`. */
  ownOrigin?: string;
  /** Runs it (a module, in its plugin's sandbox); absent: the executor runs `hook.run`. */
  run?: (input: string) => Promise<HookResult>;
}

/**
 * The extra hooks that run for `event` through the host's own runner: shell hooks (a module's are
 * delivered by the plugin host), matching, and not for events their own plugin caused.
 */
export function extraShellHooksFor(extra: readonly ExtraHook[], event: DockEvent): ExtraHook[] {
  return extra.filter((hook) =>
    !hook.run && hook.ownOrigin !== event.origin && hooksFor([hook.hook], event).length > 0
  );
}

/**
 * What the box's and the laptop's hooks share: a watched hooks file, a bounded runner whose failures
 * are announced, and following a bus (the subclass says what it does with each event).
 */
export abstract class HooksHost {
  readonly file: HooksFileWatcher;
  readonly runner: HookRunner;
  #bus: EventBus;
  #unsubscribeBus?: () => void;

  readonly executor: HookExecutor;

  constructor(
    options: {
      bus: EventBus;
      file: string;
      origin: string;
      concurrency?: number;
      executor?: HookExecutor;
      /** What the file's watch runs on. */
      clock: Clock;
      /** Told of a file that stops parsing, a failed run, a full backlog. */
      log: Log;
    },
  ) {
    this.#bus = options.bus;
    this.executor = options.executor ?? shellExecutor;
    this.file = new HooksFileWatcher(options.file, {
      bus: options.bus,
      clock: options.clock,
      log: options.log,
    });
    this.runner = new HookRunner({
      log: options.log,
      concurrency: options.concurrency,
      executor: this.executor,
      onFailure: announceHookFailure(options.bus, options.origin, options.log),
      // A run of this file's hooks goes only while the file still has that hook (compared by value:
      // a reload makes new objects of the hooks it kept).
      stillWanted: (job) => {
        if (job.source !== this.file.path) return true;
        const wanted = JSON.stringify(job.hook);
        return this.file.current().some((hook) => JSON.stringify(hook) === wanted);
      },
    });
  }

  /** Follows the bus and watches the file (an edit by hand is announced within `watchMs`). */
  start(watchMs?: number): void {
    this.#unsubscribeBus = this.#bus.subscribe((event) => this.onEvent(event));
    this.file.watch(watchMs);
  }

  /** Stops following events and kills running hooks. */
  close(): void {
    this.#unsubscribeBus?.();
    this.file.close();
    this.runner.close();
  }

  /** The hooks file and its runs (`GET hooks`). */
  state(): HooksFileState {
    return { ...this.file.state(), runs: this.runner.stats() };
  }

  /** Replaces the hooks file (a validated `PUT hooks` body); announces `hooks.changed`. */
  write(file: HooksFile, origin: string): Promise<HooksFileState> {
    return this.file.write(file, origin);
  }

  /** Called synchronously by the bus for each event: must only match and queue. */
  protected abstract onEvent(event: DockEvent): void;
}
