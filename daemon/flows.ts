/**
 * Flows (spec 2.5, 2.6, 2.9, 3.4, 6, 8): multi-step automations the box runs when an event occurs.
 *
 * - **Where they come from.** `flow_sources.ts`: the box's flows file and each location's config.
 * - **What starts them.** Events on the bus (a type or a prefix, with `where`), never `before:` gates,
 *   never `flow.*`, never an event the flow itself caused (`origin: flow:<id>`). The bus only hands each
 *   event to a queue here; matching and running happen off the publishing path.
 * - **Rules.** Only enabled flows; one run at a time per flow and worktree (a second is recorded as
 *   `skipped`); `max_runs_per_hour` per flow (default 20; test runs count; a refused run is recorded).
 * - **Runs** are kept in the store (the last 200, `flow_runs.ts`); a run still `running` when the daemon
 *   starts was cut off by its stop and becomes `interrupted`, never run again. Each step is
 *   `flow_actions.ts`'s, on the box's clock.
 *
 * Gates: a run step's command is the flow's own, not a request to the box API, so `before:exec` does not
 * apply to the step itself; whatever the command asks of the box API (`dockd exec`, `dock session send`)
 * passes that request's gates like any other caller (spec 6). Its requests carry origin `flow:<id>`
 * (`DOCK_ORIGIN`), so events they cause never start the same flow again.
 *
 * @module
 */
import type {
  AgentState,
  DockEvent,
  FlowRun,
  FlowRunStatus,
  FlowsState,
  FlowStepRun,
  FlowTestRequest,
  Worktree,
} from "../client/wire.ts";
import { DockError } from "../client/errors.ts";
import type { EventBus } from "../core/events.ts";
import type { Clock } from "../core/clock.ts";
import { errorText, type Log } from "../core/log.ts";
import type { Store } from "../core/store.ts";
import { FLOWS_FILE, type FlowsFile } from "../core/config.ts";
import { validateUserFile, writeUserFile } from "../core/user_files.ts";
import { SerialQueue } from "./serial_queue.ts";
import {
  flowStarts,
  type FlowStep,
  flowVariables,
  runFailed,
  runsPerHour,
  stepName,
  stepRuns,
  type StepStatus,
  tail,
} from "./flow_steps.ts";
import { runStatus } from "./flow_run_status.ts";
import { type Candidate, type EffectiveFlow, FlowSources, type InactiveReason } from "./flow_sources.ts";
import {
  FlowActions,
  type ModuleRunner,
  placeData,
  type RunPlace,
  type RunState,
  type StepOutcome,
} from "./flow_actions.ts";
import { FlowRuns } from "./flow_runs.ts";
import type { Exec } from "./exec.ts";
import type { Locations } from "./locations.ts";
import type { Sessions } from "./sessions.ts";
import type { Worktrees } from "./worktrees.ts";

/** Events waiting to be matched before the oldest are dropped (only when matching cannot keep up). */
const BACKLOG = 10_000;

/** What the flows engine needs from the rest of the daemon. */
export interface FlowsOptions {
  store: Store;
  bus: EventBus;
  /** `~/.dock/flows.json`. */
  file: string;
  boxName: string;
  /** Where a box flow without a place runs. */
  home: string;
  locations: Pick<Locations, "list" | "get" | "config">;
  worktrees: Pick<Worktrees, "list" | "get" | "target" | "containing" | "create">;
  exec: Pick<Exec, "run">;
  sessions: Pick<Sessions, "get" | "send" | "wait" | "create">;
  module?: ModuleRunner;
  /** How often the flows file is checked for edits. @default {1000} */
  watchMs?: number;
  /** Dates runs, counts the hourly budget and times steps out. */
  clock: Clock;
  /** Told of a run that failed outside its record and of a broken flows file. */
  log: Log;
}

/** What a trigger source other than the bus hands {@linkcode Flows.startTriggered}. */
export interface TriggeredStart {
  /** One of {@linkcode Flows.effective}'s flows. */
  flow: EffectiveFlow;
  /**
   * The event that starts the run (`schedule.fired`, `forge.review_comment`): announced on the bus with
   * origin `flow:<id>` and the place's `location`/`worktree` added, then the run's `{{event.*}}`.
   */
  event: { type: string; data?: Record<string, unknown> };
  /** Where it runs: a location's main checkout, or the worktree named; neither is the box user's home. */
  place: { location?: string; worktree?: string };
}

/** Runs the box's flows on its events. */
export class Flows {
  #o: FlowsOptions;
  #sources: FlowSources;
  #records: FlowRuns;
  #actions: FlowActions;
  // Matching events to flows happens here, off the bus's publishing path.
  #events: SerialQueue<DockEvent>;
  #running = new Set<string>();
  #runs = new Set<Promise<unknown>>();
  #closing = new AbortController();
  #unsubscribe?: () => void;

  constructor(options: FlowsOptions) {
    this.#o = options;
    this.#sources = new FlowSources({
      file: options.file,
      locations: options.locations,
      clock: options.clock,
      log: options.log,
    });
    this.#records = new FlowRuns(options.store);
    this.#actions = new FlowActions({ ...options, closing: this.#closing.signal });
    this.#events = new SerialQueue<DockEvent>({
      handle: (event) => this.#dispatch(event),
      backlog: BACKLOG,
      name: "flows",
      describe: (event) => event.type,
      log: options.log,
    });
  }

  /** Marks runs cut off by the last stop `interrupted`, follows the bus and watches the flows file. */
  start(): void {
    this.#records.interruptRunning(this.#status("running", "interrupt"), this.#now());
    this.#unsubscribe = this.#o.bus.subscribe((event) => this.#onEvent(event));
    this.#sources.watch(this.#o.watchMs ?? 1000);
  }

  /** Stops following events and ends running steps; their runs become `interrupted`. */
  close(): void {
    this.#unsubscribe?.();
    this.#sources.close();
    this.#closing.abort();
    this.#records.interruptRunning(this.#status("running", "interrupt"), this.#now());
  }

  /** Resolves when every run in progress has ended (tests). */
  async settled(): Promise<void> {
    while (this.#runs.size) await Promise.allSettled([...this.#runs]);
  }

  /** `GET flows`: every flow on the box with its scope, source and whether it is overridden. */
  list(): Promise<FlowsState> {
    return this.#sources.list();
  }

  /** Adds a trigger source's explanation of why a flow cannot run, shown by `GET flows`. */
  explainInactive(reason: InactiveReason): void {
    this.#sources.explainInactive(reason);
  }

  /** Every flow in force on the box for trigger sources other than the bus (`FlowSources.effective`). */
  effective(): Promise<EffectiveFlow[]> {
    return this.#sources.effective();
  }

  /**
   * Starts a run of `flow` for a trigger source other than the bus: announces its event (origin
   * `flow:<id>`), then runs it under the usual rules (one at a time per place, the hourly budget).
   * Resolves with the finished, or skipped, run; `settled()` waits for it too. An unknown location or
   * worktree is a 404 and nothing is announced.
   */
  startTriggered(start: TriggeredStart): Promise<FlowRun> {
    const { flow, event, place } = start;
    let run: Promise<FlowRun>;
    try {
      const located = place.location
        ? {
          location: place.location,
          worktree: this.#o.worktrees.target(
            place.worktree ? `${place.location}/${place.worktree}` : place.location,
          ),
        }
        : {};
      const published: DockEvent = this.#o.bus.publish({
        type: event.type,
        origin: `flow:${flow.flow.id}`,
        data: { ...event.data, ...placeData(located) },
      });
      run = this.#start(flow, published, located, published.type);
    } catch (error) {
      return Promise.reject(error);
    }
    this.#track(run);
    return run;
  }

  /** `PUT flows`: replaces the box's flows file (a body already checked by the route); announces nothing. */
  async write(body: unknown): Promise<FlowsState> {
    const file = flowsBody(body);
    await writeUserFile(this.#o.file, file, { mode: 0o644 });
    this.#sources.refresh();
    return await this.list();
  }

  // -------------------------------------------------------------------------------------------------
  // Starting runs

  #onEvent(event: DockEvent): void {
    // An edit through the API takes effect for the very next event, not a second later.
    if (event.type === "config.changed") this.#sources.configChanged();
    if (event.type.startsWith("flow.") || event.type.startsWith("before:")) return;
    // The flows file as the event is delivered: checked once for the bus's batch, not per dispatch.
    this.#sources.refreshInBatch();
    this.#events.push(event);
  }

  async #dispatch(event: DockEvent): Promise<void> {
    const place = this.#eventPlace(event);
    const candidates = [
      ...this.#sources.fileCandidates(),
      ...(place.location ? (await this.#sources.locationFlows(place.location)).candidates : []),
    ];
    const where = {
      location: place.location,
      worktree: place.worktree?.name,
      branch: place.worktree?.branch ?? null,
      agent: place.agent ?? null,
    };
    for (const candidate of candidates) {
      if (!flowStarts(candidate.flow, event, where)) continue;
      this.#track(this.#start(candidate, event, place, event.type));
    }
  }

  #track(run: Promise<unknown>): void {
    this.#runs.add(run);
    run.catch((error) => this.#o.log.error(`flows: ${errorText(error)}`)).finally(() =>
      this.#runs.delete(run)
    );
  }

  /** The place of an event: its `location`/`worktree`, its `session`'s, or the worktree holding its `path`. */
  #eventPlace(event: DockEvent): RunPlace {
    const data = event.data ?? {};
    const text = (key: string) => typeof data[key] === "string" ? data[key] as string : undefined;
    let location = text("location");
    let worktreeName = text("worktree");
    let agent: string | null | undefined;
    const session = text("session");
    if (session) {
      try {
        const found = this.#o.sessions.get(session);
        location ??= found.location;
        worktreeName ??= found.worktree;
        agent = found.agent;
      } catch { /* gone */ }
    }
    agent ??= text("agent");
    if (!location && text("path")) {
      const worktree = this.#o.worktrees.containing(text("path")!);
      if (worktree) return { location: worktree.location, worktree, agent, session };
    }
    if (!location) return { agent, session };
    try {
      this.#o.locations.get(location);
    } catch {
      return { agent, session };
    }
    let worktree: Worktree | undefined;
    try {
      worktree = worktreeName
        ? this.#o.worktrees.get(location, worktreeName)
        : this.#o.worktrees.target(location);
    } catch { /* removed: the run happens in the repository's root */ }
    return { location, worktree, agent, session };
  }

  /**
   * `POST flows/{id}/test`: runs the flow for real as if its trigger occurred in `scope` (with `data`
   * as the event's data; `data.path` picks the worktree) and answers the finished run.
   */
  async test(id: string, request: FlowTestRequest): Promise<FlowRun> {
    this.#sources.refresh();
    const scope = request.scope ?? "box";
    let candidates = this.#sources.fileCandidates();
    let location: string | undefined;
    if (scope.startsWith("repo:")) {
      location = scope.slice("repo:".length);
      this.#o.locations.get(location);
      this.#sources.forget(location);
      candidates = [...(await this.#sources.locationFlows(location)).candidates, ...candidates];
    }
    const candidate = candidates.find((c) => c.flow.id === id);
    if (!candidate) {
      throw new DockError("not_found", `no flow '${id}' in scope ${scope}`, { status: 404 });
    }
    const data = { ...(location ? { location } : {}), ...request.data };
    const event: DockEvent = {
      type: typeof candidate.flow.trigger.event === "string" && !candidate.flow.trigger.event.endsWith("*")
        ? candidate.flow.trigger.event
        : "flow.test",
      time: this.#now(),
      box: this.#o.boxName,
      origin: "test",
      data,
    };
    const place = this.#eventPlace(event);
    return await this.#start(candidate, event, place, "test");
  }

  /** Records and runs one run (or records why it was skipped); resolves with the finished record. */
  async #start(candidate: Candidate, event: DockEvent, place: RunPlace, trigger: string): Promise<FlowRun> {
    const { flow, scope } = candidate;
    const runKey = `${scope}\0${flow.id}\0${place.location ?? ""}/${place.worktree?.name ?? ""}`;
    const now = this.#o.clock.now();
    const base = {
      flow: flow.id,
      scope,
      trigger,
      location: place.location ?? null,
      worktree: place.worktree?.name ?? null,
      start: new Date(now).toISOString(),
    };
    if (this.#running.has(runKey)) {
      return this.#records.record({
        ...base,
        status: this.#status("new", "skip"),
        reason: "already running there",
        end: base.start,
      });
    }
    const used = this.#records.startedSince(flow.id, scope, new Date(now - 3_600_000).toISOString());
    if (used >= runsPerHour(flow)) {
      return this.#records.record({
        ...base,
        status: this.#status("new", "skip"),
        reason: `over its budget of ${runsPerHour(flow)} runs per hour`,
        end: base.start,
      });
    }
    this.#running.add(runKey);
    try {
      const run = this.#records.record({ ...base, status: this.#status("new", "begin") });
      const origin = `flow:${flow.id}`;
      this.#o.bus.publish({
        type: "flow.started",
        origin,
        data: { flow: flow.id, run: run.id, scope, trigger, ...placeData(place) },
      });
      const steps: FlowStepRun[] = [];
      const done: { name: string; exit_code?: number; output?: string }[] = [];
      // What the next step's `when` is judged on (spec 3.4 rule 2); the run's start counts as a success.
      let previous: StepStatus = "succeeded";
      const judged: { when?: FlowStep["when"]; status: StepStatus }[] = [];
      let reason: string | undefined;
      const state: RunState = {};
      for (const [index, raw] of flow.steps.entries()) {
        const step = raw as unknown as FlowStep;
        const name = stepName(step, index);
        if (this.#closing.signal.aborted) return run; // interrupted: close() marked it
        if (!stepRuns(step.when, previous)) {
          steps.push({ id: name, kind: step.kind, status: "skipped" });
          previous = "skipped";
          judged.push({ when: step.when, status: previous });
          continue;
        }
        const vars = flowVariables({
          event,
          box: this.#o.boxName,
          location: place.location,
          worktree: place.worktree,
          agentState: this.#agentState(step.session ?? state.session ?? place.session),
          steps: done,
          now: new Date(this.#o.clock.now()),
        });
        let outcome: StepOutcome;
        try {
          outcome = await this.#actions.run(step, name, vars, { candidate, place, run: run.id, state });
        } catch (error) {
          outcome = { ok: false, error: error instanceof Error ? error.message : String(error) };
        }
        if (this.#closing.signal.aborted) return run;
        const output = outcome.output === undefined ? undefined : tail(outcome.output);
        done.push({ name, exit_code: outcome.exit_code, output: output ?? outcome.error });
        steps.push({
          id: name,
          kind: step.kind,
          status: outcome.ok ? "succeeded" : "failed",
          ...(outcome.exit_code !== undefined ? { exit_code: outcome.exit_code } : {}),
          ...(output !== undefined ? { output } : {}),
          ...(outcome.error ? { error: outcome.error } : {}),
        });
        previous = outcome.ok ? "succeeded" : "failed";
        judged.push({ when: step.when, status: previous });
        if (!outcome.ok) {
          reason = `step ${name} (${step.kind}) failed${outcome.error ? `: ${outcome.error}` : ""}`;
        } else if (!runFailed(judged)) reason = undefined; // handled (spec 3.4 rule 4)
        this.#records.steps(run.id, steps);
      }
      const status = this.#status("running", runFailed(judged) ? "fail" : "succeed");
      this.#records.finish(run.id, { status, reason, end: this.#now(), steps });
      this.#o.bus.publish({
        type: "flow.finished",
        origin,
        data: { flow: flow.id, run: run.id, scope, status, ...placeData(place) },
      });
      return this.run(run.id)!;
    } finally {
      this.#running.delete(runKey);
    }
  }

  #agentState(session: string | undefined): AgentState | undefined {
    if (!session) return undefined;
    try {
      return this.#o.sessions.get(session).agent_state;
    } catch {
      return undefined;
    }
  }

  /** A run's next status; a change its lifecycle does not name is logged and thrown. */
  #status(from: Parameters<typeof runStatus>[0], event: Parameters<typeof runStatus>[1]): FlowRunStatus {
    return runStatus(from, event, this.#o.log);
  }

  /** Now on the box's clock, as records and events write it. */
  #now(): string {
    return new Date(this.#o.clock.now()).toISOString();
  }

  /** One run by id. */
  run(id: number): FlowRun | undefined {
    return this.#records.run(id);
  }

  /** `GET flows/runs`: newest first. */
  runs(options: { flow?: string; limit: number }): FlowRun[] {
    return this.#records.runs(options);
  }
}

/** Validates a `PUT flows` body (errors name the field, `flows[0].steps[1].command`). */
export function flowsBody(body: unknown): FlowsFile {
  return validateUserFile(body, "body", FLOWS_FILE, { code: "invalid_flows", status: 400 });
}
