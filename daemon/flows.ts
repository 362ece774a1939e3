/**
 * Flows (spec 2.5, 2.6, 2.9, 3.4, 6, 8): multi-step automations the box runs when an event occurs.
 *
 * - **Where they come from.** The box's `~/.dock/flows.json` (any project, or one `where.location`) and
 *   each location's effective config (repository, kit, box layer merged by id: a flow replaced by id
 *   never runs; a replacement with `enabled: false` switches it off on this box). The file is checked
 *   by its signature and configs are read again after a second, so edits take effect within a second.
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
import { dirname, join } from "../core/posix_path.ts";
import type {
  DockEvent,
  FlowConfig,
  FlowInfo,
  FlowRun,
  FlowRunStatus,
  FlowSource,
  FlowsState,
  FlowStepRun,
  FlowTestRequest,
  Worktree,
} from "../client/wire.ts";
import { DockError } from "../client/errors.ts";
import type { EventBus } from "../core/events.ts";
import type { Store } from "../core/store.ts";
import { FLOWS_FILE, type FlowsFile } from "../core/config.ts";
import { readUserFileSync, validateUserFile, writeUserFile } from "../core/user_files.ts";
import { shell } from "../core/runner.ts";
import { SerialQueue } from "../core/serial_queue.ts";
import { FileSignature } from "../core/files.ts";
import type { StepRun } from "../plugins/plugins.ts";
import {
  flowStarts,
  type FlowStep,
  flowVariables,
  runFailed,
  runsPerHour,
  stepName,
  stepRuns,
  type StepStatus,
  stepTimeoutMs,
  substitute,
  tail,
  webhookUrl,
} from "./flow_steps.ts";
import { shellCommand } from "./flow_shell.ts";
import type { Exec } from "./exec.ts";
import type { Locations } from "./locations.ts";
import type { Sessions } from "./sessions.ts";
import type { Worktrees } from "./worktrees.ts";
import type { AgentState, Session } from "../client/wire.ts";

/** Runs kept per box. */
export const RUNS_KEPT = 200;
/** Events waiting to be matched before the oldest are dropped (only when matching cannot keep up). */
const BACKLOG = 10_000;
/** How long a location's config flows are reused before the config is read again. */
const CONFIG_TTL_MS = 1000;

/** What a `module` step needs of the plugin host (`Plugins.runStep`). */
export type ModuleRunner = (options: StepRun) => Promise<unknown>;

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
}

/** A flow that can run, with where it is written. */
interface Candidate {
  flow: FlowConfig;
  scope: string;
  source: FlowSource;
  /** Where a `module` step's path is resolved and must stay inside. */
  moduleBase?: string;
  moduleRoot?: string;
}

/**
 * A flow in force on the box, as {@linkcode Flows.effective} lists it for trigger sources other than the
 * bus (schedules, the forge): enabled and not replaced by id in a later layer. `scope` is `box` (a box
 * flow for any project, or one whose `where.location` is a pattern) or `repo:<location>`.
 */
export type EffectiveFlow = Readonly<Candidate>;

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

/**
 * Why an effective flow cannot run on this box, from a trigger source (a schedule croner refuses, a forge
 * flow without the forge tool), or undefined. `GET flows` shows the first reason as `inactive_reason`.
 */
export type InactiveReason = (flow: FlowConfig, scope: string) => string | undefined;

/** Where a run happens. */
interface RunPlace {
  location?: string;
  worktree?: Worktree;
  agent?: string | null;
  session?: string;
}

interface RunRow {
  id: number;
  flow: string;
  scope: string;
  trigger: string;
  status: string;
  reason: string | null;
  location: string | null;
  worktree: string | null;
  start: string;
  end: string | null;
  steps: string;
}

/** What one run carries from step to step besides variables. */
interface RunState {
  /** The session a `start_agent` step started: later `prompt` and `wait` steps address it (spec 3.4 rule 5). */
  session?: string;
}

interface StepOutcome {
  ok: boolean;
  exit_code?: number;
  output?: string;
  error?: string;
}

/** Runs the box's flows on its events. */
export class Flows {
  #o: FlowsOptions;
  #fileFlows: FlowConfig[] = [];
  #fileError: string | undefined;
  #file: FileSignature;
  #configFlows = new Map<string, { candidates: Candidate[]; infos: FlowInfo[]; at: number }>();
  // A read that began before a config.changed must not cache what it read.
  #configGeneration = 0;
  // Matching events to flows happens here, off the bus's publishing path.
  #events = new SerialQueue<DockEvent>({
    handle: (event) => this.#dispatch(event),
    backlog: BACKLOG,
    name: "flows",
    describe: (event) => event.type,
  });
  #running = new Set<string>();
  #runs = new Set<Promise<unknown>>();
  #closing = new AbortController();
  #unsubscribe?: () => void;
  #timer?: ReturnType<typeof setInterval>;
  #inactive: InactiveReason[] = [];

  constructor(options: FlowsOptions) {
    this.#o = options;
    this.#file = new FileSignature(options.file);
    this.#refresh();
  }

  /** Marks runs cut off by the last stop `interrupted`, follows the bus and watches the flows file. */
  start(): void {
    this.#o.store.run(
      "UPDATE flow_runs SET status = 'interrupted', end = ?, reason = 'the daemon stopped during the run' " +
        "WHERE status = 'running'",
      new Date().toISOString(),
    );
    this.#unsubscribe = this.#o.bus.subscribe((event) => this.#onEvent(event));
    this.#timer = setInterval(() => this.#refresh(), this.#o.watchMs ?? 1000);
  }

  /** Stops following events and ends running steps; their runs become `interrupted`. */
  close(): void {
    this.#unsubscribe?.();
    clearInterval(this.#timer);
    this.#closing.abort();
    this.#o.store.run(
      "UPDATE flow_runs SET status = 'interrupted', end = ?, reason = 'the daemon stopped during the run' " +
        "WHERE status = 'running'",
      new Date().toISOString(),
    );
  }

  /** Resolves when every run in progress has ended (tests). */
  async settled(): Promise<void> {
    while (this.#runs.size) await Promise.allSettled([...this.#runs]);
  }

  // -------------------------------------------------------------------------------------------------
  // Where flows come from

  /** Checks the flows file's signature and reads it again when it changed; the last good flows stay. */
  #refresh(): void {
    const now = this.#file.changed();
    if (!now) return;
    if (now === "missing") {
      this.#fileFlows = [];
      this.#fileError = undefined;
      return;
    }
    try {
      this.#fileFlows =
        readUserFileSync(this.#o.file, FLOWS_FILE, { missing: "absent", code: "invalid_flows" })
          ?.flows ?? [];
      this.#fileError = undefined;
    } catch (error) {
      this.#fileError = error instanceof Error ? error.message : String(error);
      console.error(`flows: ${this.#fileError} (the last good flows stay in force)`);
    }
  }

  #fileCandidates(): Candidate[] {
    const dir = dirname(this.#o.file);
    return this.#fileFlows.map((flow) => {
      const location = (flow.trigger.where as { location?: string } | undefined)?.location;
      return {
        flow,
        scope: location && !location.endsWith("*") ? `repo:${location}` : "box",
        source: "box",
        moduleBase: dir,
        moduleRoot: dir,
      };
    });
  }

  /** A location's flows: the effective ones as candidates, and every layer's for the listing. */
  async #locationFlows(location: string): Promise<{ candidates: Candidate[]; infos: FlowInfo[] }> {
    const cached = this.#configFlows.get(location);
    if (cached && performance.now() - cached.at < CONFIG_TTL_MS) return cached;
    const generation = this.#configGeneration;
    const config = await this.#o.locations.config(location).catch(() => null);
    const scope = `repo:${location}`;
    const layers: [FlowSource, FlowConfig[]][] = [
      ["repo", config?.repo?.flows ?? []],
      ["kit", config?.kit?.flows ?? []],
      ["local", config?.local?.flows ?? []],
    ];
    const infos: FlowInfo[] = [];
    const winner = new Map<string, FlowSource>();
    for (const [source, flows] of layers) for (const flow of flows) winner.set(flow.id, source);
    for (const [source, flows] of layers) {
      for (const flow of flows) {
        infos.push({ ...flow, scope, source, overridden: winner.get(flow.id) !== source });
      }
    }
    let root: string | undefined;
    try {
      root = this.#o.locations.get(location).path;
    } catch { /* forgotten meanwhile */ }
    const candidates: Candidate[] = (config?.effective.flows ?? []).map((flow) => ({
      flow,
      scope,
      source: winner.get(flow.id) ?? "repo",
      moduleRoot: root,
    }));
    const entry = { candidates, infos, at: performance.now() };
    if (generation === this.#configGeneration) this.#configFlows.set(location, entry);
    return entry;
  }

  /** `GET flows`: every flow on the box with its scope, source and whether it is overridden. */
  async list(): Promise<FlowsState> {
    this.#refresh();
    const flows: FlowInfo[] = this.#fileCandidates().map(({ flow, scope }) => ({
      ...flow,
      scope,
      source: "box",
      overridden: false,
    }));
    for (const location of this.#o.locations.list()) {
      this.#configFlows.delete(location.name); // a listing reads the configs as they are now
      flows.push(...(await this.#locationFlows(location.name)).infos);
    }
    for (const info of flows) {
      if (info.enabled !== true || info.overridden) continue;
      const reason = this.#inactive.map((why) => why(info, info.scope)).find((r) => r !== undefined);
      if (reason !== undefined) info.inactive_reason = reason;
    }
    const state: FlowsState = { path: this.#o.file, flows };
    if (this.#fileError) state.error = this.#fileError;
    return state;
  }

  /** Adds a trigger source's explanation of why a flow cannot run, shown by `GET flows`. */
  explainInactive(reason: InactiveReason): void {
    this.#inactive.push(reason);
  }

  /**
   * Every flow in force on the box for trigger sources other than the bus: the box's file and each
   * location's effective config (the candidates the event path uses), enabled ones only. Configs are
   * read again when older than a second, as for events.
   */
  async effective(): Promise<EffectiveFlow[]> {
    this.#refresh();
    const all: Candidate[] = [...this.#fileCandidates()];
    for (const location of this.#o.locations.list()) {
      all.push(...(await this.#locationFlows(location.name)).candidates);
    }
    return all.filter((candidate) => candidate.flow.enabled === true);
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
    this.#refresh();
    return await this.list();
  }

  // -------------------------------------------------------------------------------------------------
  // Starting runs

  #onEvent(event: DockEvent): void {
    if (event.type === "config.changed") {
      // An edit through the API takes effect for the very next event, not a second later.
      this.#configFlows.clear();
      this.#configGeneration++;
    }
    if (event.type.startsWith("flow.") || event.type.startsWith("before:")) return;
    this.#events.push(event);
  }

  async #dispatch(event: DockEvent): Promise<void> {
    this.#refresh();
    const place = this.#eventPlace(event);
    const candidates = [
      ...this.#fileCandidates(),
      ...(place.location ? (await this.#locationFlows(place.location)).candidates : []),
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
    run.catch((error) => console.error("flows:", error)).finally(() => this.#runs.delete(run));
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
    this.#refresh();
    const scope = request.scope ?? "box";
    let candidates = this.#fileCandidates();
    let location: string | undefined;
    if (scope.startsWith("repo:")) {
      location = scope.slice("repo:".length);
      this.#o.locations.get(location);
      this.#configFlows.delete(location);
      candidates = [...(await this.#locationFlows(location)).candidates, ...candidates];
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
      time: new Date().toISOString(),
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
    const now = new Date();
    const base = {
      flow: flow.id,
      scope,
      trigger,
      location: place.location ?? null,
      worktree: place.worktree?.name ?? null,
      start: now.toISOString(),
    };
    if (this.#running.has(runKey)) {
      return this.#record({ ...base, status: "skipped", reason: "already running there", end: base.start });
    }
    const hourAgo = new Date(now.getTime() - 3_600_000).toISOString();
    const used = this.#o.store.get<{ n: number }>(
      "SELECT count(*) AS n FROM flow_runs WHERE flow = ? AND scope = ? AND start > ? AND status != 'skipped'",
      flow.id,
      scope,
      hourAgo,
    )?.n ?? 0;
    if (used >= runsPerHour(flow)) {
      return this.#record({
        ...base,
        status: "skipped",
        reason: `over its budget of ${runsPerHour(flow)} runs per hour`,
        end: base.start,
      });
    }
    this.#running.add(runKey);
    try {
      const run = this.#record({ ...base, status: "running" });
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
          now: new Date(),
        });
        let outcome: StepOutcome;
        try {
          outcome = await this.#step(step, name, vars, { candidate, place, run: run.id, state });
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
        this.#o.store.run("UPDATE flow_runs SET steps = ? WHERE id = ?", JSON.stringify(steps), run.id);
      }
      const status: FlowRunStatus = runFailed(judged) ? "failed" : "succeeded";
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
