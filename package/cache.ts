/**
 * A package's Deno caches, made when it is built and placed where it is installed: a fresh box's
 * daemon then starts as if it had run there before.
 *
 * Deno keeps what it learns of a module (its imports, V8's compiled code) in SQLite files under
 * `DENO_DIR` (the launcher's `<release>/cache`), keyed by the module's absolute URL. Made cold, on a
 * box's first `dockd serve`, that was 150 of its ~330 ms (measured: the same start took ~180 ms with
 * the caches of an earlier run at another path, moved by rewriting those URLs). So the build runs what
 * a fresh box runs first (`dockd serve` started, `dockd pair` asked of it) with its caches in
 * `cache.template/`, their URLs rewritten under a placeholder root; the installer
 * ({@linkcode placeCache}: `dock add ssh`'s install script, `POST upgrade`, `deno task install`) copies
 * it to `cache/` with the release's own root. What does not match (another Deno, other V8 flags, a
 * target whose V8 refuses the code) Deno finds stale and makes again, as it would have anyway.
 *
 * V8 takes no code compiled under other flags, and the servers run without the V8 flags the short
 * commands run with (`package/build.ts`'s launcher): in one cache each start of the other kind compiled
 * again what both load (the command line's modules, the runtime's own) and wrote it over the other's
 * (measured: every daemon start after a command, and the first command after it). So the servers keep
 * theirs in `cache/servers/` ({@linkcode SERVERS_CACHE}), and a template holds both sets.
 *
 * @module
 */
import { DatabaseSync } from "node:sqlite";
import { join } from "../core/posix_path.ts";
import type { TarMember } from "./tar.ts";

/** The folder of a package holding its caches as built (listed in its manifest, never changed). */
export const CACHE_TEMPLATE = "cache.template";

/** Where the launcher points `DENO_DIR` (`DOCK_DENO_DIR` aside): made by the installer, not in the manifest. */
export const CACHE = "cache";

/** The folder, in `cache/` and in a template, of the servers' own caches (`dockd serve`, `dock agent`). */
export const SERVERS_CACHE = "servers";

/** The sets of caches, by their folder under `cache/` (and a template): the commands', the servers'. */
const CACHE_SETS = ["", SERVERS_CACHE] as const;

/** The root a template's URLs name (`file:///dock-release/src/cli/serve.js`). */
const PLACEHOLDER = "file:///dock-release/";

/** Deno 2's cache files and the table of each whose rows are keyed by a module's URL. */
const TABLES: Readonly<Record<string, string>> = {
  dep_analysis_cache_v2: "moduleinfocache",
  node_analysis_cache_v2: "cjsanalysiscache",
  v8_code_cache_v2: "codecache",
};

/**
 * Rewrites, in the cache files of `dir`, every module URL under `from` to be under `to` (`dropOthers`:
 * and forgets every other file's), and leaves each file whole (its write-ahead log folded in): what a
 * template holds, and what {@linkcode placeCache} makes of it.
 */
export function rebaseCache(
  dir: string,
  from: string,
  to: string,
  options: { dropOthers?: boolean } = {},
): void {
  for (const [file, table] of Object.entries(TABLES)) {
    if (!there(join(dir, file))) continue; // not made by that run
    const db = new DatabaseSync(join(dir, file));
    try {
      db.prepare(
        `UPDATE ${table} SET specifier = ? || substr(specifier, ?) WHERE substr(specifier, 1, ?) = ?`,
      ).run(to, from.length + 1, from.length, from);
      if (options.dropOthers) {
        // Files outside the release (the script that loaded it): the runtime's own modules stay.
        db.prepare(`DELETE FROM ${table} WHERE specifier LIKE 'file:%' AND substr(specifier, 1, ?) != ?`)
          .run(to.length, to);
      }
      db.exec("PRAGMA wal_checkpoint(TRUNCATE); PRAGMA journal_mode = DELETE;");
    } finally {
      db.close();
    }
  }
}

/**
 * Turns the caches Deno made in `dir` (and in its servers' folder) while running the package at `root`
 * into its template: URLs under the placeholder root, nothing else of `dir` (the npm resolution Deno
 * redoes in a moment).
 */
export function templateFrom(dir: string, root: string): void {
  for (const set of CACHE_SETS) {
    const folder = join(dir, set);
    if (!there(folder)) continue; // no run made that set
    rebaseCache(folder, `file://${root}/`, PLACEHOLDER, { dropOthers: true });
    for (const entry of Deno.readDirSync(folder)) {
      const kept = entry.name in TABLES ||
        (set === "" && (CACHE_SETS as readonly string[]).includes(entry.name));
      if (!kept) Deno.removeSync(join(folder, entry.name), { recursive: true });
    }
  }
}

/**
 * Copies the cache files of `template` (each set's) into the folder `into`, their URLs under the
 * placeholder root made the release's at `root` (a real path); answers the paths copied, from `into`
 * (a template may lack some, or a set).
 */
function copyRebased(template: string, into: string, root: string): string[] {
  const copied: string[] = [];
  for (const set of CACHE_SETS) {
    const files = Object.keys(TABLES).filter((file) => there(join(template, set, file)));
    if (!files.length) continue;
    Deno.mkdirSync(join(into, set), { recursive: true });
    for (const file of files) Deno.copyFileSync(join(template, set, file), join(into, set, file));
    rebaseCache(join(into, set), PLACEHOLDER, `file://${root}/`);
    copied.push(...files.map((file) => set ? `${set}/${file}` : file));
  }
  return copied;
}

/**
 * Makes `<root>/cache` from `<root>/cache.template` for the release installed at `root` (a real path:
 * the launcher runs it by its real path). Nothing when it has no template or has its caches already; a
 * failure leaves no half-made caches (Deno makes them cold instead).
 */
export function placeCache(root: string): void {
  const template = join(root, CACHE_TEMPLATE);
  const cache = join(root, CACHE);
  const aside = `${cache}.incoming.${Deno.pid}`;
  try {
    if (!there(template)) return;
    Deno.mkdirSync(aside);
    copyRebased(template, aside, root);
    // Fails when a command made `cache/` meanwhile: it is Deno's then.
    Deno.renameSync(aside, cache);
  } catch {
    try {
      Deno.removeSync(aside, { recursive: true });
    } catch { /* never made */ }
  }
}

/**
 * The caches {@linkcode placeCache} would make from the template folder `template` for the release
 * that will be installed at `root` (a real path), as tar members under `<top>/cache/`: what `dock add
 * ssh` sends after the package (package/tar.ts), so that the box need not make them.
 */
export async function cacheMembers(template: string, root: string, top: string): Promise<TarMember[]> {
  const scratch = await Deno.makeTempDir({ prefix: "dock-cache-" });
  try {
    const members: TarMember[] = [{ path: `${top}/${CACHE}` }];
    const files = copyRebased(template, scratch, root);
    for (const set of CACHE_SETS) {
      if (set && files.some((file) => file.startsWith(`${set}/`))) {
        members.push({ path: `${top}/${CACHE}/${set}` });
      }
    }
    for (const file of files) {
      members.push({ path: `${top}/${CACHE}/${file}`, bytes: await Deno.readFile(join(scratch, file)) });
    }
    return members;
  } finally {
    await Deno.remove(scratch, { recursive: true });
  }
}

/**
 * Whether `path` exists. Synchronous, as all of this module is: the installer's `place_cache.js` runs
 * it, and the daemon's start waits on nothing of it.
 */
function there(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return false;
    throw error;
  }
}
