/**
 * Paths a command line names, made absolute against the caller's directory (the daemon has its own).
 * A module of its own so that a command needing it loads nothing else (`dock add ssh --identity`).
 *
 * @module
 */

/** Makes a CLI path absolute against the caller's directory. */
export function resolvePath(path: string): string {
  return path.startsWith("/") ? path : `${Deno.cwd()}/${path}`;
}
