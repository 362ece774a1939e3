/**
 * Flows (spec 2.5, 2.6, 2.9, 3.4, 6, 8): multi-step automations the box runs when an event occurs.
 *
 * - **Where they come from**: `flow_sources.ts` (the box's flows file and each location's config).
 * - **What starts them.** Events on the bus (a type or a prefix, with `where`), never `before:` gates,
 *   never `flow.*`, never an event the flow itself caused (`origin: flow:<id>`). The bus only hands each
 *   event to a queue here; matching and running happen off the publishing path.
 * - **Rules.** Only enabled flows; one run at a time per flow and worktree (a second is recorded as
 *   `skipped`); `max_runs_per_hour` per flow (default 20; test runs count; a refused run is recorded).
 * - **Runs** are kept in the store (the last 200); a run still `running` when the daemon starts was cut
 *   off by its stop and becomes `interrupted`, never run again.
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
import type { FlowsFile } from "../core/config.ts";
import { FLOWS_FILE } from "../core/config.ts";
import { validateUserFile, writeUserFile } from "../core/user_files.ts";
import { SerialQueue } from "./serial_queue.ts";
import { flowStarts, type FlowStep, flowVariables, runFailed, runsPerHour, stepName, stepRuns, type StepStatus, tail } from "./flow_steps.ts";
import { runStatus } from "./flow_run_status.ts";
import { type Candidate, type EffectiveFlow, FlowSources, type InactiveReason } from "./flow_sources.ts";
import { FlowActions, type ModuleRunner, placeData, type RunPlace, type RunState, type StepOutcome } from "./flow_actions.ts";
import { FlowRuns, type RunStart } from "./flow_runs.ts";
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
    this.#events.push(event);
  }

  async #dispatch(event: DockEvent): Promise<void> {
    this.#sources.refresh();
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
    run.catch((error) => this.#o.log.error(`flows: ${errorText(error)}`)).finally(() => this.#runs.delete(run));
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
      const status = runStatus("running", runFailed(judged) ? "fail" : "succeed");
      this.#o.store.run(
        "UPDATE flow_runs SET status = ?, reason = ?, end = ?, steps = ? WHERE id = ? AND status = 'running'",
        status,
        reason ?? null,
        new Date().toISOString(),
        JSON.stringify(steps),
        run.id,
      );
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

  // -------------------------------------------------------------------------------------------------
  // Steps

  async #step(
    step: FlowStep,
    name: string,
    vars: Record<string, string>,
    context: { candidate: Candidate; place: RunPlace; run: number; state: RunState },
  ): Promise<StepOutcome> {
    const { candidate, place } = context;
    const origin = `flow:${candidate.flow.id}`;
    const timeoutMs = stepTimeoutMs(step);
    const signal = AbortSignal.any([this.#closing.signal, AbortSignal.timeout(timeoutMs)]);
    switch (step.kind) {
      case "run": {
        const { command, env } = shellCommand(step.command!, vars);
        const extra = {
          ...env,
          DOCK_ORIGIN: origin,
          DOCK_FLOW: candidate.flow.id,
          DOCK_FLOW_RUN: String(context.run),
        };
        let exitCode: number;
        let output: string;
        let timedOut = false;
        if (place.location) {
          const target = place.worktree ? `${place.location}/${place.worktree.name}` : place.location;
          const result = await this.#o.exec.run(
            { location: target, command, timeoutMs },
            { env: extra, signal: this.#closing.signal },
          );
          exitCode = result.exit_code;
          output = result.output;
          timedOut = result.timed_out ?? false;
        } else {
          const result = await shell(command, {
            cwd: this.#o.home,
            env: { ...Deno.env.toObject(), ...extra },
            clearEnv: true,
            timeoutMs,
            signal: this.#closing.signal,
            maxOutput: 64 * 1024,
          });
          exitCode = result.timedOut ? 124 : result.code;
          output = result.output;
          timedOut = result.timedOut;
        }
        return {
          ok: exitCode === 0 && !timedOut,
          exit_code: exitCode,
          output,
          ...(timedOut ? { error: `killed at its timeout (${step.timeout ?? "10m"})` } : {}),
          ...(exitCode !== 0 && !timedOut ? { error: `exited with ${exitCode}` } : {}),
        };
      }
      case "prompt": {
        const session = this.#session(step, place, context.state);
        // Never typed into a permission prompt: text from a flow (an event's, a forge comment's) would
        // answer it for the person. The box checks it in the same step as the typing.
        await this.#o.sessions.send(session, substitute(step.text!, vars), true, origin, {
          key: `flow-${context.run}-${name}`,
          unlessWaiting: "permission",
        });
        return { ok: true, output: "" };
      }
      case "wait": {
        const session = this.#session(step, place, context.state);
        const states = (step.for ?? ["finished", "waiting"]) as AgentState[];
        const result = await this.#o.sessions.wait(session, { states, timeoutMs, signal });
        if (result.exited) return { ok: false, output: result.state, error: "the agent's program exited" };
        if (result.timed_out) return { ok: false, output: result.state, error: "timed out" };
        return { ok: true, output: result.state };
      }
      case "start_agent": {
        const session = await this.#startAgent(step, vars, { place, run: context.run, origin });
        context.state.session = session.name;
        return { ok: true, output: session.name };
      }
      case "notify": {
        const title = substitute(step.title!, vars);
        const text = substitute(step.text ?? "", vars);
        this.#o.bus.publish({
          type: "notify",
          origin,
          data: { title, text, flow: candidate.flow.id, run: context.run, ...placeData(place) },
        });
        return { ok: true, output: text };
      }
      case "webhook": {
        const url = webhookUrl(step.url!, vars);
        const body = step.text === undefined ? JSON.stringify(vars) : substitute(step.text, vars);
        const response = await fetch(url, {
          method: "POST",
          headers: {
            "content-type": step.text === undefined ? "application/json" : "text/plain; charset=utf-8",
          },
          body,
          signal,
          redirect: "manual",
        });
        const output = await response.text().catch(() => "");
        const ok = response.status < 300;
        return {
          ok,
          exit_code: response.status,
          output,
          ...(ok ? {} : { error: `answered ${response.status}` }),
        };
      }
      case "module": {
        if (!this.#o.module) return { ok: false, error: "module steps need the plugin host" };
        const checkout = place.worktree?.path ??
          (place.location ? this.#o.locations.get(place.location).path : undefined);
        const base = candidate.moduleBase ?? (checkout ? join(checkout, ".dock") : undefined);
        const root = candidate.source === "box" ? candidate.moduleRoot : checkout;
        if (!base || !root) return { ok: false, error: `module ${step.module}: no folder to find it in` };
        const value = await this.#o.module({
          module: step.module!,
          base,
          root,
          cwd: checkout,
          label: origin,
          input: vars,
          timeoutMs,
        });
        const output = value === null || value === undefined
          ? ""
          : typeof value === "string"
          ? value
          : JSON.stringify(value);
        return { ok: true, output };
      }
      default:
        return { ok: false, error: `${step.kind} steps are not supported yet` };
    }
  }

  /**
   * A `start_agent` step: the preset in the run's worktree or, with `new_worktree`, in a new worktree
   * (`name`, else `<flow>-<run>`) branching from the run's branch, made as `POST worktrees` makes one
   * (ports, environment, setup). The flow's own step: no gate applies (spec 6); its events carry the
   * flow's origin.
   */
  async #startAgent(
    step: FlowStep,
    vars: Record<string, string>,
    context: { place: RunPlace; run: number; origin: string },
  ): Promise<Session> {
    const { place, origin } = context;
    if (!place.location) throw new Error("a start_agent step needs a location: the flow ran outside one");
    let target = place.worktree ? `${place.location}/${place.worktree.name}` : place.location;
    if (step.new_worktree) {
      const name = step.name === undefined
        ? `${origin.slice("flow:".length)}-${context.run}`
        : substitute(step.name, vars);
      const worktree = await this.#o.worktrees.create(
        place.location,
        { name, ...(place.worktree?.branch ? { base: place.worktree.branch } : {}) },
        origin,
      );
      target = `${worktree.location}/${worktree.name}`;
    }
    const prompt = step.text === undefined ? undefined : substitute(step.text, vars);
    return await this.#o.sessions.create(
      { location: target, agent: substitute(step.agent!, vars), ...(prompt ? { prompt } : {}) },
      origin,
    );
  }

  /**
   * A prompt or wait step's session: its own, else the one a `start_agent` step of the run started, else
   * the session of the agent event that started the run.
   */
  #session(step: FlowStep, place: RunPlace, state: RunState): string {
    const session = step.session ?? state.session ?? place.session;
    if (!session) {
      throw new Error(`a ${step.kind} step needs a session: name one, or start it from an agent event`);
    }
    return session;
  }

  // -------------------------------------------------------------------------------------------------
  // Run records

  #record(row: Omit<RunRow, "id" | "steps" | "reason" | "end"> & { reason?: string; end?: string }): FlowRun {
    const { lastInsertRowid } = this.#o.store.run(
      "INSERT INTO flow_runs (flow, scope, trigger, status, reason, location, worktree, start, end) " +
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
      row.flow,
      row.scope,
      row.trigger,
      row.status,
      row.reason ?? null,
      row.location,
      row.worktree,
      row.start,
      row.end ?? null,
    );
    this.#o.store.run(
      "DELETE FROM flow_runs WHERE id <= (SELECT id FROM flow_runs ORDER BY id DESC LIMIT 1 OFFSET ?)",
      RUNS_KEPT,
    );
    return this.run(lastInsertRowid)!;
  }

  /** One run by id. */
  run(id: number): FlowRun | undefined {
    const row = this.#o.store.get<RunRow>("SELECT * FROM flow_runs WHERE id = ?", id);
    return row && toRun(row);
  }

  /** `GET flows/runs`: newest first. */
  runs(options: { flow?: string; limit: number }): FlowRun[] {
    const rows = options.flow
      ? this.#o.store.all<RunRow>(
        "SELECT * FROM flow_runs WHERE flow = ? ORDER BY id DESC LIMIT ?",
        options.flow,
        options.limit,
      )
      : this.#o.store.all<RunRow>("SELECT * FROM flow_runs ORDER BY id DESC LIMIT ?", options.limit);
    return rows.map(toRun);
  }
}

/** Validates a `PUT flows` body (errors name the field, `flows[0].steps[1].command`). */
export function flowsBody(body: unknown): FlowsFile {
  return validateUserFile(body, "body", FLOWS_FILE, { code: "invalid_flows", status: 400 });
}

function placeData(place: RunPlace): Record<string, string> {
  return {
    ...(place.location ? { location: place.location } : {}),
    ...(place.worktree ? { worktree: place.worktree.name } : {}),
  };
}

function toRun(row: RunRow): FlowRun {
  const run: FlowRun = {
    id: row.id,
    flow: row.flow,
    scope: row.scope,
    trigger: row.trigger,
    status: row.status as FlowRunStatus,
    start: row.start,
    steps: JSON.parse(row.steps) as FlowStepRun[],
  };
  if (row.reason) run.reason = row.reason;
  if (row.location) run.location = row.location;
  if (row.worktree) run.worktree = row.worktree;
  if (row.end) run.end = row.end;
  return run;
}
