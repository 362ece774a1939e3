/**
 * The pure parts of flows (spec 2.5, 3.4, 6, 8): which flows an event starts, where they apply, which
 * steps run after a failure, the `{{variables}}` of text fields, and how a `run` command receives them
 * (as environment variables it references, never pasted into the shell text). No I/O here: the engine
 * (`flows.ts`) runs what these decide.
 *
 * @module
 */
import type { DockEvent, FlowConfig } from "../client/wire.ts";
import { parseDuration } from "../client/duration.ts";

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

/** Whether a step runs, given whether the flow has failed so far (spec 3.4 rule 4). */
export function stepRuns(when: FlowStep["when"], failed: boolean): boolean {
  const w = when ?? "success";
  return w === "always" || (w === "failure") === failed;
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

const VARIABLE = /\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}/g;

/** The value of one variable name in `vars` (an unknown name is empty). */
export function variable(vars: Record<string, string>, name: string): string {
  return Object.hasOwn(vars, name) ? vars[name] : "";
}

/** `text` with every `{{name}}` replaced by its value; an unknown variable is empty. */
export function substitute(text: string, vars: Record<string, string>): string {
  return text.replace(VARIABLE, (_, name: string) => variable(vars, name));
}

/**
 * A `run` command with each `{{name}}` replaced by a reference to an environment variable that holds
 * the value: a value (a review comment) can never become shell text. The reference fits the quoting it
 * stands in, so it stays one word with nothing expanded in it: `"$V"` outside quotes, `$V` inside double
 * quotes, and inside single quotes (where nothing expands) the quote is closed around a `"$V"`. Returns
 * the command and the variables to add to its environment.
 */
export function shellCommand(
  command: string,
  vars: Record<string, string>,
): { command: string; env: Record<string, string> } {
  const env: Record<string, string> = {};
  const names = new Map<string, string>();
  const keyOf = (name: string) => {
    let key = names.get(name);
    if (!key) {
      key = `DOCK_FLOW_VAR_${names.size + 1}`;
      names.set(name, key);
      env[key] = variable(vars, name);
    }
    return key;
  };
  let out = "";
  let quote: "" | "'" | '"' = "";
  for (let i = 0; i < command.length;) {
    const char = command[i];
    if (char === "{" && command[i + 1] === "{") {
      const match = new RegExp(VARIABLE.source, "y");
      match.lastIndex = i;
      const found = match.exec(command);
      if (found) {
        const key = keyOf(found[1]);
        const reference = `\${${key}}`;
        out += quote === '"' ? reference : quote === "'" ? `'"${reference}"'` : `"${reference}"`;
        i += found[0].length;
        continue;
      }
    }
    if (char === "\\" && quote !== "'") {
      out += command.slice(i, i + 2); // an escaped character changes no quoting
      i += 2;
      continue;
    }
    if (quote === "" && (char === "'" || char === '"')) quote = char;
    else if (char === quote) quote = "";
    out += char;
    i++;
  }
  return { command: out, env };
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
