/**
 * A plugin's settings: the values of its manifest's `config` schema, kept in `<state>/plugin-config/<id>.json`
 * (outside its data folder, so the plugin cannot rewrite them, mode 0600), checked against the schema on
 * every write, with the schema's defaults filled in for `ctx.config`. A `secret: true` property holds a
 * secret reference (`env://NAME`, spec 2.5); its value is resolved into `ctx.secrets` only, and the
 * routes show the reference, never what it resolves to.
 *
 * @module
 */
import { DockError } from "../client/errors.ts";
import { readTextOrNull, writeAtomic } from "../core/files.ts";
import { dirname } from "../core/posix_path.ts";
import type { PluginConfigSchema } from "./manifest.ts";

/** A plugin's stored settings (scalars; secret properties hold references). */
export type ConfigValues = Record<string, string | number | boolean>;

/** A secret reference: `scheme://…` (`env://NAME`, `op://vault/item/field`). */
const REFERENCE = /^[a-z][a-z0-9+.-]*:\/\/[^\0\s]{1,1000}$/;

/** Bytes a plugin's stored settings may take (a form's worth, not a data store). */
export const CONFIG_MAX_BYTES = 64 * 1024;

/**
 * Checks `values` against `schema`: no key it does not name (with a "did you mean"), each of its type
 * and enum, each required one present (after defaults), a secret one a reference. Returns them as stored
 * (no defaults added); throws a 400 `invalid_config` naming the key.
 */
export function checkConfig(schema: PluginConfigSchema | undefined, values: unknown): ConfigValues {
  const properties = schema?.properties ?? {};
  if (typeof values !== "object" || values === null || Array.isArray(values)) {
    throw invalid("the config must be an object");
  }
  const out: ConfigValues = {};
  for (const [key, value] of Object.entries(values)) {
    const property = properties[key];
    if (!property) {
      const near = nearest(key, Object.keys(properties));
      throw invalid(
        `${key}: not a setting of this plugin${near ? ` (did you mean '${near}'?)` : ""}; it has ${
          Object.keys(properties).join(", ") || "none"
        }`,
      );
    }
    const ok = property.type === "string"
      ? typeof value === "string" && value.length <= 4096 && !value.includes("\0")
      : property.type === "boolean"
      ? typeof value === "boolean"
      : typeof value === "number" && Number.isFinite(value) &&
        (property.type === "number" || Number.isInteger(value));
    if (!ok) {
      throw invalid(`${key}: must be ${property.type === "integer" ? "an integer" : `a ${property.type}`}`);
    }
    if (property.enum && !property.enum.includes(value as string | number)) {
      throw invalid(`${key}: must be one of ${property.enum.join(", ")}`);
    }
    if (property.secret && !REFERENCE.test(value as string)) {
      throw invalid(`${key}: a secret is given as a reference such as env://NAME, never as its value`);
    }
    out[key] = value as string | number | boolean;
  }
  const missing = (schema?.required ?? []).filter((key) =>
    out[key] === undefined && properties[key]?.default === undefined
  );
  if (missing.length) {
    throw invalid(`missing required setting${missing.length > 1 ? "s" : ""}: ${missing.join(", ")}`);
  }
  if (JSON.stringify(out).length > CONFIG_MAX_BYTES) throw invalid(`more than ${CONFIG_MAX_BYTES} bytes`);
  return out;
}

/** What `ctx.config` holds: the stored values of the plain settings, defaults filled in (no secret). */
export function effectiveConfig(schema: PluginConfigSchema | undefined, stored: ConfigValues): ConfigValues {
  const out: ConfigValues = {};
  for (const [key, property] of Object.entries(schema?.properties ?? {})) {
    if (property.secret) continue;
    const value = stored[key] ?? property.default;
    if (value !== undefined) out[key] = value;
  }
  return out;
}

/** The secret settings' references, by key (what is resolved into `ctx.secrets`). */
export function secretReferences(
  schema: PluginConfigSchema | undefined,
  stored: ConfigValues,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, property] of Object.entries(schema?.properties ?? {})) {
    if (property.secret && typeof stored[key] === "string") out[key] = stored[key] as string;
  }
  return out;
}

/**
 * `k=v` words (`dock plugin config ID set k=v`) as typed values: a value is read by its property's type
 * (`true`/`false`, a number), a string taken as written.
 */
export function parseAssignments(schema: PluginConfigSchema | undefined, words: string[]): ConfigValues {
  const out: ConfigValues = {};
  for (const word of words) {
    const at = word.indexOf("=");
    if (at <= 0) throw invalid(`${word}: write key=value`);
    const key = word.slice(0, at);
    const text = word.slice(at + 1);
    const type = schema?.properties[key]?.type;
    if (type === "boolean") {
      if (text !== "true" && text !== "false") throw invalid(`${key}: must be true or false`);
      out[key] = text === "true";
    } else if (type === "number" || type === "integer") {
      const number = Number(text);
      if (text.trim() === "" || !Number.isFinite(number)) throw invalid(`${key}: must be a number`);
      out[key] = number;
    } else out[key] = text;
  }
  return out;
}

/** Reads a plugin's stored settings (none when the file is missing or does not parse). */
export async function readConfig(path: string): Promise<ConfigValues> {
  const text = await readTextOrNull(path);
  if (!text) return {};
  try {
    const parsed = JSON.parse(text);
    return typeof parsed === "object" && parsed !== null && !Array.isArray(parsed) ? parsed : {};
  } catch {
    return {};
  }
}

/** Writes a plugin's settings atomically, mode 0600 (references to secrets are in it). */
export async function writeConfig(path: string, values: ConfigValues): Promise<void> {
  await Deno.mkdir(dirname(path), { recursive: true, mode: 0o700 });
  await writeAtomic(path, JSON.stringify(values, null, 2) + "\n", 0o600);
}

/**
 * Resolves a secret reference with the process's own environment (`env://NAME`); other schemes need
 * the box's vault resolver, given as `resolve` by its owner.
 */
export function envSecret(reference: string): Promise<string | undefined> {
  const match = /^env:\/\/([A-Za-z_][A-Za-z0-9_]*)$/.exec(reference);
  return Promise.resolve(match ? Deno.env.get(match[1]) : undefined);
}

function invalid(message: string): DockError {
  return new DockError("invalid_config", message, { status: 400 });
}

/** The known name closest to `key` when it is close enough to be a slip (as `core/user_files.ts` judges). */
function nearest(key: string, known: string[]): string | undefined {
  const best = known.map((name) => ({ name, d: distance(key.toLowerCase(), name.toLowerCase()) }))
    .sort((a, b) => a.d - b.d)[0];
  return best && best.d <= Math.max(1, Math.floor(best.name.length / 3)) ? best.name : undefined;
}

/** Edit distance (insert, delete, substitute). */
function distance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++) {
      next[j] = Math.min(row[j] + 1, next[j - 1] + 1, row[j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
    row = next;
  }
  return row[b.length];
}
