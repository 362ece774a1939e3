/**
 * One plugin folder ({@linkcode Plugin}) and its lifecycle, written once: a folder found is `unread`
 * until its files are read; then `loaded` (its manifest and modules check out) or `invalid` (they do
 * not: it never runs); a loaded plugin whose module does not load, or that fails or times out 5 times in
 * a row, is `failed` until it is enabled again or its files change (read again). Every change goes through
 * {@linkcode PLUGIN_LIFECYCLE}; nothing assigns a phase.
 *
 * Whether it is enabled is not a phase: it is its grant (`plugins.json`), which outlives a manifest that
 * broke and a restart, and is checked against the manifest each time (`PluginRegistry.offReason`). The
 * guard's findings (a symlink out, a data folder over quota) are measured again before each call, so they
 * are conditions, not phases. What the API lists (`PluginInfo.state`) is derived from the three by
 * {@linkcode listedState}.
 *
 * @module
 */
import type { PluginInfo, PluginState } from "../client/wire.ts";
import type { Log } from "../core/log.ts";
import { transition, type TransitionTable } from "../core/transition.ts";
import type { Stamps } from "./folder_check.ts";
import { PluginKv } from "./kv.ts";
import { PluginLog } from "./log.ts";
import type { PluginManifest } from "./manifest.ts";
import type { CallKind, WorkerContext } from "./protocol.ts";

/** Where a plugin is in its lifecycle. */
export type PluginPhase = "unread" | "invalid" | "loaded" | "failed";

/**
 * What moves a plugin along: its files `read` (and they load) or `reject`ed (they do not), a grant
 * recorded (`enable`), a failure that switches it off (`fail`).
 */
export type PluginEvent = "read" | "reject" | "enable" | "fail";

/**
 * The lifecycle. Files read again clear a failure (the dev loop: a fixed syntax error needs no enable);
 * enabling clears one too. An invalid plugin is never enabled (consent answers 422 first), and only a
 * loaded one can fail (a failed one runs nothing more to fail).
 */
export const PLUGIN_LIFECYCLE: TransitionTable<PluginPhase, PluginEvent> = {
  unread: { read: "loaded", reject: "invalid" },
  invalid: { read: "loaded", reject: "invalid" },
  loaded: { read: "loaded", reject: "invalid", enable: "loaded", fail: "failed" },
  failed: { read: "loaded", reject: "invalid", enable: "loaded" },
};

/** One change of a plugin's phase. */
export interface PluginPhaseChange {
  id: string;
  from: PluginPhase;
  event: PluginEvent;
  to: PluginPhase;
}

/** The phase `event` leads plugin `id` in `from` to, or null (said to `log`) when the table refuses. */
export function nextPluginPhase(
  id: string,
  from: PluginPhase,
  event: PluginEvent,
  log: (message: string) => void,
): PluginPhase | null {
  return transition(PLUGIN_LIFECYCLE, from, event, { name: `plugin ${id}`, log });
}

/** What {@linkcode listedState} derives the listed state from. */
export interface ListedFacts {
  phase: PluginPhase;
  /** Why it may not run by its manifest or its grant (not loaded, not enabled, grant outgrown), or null. */
  off: string | null;
  /** Set while the guard found a symlink leading out. */
  unsafe?: string;
  /** Workers being started for it now. */
  starting: number;
  /** Whether one of its workers runs now. */
  running: boolean;
}

/** The state the API lists (`PluginInfo.state`): a failure first, then why it is off, then its workers. */
export function listedState(facts: ListedFacts): PluginState {
  if (facts.phase === "failed") return "failed";
  if (facts.phase !== "loaded" || facts.off || facts.unsafe) return "off";
  if (facts.starting > 0) return "starting";
  return facts.running ? "running" : "idle";
}

type Counters = PluginInfo["counters"];

/** A call waiting for one of its plugin's slots. */
export interface Job extends JobWork {
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

/** What a call runs: a handler of a module, its input, its deadline. */
export interface JobWork {
  module: string;
  kind: CallKind;
  input: unknown;
  deadlineMs: number;
}

/** One plugin folder, valid or not, and what it is doing. */
export class Plugin {
  readonly id: string;
  readonly dir: string;
  /** Its data folder (`<state>/plugins/<id>`). */
  readonly data: string;
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
  /** Failures in a row (what makes it `failed`); any change of phase but `fail` starts it again. */
  inARow = 0;
  #phase: PluginPhase = "unread";
  #failure?: string;
  #processLog: Log;
  #onPhase?: (change: PluginPhaseChange) => void;
  /** Set while a symlink under its folder or its data folder leads out (it does not run): which. */
  unsafe?: string;
  /** Bytes in its data folder when last measured, and when (`performance.now()`). */
  dataBytes = 0;
  measuredAt = -Infinity;
  /** Over its data quota: its workers may read their data folder, not write it. */
  overQuota = false;
  /** Its folder's and its data folder's directories when last found clean (see `unchanged`). */
  folderStamps?: Stamps;
  dataStamps?: Stamps;
  lastError?: string;
  /** Its `ctx` settings, secrets and data folder while its workers run (made again when they stop). */
  context?: WorkerContext;
  starting = 0;
  running = 0;
  queue: Job[] = [];
  /** Events waiting in the queue's batches. */
  queuedEvents = 0;
  apiInFlight = 0;
  /** What cancels each warm worker's idle stop, by worker key. */
  readonly idle = new Map<string, () => void>();
  /** Keys of the workers it has started (running or warm). */
  readonly workers = new Set<string>();
  /** Calls in flight, by worker key (a worker is never stopped as idle while one runs). */
  readonly busy = new Map<string, number>();
  readonly log: PluginLog;
  readonly kv: PluginKv;

  constructor(
    id: string,
    dir: string,
    logs: string,
    data: string,
    processLog: Log,
    onPhase?: (change: PluginPhaseChange) => void,
  ) {
    this.id = id;
    this.dir = dir;
    this.data = data;
    this.log = new PluginLog(logs, id, processLog);
    this.kv = new PluginKv(data, processLog);
    this.#processLog = processLog;
    this.#onPhase = onPhase;
  }

  /** Where it is in its lifecycle (`plugin_state.ts`); changed only by {@linkcode Plugin.move}. */
  get phase(): PluginPhase {
    return this.#phase;
  }

  /** Set while failed: why. */
  get failed(): string | undefined {
    return this.#failure;
  }

  /** Moves it along its lifecycle (`why`: the failure, for `fail`); false, said to the log, when refused. */
  move(event: PluginEvent, why?: string): boolean {
    const from = this.#phase;
    const to = nextPluginPhase(this.id, from, event, (line) => this.#processLog.error(line));
    if (to === null) return false;
    this.#phase = to;
    this.#failure = to === "failed" ? why : undefined;
    if (event !== "fail") this.inARow = 0;
    this.#onPhase?.({ id: this.id, from, event, to });
    return true;
  }
}
