/**
 * Which programs are on `PATH`, remembered between requests. `GET info` (the agent's health check, every
 * few seconds per box) asks for 13 tools and the agent presets for 5 more: a plain search stats every
 * PATH folder for each, and a stat of a missing file throws, which costs ~20 µs on a quiet machine and
 * over 100 µs on a loaded one (measured: 4.6 ms per `GET info`).
 *
 * Each folder's listing is kept while the folder's mtime stays the same: installing, removing or
 * renaming a program in a folder changes it. A listing read less than {@linkcode RACY_MS} after the
 * folder last changed is not kept, since a change made within the same clock tick as the previous one
 * leaves the mtime as it was (git's "racy" index entries, the same cure). A name found in a listing is
 * still stat'ed on every lookup, so a `chmod +x` or a symlink whose target appears later is seen at once.
 *
 * @module
 */
import { isExecutable } from "../core/runner.ts";

/** How recent a folder's change may be for its listing to be read again instead of kept. */
export const RACY_MS = 2_000;

/** Options of {@linkcode PathTools}. */
export interface PathToolsOptions {
  /** The clock, in epoch milliseconds. @default {Date.now} */
  now?: () => number;
}

/** A cache of the PATH folders' listings; {@linkcode lookup} checks each folder once per call. */
export class PathTools {
  #folders = new Map<string, { mtime: number; names: Set<string> }>();
  #now: () => number;

  constructor(options: PathToolsOptions = {}) {
    this.#now = options.now ?? Date.now;
  }

  /**
   * Finds programs on `path` as `which` does (the first executable file of that name, in PATH order;
   * a name with a `/` is checked as it is). Each folder is checked for changes once, here: make one
   * lookup per request and ask it for every tool.
   */
  lookup(path: string = Deno.env.get("PATH") ?? ""): (name: string) => string | null {
    // A folder listed twice in PATH is looked at once: its first place is the one that counts.
    const folders = [...new Set(path.split(":").filter(Boolean))].map((folder) => ({
      folder,
      names: this.#list(folder),
    }));
    return (name) => {
      if (name.includes("/")) return isExecutable(name) ? name : null;
      for (const { folder, names } of folders) {
        if (names?.has(name) && isExecutable(`${folder}/${name}`)) return `${folder}/${name}`;
      }
      return null;
    };
  }

  /** The names in `folder`, from the cache while its mtime is unchanged; null when it cannot be read. */
  #list(folder: string): Set<string> | null {
    let mtime: number;
    try {
      const info = Deno.statSync(folder);
      mtime = info.mtime?.getTime() ?? NaN;
      if (!info.isDirectory) throw new Error("not a folder");
    } catch {
      this.#folders.delete(folder);
      return null;
    }
    const cached = this.#folders.get(folder);
    if (cached && cached.mtime === mtime) return cached.names;
    const names = new Set<string>();
    try {
      for (const entry of Deno.readDirSync(folder)) names.add(entry.name);
    } catch {
      this.#folders.delete(folder);
      return null;
    }
    // NaN (no mtime on this platform) fails the comparison: never kept.
    if (this.#now() - mtime >= RACY_MS) this.#folders.set(folder, { mtime, names });
    else this.#folders.delete(folder);
    return names;
  }
}

/** The daemon's cache: one process, one PATH. */
export const pathTools: PathTools = new PathTools();
