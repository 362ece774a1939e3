/**
 * The schema of a flow (spec 2.5's `flows`, and `flows.json`): its trigger (an event, a cron schedule
 * or a forge event), its steps (which fields each kind uses and requires), and the cron grammar the
 * schedule is checked against. `config.ts` puts it in the config's schema.
 *
 * @module
 */
import * as z from "zod";
import type { FlowConfig } from "../client/wire.ts";
import {
  duration,
  EVENT_MESSAGE,
  EVENT_PATTERN,
  MAX_STEP_ID,
  modulePath,
  slug,
  STEP_ID,
  text,
  uniqueBy,
  WHEN_ARRAY,
  WHEN_OBJECT,
} from "./config_fields.ts";

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
// Flows

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

/** One flow. */
export const flowSchema = z.strictObject({
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
