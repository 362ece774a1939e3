/**
 * Where `dock hook` (cli/hook.ts) delivers an agent's event and where the daemon (daemon/spool.ts)
 * finds the ones it could not: the state directory's resolution, the daemon's socket, the spool folder
 * and the spool's file names. One owner, so the hook and the daemon never disagree on a path or a
 * name; `core/paths.ts` resolves the state directory through {@linkcode stateDirFrom} too.
 *
 * Import-free on purpose: `dock hook` runs on every agent turn and loads nothing it can do without.
 *
 * @module
 */

/** Reads one environment variable (`Deno.env`, or a map in tests). */
export type EnvReader = (key: string) => string | undefined;

/** `DOCK_STATE_DIR`, else `$XDG_STATE_HOME/dock`, else `$HOME/.local/state/dock` (an empty value counts as unset). */
export function stateDirFrom(env: EnvReader): string {
  const explicit = env("DOCK_STATE_DIR");
  if (explicit) return explicit;
  const xdg = env("XDG_STATE_HOME") || joinPath(env("HOME") || "/", ".local/state");
  return joinPath(xdg, "dock");
}

/** The hook's two destinations under a state directory. */
export interface HookPaths {
  /** `<state>/box/dockd.sock`: the daemon's API socket, where the hook posts. */
  socket: string;
  /** `<state>/box/spool`: where the hook leaves what the daemon did not take, for it to replay. */
  spool: string;
}

/** The daemon's socket and the spool folder under the state directory `state`. */
export function hookPaths(state: string): HookPaths {
  const box = joinPath(state, "box");
  return { socket: joinPath(box, "dockd.sock"), spool: joinPath(box, "spool") };
}

/** Digits of the millisecond clock in a spool name: enough for any date, so names sort by arrival. */
const CLOCK_DIGITS = 15;

/**
 * The file name of one spooled event: the millisecond clock (zero-padded, so lexical order is arrival
 * order), then the writer's pid and a random `tail` for events in the same millisecond.
 */
export function spoolName(options: { now: number; pid: number; tail: string }): string {
  return `${String(Math.trunc(options.now)).padStart(CLOCK_DIGITS, "0")}-${options.pid}-${options.tail}.json`;
}

/** The name a spooled event is written under before its rename makes it whole: a dot-name, never replayed. */
export function spoolTempName(name: string): string {
  return `.${name}.tmp`;
}

/** Whether a file in the spool folder is a whole event to replay (not one a hook is still writing). */
export function isSpooledName(name: string): boolean {
  return name.endsWith(".json") && !name.startsWith(".");
}

// `a/b` without doubling a separator; what core/posix_path.ts's join does for these absolute paths,
// without loading it here.
function joinPath(parent: string, child: string): string {
  return parent.endsWith("/") ? `${parent}${child}` : `${parent}/${child}`;
}
