/**
 * dock's version: what `dock --version` and `dockd --version` print and what the box reports as its
 * build in `GET info`. A leaf, so the CLI can print it without loading anything else.
 *
 * @module
 */

/** The version of this build of dock. */
export const VERSION = "0.1.0";

/** The commit it was built from: `deno task package` stamps it; a source checkout says `dev`. */
export const COMMIT = "dev";

/** The version and commit, as `--version` prints them and `GET info` reports `build`: `0.1.0+3f2a…`. */
export const BUILD = `${VERSION}+${COMMIT}`;

/**
 * Dotted versions compared numerically part by part (`0.10.0` > `0.9.1`; a missing part is 0, so
 * `1.2` = `1.2.0`); what follows `+` or `-` (a build or pre-release) is not compared. Negative, zero or
 * positive, as `Array.prototype.sort` wants.
 */
export function compareVersions(a: string, b: string): number {
  const parts = (v: string) => v.split(/[+-]/)[0].split(".").map((p) => Number(p) || 0);
  const x = parts(a);
  const y = parts(b);
  for (let i = 0; i < Math.max(x.length, y.length); i++) {
    const d = (x[i] ?? 0) - (y[i] ?? 0);
    if (d !== 0) return d < 0 ? -1 : 1;
  }
  return 0;
}

/**
 * Whether a box reporting `build` runs an older dock than `laptop` (a build such as `0.1.0+3f2a…`): an
 * older version, or the same version from another commit, unless the laptop runs from a checkout
 * (`+dev`: nothing to send that would be newer).
 */
export function isBehind(build: string, laptop: string): boolean {
  const order = compareVersions(build, laptop);
  return order < 0 || (order === 0 && build !== laptop && !laptop.endsWith("+dev"));
}
