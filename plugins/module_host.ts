/**
 * The parent's side of the plugin-host process: it starts the host (through the runner, `--no-prompt`,
 * with no remote or npm imports and only the union of the grants its workers need), sends it calls,
 * holds every call's deadline, and answers what workers ask of dock through {@linkcode ModuleHostOptions.onRequest}.
 *
 * The host is kept in generations. A call whose grant the running host does not cover starts a wider
 * one; a worker stuck in synchronous code past its deadline (which `terminate()` cannot stop) retires
 * its generation: new calls go to a fresh host at once, the old one finishes what it still runs and is
 * then killed. So does a host whose worker threads outnumber its workers for {@linkcode ORPHAN_GRACE_MS}
 * (a nested `Worker` spinning after its parent was terminated: measured, it keeps a core busy).
 *
 * A host that crashes (a memory bomb reaches the heap cap, which ends the whole process, or the host
 * passes its resident limit) cannot say which worker did it. Its calls in flight are sorted out by
 * elimination: when they all belong to one worker, that worker did it and they fail; otherwise each
 * worker's calls are run again, once, in a host of their own (a quarantine host, killed once they are
 * done), so the bomb fails alone and the other plugins' calls are answered. A call may thus run twice
 * (at least once, not exactly once). Nothing here blocks the caller's event loop: a plugin can stop,
 * slow or crash only its own calls.
 *
 * @module
 */
import type { Clock } from "../core/clock.ts";
import { ClockDeadlines } from "../core/deadlines.ts";
import type { Log } from "../core/log.ts";
import { CallError, type CallResult } from "./call_error.ts";
import { covers, Generation, launchHost, unionGrant, watchHost } from "./host_generation.ts";
import type { HostPhaseChange } from "./host_phase.ts";
import { HostLanes, type Lane, laneAnswer, type LaneResult, Lanes } from "./lanes.ts";
import {
  type CallKind,
  type ContextOp,
  type FromHost,
  type LogLevel,
  type ToHost,
  type WorkerGrant,
  type WorkerSpec,
} from "./protocol.ts";

/** Options of {@linkcode ModuleHost}. */
export interface ModuleHostOptions {
  /** A private folder (0700) for the host's socket. */
  dir: string;
  /** What calls' deadlines, idle stops and the /proc watch run on. */
  clock: Clock;
  /** Where a refused lifecycle change is said. */
  log: Log;
  /** V8 heap cap of each worker and of the host, in MB. @default {128} */
  memoryMb?: number;
  /** How long a host with no workers left is kept for the next cold start. @default {60_000} */
  idleMs?: number;
  /**
   * Resident memory at which the host process is killed, MB. The heap cap binds each isolate's heap only;
   * `ArrayBuffer`s live outside it, so this is what stops a bomb made of them (Linux). @default {1024}
   */
  rssLimitMb?: number;
  /** Paths every generation may read besides its workers' grants (where module hooks may live). */
  baseRead?: () => string[];
  /** Grants of workers likely to be called (enabled plugins): a new host covers them from the start. */
  knownGrants?: () => WorkerGrant[];
  /** Values of the variables workers are granted (the host's whole environment is these and HOME). */
  env?: (names: string[]) => Record<string, string>;
  /** What a worker asks of dock (its `ctx`); a throw refuses it with the message. */
  onRequest(spec: WorkerSpec, op: ContextOp, args: unknown[]): Promise<unknown>;
  /** A worker's log line. */
  onLog?(spec: WorkerSpec, level: LogLevel, text: string): void;
  /**
   * A line the host process wrote on stdout or stderr (its own errors; a worker writing there directly),
   * within `HOST_OUTPUT_BYTES` a minute (host_generation.ts). `spec` is the worker it must have come
   * from, when the host ran one plugin's workers only.
   */
  onHostOutput?(line: string, spec?: WorkerSpec): void;
  /** A worker ended (idle stop, crash, deadline), with why when it was not asked to. */
  onWorkerStopped?(spec: WorkerSpec, error?: string): void;
  /** Told of each change of a host generation's phase (plugins/host_phase.ts; its conformance test). */
  onHostPhase?(change: HostPhaseChange): void;
}

/** Counters of a {@linkcode ModuleHost}. */
export interface ModuleHostStats {
  /** Host processes started. */
  generations: number;
  /** Hosts that crashed or were killed to stop a worker. */
  restarts: number;
  /** Workers running in the current host. */
  workers: number;
  /** The current host's pid, when one runs. */
  pid?: number;
  /** Workers' lanes open now (plugins/lanes.ts). */
  lanes: number;
  /** Calls sent on a worker's lane rather than through its host. */
  laneCalls: number;
}

interface PendingCall {
  spec: WorkerSpec;
  kind: CallKind;
  input: unknown;
  resolve(result: CallResult): void;
  reject(error: Error): void;
  /** Cancels its deadline. */
  cancel: () => void;
  generation: Generation;
  /** The epoch of its worker it was sent for (protocol.ts). */
  epoch: number;
  /** Already run again after its host crashed (a call is retried once). */
  retried: boolean;
  /** The lane it was sent on, when its worker's lane was open (else it went through the host). */
  lane?: Lane;
}

/**
 * How long a host may have more worker threads than workers before it is recycled: `terminate()`
 * force-kills a worker's isolate after ~2 s (TOOLCHAIN.md), so a thread still there after 3 s is one
 * nothing will stop (a nested `Worker` spinning: measured, 3.07 s of CPU in 3.5 s after its parent was
 * terminated).
 */
export const ORPHAN_GRACE_MS = 3000;
/** Quarantine hosts (one per worker whose calls are retried after a crash) running at once. */
export const QUARANTINE_HOSTS = 4;
/** How long a host has to stop a worker whose call passed its deadline before the host itself is retired. */
export const CANCEL_ANSWER_MS = 1000;

/** Runs module handlers in sandboxed workers inside a supervised host process. */
export class ModuleHost {
  #o: ModuleHostOptions;
  #current: Generation | null = null;
  #generations = new Set<Generation>();
  #calls = new Map<number, PendingCall>();
  #specs = new Map<string, WorkerSpec>();
  /** Each key's epoch: bumped at each stop, so a `stopped` of a worker stopped before is told apart. */
  #epochs = new Map<string, number>();
  #nextCall = 1;
  #count = 0;
  #restarts = 0;
  #laneCalls = 0;
  #closed = false;
  #quarantines = 0;
  #quarantineWaiting: (() => void)[] = [];

  /** Calls' deadlines: one set and cancelled per call, on one timer (see ClockDeadlines). */
  #callDeadlines: ClockDeadlines;
  /** Workers' own connections, which their warm calls take (plugins/lanes.ts). */
  #lanes: Lanes;

  constructor(options: ModuleHostOptions) {
    this.#o = options;
    this.#callDeadlines = new ClockDeadlines(options.clock);
    this.#lanes = new Lanes({ clock: options.clock, log: options.log });
  }

  /**
   * Runs `kind` of the module `spec` names with `input`, within `deadlineMs`. Rejects with a
   * {@linkcode CallError}: `timeout` at the deadline, `failed` when the module threw or did not load,
   * `crashed` when its host process ended.
   */
  async call(spec: WorkerSpec, kind: CallKind, input: unknown, deadlineMs: number): Promise<CallResult> {
    if (this.#closed) throw new CallError("crashed", "the plugin host is closed");
    // Known before a host is chosen: a host started meanwhile for another call covers this one too.
    this.#specs.set(spec.key, spec);
    const generation = this.#warmGeneration(spec) ?? await this.#generationFor(spec);
    generation.cancelIdle();
    const id = this.#nextCall++;
    const { promise, resolve, reject } = Promise.withResolvers<CallResult>();
    const cancel = this.#callDeadlines.after(deadlineMs, () => this.#deadline(id));
    const call: PendingCall = {
      spec,
      kind,
      input,
      resolve,
      reject,
      cancel,
      generation,
      epoch: this.#epochs.get(spec.key) ?? 0,
      retried: false,
    };
    this.#calls.set(id, call);
    this.#send(generation, id, call);
    return promise;
  }

  /**
   * Sends a call: on its worker's lane when one is open for its epoch, else to the host, with the
   * worker's spec (and its lane's ticket) only with the first call of its epoch there.
   */
  #send(generation: Generation, id: number, call: PendingCall): void {
    const { spec, epoch, kind, input } = call;
    generation.inFlight++;
    generation.workers.add(spec.key);
    call.lane = generation.lanes.lane(spec.key, epoch);
    if (call.lane) {
      this.#laneCalls++;
      call.lane.send({ t: "call", id, kind, input });
      return;
    }
    const known = generation.specs.get(spec.key) === epoch;
    generation.specs.set(spec.key, epoch);
    generation.frames!.send({
      t: "call",
      id,
      key: spec.key,
      epoch,
      ...(known ? {} : { worker: spec, lane: generation.lanes.ticket(spec.key, epoch) }),
      kind,
      input,
    });
  }

  /** A worker's answer on its lane: taken only for a call sent on that lane, as the host would pass it on. */
  #laneAnswer(generation: Generation, lane: Lane, message: LaneResult): void {
    const call = this.#calls.get(message.id);
    if (call?.lane === lane) this.#settle(message.id, generation, laneAnswer(call.kind, message));
  }

  /** Fails the calls sent on the lane of `key`'s worker of `epoch`, which ended (`why`). */
  #endLane(generation: Generation, key: string, epoch: number, why: string): void {
    generation.lanes.ended(key, epoch);
    for (const [id, call] of this.#calls) {
      if (call.generation !== generation || !call.lane || call.spec.key !== key || call.epoch !== epoch) {
        continue;
      }
      this.#finish(id, call);
      call.reject(new CallError("failed", why));
    }
  }

  /**
   * Stops a worker (idle, or its plugin was disabled or changed); the next call starts it again, in a new
   * epoch: what the stopped worker still says of itself is told from what its successor says.
   */
  stop(key: string): void {
    this.#epochs.set(key, (this.#epochs.get(key) ?? 0) + 1);
    for (const generation of this.#generations) {
      generation.specs.delete(key);
      generation.workers.delete(key);
      // Its calls in flight there still come back on its lane, or fail with the host's `stopped`.
      generation.lanes.forget(key);
      // Said to every host, running it or not as far as known here: one a call started again as its
      // predecessor's end was on its way is stopped too.
      if (!generation.ended) generation.frames?.send({ t: "stop", key });
    }
    this.#stopIdleHost();
  }

  /** Whether a worker for `key` runs now. */
  running(key: string): boolean {
    for (const generation of this.#generations) {
      if (!generation.ended && generation.workers.has(key)) return true;
    }
    return false;
  }

  /** Counters. */
  stats(): ModuleHostStats {
    const current = this.#current;
    return {
      generations: this.#count,
      restarts: this.#restarts,
      workers: current?.workers.size ?? 0,
      ...(current?.child ? { pid: current.child.pid } : {}),
      lanes: [...this.#generations].reduce((open, generation) => open + generation.lanes.size, 0),
      laneCalls: this.#laneCalls,
    };
  }

  /** Kills every host process; calls in flight fail. */
  close(): void {
    this.#closed = true;
    this.#lanes.close();
    for (const generation of [...this.#generations]) this.#kill(generation, "the plugin host is closing");
  }

  /**
   * The current host when it has started, takes calls and covers `spec`'s grant: what
   * {@linkcode #generationFor} would find after awaiting its start, found without awaiting (a warm call's
   * path).
   */
  #warmGeneration(spec: WorkerSpec): Generation | undefined {
    const generation = this.#current;
    if (!generation?.started || generation.retired || generation.ended) return undefined;
    if (!generation.covered.has(spec)) {
      if (!covers(generation.grant, spec.grant)) return undefined;
      generation.covered.add(spec);
    }
    return generation;
  }

  /**
   * The host that runs `spec`: the current one when it covers its grant, else a new one with every
   * grant known (the current one is retired). Calls that were waiting for a host retired before it
   * started try again on the new one.
   */
  async #generationFor(spec: WorkerSpec): Promise<Generation> {
    for (let attempt = 0;; attempt++) {
      let generation = this.#current;
      if (!generation || generation.retired || generation.ended || !covers(generation.grant, spec.grant)) {
        const grants = [...this.#specs.values()].map((s) => s.grant);
        grants.push(spec.grant, ...(this.#o.knownGrants?.() ?? []));
        if (generation && !generation.ended) {
          grants.push(generation.grant);
          this.#retire(generation);
        }
        generation = this.#start(unionGrant(grants));
      }
      try {
        await generation.ready;
      } catch (error) {
        if (this.#closed || attempt >= 3 || generation === this.#current) throw error;
        continue; // retired (and killed) while it started: another host took its place
      }
      if (!generation.ended && !generation.retired) return generation;
      if (attempt >= 3) throw new CallError("crashed", "the plugin host kept restarting");
    }
  }

  #start(grant: WorkerGrant, quarantine?: string): Generation {
    const number = ++this.#count;
    const { promise, resolve, reject } = Promise.withResolvers<void>();
    promise.catch(() => {});
    const generation = new Generation(number, grant, promise, {
      log: this.#o.log,
      trace: this.#o.onHostPhase,
    });
    generation.lanes = new HostLanes(
      this.#lanes,
      (lane, message) => this.#laneAnswer(generation, lane, message),
      (key) => this.#epochs.get(key) ?? 0,
    );
    if (quarantine === undefined) this.#current = generation;
    else {
      // Never current, and killed as soon as its calls are done.
      generation.quarantine = quarantine;
      generation.move("retire");
    }
    this.#generations.add(generation);
    this.#launch(generation).then(() => {
      generation.started = true;
      resolve();
    }, (error) => {
      this.#end(generation, `the plugin host did not start: ${(error as Error).message}`);
      reject(new CallError("crashed", `the plugin host did not start: ${(error as Error).message}`));
    });
    return generation;
  }

  async #launch(generation: Generation): Promise<void> {
    const { messages, pid } = await launchHost(generation, {
      dir: this.#o.dir,
      baseRead: this.#o.baseRead?.() ?? [],
      memoryMb: this.#o.memoryMb ?? 128,
      lanePort: this.#lanes.port(),
      env: this.#o.env?.(generation.grant.env) ?? {},
      // Its output, a line said as its sole plugin's when it can be.
      say: (line, own) => this.#o.onHostOutput?.(line, own ? this.#soleWorker(generation) : undefined),
      onExit: (why) => this.#end(generation, why),
    });
    this.#follow(generation, messages);
    // Past its memory it is killed; with worker threads no worker of it accounts for, recycled.
    watchHost(generation, pid, {
      clock: this.#o.clock,
      rssLimitMb: this.#o.rssLimitMb ?? 1024,
      orphanGraceMs: ORPHAN_GRACE_MS,
      say: (line) => this.#o.onHostOutput?.(line),
      kill: (why) => this.#kill(generation, why),
      retire: () => this.#retire(generation),
    });
  }

  /** The spec of a host's workers when they all belong to one label (one plugin), else undefined. */
  #soleWorker(generation: Generation): WorkerSpec | undefined {
    const specs = [...generation.workers].map((key) => this.#specs.get(key));
    const labels = new Set(specs.map((spec) => spec?.label));
    return labels.size === 1 ? specs[0] : undefined;
  }

  async #follow(generation: Generation, messages: AsyncGenerator<FromHost>): Promise<void> {
    for await (const message of messages) {
      switch (message.t) {
        case "result":
          this.#settle(message.id, generation, message);
          break;
        case "request":
          this.#answer(generation, message.id, message.key, message.op, message.args);
          break;
        case "log": {
          const spec = this.#specs.get(message.key);
          if (spec && message.text) this.#o.onLog?.(spec, message.level, message.text);
          break;
        }
        case "stopped": {
          this.#endLane(generation, message.key, message.epoch, message.error ?? "the worker was stopped");
          // A worker that synchronous code holds: only ending its process stops it.
          if (message.stuck) this.#retire(generation);
          // One stopped before (an older epoch): its successor may run already, and is not forgotten.
          if (message.epoch !== (this.#epochs.get(message.key) ?? 0)) break;
          generation.workers.delete(message.key);
          const spec = this.#specs.get(message.key);
          if (spec) this.#o.onWorkerStopped?.(spec, message.error);
          this.#stopIdleHost();
          break;
        }
      }
    }
    // The connection ended: the host exited or broke the framing. Either way it is done.
    this.#kill(generation, "the plugin host stopped answering");
  }

  #settle(
    id: number,
    generation: Generation,
    message: { ok: boolean; value?: unknown; error?: string; cold_ms?: number },
  ): void {
    const call = this.#calls.get(id);
    if (!call || call.generation !== generation) return;
    this.#finish(id, call);
    // A worker that answered runs (one that crashed as this call was sent was started again by it),
    // unless it was stopped since.
    if (message.ok && call.epoch === (this.#epochs.get(call.spec.key) ?? 0) && !generation.ended) {
      generation.workers.add(call.spec.key);
    }
    if (message.ok) {
      call.resolve({
        value: message.value,
        ...(typeof message.cold_ms === "number" ? { coldMs: message.cold_ms } : {}),
      });
    } else call.reject(new CallError("failed", String(message.error ?? "failed")));
  }

  #finish(id: number, call: PendingCall): void {
    call.cancel();
    this.#calls.delete(id);
    call.generation.inFlight--;
    if (call.generation.retired && call.generation.inFlight <= 0) {
      this.#kill(call.generation, "retired");
    }
  }

  async #answer(
    generation: Generation,
    id: number,
    key: string,
    op: ContextOp,
    args: unknown[],
  ): Promise<void> {
    const spec = this.#specs.get(key);
    let reply: ToHost;
    try {
      if (!spec) throw new Error("unknown worker");
      const value = await this.#o.onRequest(spec, op, Array.isArray(args) ? args : []);
      reply = { t: "reply", id, key, ok: true, value };
    } catch (error) {
      reply = { t: "reply", id, key, ok: false, error: (error as Error).message ?? String(error) };
    }
    generation.frames?.send(reply);
  }

  #deadline(id: number): void {
    const call = this.#calls.get(id);
    if (!call) return;
    this.#finish(id, call);
    call.reject(new CallError("timeout", "did not answer before its deadline"));
    const generation = call.generation;
    if (generation.ended) return;
    generation.frames?.send({
      t: "cancel",
      id,
      key: call.spec.key,
      ...(call.lane ? { epoch: call.epoch } : {}),
    });
    // A host that does not even answer the cancel is itself stuck.
    const { key } = call.spec;
    this.#o.clock.after(CANCEL_ANSWER_MS, () => {
      if (!generation.ended && generation.workers.has(key)) this.#retire(generation);
    });
  }

  /** New calls go elsewhere; the host is killed once its calls in flight are done. */
  #retire(generation: Generation): void {
    if (generation.phase !== "live") return;
    generation.move("retire");
    if (this.#current === generation) this.#current = null;
    this.#restarts++;
    if (generation.inFlight <= 0) this.#kill(generation, "retired");
  }

  #kill(generation: Generation, why: string): void {
    if (generation.child && !generation.ended) {
      try {
        Deno.kill(-generation.child.pid, "SIGKILL");
      } catch {
        try {
          generation.child.kill("SIGKILL");
        } catch {
          // already gone
        }
      }
    }
    this.#end(generation, why);
  }

  /** The host is gone: its calls fail as crashed, its workers are forgotten. */
  #end(generation: Generation, why: string): void {
    if (generation.ended) return;
    const wasRetired = generation.retired;
    generation.move("end");
    generation.cancelIdle();
    generation.cancelWatch();
    generation.frames?.close();
    generation.lanes.close();
    this.#generations.delete(generation);
    if (this.#current === generation) this.#current = null;
    // A retired host was counted when it was retired; an idle one or a closing one is no restart.
    if (!wasRetired && !this.#closed && why !== "idle") this.#restarts++;
    const orphaned = [...this.#calls].filter(([, call]) => call.generation === generation);
    // By elimination: calls of one worker only, or in its own quarantine host, are that worker's doing.
    const suspects = new Set(orphaned.map(([, call]) => call.spec.key));
    const retry = new Map<string, [number, PendingCall][]>();
    for (const [id, call] of orphaned) {
      if (this.#closed || generation.quarantine || suspects.size < 2 || call.retried) {
        this.#finish(id, call);
        call.reject(new CallError("crashed", why));
        continue;
      }
      call.retried = true;
      generation.inFlight--;
      retry.set(call.spec.key, [...retry.get(call.spec.key) ?? [], [id, call]]);
    }
    for (const [key, calls] of retry) this.#quarantine(key, calls);
    if (generation.quarantine) this.#releaseQuarantine();
    const workers = [...generation.workers];
    generation.workers.clear();
    for (const key of workers) {
      const spec = this.#specs.get(key);
      // A worker that also runs in another host (a quarantine host's twin) is not stopped.
      if (spec && !this.running(key)) {
        this.#o.onWorkerStopped?.(spec, why === "idle" || why === "retired" ? undefined : why);
      }
    }
  }

  /**
   * Runs a worker's calls again in a host of its own, after the host they ran in crashed with other
   * workers' calls in flight; at most {@linkcode QUARANTINE_HOSTS} such hosts at once.
   */
  async #quarantine(key: string, calls: [number, PendingCall][]): Promise<void> {
    if (this.#quarantines >= QUARANTINE_HOSTS) {
      await new Promise<void>((resolve) => this.#quarantineWaiting.push(resolve));
    }
    this.#quarantines++;
    const live = () => calls.filter(([id]) => this.#calls.has(id));
    if (this.#closed || live().length === 0) return this.#releaseQuarantine();
    const generation = this.#start(calls[0][1].spec.grant, key);
    try {
      await generation.ready;
    } catch (error) {
      for (const [id, call] of live()) {
        this.#finish(id, call);
        call.reject(error instanceof CallError ? error : new CallError("crashed", String(error)));
      }
      return; // its end released the slot
    }
    for (const [id, call] of live()) {
      call.generation = generation;
      this.#send(generation, id, call);
    }
    if (generation.inFlight <= 0) this.#kill(generation, "retired");
  }

  #releaseQuarantine(): void {
    this.#quarantines = Math.max(0, this.#quarantines - 1);
    this.#quarantineWaiting.shift()?.();
  }

  /**
   * A host with no workers left is stopped: at once when it is retired, after `idleMs` otherwise (a
   * worker's cold start then costs a worker, not a process as well).
   */
  #stopIdleHost(): void {
    for (const generation of [...this.#generations]) {
      if (generation.workers.size > 0 || generation.inFlight > 0 || !generation.frames) continue;
      if (generation.retired) {
        this.#kill(generation, "idle");
        continue;
      }
      generation.cancelIdle();
      generation.cancelIdle = this.#o.clock.after(this.#o.idleMs ?? 60_000, () => {
        if (generation.workers.size === 0 && generation.inFlight <= 0) this.#kill(generation, "idle");
      });
    }
  }
}
