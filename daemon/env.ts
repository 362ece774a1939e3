/**
 * The worktree environment (spec 2.10): what every process run in a worktree receives. Layers, each
 * over the one before: the daemon's environment, the box env file (`~/.dock/env.json`), the `DOCK_*`
 * variables, the compatibility names for another tool's scripts, then the config `env` with `$NAME`
 * expansion. Secret references are resolved here, at spawn time, and nowhere else.
 *
 * @module
 */
import { z } from "zod";
import type { ConfigProblem, EnvFile } from "../client/wire.ts";
import { isEnvEntry } from "../core/config.ts";
import { readUserFile, validateUserFile, writeUserFile } from "../core/user_files.ts";
import { isSecretReference, schemeOf, type SecretResolver } from "./secrets.ts";
import type { Log } from "../core/log.ts";

/** The prefix of the compatibility names when the box config does not set one (Conductor's). */
export const DEFAULT_COMPAT_PREFIX = "CONDUCTOR";

/** What the `DOCK_*` variables are computed from. */
export interface WorktreeFacts {
  box: string;
  location: string;
  rootPath: string;
  name: string;
  path: string;
  branch: string | null;
  ports: number[];
  kitDir?: string;
}

/** The `DOCK_*` variables and the compatibility names of a worktree. */
export function dockVariables(
  facts: WorktreeFacts,
  compatPrefix = DEFAULT_COMPAT_PREFIX,
): Record<string, string> {
  const vars: Record<string, string> = {
    DOCK_BOX: facts.box,
    DOCK_LOCATION: facts.location,
    DOCK_ROOT_PATH: facts.rootPath,
    DOCK_WORKTREE_PATH: facts.path,
    DOCK_WORKTREE_NAME: facts.name,
    DOCK_WORKTREE_SLUG: slug(facts.name),
    DOCK_BRANCH: facts.branch ?? "",
  };
  facts.ports.forEach((port, index) => {
    vars[index === 0 ? "DOCK_PORT" : `DOCK_PORT_${index}`] = String(port);
  });
  if (facts.kitDir) vars.DOCK_KIT_DIR = facts.kitDir;
  if (compatPrefix) {
    vars[`${compatPrefix}_ROOT_PATH`] = facts.rootPath;
    vars[`${compatPrefix}_WORKTREE_PATH`] = facts.path;
    vars[`${compatPrefix}_WORKSPACE_NAME`] = facts.name;
  }
  return vars;
}

/** A name made safe for database and identifier use: lowercase `[a-z0-9_]`, not starting with a digit. */
export function slug(name: string): string {
  const cleaned = name.toLowerCase().replace(/[^a-z0-9]+/g, "_").replace(/^_+|_+$/g, "");
  return /^[0-9]/.test(cleaned) ? `w_${cleaned}` : cleaned || "w";
}

/** Expands `$NAME` and `${NAME}` from `vars`; an unknown name expands to empty, `$$` is a dollar. */
export function expand(value: string, vars: Record<string, string | undefined>): string {
  return value.replace(
    /\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)/g,
    (whole, braced, bare) => whole === "$$" ? "$" : vars[braced ?? bare] ?? "",
  );
}

/** A variable that could not be resolved: its name and why (never a value). */
export interface EnvProblem {
  key: string;
  error: string;
}

/** Inputs of {@linkcode buildEnv}. */
export interface BuildEnvOptions {
  /** The daemon's own environment. */
  base: Record<string, string>;
  /** `env.json`'s values (may be secret references). */
  boxEnv: Record<string, string>;
  /** `DOCK_*` and compatibility variables. */
  dock: Record<string, string>;
  /** The effective config's `env` (may use `$NAME` or be secret references). */
  config: Record<string, string>;
  secrets: SecretResolver;
  /**
   * Told of each secret resolved or not (the variable, the reference's scheme, and why it failed; never
   * the value; `cached` when the value came from the cache): what `secret.resolved`/`secret.failed`
   * announce and `POST secrets/report` lists.
   */
  onSecret?: (outcome: SecretOutcome) => void;
}

/** One secret of an environment: its variable and scheme, resolved or why not. Never its value. */
export interface SecretOutcome {
  variable: string;
  scheme: string;
  ok: boolean;
  error?: string;
  /** The value's length, when resolved. */
  length?: number;
  cached?: boolean;
}

/** Builds a worktree's whole environment; unresolvable secrets are left out and reported. */
export async function buildEnv(
  options: BuildEnvOptions,
): Promise<{ env: Record<string, string>; problems: EnvProblem[] }> {
  const problems: EnvProblem[] = [];
  const env: Record<string, string> = { ...options.base };
  const resolve = async (key: string, value: string): Promise<string | undefined> => {
    if (!isSecretReference(value)) return value;
    const result = await options.secrets.resolve(value);
    const scheme = schemeOf(value);
    if (result.ok) {
      options.onSecret?.({
        variable: key,
        scheme,
        ok: true,
        length: result.value.length,
        cached: result.cached,
      });
      return result.value;
    }
    options.onSecret?.({ variable: key, scheme, ok: false, error: result.error });
    problems.push({ key, error: result.error });
    return undefined;
  };
  // No process can be given a NUL (the spawn fails: "nul byte found in provided data"), whichever layer
  // it came from: a secret's value, or a layer read without the files' check. The variable is left out.
  const set = (key: string, value: string | undefined) => {
    if (value === undefined) return;
    if (value.includes("\0")) problems.push({ key, error: "its value holds a NUL byte; left out" });
    else env[key] = value;
  };
  for (const [key, value] of Object.entries(options.boxEnv)) set(key, await resolve(key, value));
  Object.assign(env, options.dock);
  // Expansion sees DOCK_* and the daemon's environment (spec 2.5), and earlier config keys.
  for (const [key, value] of Object.entries(options.config)) {
    set(key, await resolve(key, isSecretReference(value) ? value : expand(value, env)));
  }
  return { env, problems };
}

const ENV_FILE = z.strictObject({
  env: z.record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "must match [A-Za-z_][A-Za-z0-9_]*"), z.string())
    .default({}),
}) satisfies z.ZodType<EnvFile, unknown>;

/** Validates the body of `PUT env` (status 400) or the content of `env.json` (422). */
export function validateEnvFile(value: unknown, file: string, status: 400 | 422 = 422): EnvFile {
  return validateUserFile(value, file, ENV_FILE, { code: "invalid_env", status });
}

/** Reads `env.json`'s variables (missing → none); an invalid file is a 422 naming the file and key. */
export async function readEnvFile(path: string): Promise<Record<string, string>> {
  return (await readUserFile(path, ENV_FILE, { missing: "default", code: "invalid_env" })).env;
}

/** Problems of `env.json` already logged, so a file left broken is said once, not at every spawn. */
const logged = new Set<string>();

/**
 * `env.json`'s variables for a process about to start: as {@linkcode readEnvFile}, except that a variable
 * whose value holds a NUL or an unpaired surrogate is left out (and logged, naming the file and the key)
 * rather than failing the spawn: one such value once made every exec on the box a 500. `GET env` still
 * refuses the file, naming it.
 */
export async function readEnvForProcesses(
  path: string,
  log: Pick<Log, "warn">,
): Promise<Record<string, string>> {
  const report = (problems: ConfigProblem[]) => {
    for (const problem of problems) {
      const line = `${problem.file}: ${problem.field}: ${problem.message} (left out of every environment)`;
      if (logged.has(line)) continue;
      if (logged.size > 1000) logged.clear();
      logged.add(line);
      log.warn(line);
    }
  };
  const read = await readUserFile(path, ENV_FILE, {
    missing: "default",
    code: "invalid_env",
    drop: { where: isEnvEntry, report },
  });
  return read.env;
}

/** Writes `env.json` atomically (pretty JSON, mode 0600: its values may be secrets). */
export async function writeEnvFile(path: string, file: EnvFile): Promise<void> {
  await writeUserFile(path, file, { mode: 0o600 });
}
