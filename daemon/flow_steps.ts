/**
 * The pure parts of flows (spec 2.5, 3.4, 6, 8): which flows an event starts, where they apply, which
 * steps run after the step before them, the `{{variables}}` of text fields and webhook URLs (a `run` command's
 * are `flow_shell.ts`'s). No I/O here: the engine (`flows.ts`) runs what these decide.
 *
 * @module
 */
import type { DockEvent, FlowConfig } from "../client/wire.ts";
import { parseDuration } from "../client/duration.ts";
import { DockError } from "../client/errors.ts";

/** Output kept per step, and what `{{prev.output}}`/`{{steps.ID.output}}` give: the newest characters. */
export const OUTPUT_CHARS = 4000;

/** Default timeouts by step kind (spec 8); none may exceed {@linkcode STEP_MAX_MS}. */
export const STEP_TIMEOUT_MS: Record<string, number> = {
  run: 10 * 60_000,
  wait: 30 * 60_000,
  webhook: 15_000,
  module: 60_000,
  prompt: 60_000,
  notify: 10_000,
};

/** No step runs longer than two hours. */
export const STEP_MAX_MS = 2 * 3_600_000;

/** Runs per flow per box in an hour when `max_runs_per_hour` is absent or 0. */
export const DEFAULT_RUNS_PER_HOUR = 20;

/** A flow step as the config holds it (validated by `core/config.ts`). */
export interface FlowStep {
  id?: string;
  kind: string;
  when?: "success" | "failure" | "always";
  command?: string;
  text?: string;
  title?: string;
  session?: string;
  for?: string[];
  url?: string;
  module?: string;
  timeout?: string;
  agent?: string;
  new_worktree?: boolean;
  name?: string;
}

/** Where an event or a run happened. */
export interface FlowPlace {
  location?: string;
  worktree?: string;
  branch?: string | null;
  /** The agent preset of the session the event concerns. */
  agent?: string | null;
}

/** The last `OUTPUT_CHARS` characters of `text`. */
export function tail(text: string): string {
  return text.length > OUTPUT_CHARS ? text.slice(-OUTPUT_CHARS) : text;
}

/** A step's name in variables and run records: its id, else its number from 1. */
export function stepName(step: FlowStep, index: number): string {
  return step.id ?? String(index + 1);
}

/** A step's timeout in milliseconds: its own (at most two hours), else its kind's default. */
export function stepTimeoutMs(step: FlowStep): number {
  const own = step.timeout === undefined ? undefined : parseDuration(step.timeout, "timeout");
  return Math.min(own ?? STEP_TIMEOUT_MS[step.kind] ?? 60_000, STEP_MAX_MS);
}

/** A step's status in its run: what the next step's `when` is judged on. */
export type StepStatus = "succeeded" | "failed" | "skipped";

/**
 * Whether a step runs (spec 3.4 rule 2), judged on the step right before it in the list as written:
 * `success` (the default) when it succeeded, `failure` when it failed, `always` regardless. A skipped
 * step neither succeeded nor failed, so only an `always` step runs after one: a chain of `success`
 * (or `failure`) steps stops at its first skip. The first step has no step before it: pass
 * `"succeeded"` (the run's start), so a first `failure` step never runs.
 */
export function stepRuns(when: FlowStep["when"], previous: StepStatus): boolean {
  const w = when ?? "success";
  if (w === "always") return true;
  return previous === (w === "success" ? "succeeded" : "failed");
}

/**
 * Whether a finished run failed (spec 3.4 rule 4): a step failed and no later step handled it. A
 * `failure` step that runs and succeeds handles every failure before it; an `always` step does not
 * (it runs whatever happened), and a step failing after a handler fails the run again.
 */
export function runFailed(steps: readonly { when?: FlowStep["when"]; status: StepStatus }[]): boolean {
  let unhandled = false;
  for (const step of steps) {
    if (step.status === "failed") unhandled = true;
    else if (step.status === "succeeded" && step.when === "failure") unhandled = false;
  }
  return unhandled;
}

/** The hourly budget of a flow: its own, else 20 when absent or 0. */
export function runsPerHour(flow: FlowConfig): number {
  return flow.max_runs_per_hour || DEFAULT_RUNS_PER_HOUR;
}

/** Whether `pattern` (exact, or ending in `*` for a prefix) matches `value`. */
function globMatches(pattern: string | undefined, value: string | null | undefined): boolean {
  if (pattern === undefined || pattern === "" || pattern === "*") return true;
  if (value === undefined || value === null) return false;
  return pattern.endsWith("*") ? value.startsWith(pattern.slice(0, -1)) : value === pattern;
}

/** Whether an event type matches a trigger's `event` (a type, a `x.*` prefix, or `*`). */
export function eventTypeMatches(pattern: string, type: string): boolean {
  if (type.startsWith("before:") || type.startsWith("flow.")) return false;
  if (pattern === "*") return true;
  if (pattern.endsWith(".*")) return type.startsWith(pattern.slice(0, -1));
  return pattern === type;
}

/** Whether a trigger's `where` (location, agent, branch with trailing `*`) admits a place. */
export function whereMatches(where: Record<string, unknown> | undefined, place: FlowPlace): boolean {
  if (!where) return true;
  const field = (key: string) => typeof where[key] === "string" ? where[key] as string : undefined;
  return globMatches(field("location"), place.location) &&
    globMatches(field("agent"), place.agent) &&
    globMatches(field("branch"), place.branch);
}

/**
 * Whether `flow` starts for `event` at `place`: enabled, an event trigger that matches, its `where`
 * admitting the place, and the event not caused by the flow itself (`origin: flow:<id>`).
 */
export function flowStarts(
  flow: FlowConfig,
  event: Pick<DockEvent, "type" | "origin">,
  place: FlowPlace,
): boolean {
  if (flow.enabled !== true) return false;
  const pattern = flow.trigger.event;
  if (typeof pattern !== "string" || !eventTypeMatches(pattern, event.type)) return false;
  if (event.origin === `flow:${flow.id}`) return false;
  return whereMatches(flow.trigger.where as Record<string, unknown> | undefined, place);
}

/** A `{{name}}` in a text field, a URL or a command; the name is its first group. */
export const VARIABLE_PATTERN = /\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}/;
const VARIABLE = new RegExp(VARIABLE_PATTERN.source, "g");

/** The value of one variable name in `vars` (an unknown name is empty). */
export function variable(vars: Record<string, string>, name: string): string {
  return Object.hasOwn(vars, name) ? vars[name] : "";
}

/** `text` with every `{{name}}` replaced by its value; an unknown variable is empty. */
export function substitute(text: string, vars: Record<string, string>): string {
  return text.replace(VARIABLE, (_, name: string) => variable(vars, name));
}

/** Whether a webhook URL holds a `{{variable}}` in its scheme, user, host or port. */
export function templatedOrigin(url: string): boolean {
  const authority = /^[^:/?#]*:\/\/([^/?#]*)/.exec(url);
  return url.split(/[/?#]/, 1)[0].includes("{{") || (authority?.[1] ?? "").includes("{{");
}

/**
 * A webhook step's URL: each `{{name}}` of its path, query or fragment becomes its value with every
 * reserved character percent-encoded, so a value stays one segment or one query value (a `/`, `?`,
 * `#`, `&` or `@` in it changes nothing else). A variable in the scheme, user, host or port would let
 * a value choose where the request goes: refused (the config refuses it too).
 */
export function webhookUrl(template: string, vars: Record<string, string>): string {
  if (templatedOrigin(template)) {
    throw new DockError(
      "invalid_request",
      "webhook: a {{variable}} may not stand in the URL's scheme, host or port",
      { status: 400 },
    );
  }
  return template.replace(VARIABLE, (_, name: string) => {
    const value = variable(vars, name);
    // A whole `.` or `..` segment is a step up even percent-encoded (`%2e%2e`): the URL parser says so.
    if (value === "." || value === "..") {
      throw new DockError(
        "invalid_request",
        `webhook: {{${name}}} is "${value}", which would leave its path`,
        {
          status: 400,
        },
      );
    }
    return encodeURIComponent(value);
  });
}

/** What the variables of a run are made of. */
export interface VariableSources {
  event: DockEvent;
  box: string;
  worktree?: { name: string; path: string; branch: string | null };
  location?: string;
  agentState?: string;
  /** Steps run so far, in order: their name, exit code and output. */
  steps: { name: string; exit_code?: number; output?: string }[];
  now: Date;
}

/** Every variable of a run at one point (spec 6, flow variables). */
export function flowVariables(sources: VariableSources): Record<string, string> {
  const vars: Record<string, string> = {
    "event.type": sources.event.type,
    "event.box": sources.event.box ?? sources.box,
    "event.origin": sources.event.origin ?? "",
    "location": sources.location ?? "",
    "worktree.name": sources.worktree?.name ?? "",
    "worktree.path": sources.worktree?.path ?? "",
    "worktree.branch": sources.worktree?.branch ?? "",
    "agent.state": sources.agentState ?? "",
    "now": sources.now.toISOString(),
  };
  for (const [key, value] of Object.entries(sources.event.data ?? {})) {
    if (["type", "box", "origin"].includes(key)) continue;
    vars[`event.${key}`] = typeof value === "string" ? value : JSON.stringify(value) ?? "";
  }
  for (const step of sources.steps) {
    vars[`steps.${step.name}.output`] = step.output ?? "";
    vars[`steps.${step.name}.exit_code`] = step.exit_code === undefined ? "" : String(step.exit_code);
  }
  const prev = sources.steps.at(-1);
  vars["prev.output"] = prev?.output ?? "";
  vars["prev.exit_code"] = prev?.exit_code === undefined ? "" : String(prev.exit_code);
  return vars;
}
