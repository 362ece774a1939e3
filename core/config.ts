/**
 * The repository config (`.dock/config.json`, spec 2.5), the kit manifest (`kit.json`, spec 2.7) and
 * the merge of config layers (spec 2.6). Every rule of those sections is written once, here, as a zod
 * schema; the same schemas give the JSON Schemas in `schemas/` that editors use.
 *
 * They are read like every user file (`user_files.ts`): JSON with comments, unknown fields refused with
 * a "did you mean", and a `ConfigError` naming the file, the field path (`services[2].name`)
 * and the offending value, listing every problem rather than the first only. The field rules they share
 * are in `config_fields.ts`, a flow's schema in `config_flows.ts`.
 *
 * @module
 */
import * as z from "zod";
import { join } from "./posix_path.ts";
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
import {
  duration,
  ENV_KEY,
  EVENT_PATTERN,
  MAX_PRESET_ID,
  modulePath,
  PRESET_ID,
  slug,
  text,
  uniqueBy,
  WHEN_ARRAY,
} from "./config_fields.ts";
import { flowSchema } from "./config_flows.ts";

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
  // The effective config is handed around and edited; it must not share objects with the layers. A
  // copy through JSON, which every layer was parsed from: structuredClone took 34 µs a call in the
  // daemon (measured over 200 calls, about three a worktree create and one a gated request), the copy
  // through JSON a few.
  return JSON.parse(JSON.stringify(out));
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
