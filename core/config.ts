/**
 * The repository config (`.dock/config.json`, spec 2.5), the kit manifest (`kit.json`, spec 2.7) and
 * the merge of config layers (spec 2.6). Every rule of those sections is written once, here, as a zod
 * schema; the same schemas give the JSON Schemas in `schemas/` that editors use.
 *
 * They are read like every user file (`user_files.ts`): JSON with comments, unknown fields refused with
 * a "did you mean", and a `ConfigError` naming the file, the field path (`services[2].name`)
 * and the offending value, listing every problem rather than the first only.
 *
 * @module
 */
import * as z from "zod";
import { join } from "./posix_path.ts";
import { parseDuration } from "../client/duration.ts";
import type {
  AgentPreset,
  ConfigProblem,
  DockConfig,
  FlowConfig,
  HookConfig,
  Kit,
  ServiceConfig,
} from "../client/wire.ts";
import { DockError } from "../client/errors.ts";
import { ConfigError, parseUserFile, readUserFile, validateUserFile } from "./user_files.ts";

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

/**
 * A module's path, relative to the file that names it and inside its folder: no absolute path, no `..`,
 * no URL (remote code is never imported). Where it really leads (symlinks) is checked when it runs.
 */
export function modulePath(): z.ZodString {
  return z.string()
    .max(512, "must be at most 512 characters")
    .regex(
      /^(?!\/)(?![a-z][a-z0-9+.-]*:)(?!.*(^|\/)\.\.(\/|$))[^\0\\]+\.(ts|js|mjs|mts|tsx|jsx)$/i,
      "must be a relative path to a .ts or .js file inside its folder, without ..",
    );
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

/** One hook (spec 2.5): the shape of `hooks.json` entries, config hooks and a plugin manifest's hooks. */
export const HOOK_SCHEMA = z.strictObject({
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
  run: text().describe(
    "Run through /bin/sh -c, with the event on stdin and in DOCK_* variables. Either run or module.",
  )
    .optional(),
  module: modulePath().describe(
    "A module (./hooks/notify.ts), relative to the file that names it, run in a sandboxed worker: its default export's event or gate handler. Either run or module.",
  ).optional(),
  timeout: duration().describe("Duration such as 30s, 1m, 2h. Default 1m; 30s for gates.").optional(),
  tool: text().describe("The hook never runs for events whose origin is this tool.").optional(),
}).superRefine((hook, ctx) => {
  if ((hook.run === undefined) === (hook.module === undefined)) {
    ctx.addIssue({
      code: "custom",
      path: ["run"],
      message: "a hook has either run (a shell command) or module",
    });
  }
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

const STEP_KINDS = ["run", "prompt", "wait", "start_agent", "notify", "webhook", "module"] as const;
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
  module: { uses: ["module"], requires: ["module"] },
};
const STEP_COMMON = ["id", "kind", "when", "timeout"];

/** True for an http or https URL; `{{variables}}` may stand in its path, query and fragment. */
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
    // A value choosing where the request goes would send the run's variables anywhere (issue 29).
    .refine(
      (value) => !/^[^/?#]*\{\{/.test(value.replace(/^[^:/?#]*:\/\//, "")) && !/^[^:]*\{\{/.test(value),
      "may hold a {{variable}} only in its path, query or fragment, never in its scheme, host or port",
    )
    .meta({ pattern: "^[Hh][Tt][Tt][Pp][Ss]?://" })
    .describe("webhook: the URL (required).")
    .optional(),
  module: modulePath()
    .describe("module: a TypeScript module whose default export's step(vars, ctx) runs in the sandbox.")
    .optional(),
  timeout: duration({ max: "2h" })
    .describe("Default run 10m, wait 30m, webhook 15s, module 1m; at most 2h.").optional(),
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
  hooks: z.array(HOOK_SCHEMA).describe("Hooks for this repository's events, run in the worktree.").optional(),
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

export type { Kit };

// For editors, kitPathProblem as a pattern: not absolute, no `.` or `..` segment, no empty segment.
const KIT_PATH_PATTERN =
  "^(?![/\\\\]|[A-Za-z]:)(?!(.*[/\\\\])?\\.{1,2}([/\\\\]|$))(?!.*[/\\\\]([/\\\\]|$))[^\\u0000]+$";

/**
 * The most bytes (UTF-8) of one segment of a kit file's path: the file systems dock runs on take 255
 * (`NAME_MAX`); a longer name failed the write with "File name too long", a 500.
 */
export const KIT_SEGMENT_BYTES = 255;
/**
 * The most bytes (UTF-8) of a kit file's whole path. The kernel takes 4,096 (`PATH_MAX`) for the path a
 * write names, which also holds `<state>/box/kits/<location>/`: a quarter of it leaves the rest to those.
 */
export const KIT_PATH_BYTES = 1024;

const utf8 = new TextEncoder();

/** Why a kit file path would leave the kit (or is not a plain relative path, or too long to write), or undefined. */
function kitPathProblem(path: string): string | undefined {
  if (path.startsWith("/") || path.startsWith("\\") || /^[A-Za-z]:/.test(path)) {
    return "must be a path relative to the kit, not absolute";
  }
  const segments = path.split(/[\\/]/);
  if (segments.includes("..")) return "must stay inside the kit (no .. segment)";
  if (path.includes("\0") || segments.some((segment) => segment === "" || segment === ".")) {
    return "must be a plain relative path such as bin/setup.sh";
  }
  const bytes = utf8.encode(path).length;
  if (bytes > KIT_PATH_BYTES) return `must be at most ${KIT_PATH_BYTES} bytes long, got ${bytes}`;
  for (const segment of segments) {
    const length = utf8.encode(segment).length;
    if (length > KIT_SEGMENT_BYTES) {
      return `each name in the path must be at most ${KIT_SEGMENT_BYTES} bytes long, got ${length}`;
    }
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
// Public API

/** Validates an already-parsed config (a file's content or an API body); throws ConfigError. */
export function validateConfig(value: unknown, file: string): DockConfig {
  const { $schema: _, ...config } = validateUserFile(value, file, configFileSchema);
  return config;
}

/** Parses and validates the text of a config file (JSON with comments); throws ConfigError. */
export function parseConfigText(text: string, file: string): DockConfig {
  const { $schema: _, ...config } = parseUserFile(text, file, configFileSchema);
  return config;
}

/** A hooks file (`~/.dock/hooks.json`, box and laptop alike): `{ "hooks": [Hook] }`. */
export interface HooksFile {
  hooks: HookConfig[];
}

/** The schema of a hooks file (and of a `PUT hooks` body); `$schema` is accepted and dropped. */
export const HOOKS_FILE: z.ZodType<HooksFile, unknown> = z.strictObject({
  $schema: z.string().optional(),
  hooks: z.array(HOOK_SCHEMA).describe("Hooks and before: gates."),
}).transform(({ hooks }) => ({ hooks }));

/** The box's flows file (`~/.dock/flows.json`): `{ "flows": [Flow] }`. */
export interface FlowsFile {
  flows: FlowConfig[];
}

/** The schema of a flows file (and of a `PUT flows` body); `$schema` is accepted and dropped. */
export const FLOWS_FILE: z.ZodType<FlowsFile, unknown> = z.strictObject({
  $schema: z.string().optional(),
  flows: z.array(flowSchema).superRefine(uniqueBy("id"), WHEN_ARRAY).describe(
    "Flows for any project on the box.",
  ),
}).transform(({ flows }) => ({ flows }));

/** Validates an already-parsed kit manifest; throws ConfigError. */
export function validateKit(value: unknown, file: string): Kit {
  const { $schema: _, ...kit } = validateUserFile(value, file, kitSchema);
  return kit;
}

/**
 * A kit file's `ConfigError` as the API says it: a 400 naming the file and the field. Anything else is
 * returned as it is, to be thrown on.
 */
export function kitError(error: unknown, file: string): unknown {
  if (!(error instanceof ConfigError)) return error;
  const problem = error.problems[0];
  return new DockError(
    "invalid_kit",
    `${problem?.file ?? file}: ${problem?.field || "(root)"}: ${problem?.message}`,
    {
      status: 400,
      detail: { file: problem?.file ?? file, field: problem?.field ?? "" },
    },
  );
}

/** Parses and validates the text of a `kit.json` (JSON with comments); throws ConfigError. */
export function parseKitText(text: string, file: string): Kit {
  const { $schema: _, ...kit } = parseUserFile(text, file, kitSchema);
  return kit;
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

/** Options of {@linkcode readRepoConfig}. */
export interface ReadRepoConfigOptions {
  /**
   * Told of `env` variables dropped for a NUL or an unpaired surrogate in their value (each problem names
   * the file and `env.KEY`); the rest of the file applies. Without it, such a value refuses the file.
   */
  onDropped?: (problems: ConfigProblem[]) => void;
}

/** Whether `path` is one variable of a file's `env`: what a poisoned value may cost, rather than the file. */
export function isEnvEntry(path: readonly PropertyKey[]): boolean {
  return path.length === 2 && path[0] === "env";
}

/** Reads `<repo>/.dock/config.json`: null when there is none, ConfigError when unreadable or invalid. */
export async function readRepoConfig(
  repoPath: string,
  options: ReadRepoConfigOptions = {},
): Promise<DockConfig | null> {
  const file = join(repoPath, ".dock", "config.json");
  const onDropped = options.onDropped;
  const read = await readUserFile(file, configFileSchema, {
    missing: "absent",
    ...onDropped ? { drop: { where: isEnvEntry, report: onDropped } } : {},
  });
  if (read === undefined) return null;
  const { $schema: _, ...config } = read;
  return config;
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
