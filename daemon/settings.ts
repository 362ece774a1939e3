/**
 * The box's own settings, `<DOCK_HOME>/box.json` (all optional):
 *
 * ```jsonc
 * {
 *   "name": "devbox",              // the box's name for itself (DOCK_BOX); default: the host name
 *   "port_range": [20000, 29999],  // where worktree port blocks come from
 *   "compat_prefix": "CONDUCTOR",  // prefix of the compatibility variables; "" turns them off
 *   "worktrees_dir": "~/.dock/worktrees" // parent of new worktrees: <dir>/<location>/<name>
 * }
 * ```
 *
 * @module
 */
import * as jsonc from "jsonc-parser";
import { z } from "zod";
import { DockError } from "../client/errors.ts";
import { DEFAULT_COMPAT_PREFIX } from "./env.ts";
import type { BoxPaths } from "../core/paths.ts";

const SETTINGS = z.object({
  name: z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/, "must match [a-z0-9][a-z0-9-]*, at most 63 characters")
    .optional(),
  port_range: z.tuple([z.number().int().min(1024).max(65535), z.number().int().min(1024).max(65535)])
    .refine(([lo, hi]) => lo <= hi, "the first port must not be above the second").optional(),
  compat_prefix: z.string().regex(/^([A-Z][A-Z0-9_]*)?$/, "must be an upper-case variable prefix or empty")
    .optional(),
  worktrees_dir: z.string().min(1).optional(),
}).strict();

/** The box's settings with defaults applied. */
export interface BoxSettings {
  name: string;
  portRange: [number, number];
  compatPrefix: string;
  worktreesDir: string;
}

/** Reads `box.json` (missing is fine) and applies defaults; a bad file is an error naming the field. */
export function loadSettings(paths: BoxPaths): BoxSettings {
  let raw: unknown = {};
  try {
    const text = Deno.readTextFileSync(paths.boxConfig);
    const errors: jsonc.ParseError[] = [];
    raw = jsonc.parse(text, errors, { allowTrailingComma: true });
    if (errors.length) {
      throw new DockError(
        "invalid_settings",
        `${paths.boxConfig}: not valid JSON (offset ${errors[0].offset})`,
      );
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  const parsed = SETTINGS.safeParse(raw ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new DockError("invalid_settings", `${paths.boxConfig}: ${issue.path.join(".")}: ${issue.message}`);
  }
  const settings = parsed.data;
  const dir = settings.worktrees_dir?.replace(/^~(?=$|\/)/, paths.userHome) ?? paths.worktrees;
  return {
    name: settings.name ?? defaultBoxName(),
    portRange: (settings.port_range as [number, number] | undefined) ?? portRangeFromEnv() ?? [20000, 29999],
    compatPrefix: settings.compat_prefix ?? DEFAULT_COMPAT_PREFIX,
    worktreesDir: dir,
  };
}

// DOCK_PORT_RANGE=lo-hi lets tests and side-by-side daemons keep apart without writing box.json.
function portRangeFromEnv(): [number, number] | undefined {
  const match = /^(\d+)-(\d+)$/.exec(Deno.env.get("DOCK_PORT_RANGE") ?? "");
  return match ? [Number(match[1]), Number(match[2])] : undefined;
}

function defaultBoxName(): string {
  const host = Deno.hostname().toLowerCase().split(".")[0].replace(/[^a-z0-9-]/g, "-").replace(/^-+/, "");
  return host || "box";
}
