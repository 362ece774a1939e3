/**
 * The plugin manifest, `~/.dock/plugins/<id>/dock-plugin.json` (spec 2.9): one zod schema, which also
 * gives `schemas/plugin.schema.json`. A manifest is read like every user file (JSONC, unknown fields
 * refused with a "did you mean", errors naming file and field).
 *
 * Permissions are what the plugin asks for; enabling grants exactly them. Paths it may read or write
 * are inside its own data folder (`<state>/plugins/<id>/`); `run`, `ffi`, `sys` and remote imports are
 * never granted to its code (a process allowed to run programs can leave any sandbox), and asking for
 * them is an error, not a silent drop. Its shell hooks (`hooks[].run`) do run outside the sandbox, so
 * they are asked for too: dock lists their exact strings as `permissions.commands`, which enabling must
 * confirm like the rest, and a changed command is a grant the plugin no longer has.
 *
 * @module
 */
import * as z from "zod";
import type { HookConfig, PluginPermissions } from "../client/wire.ts";
import { HOOK_SCHEMA } from "../core/config.ts";
import { modulePath } from "../core/config_fields.ts";
import { ConfigError, readUserFile } from "../core/user_files.ts";
import { PLUGIN_SCOPES } from "./scopes.ts";

/** The manifest's file name in a plugin's folder. */
export const MANIFEST_FILE = "dock-plugin.json";

/** A plugin id: `[a-z0-9][a-z0-9-]*`, at most 48 characters. */
export const PLUGIN_ID = /^[a-z0-9][a-z0-9-]{0,47}$/;

/** A parsed `dock-plugin.json`. */
export interface PluginManifest {
  id: string;
  name: string;
  version: string;
  description?: string;
  main?: string;
  hooks?: HookConfig[];
  themes?: string[];
  ui?: string[];
  permissions?: PluginPermissions;
  /** Its settings' JSON Schema (a small subset: see {@linkcode CONFIG_SCHEMA}). */
  config?: PluginConfigSchema;
  /** The dock versions it works with (`engines.dock`, a semver range): checked at load. */
  engines?: { dock?: string };
}

/** One setting of a plugin's `config` schema. */
export interface ConfigProperty {
  type: "string" | "number" | "integer" | "boolean";
  description?: string;
  default?: string | number | boolean;
  enum?: (string | number)[];
  /** Its value is a secret reference (`env://NAME`, `op://…`), resolved into `ctx.secrets`, never shown. */
  secret?: boolean;
}

/** A plugin's `config` schema: an object of typed properties. */
export interface PluginConfigSchema {
  type: "object";
  properties: Record<string, ConfigProperty>;
  required?: string[];
}

/** Permissions no manifest can ask for, and why. */
const NEVER_GRANTED: Record<string, string> = {
  run: "running programs lets code leave any sandbox",
  ffi: "native code lets code leave any sandbox",
  sys: "system information is not granted to plugins",
  import: "remote code is never imported",
  all: "every permission at once is never granted",
};

/** Permissions dock lists itself, from the rest of the manifest. */
const LISTED_BY_DOCK: Record<string, string> = {
  commands: "is listed by dock from the hooks' run commands; write the commands in hooks",
};

const DATA_PATH = z.string()
  .max(256, "must be at most 256 characters")
  .regex(
    /^(\.|(?!\/)(?!.*(^|\/)\.\.(\/|$))[^\0\\]+)$/,
    "must be a path inside the plugin's data folder (relative, without ..)",
  );

const FILE_PATH = z.string()
  .max(256, "must be at most 256 characters")
  .regex(
    /^(?!\/)(?![a-z][a-z0-9+.-]*:)(?!.*(^|\/)\.\.(\/|$))[^\0\\]+$/i,
    "must be a path inside the plugin's folder (relative, without ..)",
  );

const HOST = z.string()
  .max(253)
  .regex(
    /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?)(:\d{1,5})?$/,
    "must be a host name or address, with an optional :port (no wildcards)",
  );

const ENV_NAME = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must be a variable name");

const PERMISSIONS = z.strictObject({
  read: z.array(DATA_PATH).max(32).describe("Paths inside the data folder it may read.").optional(),
  write: z.array(DATA_PATH).max(32).describe("Paths inside the data folder it may write.").optional(),
  net: z.array(HOST).max(32).describe("Hosts (host or host:port) it may reach.").optional(),
  env: z.array(ENV_NAME).max(32).describe("Environment variables it may read.").optional(),
  scopes: z.array(z.enum(PLUGIN_SCOPES)).describe("What it may do through ctx.api and ctx.emit.").optional(),
});

const CONFIG_KEY = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/, "must be a name such as api_url");

/**
 * The `config` JSON Schema a manifest may hold: the subset a form and `dock plugin config set k=v` can
 * fill (an object of typed scalar properties, with `required`, `default`, `enum`, `description`), plus
 * `secret: true` for a property whose value is a secret reference.
 */
export const CONFIG_SCHEMA: z.ZodType<PluginConfigSchema, unknown> = z.strictObject({
  type: z.literal("object"),
  properties: z.record(
    CONFIG_KEY,
    z.strictObject({
      type: z.enum(["string", "number", "integer", "boolean"]),
      description: z.string().max(500).optional(),
      default: z.union([z.string().max(4096), z.number(), z.boolean()]).optional(),
      enum: z.array(z.union([z.string().max(256), z.number()])).min(1).max(64).optional(),
      secret: z.boolean().describe("Its value is a secret reference (env://NAME), resolved into ctx.secrets.")
        .optional(),
    }),
  ).refine((p) => Object.keys(p).length <= 64, "at most 64 properties"),
  required: z.array(CONFIG_KEY).max(64).optional(),
}).superRefine((schema, ctx) => {
  for (const key of schema.required ?? []) {
    if (!(key in schema.properties)) {
      ctx.addIssue({ code: "custom", message: `required names '${key}', which is not a property` });
    }
  }
  for (const [key, property] of Object.entries(schema.properties)) {
    if (property.secret && property.type !== "string") {
      ctx.addIssue({ code: "custom", message: `properties.${key}: a secret is a string (a reference)` });
    }
    if (property.secret && property.default !== undefined) {
      ctx.addIssue({ code: "custom", message: `properties.${key}: a secret has no default` });
    }
  }
});

/** The manifest's schema. */
export const MANIFEST_SCHEMA: z.ZodType<PluginManifest, unknown> = z.strictObject({
  $schema: z.string().optional(),
  id: z.string().regex(PLUGIN_ID, "must match [a-z0-9][a-z0-9-]*, at most 48 characters")
    .describe("The plugin's id; its folder's name."),
  name: z.string().regex(/\S/, "must not be empty").max(100).describe("Shown in lists."),
  version: z.string().regex(/^\d+(\.\d+)*([-+][0-9A-Za-z.-]+)?$/, "must be a version such as 1.2.0")
    .describe("Dotted numbers, compared part by part."),
  description: z.string().max(1000).optional(),
  main: modulePath().describe("The plugin's module: export default { fetch?, event?, gate? }.").optional(),
  hooks: z.array(HOOK_SCHEMA).max(64).describe(
    "Hooks and gates (spec 2.5); module paths are inside the plugin.",
  )
    .optional(),
  themes: z.array(FILE_PATH).max(32).describe("Theme files (JSON) in the plugin's folder.").optional(),
  ui: z.array(FILE_PATH).max(64).describe(
    "Files (or folders, ending in /) the app may load through GET /v1/plugins/{id}/{file}.",
  ).optional(),
  permissions: PERMISSIONS.describe("What it asks for; enabling grants exactly this.").optional(),
  config: CONFIG_SCHEMA.describe(
    "Its settings (a JSON Schema subset): ctx.config, ctx.secrets, the app's form.",
  )
    .optional(),
  engines: z.strictObject({
    dock: z.string().max(200).refine(
      (range) => parseRange(range) !== null,
      "must be a semver range such as ^0.1",
    )
      .describe("The dock versions it works with (a semver range): refused at load on another.").optional(),
  }).optional(),
}).transform(({ $schema: _, ...manifest }) => withCommands(manifest));

/** The manifest with its shell hooks' commands listed in its permissions (what enabling must confirm). */
function withCommands(manifest: PluginManifest): PluginManifest {
  const commands = [
    ...new Set((manifest.hooks ?? []).flatMap((hook) => hook.run === undefined ? [] : [hook.run])),
  ];
  if (commands.length === 0) return manifest;
  return { ...manifest, permissions: { ...manifest.permissions, commands } };
}

/** Reads and checks a plugin's manifest; throws a `ConfigError` naming the file and the field. */
export async function readManifest(path: string, folderName: string): Promise<PluginManifest> {
  const raw = await readUserFile(path, z.unknown(), { missing: "default", code: "invalid_plugin" });
  const permissions = (raw as { permissions?: unknown } | undefined)?.permissions;
  if (permissions && typeof permissions === "object" && !Array.isArray(permissions)) {
    const asked = Object.keys(permissions).filter((key) => key in NEVER_GRANTED || key in LISTED_BY_DOCK);
    if (asked.length) {
      throw new ConfigError(
        asked.map((key) => ({
          file: path,
          field: `permissions.${key}`,
          message: LISTED_BY_DOCK[key] ?? `is never granted to a plugin: ${NEVER_GRANTED[key]}`,
        })),
        { code: "invalid_plugin" },
      );
    }
  }
  const manifest = await readUserFile(path, MANIFEST_SCHEMA, { missing: "default", code: "invalid_plugin" });
  if (manifest.id !== folderName) {
    throw new ConfigError([{
      file: path,
      field: "id",
      message: `is '${manifest.id}' but the plugin's folder is '${folderName}'`,
    }], { code: "invalid_plugin" });
  }
  return manifest;
}

/** The permissions a manifest asks for, with every list present and sorted (to compare grants). */
export function normalizePermissions(
  permissions: PluginPermissions | undefined,
): Required<PluginPermissions> {
  const sorted = <T extends string>(values: T[] | undefined) => [...new Set(values ?? [])].sort();
  return {
    read: sorted(permissions?.read),
    write: sorted(permissions?.write),
    net: sorted(permissions?.net),
    env: sorted(permissions?.env),
    scopes: sorted(permissions?.scopes),
    commands: sorted(permissions?.commands),
  };
}

/**
 * Answers of {@linkcode grantCovers} by grant and asked: a plugin's grant and its manifest's permissions
 * are replaced, never changed in place, and the check runs twice before every call of a plugin (two
 * sorts and copies of six lists each time: ~8 µs of a warm `fn` call's ~300 µs in the daemon).
 */
const covered = new WeakMap<PluginPermissions, WeakMap<PluginPermissions, boolean>>();

/** Whether a grant allows everything `asked` asks for. */
export function grantCovers(grant: PluginPermissions, asked: PluginPermissions): boolean {
  let byAsked = covered.get(grant);
  if (!byAsked) covered.set(grant, byAsked = new WeakMap());
  let answer = byAsked.get(asked);
  if (answer === undefined) byAsked.set(asked, answer = computeCovers(grant, asked));
  return answer;
}

function computeCovers(grant: PluginPermissions, asked: PluginPermissions): boolean {
  const g = normalizePermissions(grant);
  const a = normalizePermissions(asked);
  return (["read", "write", "net", "env", "scopes", "commands"] as const).every((key) =>
    (a[key] as string[]).every((value) => (g[key] as string[]).includes(value))
  );
}

/** The JSON Schema of `dock-plugin.json` (draft 2020-12), as written to `schemas/plugin.schema.json`. */
export function manifestJsonSchema(): object {
  const { $schema, ...rest } = z.toJSONSchema(MANIFEST_SCHEMA, { target: "draft-2020-12", io: "input" });
  return {
    $schema,
    $id: "urn:dock:schema:plugin",
    title: "dock plugin manifest (dock-plugin.json)",
    ...rest,
  };
}

type Version = [number, number, number];

function parseVersion(text: string): { version: Version; given: number } | null {
  const match = /^v?(\d+)(?:\.(\d+|[x*]))?(?:\.(\d+|[x*]))?(?:[-+][0-9A-Za-z.-]+)?$/.exec(text.trim());
  if (!match) return null;
  const parts = match.slice(1).map((p) => p === undefined || p === "x" || p === "*" ? undefined : Number(p));
  const given = parts.findIndex((p) => p === undefined);
  return {
    version: [parts[0] ?? 0, parts[1] ?? 0, parts[2] ?? 0],
    given: given === -1 ? 3 : given,
  };
}

function compare(a: Version, b: Version): number {
  for (let i = 0; i < 3; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return 0;
}

type Comparator = (v: Version) => boolean;

/**
 * A semver range as npm writes them, the common forms: `*`, `1.2.3`, `1.2`, `^1.2`, `~1.2.3`,
 * `>=1.2 <2`, `a || b`. Null when it is not one of them (the manifest is refused).
 */
export function parseRange(range: string): Comparator[][] | null {
  const sets: Comparator[][] = [];
  for (const alternative of range.split("||")) {
    const comparators: Comparator[] = [];
    const words = alternative.trim().split(/\s+/).filter(Boolean);
    if (words.length === 0) return null;
    for (const word of words) {
      if (word === "*" || word === "x") {
        comparators.push(() => true);
        continue;
      }
      const match = /^(\^|~|>=|<=|>|<|=)?(.+)$/.exec(word)!;
      const parsed = parseVersion(match[2]);
      if (!parsed) return null;
      const { version: low, given } = parsed;
      const op = match[1] ?? "";
      const upper = (index: number): Version =>
        index === 0
          ? [low[0] + 1, 0, 0]
          : index === 1
          ? [low[0], low[1] + 1, 0]
          : [low[0], low[1], low[2] + 1];
      if (op === "^") {
        // The first non-zero part given is the one that may not change (^0.1.2: 0.1.x).
        const fixed = low[0] > 0 || given <= 1 ? 0 : low[1] > 0 || given <= 2 ? 1 : 2;
        const high = upper(fixed);
        comparators.push((v) => compare(v, low) >= 0 && compare(v, high) < 0);
      } else if (op === "~") {
        const high = upper(given <= 1 ? 0 : 1);
        comparators.push((v) => compare(v, low) >= 0 && compare(v, high) < 0);
      } else if (op === "" || op === "=") {
        const high = given === 3 ? undefined : upper(given - 1);
        comparators.push((v) => high ? compare(v, low) >= 0 && compare(v, high) < 0 : compare(v, low) === 0);
      } else if (op === ">=") comparators.push((v) => compare(v, low) >= 0);
      else if (op === ">") comparators.push((v) => compare(v, low) > 0);
      else if (op === "<=") comparators.push((v) => compare(v, low) <= 0);
      else comparators.push((v) => compare(v, low) < 0);
    }
    sets.push(comparators);
  }
  return sets;
}

/** Whether `version` (dock's) satisfies the semver `range`; false for a range that does not parse. */
export function satisfies(version: string, range: string): boolean {
  const parsed = parseVersion(version.replace(/[-+].*$/, ""));
  const sets = parseRange(range);
  if (!parsed || !sets) return false;
  return sets.some((set) => set.every((test) => test(parsed.version)));
}
