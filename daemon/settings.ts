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
import { z } from "zod";
import { DEFAULT_COMPAT_PREFIX } from "./env.ts";
import type { BoxPaths } from "../core/paths.ts";
import { readUserFileSync } from "../core/user_files.ts";

const PORT = z.number({ error: "must be a whole number from 1024 to 65535" }).int().min(1024).max(65535);

const BOX_FILE = z.strictObject({
  name: z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/, "must match [a-z0-9][a-z0-9-]*, at most 63 characters")
    .optional(),
  port_range: z.tuple([PORT, PORT], { error: "must be two ports [low, high], such as [20000, 29999]" })
    .refine(([lo, hi]) => lo <= hi, {
      message: "the first port must not be above the second",
      // Only two valid ports can be compared; a bad one is reported alone.
      when: (payload) => payload.issues.length === 0,
    }).optional(),
  compat_prefix: z.string().regex(/^([A-Z][A-Z0-9_]*)?$/, "must be an upper-case variable prefix or empty")
    .optional(),
  worktrees_dir: z.string().min(1, "must not be empty").optional(),
});

/** The box's settings with defaults applied. */
export interface BoxSettings {
  name: string;
  portRange: [number, number];
  compatPrefix: string;
  worktreesDir: string;
}

/** Reads `box.json` (missing is fine) and applies defaults; a bad file is an error naming the field. */
export function loadSettings(paths: BoxPaths): BoxSettings {
  // Read once at start-up, before anything else runs, so a synchronous read costs nothing.
  const settings = readUserFileSync(paths.boxConfig, BOX_FILE, {
    missing: "default",
    code: "invalid_settings",
  });
  const dir = settings.worktrees_dir?.replace(/^~(?=$|\/)/, paths.userHome) ?? paths.worktrees;
  return {
    name: settings.name ?? defaultBoxName(),
    portRange: settings.port_range ?? portRangeFromEnv() ?? [20000, 29999],
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
