/**
 * What a plugin folder or a data folder is checked for before its code runs: no symlink under it leads
 * out (Deno follows one under a granted path), walked in bounds; the stamps of its directories, so the
 * check before each call is a stat per directory rather than a walk; and the signature that says its
 * files changed (the registry reloads it then).
 *
 * @module
 */
import { join, relative } from "../core/posix_path.ts";

/** Whether `path` is `root` or under it (both real paths). */
export function inside(path: string, root: string): boolean {
  return path === root || path.startsWith(root.endsWith("/") ? root : `${root}/`);
}

/** The deepest and the most entries {@linkcode symlinkOut} walks before it gives up (and refuses). */
const SYMLINK_WALK = { depth: 32, entries: 20_000 };

/**
 * The first symlink under `dir` that leads outside `realDir` (or nowhere), described, or null. Every
 * entry is looked at, `node_modules` included; a folder too big to check is refused the same way.
 */
export async function symlinkOut(dir: string, realDir: string): Promise<string | null> {
  return (await walkFolder(dir, realDir, false)).escape;
}

/** A folder's directories and their mtimes when it was last walked: what a quick check compares. */
export type Stamps = Map<string, number>;

/**
 * The first symlink under `dir` that leads outside `realDir` (or nowhere), the bytes of its files (when
 * `sizes`), and the stamps of its directories, in a walk bounded as {@linkcode symlinkOut}'s. A
 * directory changed in the last 2 s gets no stamp (a link made in the same millisecond as its mtime was
 * read would not show): it is walked again at the next check.
 */
export async function walkFolder(
  dir: string,
  realDir: string,
  sizes: boolean,
): Promise<{ escape: string | null; bytes: number; stamps: Stamps }> {
  let seen = 0;
  let bytes = 0;
  const stamps: Stamps = new Map();
  const recent = Date.now() - 2000;
  const walk = async (folder: string, depth: number): Promise<string | null> => {
    if (depth > SYMLINK_WALK.depth) return `${relative(dir, folder)} is nested too deep to check`;
    const mtime = (await Deno.lstat(folder)).mtime?.getTime() ?? NaN;
    stamps.set(folder, mtime < recent ? mtime : NaN);
    for await (const entry of Deno.readDir(folder)) {
      if (++seen > SYMLINK_WALK.entries) return `more than ${SYMLINK_WALK.entries} files to check`;
      const path = join(folder, entry.name);
      if (entry.isSymlink) {
        const target = await Deno.realPath(path).catch(() => null);
        if (!target || !inside(target, realDir)) {
          return `${relative(dir, path)} is a symlink ${
            target ? `out of its folder (to ${target})` : "to nothing"
          }`;
        }
      } else if (entry.isDirectory) {
        const found = await walk(path, depth + 1);
        if (found) return found;
      } else if (sizes) {
        bytes += (await Deno.lstat(path).catch(() => null))?.size ?? 0;
      }
    }
    return null;
  };
  const escape = await walk(dir, 0);
  return { escape, bytes, stamps };
}

/**
 * Whether no directory of a walked folder changed since (an entry made, removed or renamed in one changes
 * its mtime): a stat per directory instead of a walk of every entry (18,200 entries: 96-136 ms a walk).
 */
export async function unchanged(stamps: Stamps | undefined): Promise<boolean> {
  if (!stamps) return false;
  if (stamps.size <= SYNC_STAMPS) return unchangedSync(stamps);
  for (const [folder, mtime] of stamps) {
    if (!sameStamp(await Deno.lstat(folder).catch(() => null), mtime)) return false;
  }
  return true;
}

/**
 * {@linkcode unchanged} for a folder of up to {@linkcode SYNC_STAMPS} directories, synchronously; false
 * for a bigger one (or none), which only the asynchronous check looks at.
 */
export function unchangedSync(stamps: Stamps | undefined): boolean {
  if (!stamps || stamps.size > SYNC_STAMPS) return false;
  for (const [folder, mtime] of stamps) {
    if (!sameStamp(lstatOrNull(folder), mtime)) return false;
  }
  return true;
}

function sameStamp(info: Deno.FileInfo | null, mtime: number): boolean {
  return info !== null && info.isDirectory && info.mtime?.getTime() === mtime;
}

/**
 * Folders up to which {@linkcode unchanged} stats synchronously. It runs before every call of a plugin:
 * a sync `lstat` costs 2-3 µs, an async one 13-17 µs alone and a turn of a busy event loop besides (the
 * guard's two async stats were 0.15 ms of a warm `fetch`'s 1.4 ms p50 on a box); past this many folders
 * the event loop is not held that long, and the stats go async.
 */
const SYNC_STAMPS = 64;

/** `Deno.lstatSync`, or null when there is nothing there (or it cannot be read). */
export function lstatOrNull(path: string): Deno.FileInfo | null {
  try {
    return Deno.lstatSync(path);
  } catch {
    return null;
  }
}

/**
 * What changes when a plugin's files change: the path, size and mtime of each file in its folder (a
 * bounded walk). Null when the folder is not a folder.
 */
export async function folderSignature(dir: string): Promise<string | null> {
  const info = await Deno.stat(dir).catch(() => null);
  if (!info?.isDirectory) return null;
  const parts: string[] = [];
  const walk = async (folder: string, depth: number) => {
    if (depth > 6 || parts.length > 2000) return;
    let entries: Deno.DirEntry[];
    try {
      entries = await Array.fromAsync(Deno.readDir(folder));
    } catch {
      return;
    }
    for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      if (entry.name === "node_modules" || entry.name === ".git") continue;
      const path = join(folder, entry.name);
      const stat = await Deno.stat(path).catch(() => null);
      if (!stat) continue;
      if (stat.isDirectory) await walk(path, depth + 1);
      else parts.push(`${relative(dir, path)}:${stat.size}:${stat.mtime?.getTime()}`);
    }
  };
  await walk(dir, 0);
  return parts.join("|");
}
