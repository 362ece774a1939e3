/**
 * The field rules the config schemas share (`config.ts`, `config_flows.ts`, a plugin manifest's):
 * names, durations, module paths, event patterns, and the refinements that compare several fields.
 *
 * @module
 */
import * as z from "zod";
import { parseDuration } from "../client/duration.ts";

const NAME = /^[a-z0-9][a-z0-9-]*$/;
export const ENV_KEY = /^[A-Za-z_][A-Za-z0-9_]*$/;
// Agent preset ids are not constrained by the spec; they appear in CLI flags, URLs and flow steps, so
// they are kept to one word without spaces or slashes.
export const PRESET_ID = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
// Step ids are referenced as `{{steps.<ID>.output}}` and unnamed steps are numbered 1, 2, …, so an id
// starts with a letter: it can never collide with a number, and has no dot to confuse the variable.
export const STEP_ID = /^[A-Za-z_][A-Za-z0-9_-]*$/;
// An event type is dotted lower-case words (`worktree.created`, `forge.pr_merged`); a prefix ends in `.*`.
export const EVENT_PATTERN = /^(\*|[a-z0-9_-]+(\.[a-z0-9_-]+)*(\.\*)?)$/;
export const EVENT_MESSAGE = "must be an event type (worktree.created), a prefix (worktree.*) or *";
// Mirrors parseDuration, so an editor flags a bad duration before dock does.
const DURATION_PATTERN = "^(\\d+(\\.\\d+)?|(\\d+(\\.\\d+)?(ms|s|m|h|d))+)$";

export const MAX_STEP_ID = 64;
export const MAX_PRESET_ID = 48;

/** A string that must hold more than whitespace. */
export function text(): z.ZodString {
  return z.string().regex(/\S/, "must not be empty");
}

/** A name such as a service name or flow id: `[a-z0-9][a-z0-9-]*`, at most `max` characters. */
export function slug(max: number): z.ZodString {
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
export function duration(bounds: { min?: string; max?: string } = {}) {
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

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

// Refinements that compare several fields run even when one of those fields is itself invalid, so one
// pass reports every problem; they only need the container to have the right shape.
export const WHEN_OBJECT = { when: (payload: { value: unknown }) => isRecord(payload.value) };
export const WHEN_ARRAY = { when: (payload: { value: unknown }) => Array.isArray(payload.value) };

/** Reports items of an array that repeat an earlier item's `key`. */
export function uniqueBy(key: string) {
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
