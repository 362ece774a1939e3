/**
 * Names of locations, worktrees and sessions. They become folder names and URL labels
 * (`<wt>.<loc>.<box>.localhost`), so they are kept to a safe alphabet: no path separators, no leading
 * dot, nothing git refuses in a branch name, bounded length.
 *
 * @module
 */
import { badField } from "../client/errors.ts";

/** The longest location or worktree name accepted. */
export const MAX_NAME = 64;

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** Throws a 400 naming `field` unless `name` is a valid location or worktree name. */
export function checkName(field: string, name: string): string {
  if (typeof name !== "string" || name.length === 0) throw badField(field, "must be a non-empty string");
  if (name.length > MAX_NAME) {
    throw badField(field, `must be at most ${MAX_NAME} characters, got ${name.length}`);
  }
  if (!NAME.test(name) || name.includes("..") || name.endsWith(".lock") || name.endsWith(".")) {
    throw badField(
      field,
      `must start with a letter or digit and use only letters, digits, '.', '_' and '-' (no '/', no '..'), got ${
        JSON.stringify(name.slice(0, 80))
      }`,
    );
  }
  return name;
}

/** Turns any folder name into a valid worktree name (for worktrees dock did not create). */
export function nameFromFolder(folder: string): string {
  const cleaned = folder.replace(/[^A-Za-z0-9._-]+/g, "-").replace(/\.{2,}/g, ".").replace(
    /^[^A-Za-z0-9]+/,
    "",
  )
    .replace(/(\.lock|\.)+$/, "").slice(0, MAX_NAME);
  return cleaned || "worktree";
}
