/**
 * What each kind of flow step does (spec 3.4, 8): `run` a command (in the place's checkout through
 * `exec`, else in the box user's home), `prompt` and `wait` on a session, `start_agent`, `notify`,
 * `webhook`, `module` (through the plugin host). The engine (`flows.ts`) decides which steps run and
 * records them; the pure parts (variables, timeouts) are `flow_steps.ts`'s.
 *
 * Gates: a run step's command is the flow's own, not a request to the box API, so `before:exec` does not
 * apply to the step itself; whatever the command asks of the box API passes that request's gates like
 * any other caller (spec 6). Its requests carry origin `flow:<id>` (`DOCK_ORIGIN`).
 *
 * @module
 */
import { join } from "../core/posix_path.ts";
import type { AgentState, Session, Worktree } from "../client/wire.ts";
import type { EventBus } from "../core/events.ts";
import type { Clock } from "../core/clock.ts";
import { shell } from "../core/runner.ts";
import type { StepRun } from "../plugins/plugins.ts";
import { type FlowStep, stepTimeoutMs, substitute, webhookUrl } from "./flow_steps.ts";
import { shellCommand } from "./flow_shell.ts";
import type { Candidate } from "./flow_sources.ts";
import type { Exec } from "./exec.ts";
import type { Locations } from "./locations.ts";
import type { Sessions } from "./sessions.ts";
import type { Worktrees } from "./worktrees.ts";

/** What a `module` step needs of the plugin host (`Plugins.runStep`). */
export type ModuleRunner = (options: StepRun) => Promise<unknown>;

/** Where a run happens. */
export interface RunPlace {
  location?: string;
  worktree?: Worktree;
  agent?: string | null;
  session?: string;
}

/** What one run carries from step to step besides variables. */
export interface RunState {
  /** The session a `start_agent` step started: later `prompt` and `wait` steps address it (spec 3.4 rule 5). */
  session?: string;
}

/** How one step ended. */
export interface StepOutcome {
  ok: boolean;
  exit_code?: number;
  output?: string;
  error?: string;
}

/** What the steps need of the rest of the daemon. */
export interface FlowActionsOptions {
  bus: EventBus;
  /** Where a box flow without a place runs. */
  home: string;
  locations: Pick<Locations, "get">;
  worktrees: Pick<Worktrees, "create">;
  exec: Pick<Exec, "run">;
  sessions: Pick<Sessions, "send" | "wait" | "create">;
  module?: ModuleRunner;
  /** Times out `wait` and `webhook` steps. */
  clock: Clock;
  /** Aborts when the daemon stops: every step in progress ends. */
  closing: AbortSignal;
}

/** One step of one run, with what it may read. */
export interface StepContext {
  candidate: Candidate;
  place: RunPlace;
  run: number;
  state: RunState;
}

/** Runs flow steps. */
export class FlowActions {
  #o: FlowActionsOptions;

  constructor(options: FlowActionsOptions) {
    this.#o = options;
  }

  /** Runs one step with its variables; resolves how it ended (a thrown error is the caller's failure). */
  async run(
    step: FlowStep,
    name: string,
    vars: Record<string, string>,
    context: StepContext,
  ): Promise<StepOutcome> {
    const timeoutMs = stepTimeoutMs(step);
    // The step's deadline on the box's clock, so a test moves it instead of waiting for it.
    const deadline = new AbortController();
    const cancel = this.#o.clock.after(
      timeoutMs,
      () => deadline.abort(new DOMException("the step timed out", "TimeoutError")),
    );
    try {
      const signal = AbortSignal.any([this.#o.closing, deadline.signal]);
      return await this.#run(step, name, vars, context, { timeoutMs, signal });
    } finally {
      cancel();
    }
  }

  async #run(
    step: FlowStep,
    name: string,
    vars: Record<string, string>,
    context: StepContext,
    limits: { timeoutMs: number; signal: AbortSignal },
  ): Promise<StepOutcome> {
    const { candidate, place } = context;
    const { timeoutMs, signal } = limits;
    const origin = `flow:${candidate.flow.id}`;
    switch (step.kind) {
      case "run":
        return await this.#command(step, vars, context, timeoutMs);
      case "prompt": {
        const session = stepSession(step, place, context.state);
        // Never typed into a permission prompt: text from a flow (an event's, a forge comment's) would
        // answer it for the person. The box checks it in the same step as the typing.
        await this.#o.sessions.send(session, substitute(step.text!, vars), true, origin, {
          key: `flow-${context.run}-${name}`,
          unlessWaiting: "permission",
        });
        return { ok: true, output: "" };
      }
      case "wait": {
        const session = stepSession(step, place, context.state);
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
      case "module":
        return await this.#module(step, vars, context, timeoutMs);
      default:
        return { ok: false, error: `${step.kind} steps are not supported yet` };
    }
  }

  /** A `run` step: in the place's checkout through `exec`, else in the box user's home. */
  async #command(
    step: FlowStep,
    vars: Record<string, string>,
    context: StepContext,
    timeoutMs: number,
  ): Promise<StepOutcome> {
    const { candidate, place } = context;
    const { command, env } = shellCommand(step.command!, vars);
    const extra = {
      ...env,
      DOCK_ORIGIN: `flow:${candidate.flow.id}`,
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
        { env: extra, signal: this.#o.closing },
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
        signal: this.#o.closing,
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

  /** A `module` step: the plugin host runs it, its path resolved in the flow's folder. */
  async #module(
    step: FlowStep,
    vars: Record<string, string>,
    context: StepContext,
    timeoutMs: number,
  ): Promise<StepOutcome> {
    if (!this.#o.module) return { ok: false, error: "module steps need the plugin host" };
    const { candidate, place } = context;
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
      label: `flow:${candidate.flow.id}`,
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
}

/** An event's or a run's place as event data: `location` and `worktree` when known. */
export function placeData(place: RunPlace): Record<string, string> {
  return {
    ...(place.location ? { location: place.location } : {}),
    ...(place.worktree ? { worktree: place.worktree.name } : {}),
  };
}

/**
 * A prompt or wait step's session: its own, else the one a `start_agent` step of the run started, else
 * the session of the agent event that started the run.
 */
function stepSession(step: FlowStep, place: RunPlace, state: RunState): string {
  const session = step.session ?? state.session ?? place.session;
  if (!session) {
    throw new Error(`a ${step.kind} step needs a session: name one, or start it from an agent event`);
  }
  return session;
}
