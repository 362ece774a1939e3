/**
 * The plugin manifest, `~/.dock/plugins/<id>/dock-plugin.json` (spec 2.9): one zod schema, which also
 * gives `schemas/plugin.schema.json`. A manifest is read like every user file (JSONC, unknown fields
 * refused with a "did you mean", errors naming file and field).
 *
 * Permissions are what the plugin asks for; enabling grants exactly them. Paths it may read or write
 * are inside its own data folder (`<state>/plugins/<id>/`); `run`, `ffi`, `sys` and remote imports are
 * never granted (a process allowed to run programs can leave any sandbox), and asking for them is an
 * error, not a silent drop.
 *
 * @module
 */
import * as z from "zod";
import type { HookConfig, PluginPermissions } from "../client/wire.ts";
import { HOOK_SCHEMA, modulePath } from "../core/config.ts";
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
}

/** Permissions no manifest can ask for, and why. */
const NEVER_GRANTED: Record<string, string> = {
  run: "running programs lets code leave any sandbox",
  ffi: "native code lets code leave any sandbox",
  sys: "system information is not granted to plugins",
  import: "remote code is never imported",
  all: "every permission at once is never granted",
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
}).transform(({ $schema: _, ...manifest }) => manifest);

/** Reads and checks a plugin's manifest; throws a `ConfigError` naming the file and the field. */
export async function readManifest(path: string, folderName: string): Promise<PluginManifest> {
  const raw = await readUserFile(path, z.unknown(), { missing: "default", code: "invalid_plugin" });
  const permissions = (raw as { permissions?: unknown } | undefined)?.permissions;
  if (permissions && typeof permissions === "object" && !Array.isArray(permissions)) {
    const asked = Object.keys(permissions).filter((key) => key in NEVER_GRANTED);
    if (asked.length) {
      throw new ConfigError(
        asked.map((key) => ({
          file: path,
          field: `permissions.${key}`,
          message: `is never granted to a plugin: ${NEVER_GRANTED[key]}`,
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
  };
}

/** Whether a grant allows everything `asked` asks for. */
export function grantCovers(grant: PluginPermissions, asked: PluginPermissions): boolean {
  const g = normalizePermissions(grant);
  const a = normalizePermissions(asked);
  return (["read", "write", "net", "env", "scopes"] as const).every((key) =>
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
