/**
 * The repository config (`.dock/config.json`, spec 2.5), the kit manifest (`kit.json`, spec 2.7) and
 * the merge of config layers (spec 2.6). Every rule of those sections is written once, here, as a zod
 * schema; the same schemas give the JSON Schemas in `schemas/` that editors use.
 *
 * People write these files by hand, so an error names the file, the field path (`services[2].name`) and
 * the offending value, and lists every problem rather than the first only.
 *
 * @module
 */
import * as z from "zod";
import { parse as parseJsonc, type ParseError, printParseErrorCode } from "jsonc-parser";
import { join } from "node:path";
import { DockError } from "../client/errors.ts";
import { parseDuration } from "../client/duration.ts";
import type {
  AgentPreset,
  ConfigProblem,
  DockConfig,
  FlowConfig,
  HookConfig,
  ServiceConfig,
} from "../client/wire.ts";

// ---------------------------------------------------------------------------------------------------
// Errors

/** A config problem with its position, for syntax errors. */
interface LocatedProblem extends ConfigProblem {
  line?: number;
  column?: number;
}

/** A config or kit file (or API body) that does not parse or breaks a rule; answered as a 422. */
export class ConfigError extends DockError {
  override name = "ConfigError";
  /** Every problem found, in document order; the message names the first. */
  readonly problems: ConfigProblem[];

  constructor(problems: ConfigProblem[], options: { cause?: unknown } = {}) {
    const first: LocatedProblem = problems[0] ?? { file: "", field: "", message: "invalid config" };
    const more = problems.length > 1
      ? ` (and ${problems.length - 1} more problem${problems.length > 2 ? "s" : ""})`
      : "";
    const position = first.line !== undefined ? { line: first.line, column: first.column } : {};
    super("invalid_config", describeProblem(first) + more, {
      status: 422,
      cause: options.cause,
      detail: { file: first.file, field: first.field, ...position, problems },
    });
    this.problems = problems;
  }
}

/** `file:line:column: message`, `file: field: message` or `file: message`. */
function describeProblem(problem: LocatedProblem): string {
  if (problem.line !== undefined) {
    return `${problem.file}:${problem.line}:${problem.column}: ${problem.message}`;
  }
  return problem.field
    ? `${problem.file}: ${problem.field}: ${problem.message}`
    : `${problem.file}: ${problem.message}`;
}

// ---------------------------------------------------------------------------------------------------
// Field rules shared by the schemas

const NAME = /^[a-z0-9][a-z0-9-]*$/;
const ENV_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;
// Agent preset ids are not constrained by the spec; they appear in CLI flags, URLs and flow steps, so
// they are kept to one word without spaces or slashes.
const PRESET_ID = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
// Step ids are referenced as `{{steps.<ID>.output}}` and unnamed steps are numbered 1, 2, …, so an id
// starts with a letter: it can never collide with a number, and has no dot to confuse the variable.
const STEP_ID = /^[A-Za-z_][A-Za-z0-9_-]*$/;
// An event type is dotted lower-case words (`worktree.created`, `forge.pr_merged`); a prefix ends in `.*`.
const EVENT_PATTERN = /^(\*|[a-z0-9_-]+(\.[a-z0-9_-]+)*(\.\*)?)$/;
const EVENT_MESSAGE = "must be an event type (worktree.created), a prefix (worktree.*) or *";
// Mirrors parseDuration, so an editor flags a bad duration before dock does.
const DURATION_PATTERN = "^(\\d+(\\.\\d+)?|(\\d+(\\.\\d+)?(ms|s|m|h|d))+)$";

const MAX_STEP_ID = 64;
const MAX_PRESET_ID = 48;

/** A string that must hold more than whitespace. */
function text(): z.ZodString {
  return z.string().regex(/\S/, "must not be empty");
}

/** A name such as a service name or flow id: `[a-z0-9][a-z0-9-]*`, at most `max` characters. */
function slug(max: number): z.ZodString {
  return z.string()
    .regex(NAME, "must match [a-z0-9][a-z0-9-]*")
    .max(max, `must be at most ${max} characters`);
}

/** A duration string (`30s`, `10m`, `2h`), longer than zero and within the bounds given (as durations). */
function duration(bounds: { min?: string; max?: string } = {}) {
  const min = bounds.min === undefined ? 0 : parseDuration(bounds.min);
  const max = bounds.max === undefined ? Infinity : parseDuration(bounds.max);
  return z.string().superRefine((value, ctx) => {
    let ms: number;
    try {
      ms = parseDuration(value);
    } catch {
      ctx.addIssue({ code: "custom", message: "must be a duration such as 30s, 10m or 1h" });
      return;
    }
    if (ms <= 0) ctx.addIssue({ code: "custom", message: "must be longer than zero" });
    else if (ms < min) ctx.addIssue({ code: "custom", message: `must be at least ${bounds.min}` });
    else if (ms > max) ctx.addIssue({ code: "custom", message: `must be at most ${bounds.max}` });
  }).meta({ pattern: DURATION_PATTERN });
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

// Refinements that compare several fields run even when one of those fields is itself invalid, so one
// pass reports every problem; they only need the container to have the right shape.
const WHEN_OBJECT = { when: (payload: { value: unknown }) => isRecord(payload.value) };
const WHEN_ARRAY = { when: (payload: { value: unknown }) => Array.isArray(payload.value) };

/** Reports items of an array that repeat an earlier item's `key`. */
function uniqueBy(key: string) {
  return (items: unknown[], ctx: z.RefinementCtx<unknown[]>) => {
    const seen = new Map<unknown, number>();
    items.forEach((item, index) => {
      if (!isRecord(item) || typeof item[key] !== "string") return;
      const first = seen.get(item[key]);
      if (first === undefined) seen.set(item[key], index);
      else {
        ctx.addIssue({
          code: "custom",
          path: [index, key],
          message: "must be unique",
          params: { duplicateOf: first },
        });
      }
    });
  };
}

// ---------------------------------------------------------------------------------------------------
// Cron

const CRON_NICKNAMES = ["@hourly", "@daily", "@midnight", "@weekly", "@monthly", "@yearly", "@annually"];
const CRON_FIELDS: [name: string, min: number, max: number][] = [
  ["minute", 0, 59],
  ["hour", 0, 23],
  ["day-of-month", 1, 31],
  ["month", 1, 12],
  ["day-of-week", 0, 7], // 0 and 7 are both Sunday, as in every cron
];
const DAYS_IN_MONTH = [31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/**
 * Why a schedule is not valid, or undefined. The grammar is exactly the spec's (`*`, steps of `*`, ranges
 * `a-b`, lists, the @ nicknames): a strict subset of what cron implementations accept, so whatever runs
 * the schedule understands it. A schedule that can never fire (`0 0 30 2 *`) is refused, not kept silent.
 */
function cronProblem(expression: string): string | undefined {
  const source = expression.trim();
  if (source.startsWith("@")) {
    return CRON_NICKNAMES.includes(source) ? undefined : `must be one of ${CRON_NICKNAMES.join(", ")}`;
  }
  const fields = source.split(/\s+/).filter(Boolean);
  if (fields.length !== 5) {
    return `must have 5 fields (minute hour day-of-month month day-of-week) or be one of ${
      CRON_NICKNAMES.join(", ")
    }; found ${fields.length}`;
  }
  const sets: Set<number>[] = [];
  for (const [index, field] of fields.entries()) {
    const [name, min, max] = CRON_FIELDS[index];
    const values = new Set<number>();
    for (const item of field.split(",")) {
      const match = /^(?:\*(?:\/(\d+))?|(\d+)(?:-(\d+))?)$/.exec(item);
      if (!match) return `${name} field "${field}": use *, */N, a number, a range a-b or a list of those`;
      const [, step, from, to] = match;
      if (step !== undefined) {
        const n = Number(step);
        if (n < 1 || n > max) return `${name} field "${field}": the step must be from 1 to ${max}`;
        for (let v = min; v <= max; v += n) values.add(v);
      } else if (from === undefined) {
        for (let v = min; v <= max; v++) values.add(v);
      } else {
        const a = Number(from);
        const b = to === undefined ? a : Number(to);
        if (a < min || a > max || b < min || b > max) {
          return `${name} field "${field}": values must be from ${min} to ${max}`;
        }
        if (a > b) return `${name} field "${field}": a range must go from low to high`;
        for (let v = a; v <= b; v++) values.add(v);
      }
    }
    sets.push(values);
  }
  // With both day fields restricted either one matching runs the flow, so only a restricted
  // day-of-month with an unrestricted day-of-week can leave no real date.
  const [, , days, months] = sets;
  if (fields[4] === "*" && fields[2] !== "*") {
    const fires = [...months].some((month) => [...days].some((day) => day <= DAYS_IN_MONTH[month - 1]));
    if (!fires) return "never matches a real date";
  }
  return undefined;
}

/** A schedule: five cron fields or an @ nickname. */
function schedule() {
  return z.string().superRefine((value, ctx) => {
    const problem = cronProblem(value);
    if (problem) ctx.addIssue({ code: "custom", message: problem });
  });
}

// ---------------------------------------------------------------------------------------------------
// Config schema (spec 2.5)

const serviceSchema = z.strictObject({
  name: slug(32).describe("Unique service name: [a-z0-9][a-z0-9-]*, at most 32 characters."),
  run: text().describe("Run in the worktree through a login shell, with its environment and PORT."),
  autostart: z.boolean().describe("Start when the worktree is created, after setup succeeds.").optional(),
}) satisfies z.ZodType<ServiceConfig>;

const agentSchema = z.strictObject({
  id: z.string()
    .regex(PRESET_ID, "must be one word of letters, digits, '.', '_' or '-'")
    .max(MAX_PRESET_ID, `must be at most ${MAX_PRESET_ID} characters`)
    .describe("Preset id; the id of a built-in replaces it."),
  name: z.string().describe("Shown in the app.").optional(),
  command: text().describe("What to run."),
  prompt_flag: z.string()
    .describe("Flag by which the agent takes a first prompt; empty: the prompt is the last argument.")
    .optional(),
}) satisfies z.ZodType<AgentPreset>;

const hookSchema = z.strictObject({
  on: z.string()
    .superRefine((value, ctx) => {
      const target = value.startsWith("before:") ? value.slice("before:".length) : value;
      if (!EVENT_PATTERN.test(target)) {
        ctx.addIssue({
          code: "custom",
          message: "must be an event type (worktree.created), a prefix (worktree.*), * or before:<action>",
        });
      }
    })
    .meta({ pattern: `^(before:)?${EVENT_PATTERN.source.slice(1)}` })
    .describe("An event type, a prefix such as worktree.*, *, or before:<action> for a gate."),
  run: text().describe("Run through /bin/sh -c, with the event on stdin and in DOCK_* variables."),
  timeout: duration().describe("Duration such as 30s, 1m, 2h. Default 1m; 30s for gates.").optional(),
  tool: text().describe("The hook never runs for events whose origin is this tool.").optional(),
}) satisfies z.ZodType<HookConfig>;

const FORGE_EVENTS = ["review_comment", "pr_review", "check_failed", "pr_merged"] as const;

const triggerSchema = z.strictObject({
  event: z.string()
    .superRefine((value, ctx) => {
      const problem = value.startsWith("before:")
        ? "a before: gate cannot start a flow"
        : !EVENT_PATTERN.test(value)
        ? EVENT_MESSAGE
        : value === "flow.*" || value.startsWith("flow.")
        ? "flow.* events never start flows"
        : undefined;
      if (problem) ctx.addIssue({ code: "custom", message: problem });
    })
    .meta({ pattern: EVENT_PATTERN.source })
    .describe("Event type or prefix; not a before: gate; flow.* events never start flows.")
    .optional(),
  schedule: schedule()
    .describe("Cron (minute hour day-of-month month day-of-week) or @hourly, @daily, …, in box local time.")
    .optional(),
  each_worktree: z.boolean().describe("With schedule only: run once per worktree.").optional(),
  forge: z.strictObject({
    on: z.enum(FORGE_EVENTS).describe("Which pull request activity starts the flow."),
    poll: duration({ min: "1m" }).describe("How often to look; at least 1m, default 2m.").optional(),
  }).describe("Start on activity of the worktree's pull request.").optional(),
  where: z.strictObject({
    location: z.string().optional(),
    agent: z.string().optional(),
    branch: z.string()
      .superRefine((value, ctx) => {
        if (value.indexOf("*") !== -1 && value.indexOf("*") !== value.length - 1) {
          ctx.addIssue({ code: "custom", message: "may only end with *, as a prefix" });
        }
      })
      .describe("A trailing * matches a prefix.")
      .optional(),
  }).describe("Where the flow applies; empty matches anything.").optional(),
}).superRefine((trigger, ctx) => {
  const set = (["event", "schedule", "forge"] as const).filter((key) => trigger[key] !== undefined);
  if (set.length !== 1) {
    ctx.addIssue({
      code: "custom",
      message: `needs exactly one of event, schedule, forge; ${
        set.length ? `found ${set.join(" and ")}` : "found none"
      }`,
      params: { noValue: true },
    });
  }
  if (trigger.each_worktree !== undefined && trigger.schedule === undefined) {
    ctx.addIssue({ code: "custom", path: ["each_worktree"], message: "is only allowed with schedule" });
  }
}, WHEN_OBJECT).meta({
  // For editors: the rules the refinement above enforces, as far as JSON Schema can say them.
  oneOf: [{ required: ["event"] }, { required: ["schedule"] }, { required: ["forge"] }],
  dependentRequired: { each_worktree: ["schedule"] },
});

const STEP_KINDS = ["run", "prompt", "wait", "start_agent", "notify", "webhook"] as const;
type StepKind = typeof STEP_KINDS[number];
const AGENT_STATES = ["idle", "running", "waiting", "finished"] as const;

// Which fields each kind uses, and which it requires; a field another kind uses is refused, since it
// would be silently ignored (a `command` on a prompt step is almost surely a mistake).
const STEP_FIELDS: Record<StepKind, { uses: string[]; requires: string[] }> = {
  run: { uses: ["command"], requires: ["command"] },
  prompt: { uses: ["text", "session"], requires: ["text"] },
  wait: { uses: ["session", "for"], requires: [] },
  start_agent: { uses: ["agent", "text", "new_worktree", "name"], requires: ["agent"] },
  notify: { uses: ["title", "text"], requires: ["title"] },
  webhook: { uses: ["url", "text"], requires: ["url"] },
};
const STEP_COMMON = ["id", "kind", "when", "timeout"];

/** True for an http or https URL; `{{variables}}` are allowed anywhere in it. */
function isHttpUrl(value: string): boolean {
  if (!/^https?:\/\//i.test(value)) return false;
  try {
    new URL(value.replace(/\{\{[^}]*\}\}/g, "x"));
    return true;
  } catch {
    return false;
  }
}

const stepSchema = z.strictObject({
  id: z.string()
    .regex(STEP_ID, "must start with a letter or _ and hold only letters, digits, _ and -")
    .max(MAX_STEP_ID, `must be at most ${MAX_STEP_ID} characters`)
    .describe("Unique in the flow; unnamed steps are numbered 1, 2, …").optional(),
  kind: z.enum(STEP_KINDS).describe("What the step does."),
  when: z.enum(["success", "failure", "always"]).describe("When it runs; default success.").optional(),
  command: text().describe("run: the command (required).").optional(),
  text: z.string()
    .describe("prompt: the prompt (required); start_agent: first prompt; notify: body; webhook: JSON body.")
    .optional(),
  title: text().describe("notify: the title (required).").optional(),
  session: text().describe("prompt, wait: which session; default the agent that triggered the flow.")
    .optional(),
  for: z.array(z.enum(AGENT_STATES)).min(1, "must list at least one state")
    .describe("wait: states that end it; default finished, waiting.").optional(),
  agent: text().describe("start_agent: a preset id (required).").optional(),
  new_worktree: z.boolean().describe("start_agent: start in a new worktree.").optional(),
  name: text().describe("start_agent: name of the new worktree.").optional(),
  url: z.string()
    .refine(isHttpUrl, "must be an http or https URL")
    .meta({ pattern: "^[Hh][Tt][Tt][Pp][Ss]?://" })
    .describe("webhook: the URL (required).")
    .optional(),
  timeout: duration({ max: "2h" })
    .describe("Default run 10m, wait 30m, webhook 15s; at most 2h.").optional(),
}).superRefine((step, ctx) => {
  if (!(STEP_KINDS as readonly unknown[]).includes(step.kind)) return;
  const rules = STEP_FIELDS[step.kind];
  for (const field of rules.requires) {
    if (step[field as keyof typeof step] === undefined) {
      ctx.addIssue({ code: "custom", path: [field], message: `is required for a ${step.kind} step` });
    }
  }
  for (const field of Object.keys(step)) {
    if (!STEP_COMMON.includes(field) && !rules.uses.includes(field)) {
      ctx.addIssue({ code: "custom", path: [field], message: `is not used by a ${step.kind} step` });
    }
  }
}, WHEN_OBJECT).meta({
  allOf: STEP_KINDS.map((kind) => ({
    if: { properties: { kind: { const: kind } }, required: ["kind"] },
    then: { required: STEP_FIELDS[kind].requires },
  })).filter((rule) => rule.then.required.length),
});

const flowSchema = z.strictObject({
  id: slug(48).describe("Unique flow id: [a-z0-9][a-z0-9-]*, at most 48 characters."),
  name: text().describe("Shown in the app."),
  enabled: z.boolean().describe("Default false; a flow runs only when true.").optional(),
  trigger: triggerSchema.describe("Exactly one of event, schedule, forge."),
  steps: z.array(stepSchema).min(1, "must have at least one step").superRefine(uniqueBy("id"), WHEN_ARRAY),
  max_runs_per_hour: z.number()
    .int("must be a whole number of at least 0")
    .min(0, "must be a whole number of at least 0")
    .describe("Default 20 when absent or 0.").optional(),
}) satisfies z.ZodType<FlowConfig>;

const configShape = {
  setup: z.string()
    .describe("Run in a new worktree through a login shell after creation; up to 30 minutes.")
    .optional(),
  archive: z.string()
    .describe("Run before a worktree is removed, after its services stop; if it fails, it stays.")
    .optional(),
  ports: z.number()
    .int("must be a whole number from 0 to 10")
    .min(0, "must be a whole number from 0 to 10")
    .max(10, "must be a whole number from 0 to 10")
    .describe("Ports per worktree, 0 to 10; every worktree gets at least one.")
    .optional(),
  env: z.record(z.string().regex(ENV_KEY, "must match [A-Za-z_][A-Za-z0-9_]*"), z.string())
    .describe("Environment of the worktree; values may use $NAME or be a secret reference.")
    .optional(),
  services: z.array(serviceSchema).superRefine(uniqueBy("name"), WHEN_ARRAY)
    .describe("Services run in every worktree.").optional(),
  agents: z.array(agentSchema).superRefine(uniqueBy("id"), WHEN_ARRAY)
    .describe("Agent presets to add, or built-ins to replace by id.").optional(),
  hooks: z.array(hookSchema).describe("Hooks for this repository's events, run in the worktree.").optional(),
  flows: z.array(flowSchema).superRefine(uniqueBy("id"), WHEN_ARRAY)
    .describe("Flows for this repository's worktrees.").optional(),
};

// Unknown keys are refused at every level, the top included. These files are written by hand, and a
// misspelt `servics` or `autostrat` would otherwise be dropped without a word and the user left to
// wonder why nothing starts. The price is that a newer file fails on an older daemon, which says so
// clearly instead of half-applying it. `$schema` is the one extra key, so editors can find the schema.
const layerSchema = z.strictObject(configShape) satisfies z.ZodType<DockConfig>;
const configFileSchema = z.strictObject({
  $schema: z.string().describe("The JSON Schema of this file, for editors.").optional(),
  ...configShape,
});

// ---------------------------------------------------------------------------------------------------
// Kit schema (spec 2.7)

/** A kit manifest (`kit.json`, spec 2.7). */
export interface Kit {
  id: string;
  name?: string;
  description?: string;
  version?: string;
  match?: { slug?: string };
  requires?: { tool: string; hint?: string }[];
  config?: DockConfig;
  /** Path inside the kit → file content. */
  files?: Record<string, string>;
}

// For editors, kitPathProblem as a pattern: not absolute, no `.` or `..` segment, no empty segment.
const KIT_PATH_PATTERN =
  "^(?![/\\\\]|[A-Za-z]:)(?!(.*[/\\\\])?\\.{1,2}([/\\\\]|$))(?!.*[/\\\\]([/\\\\]|$))[^\\u0000]+$";

/** Why a kit file path would leave the kit (or is not a plain relative path), or undefined. */
function kitPathProblem(path: string): string | undefined {
  if (path.startsWith("/") || path.startsWith("\\") || /^[A-Za-z]:/.test(path)) {
    return "must be a path relative to the kit, not absolute";
  }
  const segments = path.split(/[\\/]/);
  if (segments.includes("..")) return "must stay inside the kit (no .. segment)";
  if (path.includes("\0") || segments.some((segment) => segment === "" || segment === ".")) {
    return "must be a plain relative path such as bin/setup.sh";
  }
  return undefined;
}

const kitSchema = z.strictObject({
  $schema: z.string().describe("The JSON Schema of this file, for editors.").optional(),
  id: slug(48).describe("Kit id: [a-z0-9][a-z0-9-]*, at most 48 characters."),
  name: z.string().describe("Default: the id.").optional(),
  description: z.string().optional(),
  version: z.string().describe("Shown, and compared to flag projects running an older one.").optional(),
  match: z.strictObject({
    slug: z.string().regex(/^[^/\s]+\/[^/\s]+$/, "must be owner/repo").describe("The owner/repo it is for.")
      .optional(),
  }).describe("Which projects the kit is for; selects them in the app, nothing enforces it.").optional(),
  requires: z.array(z.strictObject({
    tool: text().describe("A command the kit needs on the box."),
    hint: z.string().describe("How to install it.").optional(),
  })).describe("Tools the kit needs; a missing one is a warning when the kit is applied.").optional(),
  config: layerSchema.describe("A config, by the same rules as .dock/config.json.").optional(),
  files: z.record(
    z.string().superRefine((path, ctx) => {
      const problem = kitPathProblem(path);
      if (problem) ctx.addIssue({ code: "custom", message: problem });
    }).meta({ pattern: KIT_PATH_PATTERN }),
    z.string(),
  ).describe("Path inside the kit → inline file content; files starting with #! are made executable.")
    .optional(),
}) satisfies z.ZodType<Kit & { $schema?: string }>;

// ---------------------------------------------------------------------------------------------------
// Turning zod issues into problems

const TYPE_WORDS: Record<string, string> = {
  string: "a string",
  number: "a number",
  int: "a whole number",
  boolean: "true or false",
  object: "an object",
  array: "an array",
  record: "an object",
};

/** Formats a path as `services[2].name`, `env.FOO` or `files["bin/setup.sh"]`. */
function fieldPath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const key of path) {
    if (typeof key === "number") out += `[${key}]`;
    else if (/^[A-Za-z0-9_$-]+$/.test(String(key))) out += out ? `.${String(key)}` : String(key);
    else out += `[${JSON.stringify(String(key))}]`;
  }
  return out;
}

/** The value at `path` in `root`, or undefined. */
function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let node = root;
  for (const key of path) {
    if (typeof node !== "object" || node === null) return undefined;
    node = (node as Record<PropertyKey, unknown>)[key];
  }
  return node;
}

/** A value quoted for a message, cut short when long. */
function quote(value: unknown): string {
  const limit = 60;
  if (typeof value === "string") {
    return JSON.stringify(value.length > limit ? `${value.slice(0, limit - 1)}…` : value);
  }
  let out: string;
  try {
    out = JSON.stringify(value) ?? String(value);
  } catch {
    out = String(value);
  }
  return out.length > limit ? `${out.slice(0, limit - 1)}…` : out;
}

/** The schema reached by following `path` from `schema`, through optionals, arrays and records. */
function schemaAt(schema: z.ZodType, path: readonly PropertyKey[]): z.ZodType | undefined {
  let node: z.ZodType | undefined = schema;
  for (let i = 0; i <= path.length && node; i++) {
    while (node instanceof z.ZodOptional || node instanceof z.ZodNullable) node = node.unwrap() as z.ZodType;
    if (i === path.length) break;
    const key = path[i];
    if (node instanceof z.ZodObject) node = (node.shape as Record<string, z.ZodType>)[String(key)];
    else if (node instanceof z.ZodArray) node = node.element as z.ZodType;
    else if (node instanceof z.ZodRecord) node = node.valueType as z.ZodType;
    else return undefined;
  }
  return node;
}

/** Edit distance, for "did you mean". */
function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    for (let j = 1; j <= b.length; j++) {
      row[j] = Math.min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    previous = row;
  }
  return previous[b.length];
}

/** The message for an unknown key: a close known name, or the list of known ones. */
function unknownFieldMessage(key: string, known: string[]): string {
  const candidates = known.filter((name) => name !== "$schema");
  const best = candidates
    .map((name) => ({ name, d: distance(key.toLowerCase(), name.toLowerCase()) }))
    .sort((a, b) => a.d - b.d)[0];
  if (best && best.d <= Math.max(1, Math.floor(best.name.length / 3))) {
    return `unknown field (did you mean "${best.name}"?)`;
  }
  return `unknown field; known fields: ${candidates.join(", ")}`;
}

/** A problem before it is given its file, with its path for ordering. */
interface PathProblem {
  path: PropertyKey[];
  message: string;
}

/** One problem per zod issue (one per key for unknown keys). */
function issueProblems(issue: z.core.$ZodIssue, input: unknown, schema: z.ZodType): PathProblem[] {
  const path = [...issue.path];
  const value = valueAt(input, path);
  const withValue = (message: string, shown: unknown = value) => `${message}, got ${quote(shown)}`;
  switch (issue.code) {
    case "invalid_union": {
      // Report the option that was meant: the one whose fields, as sent, hold the right kind of value
      // (an agent report with a misspelt or missing field is still a report, not a plain event with a
      // wrong type), then the one with the fewest problems.
      const union = schemaAt(schema, path);
      const options = union instanceof z.ZodUnion ? union.options as z.ZodType[] : [];
      const inner = valueAt(input, path);
      const wrongValues = (issues: z.core.$ZodIssue[]) =>
        issues.filter((inside) =>
          inside.code !== "unrecognized_keys" && inside.path.length === 1 &&
          valueAt(inner, inside.path) !== undefined
        ).length;
      const ranked = issue.errors
        .map((issues, index) => ({ issues, option: options[index], rank: wrongValues(issues) }))
        .filter((candidate) => candidate.option && candidate.issues.length)
        .sort((a, b) => a.rank - b.rank || a.issues.length - b.issues.length);
      if (!ranked.length) return [{ path, message: issue.message }];
      const { issues, option } = ranked[0];
      return issues
        .flatMap((inside) => issueProblems(inside, inner, option))
        .map((problem) => ({ path: [...path, ...problem.path], message: problem.message }));
    }
    case "unrecognized_keys": {
      // Under a union the field may belong to any of its objects: all their fields are candidates.
      const parent = schemaAt(schema, path);
      const objects = parent instanceof z.ZodUnion ? parent.options as z.ZodType[] : [parent];
      const known = [
        ...new Set(objects.flatMap((node) => node instanceof z.ZodObject ? Object.keys(node.shape) : [])),
      ];
      return issue.keys.map((key) => ({ path: [...path, key], message: unknownFieldMessage(key, known) }));
    }
    case "invalid_key": {
      const inner = issue.issues[0]?.message ?? "invalid key";
      return [{ path, message: withValue(inner, path[path.length - 1]) }];
    }
    case "invalid_type": {
      if (value === undefined) return [{ path, message: "required" }];
      const expected = issue.expected === "int"
        ? issue.message
        : `must be ${TYPE_WORDS[issue.expected] ?? issue.expected}`;
      return [{ path, message: withValue(expected) }];
    }
    case "invalid_value": {
      if (value === undefined) return [{ path, message: "required" }];
      const options = issue.values.map((option) => String(option)).join(", ");
      return [{ path, message: withValue(`must be one of ${options}`) }];
    }
    case "custom": {
      if (typeof issue.params?.duplicateOf === "number") {
        const first = [...path];
        first[first.length - 2] = issue.params.duplicateOf;
        return [{ path, message: `${quote(value)} is already used by ${fieldPath(first)}` }];
      }
      const message = value === undefined || issue.params?.noValue ? issue.message : withValue(issue.message);
      return [{ path, message }];
    }
    default:
      return [{ path, message: value === undefined ? issue.message : withValue(issue.message) }];
  }
}

/** Orders paths as their fields appear in the document; fields absent from it go last. */
function compareInDocument(input: unknown, a: readonly PropertyKey[], b: readonly PropertyKey[]): number {
  let node = input;
  for (let i = 0; i < Math.min(a.length, b.length); i++) {
    if (a[i] === b[i]) {
      node = valueAt(node, [a[i]]);
      continue;
    }
    if (typeof a[i] === "number" && typeof b[i] === "number") return (a[i] as number) - (b[i] as number);
    const keys = isRecord(node) ? Object.keys(node) : [];
    const rank = (key: PropertyKey) => {
      const index = keys.indexOf(String(key));
      return index === -1 ? Infinity : index;
    };
    const diff = rank(a[i]) - rank(b[i]);
    return Number.isNaN(diff) ? 0 : diff;
  }
  return a.length - b.length;
}

/** A problem of a value against a schema: the field path (`services[2].name`, empty for the whole) and what is wrong. */
export interface SchemaProblem {
  field: string;
  message: string;
}

/**
 * Validates `value` against `schema`: its data, or every problem in document order, each naming its
 * field and the offending value, an unknown field with the closest known one ("did you mean"). Config
 * files and API bodies (`core/http.ts` `body()`) report their problems through this one function.
 */
export function checkSchema<T>(
  schema: z.ZodType<T>,
  value: unknown,
): { ok: true; data: T } | { ok: false; problems: SchemaProblem[] } {
  const result = schema.safeParse(value);
  if (result.success) return { ok: true, data: result.data };
  const problems = result.error.issues
    .flatMap((issue) => issueProblems(issue, value, schema))
    .sort((a, b) => compareInDocument(value, a.path, b.path));
  return { ok: false, problems: problems.map(({ path, message }) => ({ field: fieldPath(path), message })) };
}

/** Validates `value` against `schema`, throwing a ConfigError listing every problem. */
function validateWith<T>(schema: z.ZodType<T>, value: unknown, file: string): T {
  const checked = checkSchema(schema, value);
  if (checked.ok) return checked.data;
  throw new ConfigError(checked.problems.map((problem) => ({ file, ...problem })));
}

// ---------------------------------------------------------------------------------------------------
// JSONC

const SYNTAX_WORDS: Record<string, string> = {
  InvalidSymbol: "unexpected symbol (names and strings need double quotes)",
  InvalidNumberFormat: "invalid number",
  PropertyNameExpected: "expected a property name in double quotes",
  ValueExpected: "expected a value",
  ColonExpected: "expected ':'",
  CommaExpected: "expected ',' or a closing bracket",
  CloseBraceExpected: "expected '}'",
  CloseBracketExpected: "expected ']'",
  EndOfFileExpected: "expected the end of the file",
  InvalidCommentToken: "invalid comment",
  UnexpectedEndOfComment: "expected the end of the comment (*/)",
  UnexpectedEndOfString: 'expected the end of the string (")',
  UnexpectedEndOfNumber: "expected the rest of the number",
  InvalidUnicode: "invalid unicode escape",
  InvalidEscapeCharacter: "invalid escape character",
  InvalidCharacter: "invalid character in a string",
};

/** 1-based line and column of `offset` in `text`. */
function position(text: string, offset: number): { line: number; column: number } {
  const before = text.slice(0, offset);
  const line = before.split("\n").length;
  return { line, column: offset - (before.lastIndexOf("\n") + 1) + 1 };
}

/** Parses JSON with comments and trailing commas; a syntax error names the line, column and what was expected. */
function parseJsoncText(text: string, file: string): unknown {
  const errors: ParseError[] = [];
  const value = parseJsonc(text, errors, { allowTrailingComma: true, disallowComments: false });
  if (!errors.length) return value;
  // Only the first error is reported: the parser recovers poorly, so later ones are mostly echoes of it
  // (at the end of a cut-off file a name, a value and a brace are all "missing").
  const [error] = errors;
  const code = printParseErrorCode(error.error);
  const token = text.slice(error.offset, error.offset + Math.min(Math.max(error.length, 1), 40));
  const found = error.offset >= text.length
    ? "the end of the file"
    : token.startsWith('"')
    ? token
    : `'${token}'`;
  const problem: LocatedProblem = {
    file,
    field: "",
    message: `${SYNTAX_WORDS[code] ?? code}, found ${found}`,
    ...position(text, error.offset),
  };
  throw new ConfigError([problem]);
}

// ---------------------------------------------------------------------------------------------------
// Public API

/** Validates an already-parsed config (a file's content or an API body); throws ConfigError. */
export function validateConfig(value: unknown, file: string): DockConfig {
  const { $schema: _, ...config } = validateWith(configFileSchema, value, file);
  return config;
}

/** Parses and validates the text of a config file (JSON with comments); throws ConfigError. */
export function parseConfigText(text: string, file: string): DockConfig {
  return validateConfig(parseJsoncText(text, file), file);
}

/** A hooks file (`~/.dock/hooks.json`, box and laptop alike): `{ "hooks": [Hook] }`. */
export interface HooksFile {
  hooks: HookConfig[];
}

const hooksFileSchema = z.strictObject({
  $schema: z.string().optional(),
  hooks: z.array(hookSchema).describe("Hooks and before: gates."),
});

/** Validates an already-parsed hooks file (or a `PUT hooks` body); throws ConfigError. */
export function validateHooksFile(value: unknown, file: string): HooksFile {
  const { hooks } = validateWith(hooksFileSchema, value, file);
  return { hooks };
}

/** Parses and validates the text of a hooks file (JSON with comments); throws ConfigError. */
export function parseHooksText(text: string, file: string): HooksFile {
  return validateHooksFile(parseJsoncText(text, file), file);
}

/** Validates an already-parsed kit manifest; throws ConfigError. */
export function validateKit(value: unknown, file: string): Kit {
  const { $schema: _, ...kit } = validateWith(kitSchema, value, file);
  return kit;
}

/** Parses and validates the text of a `kit.json` (JSON with comments); throws ConfigError. */
export function parseKitText(text: string, file: string): Kit {
  return validateKit(parseJsoncText(text, file), file);
}

/** Replaces entries of `base` by `key` in place and appends new ones (spec 2.6). */
function mergeByKey<T>(base: T[] | undefined, later: T[], key: (item: T) => string): T[] {
  const out = [...(base ?? [])];
  for (const item of later) {
    const index = out.findIndex((existing) => key(existing) === key(item));
    if (index === -1) out.push(item);
    else out[index] = item;
  }
  return out;
}

/** Merges config layers in order (repository, kit, box) into the effective config (spec 2.6). */
export function mergeConfigs(layers: (DockConfig | null | undefined)[]): DockConfig {
  const out: DockConfig = {};
  for (const layer of layers) {
    if (!layer) continue;
    if (layer.setup !== undefined) out.setup = layer.setup;
    if (layer.archive !== undefined) out.archive = layer.archive;
    if (layer.ports !== undefined) out.ports = layer.ports;
    if (layer.env) out.env = { ...out.env, ...layer.env };
    if (layer.services) out.services = mergeByKey(out.services, layer.services, (service) => service.name);
    if (layer.agents) out.agents = mergeByKey(out.agents, layer.agents, (agent) => agent.id);
    if (layer.hooks) out.hooks = [...(out.hooks ?? []), ...layer.hooks];
    if (layer.flows) out.flows = mergeByKey(out.flows, layer.flows, (flow) => flow.id);
  }
  // The effective config is handed around and edited; it must not share objects with the layers.
  return structuredClone(out);
}

/** Reads `<repo>/.dock/config.json`: null when there is none, ConfigError when unreadable or invalid. */
export async function readRepoConfig(repoPath: string): Promise<DockConfig | null> {
  const file = join(repoPath, ".dock", "config.json");
  let text: string;
  try {
    text = await Deno.readTextFile(file);
  } catch (cause) {
    if (cause instanceof Deno.errors.NotFound) return null;
    throw new ConfigError([{ file, field: "", message: `cannot be read: ${(cause as Error).message}` }], {
      cause,
    });
  }
  return parseConfigText(text, file);
}

/** A zod schema as a draft 2020-12 JSON Schema with `$id` and title first. */
function jsonSchema(schema: z.ZodType, id: string, title: string): object {
  const { $schema, ...rest } = z.toJSONSchema(schema, { target: "draft-2020-12", io: "input" });
  return { $schema, $id: id, title, ...rest };
}

/** The JSON Schema of `.dock/config.json` (draft 2020-12), as written to `schemas/config.schema.json`. */
export function configJsonSchema(): object {
  return jsonSchema(configFileSchema, "urn:dock:schema:config", "dock repository config (.dock/config.json)");
}

/** The JSON Schema of `kit.json` (draft 2020-12), as written to `schemas/kit.schema.json`. */
export function kitJsonSchema(): object {
  return jsonSchema(kitSchema, "urn:dock:schema:kit", "dock kit manifest (kit.json)");
}
