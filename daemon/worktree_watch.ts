/**
 * Noticing worktrees made or removed outside dock (spec 3.3), without polling git: every `intervalMs`
 * it reads what git itself keeps per worktree (`<common dir>/worktrees/*` and each HEAD's mtime) and
 * whether each known worktree's folder still exists; only when that signature changes does it ask the
 * worktrees module to reconcile the location with `git worktree list`.
 *
 * @module
 */
import { join } from "../core/posix_path.ts";
import type { Worktree } from "../client/wire.ts";
import { type Clock, every } from "../core/clock.ts";
import { statOrNull } from "../core/files.ts";
import type { LocationRecord } from "./locations.ts";

/** What {@linkcode WorktreeWatch} reads and whom it tells. */
export interface WorktreeWatchOptions {
  /** The locations to watch, as they are now. */
  locations: () => LocationRecord[];
  /** A location's known worktrees. */
  worktrees: (location: string) => Worktree[];
  /** Brings a location's records in line with git; false when git could not be read (tried again). */
  reconcile: (location: string) => Promise<boolean>;
  /** Paces the checks. */
  clock: Clock;
}

/** Checks each location's worktree signature on a clock and reconciles the ones that changed. */
export class WorktreeWatch {
  #o: WorktreeWatchOptions;
  #signatures = new Map<string, string>();
  #stop?: () => void;
  /** The check in progress, if any: a second one meanwhile is skipped. */
  #checking?: Promise<void>;

  constructor(options: WorktreeWatchOptions) {
    this.#o = options;
  }

  /** Starts checking every `intervalMs`. */
  start(intervalMs: number): void {
    this.#stop?.();
    this.#stop = every(this.#o.clock, intervalMs, () => void this.check());
  }

  /** Stops checking. */
  stop(): void {
    this.#stop?.();
  }

  /** One check of every location (skipped while the previous one still runs). */
  check(): Promise<void> {
    if (this.#checking) return this.#checking;
    const checking = this.#check().finally(() => this.#checking = undefined);
    this.#checking = checking;
    return checking;
  }

  /** Resolves when the check in progress (if any) has ended. */
  async settled(): Promise<void> {
    await this.#checking;
  }

  async #check(): Promise<void> {
    for (const location of this.#o.locations()) {
      const signature = await this.#signature(location);
      if (this.#signatures.get(location.name) !== signature && await this.#o.reconcile(location.name)) {
        this.#signatures.set(location.name, signature);
      }
    }
  }

  async #signature(location: LocationRecord): Promise<string> {
    const parts: string[] = [];
    const common = join(location.path, ".git");
    parts.push(String((await statOrNull(join(common, "HEAD")))?.mtime?.getTime()));
    try {
      for await (const entry of Deno.readDir(join(common, "worktrees"))) {
        const dir = join(common, "worktrees", entry.name);
        const head = await statOrNull(join(dir, "HEAD"));
        const gitdir = await Deno.readTextFile(join(dir, "gitdir")).catch(() => "");
        const alive = gitdir ? (await statOrNull(gitdir.trim())) !== null : false;
        parts.push(`${entry.name}:${head?.mtime?.getTime()}:${gitdir.trim()}:${alive}`);
      }
    } catch {
      // no worktrees folder yet
    }
    for (const worktree of this.#o.worktrees(location.name)) {
      parts.push(`${worktree.path}:${(await statOrNull(worktree.path)) !== null}`);
    }
    return parts.sort().join("|");
  }
}
