/**
 * What a person should look at (issue 16): `GET review`, the worktrees with work to review (commits
 * their base has not, uncommitted changes, an agent that finished since anyone last attached to it),
 * and `POST preview`, which puts a worktree's dev server in front of them (`preview.open`, which the
 * app opens and `dock` prints).
 *
 * A worktree whose agent still runs is work in progress, left out unless `all` is asked. The git
 * questions for each worktree run a few at a time: a box with fifty worktrees answers in about the time
 * the same git commands take by hand.
 *
 * One worktree's review (issue 32): its diff against the point where it left its base (committed and
 * not, paged in bytes: `diff.ts`), its commits ahead of the base and of its upstream, its untracked files,
 * and the actions after reading them: push, and a pull request made and found with the box's `gh`. A
 * base or path from a request reaches git after `--end-of-options` / `--`, literal, NUL refused.
 *
 * @module
 */
import { badField, DockError } from "../client/errors.ts";
import type {
  Commit,
  PrCreate,
  PreviewOpen,
  PreviewRequest,
  PullRequest,
  PushResult,
  ReviewItem,
  ReviewReason,
  Session,
  Worktree,
  WorktreeCommits,
  WorktreeDiff,
  WorktreeUntracked,
} from "../client/wire.ts";
import type { EventBus } from "../core/events.ts";
import { run, which } from "../core/runner.ts";
import { pagePatches, parsePatch } from "./diff.ts";
import * as git from "./git.ts";
import type { Locations } from "./locations.ts";
import type { Sessions } from "./sessions.ts";
import type { Worktrees } from "./worktrees.ts";

/** Git questions asked at once. */
const PARALLEL = 8;

/** A diff page's default and largest size in bytes: 256 KiB is ~5,000 changed lines of code. */
export const DIFF_PAGE_BYTES = 256 * 1024;
export const DIFF_PAGE_MAX_BYTES = 4 * 1024 * 1024;
/** The largest whole diff read from git; past it, the diff is asked for one `path` at a time. */
export const DIFF_MAX_BYTES = 64 * 1024 * 1024;
/** Commits listed ahead of a base or upstream. */
const COMMITS_LISTED = 200;
/** Untracked files listed. */
const UNTRACKED_LISTED = 1000;
const PUSH_TIMEOUT_MS = 120_000;
const GH_TIMEOUT_MS = 60_000;
/** What to do when the box has no `gh`: named in the 422. */
export const GH_MISSING = "the GitHub CLI (gh) is not installed on this box (not found on PATH): " +
  "install it (https://cli.github.com, e.g. apt install gh), then run gh auth login";

/** Dependencies of {@linkcode Review}. */
export interface ReviewOptions {
  locations: Pick<Locations, "get">;
  worktrees: Pick<Worktrees, "list" | "get">;
  sessions: Pick<Sessions, "list" | "seenAt">;
  bus: Pick<EventBus, "publish">;
  /** The box's name, for private URLs. */
  box: () => string;
}

/** The review list and previews. */
export class Review {
  #o: ReviewOptions;

  constructor(options: ReviewOptions) {
    this.#o = options;
  }

  /** The worktrees with work to review; with `all`, those whose agents still work too. */
  async list(options: { all?: boolean; location?: string } = {}): Promise<ReviewItem[]> {
    if (options.location) this.#o.locations.get(options.location);
    const worktrees = this.#o.worktrees.list(options.location).filter((w) => !w.main);
    const sessions = this.#o.sessions.list();
    // Each location's default branch once per listing: the base of worktrees that recorded none.
    const defaults = new Map<string, Promise<string>>();
    const defaultBranch = (location: string) => {
      let branch = defaults.get(location);
      if (!branch) {
        branch = git.defaultBranch(this.#o.locations.get(location).path);
        defaults.set(location, branch);
      }
      return branch;
    };
    const items: (ReviewItem | null)[] = new Array(worktrees.length).fill(null);
    let next = 0;
    const worker = async () => {
      while (next < worktrees.length) {
        const index = next++;
        const w = worktrees[index];
        const base = w.base || await defaultBranch(w.location);
        const [status, ahead] = await Promise.all([
          git.worktreeStatus(w.path).catch(() => null),
          git.commitsAhead(w.path, base).catch(() => null),
        ]);
        const own = sessions.filter((s) => s.location === w.location && s.worktree === w.name && s.agent);
        const agents = own.map((s) => ({
          name: s.name,
          agent: s.agent,
          agent_state: s.agent_state,
          unseen: this.#unseen(s),
        }));
        const reasons: ReviewReason[] = [];
        if ((ahead ?? 0) > 0) reasons.push("commits");
        if (status?.dirty) reasons.push("changes");
        if (agents.some((a) => a.unseen)) reasons.push("finished");
        const working = own.some((s) => s.agent_state === "running" && !s.exited);
        if (!reasons.length || (working && !options.all)) continue;
        items[index] = {
          location: w.location,
          worktree: w.name,
          path: w.path,
          branch: w.branch,
          base,
          ahead,
          dirty: status?.dirty ?? false,
          changes: {
            staged: status?.staged ?? 0,
            modified: status?.modified ?? 0,
            untracked: status?.untracked ?? 0,
            conflicted: status?.conflicted ?? 0,
          },
          sessions: agents,
          reasons,
          working,
        };
      }
    };
    await Promise.all(Array.from({ length: Math.min(PARALLEL, worktrees.length) }, worker));
    return items.filter((item) => item !== null);
  }

  /** Announces `preview.open` for a worktree's port; answers the private URL. */
  preview(request: PreviewRequest, origin: string): PreviewOpen {
    const worktree = this.#o.worktrees.get(request.location, request.worktree);
    const port = request.port ?? worktree.ports[0];
    if (port === undefined) {
      throw new DockError("no_port", `worktree ${request.location}/${request.worktree} has no port`, {
        status: 422,
      });
    }
    const path = (request.path ?? "").replace(/^\/+/, "");
    const open: PreviewOpen = {
      location: worktree.location,
      worktree: worktree.name,
      port,
      path: `/${path}`,
      url: `http://${worktree.name}.${worktree.location}.${this.#o.box()}.localhost:1377/${path}`,
    };
    this.#o.bus.publish({ type: "preview.open", origin, data: { ...open } });
    return open;
  }

  /** One worktree's diff against where it left its base: all files, and one page of patches. */
  async diff(
    location: string,
    name: string,
    options: { offset?: number; maxBytes?: number; path?: string } = {},
  ): Promise<WorktreeDiff> {
    const worktree = this.#o.worktrees.get(location, name);
    if (options.path !== undefined) checkPath(options.path);
    const base = await this.#base(worktree);
    const from = await gitText(worktree.path, ["merge-base", "--end-of-options", base, "HEAD"]);
    const args = [
      "--literal-pathspecs",
      "-c",
      "core.quotePath=false",
      "diff",
      "--no-color",
      "--no-ext-diff",
      "--no-textconv",
      "-M",
      "--end-of-options",
      from ?? "HEAD",
      "--",
      ...(options.path === undefined ? [] : [options.path]),
    ];
    const [result, untracked] = await Promise.all([
      runGit(worktree.path, args, DIFF_MAX_BYTES),
      this.untracked(location, name),
    ]);
    if (result.truncated) {
      throw new DockError(
        "diff_too_large",
        `the diff of ${location}/${name} is larger than ${DIFF_MAX_BYTES} bytes: ask for one path at a time (?path=)`,
        { status: 422 },
      );
    }
    if (result.code !== 0) throw new git.GitError(args, result.code, result.stderr);
    const chunks = parsePatch(result.stdout);
    const offset = Math.min(options.offset ?? 0, chunks.length);
    const page = pagePatches(chunks, offset, options.maxBytes ?? DIFF_PAGE_BYTES);
    const files = chunks.map((c) => c.file);
    return {
      location: worktree.location,
      worktree: worktree.name,
      base,
      from,
      files,
      additions: files.reduce((sum, f) => sum + f.additions, 0),
      deletions: files.reduce((sum, f) => sum + f.deletions, 0),
      offset,
      ...page,
      untracked: untracked.files,
    };
  }

  /** The commits a worktree has that its base has not, and those its upstream has not. */
  async commits(location: string, name: string): Promise<WorktreeCommits> {
    const worktree = this.#o.worktrees.get(location, name);
    const base = await this.#base(worktree);
    const upstream = await gitText(worktree.path, [
      "rev-parse",
      "--abbrev-ref",
      "--symbolic-full-name",
      "@{upstream}",
    ]);
    const [ahead, behind, aheadUpstream, behindUpstream] = await Promise.all([
      commitRange(worktree.path, `${base}..HEAD`),
      countRange(worktree.path, `HEAD..${base}`),
      upstream ? commitRange(worktree.path, "@{upstream}..HEAD") : null,
      upstream ? countRange(worktree.path, "HEAD..@{upstream}") : null,
    ]);
    return {
      location: worktree.location,
      worktree: worktree.name,
      branch: await git.currentBranch(worktree.path),
      base,
      ahead,
      behind,
      upstream,
      ahead_upstream: aheadUpstream,
      behind_upstream: behindUpstream,
    };
  }

  /** The worktree's untracked files (those `.gitignore` does not hide), at most 1,000. */
  async untracked(location: string, name: string): Promise<WorktreeUntracked> {
    const worktree = this.#o.worktrees.get(location, name);
    const out = await git.git(["ls-files", "--others", "--exclude-standard", "-z"], { cwd: worktree.path });
    const files = out.split("\0").filter(Boolean);
    return { files: files.slice(0, UNTRACKED_LISTED), truncated: files.length > UNTRACKED_LISTED };
  }

  /** Pushes the worktree's branch to `origin`, setting it as the upstream. */
  async push(location: string, name: string): Promise<PushResult> {
    const worktree = this.#o.worktrees.get(location, name);
    const branch = await this.#branch(worktree);
    if ((await git.originUrl(worktree.path)) === null) {
      throw new DockError("no_remote", `${location}/${name} has no remote named origin to push to`, {
        status: 422,
      });
    }
    const args = ["push", "--set-upstream", "--end-of-options", "origin", `HEAD:refs/heads/${branch}`];
    const result = await runGit(worktree.path, args, undefined, PUSH_TIMEOUT_MS);
    return { ok: result.code === 0 && !result.timedOut, remote: "origin", branch, output: result.output };
  }

  /** Opens a pull request of the worktree's branch against its base with the box's `gh`. */
  async createPr(location: string, name: string, request: PrCreate = {}): Promise<PullRequest> {
    const worktree = this.#o.worktrees.get(location, name);
    const gh = ghPath();
    const branch = await this.#branch(worktree);
    const base = await this.#base(worktree);
    const args = ["pr", "create", `--head=${branch}`, `--base=${base}`];
    if (request.title !== undefined) args.push(`--title=${request.title}`, `--body=${request.body ?? ""}`);
    else args.push("--fill");
    if (request.draft) args.push("--draft");
    const result = await runGh(gh, worktree.path, args);
    if (result.code !== 0) throw ghFailed("gh pr create", result);
    const url = result.stdout.trim().split("\n").filter((line) => /^https?:\/\//.test(line)).at(-1);
    if (!url) throw ghFailed("gh pr create", result);
    const number = Number(url.match(/\/pull\/(\d+)/)?.[1] ?? NaN);
    return {
      url,
      number: Number.isFinite(number) ? number : null,
      state: "OPEN",
      title: request.title ?? null,
    };
  }

  /** The pull request of the worktree's branch, as the box's `gh` finds it; 404 when there is none. */
  async pr(location: string, name: string): Promise<PullRequest> {
    const worktree = this.#o.worktrees.get(location, name);
    const gh = ghPath();
    const result = await runGh(gh, worktree.path, ["pr", "view", "--json", "url,number,state,title"]);
    if (result.code !== 0) {
      if (/no (open )?pull requests? found/i.test(result.stderr)) {
        throw new DockError("no_pr", `${location}/${name} has no pull request`, { status: 404 });
      }
      throw ghFailed("gh pr view", result);
    }
    const view = JSON.parse(result.stdout) as Record<string, unknown>;
    return {
      url: String(view.url ?? ""),
      number: typeof view.number === "number" ? view.number : null,
      state: typeof view.state === "string" ? view.state : null,
      title: typeof view.title === "string" ? view.title : null,
    };
  }

  async #base(worktree: Worktree): Promise<string> {
    const base = worktree.base || await git.defaultBranch(this.#o.locations.get(worktree.location).path);
    // A base recorded before bases were checked could still read as an option.
    return git.checkRevision("base", base);
  }

  async #branch(worktree: Worktree): Promise<string> {
    const branch = await git.currentBranch(worktree.path);
    if (!branch) {
      throw new DockError(
        "detached",
        `${worktree.location}/${worktree.name} is on no branch (HEAD is detached)`,
        {
          status: 422,
        },
      );
    }
    return branch;
  }

  /** Finished after the last time anyone attached to it (or never looked at). */
  #unseen(session: Session): boolean {
    if (session.agent_state !== "finished" || !session.state_time) return false;
    const seen = this.#o.sessions.seenAt(session.name);
    return seen === null || seen < session.state_time;
  }
}

/** Refuses a path from a request that git could not take as one literal pathspec. */
function checkPath(path: string): void {
  if (path.length === 0 || path.length > 4096) throw badField("path", "must be 1 to 4096 characters");
  if (path.includes("\0")) throw badField("path", "must not contain NUL");
}

function runGit(cwd: string, args: string[], maxOutput?: number, timeoutMs = 60_000) {
  return run("git", args, {
    cwd,
    env: { GIT_TERMINAL_PROMPT: "0", LC_ALL: "C" },
    timeoutMs,
    maxOutput,
    group: false,
  });
}

/** git's trimmed stdout, or null when git failed (an unknown base, no upstream). */
async function gitText(cwd: string, args: string[]): Promise<string | null> {
  const result = await runGit(cwd, args);
  return result.code === 0 && result.stdout.trim() ? result.stdout.trim() : null;
}

async function commitRange(cwd: string, range: string): Promise<Commit[] | null> {
  const result = await runGit(cwd, [
    "log",
    `--max-count=${COMMITS_LISTED}`,
    `--format=${git.LOG_FORMAT}`,
    "--end-of-options",
    range,
    "--",
  ]);
  return result.code === 0 ? git.parseLog(result.stdout) : null;
}

async function countRange(cwd: string, range: string): Promise<number | null> {
  const out = await gitText(cwd, ["rev-list", "--count", "--end-of-options", range]);
  return out === null ? null : Number(out);
}

function ghPath(): string {
  const gh = which("gh");
  if (!gh) throw new DockError("gh_not_found", GH_MISSING, { status: 422 });
  return gh;
}

function runGh(gh: string, cwd: string, args: string[]) {
  return run(gh, args, {
    cwd,
    env: { GH_PROMPT_DISABLED: "1", NO_COLOR: "1", GIT_TERMINAL_PROMPT: "0" },
    timeoutMs: GH_TIMEOUT_MS,
  });
}

function ghFailed(what: string, result: { code: number; stderr: string; stdout: string }): DockError {
  const lines = (result.stderr || result.stdout).split("\n").map((l) => l.trim()).filter(Boolean);
  return new DockError(
    "gh_failed",
    `${what} failed: ${lines.slice(0, 3).join("\n") || `exit ${result.code}`}`,
    {
      status: 422,
    },
  );
}
