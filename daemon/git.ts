/**
 * The git adapter: every git command dockd runs goes through {@linkcode git}, which goes through the
 * one process runner. Only machine formats are read (`--porcelain -z`, `--format` with NUL and unit
 * separators), never the human output, so a git upgrade or a user's locale cannot change what we parse.
 * The parsers are pure and tested on real captured output in `tests/fixtures/git/`.
 *
 * @module
 */
import { join, resolve } from "../core/posix_path.ts";
import type { Branch, Commit, SyncResult, WorktreeStatus } from "../client/wire.ts";
import { badField, DockError } from "../client/errors.ts";
import { exists } from "../core/files.ts";
import { run, type RunOptions } from "../core/runner.ts";

/** Lines of git's stderr kept in a {@linkcode GitError} message. */
const MESSAGE_LINES = 3;

/** A git command that exited non-zero (or timed out); the message is git's own first lines of stderr. */
export class GitError extends DockError {
  override name = "GitError";
  /** The arguments git was called with. */
  readonly args: string[];
  /** git's exit code (-1 when it was killed on timeout). */
  readonly exitCode: number;
  /** git's whole stderr. */
  readonly stderr: string;

  constructor(args: string[], exitCode: number, stderr: string, options: { cause?: unknown } = {}) {
    const lines = stderr.split("\n").map((line) => line.trim()).filter((line) => line !== "");
    const message = lines.slice(0, MESSAGE_LINES).join("\n") ||
      `git ${args[0] ?? ""} exited with ${exitCode}`;
    super("git_failed", message, { status: 422, detail: { args }, cause: options.cause });
    this.args = args;
    this.exitCode = exitCode;
    this.stderr = stderr;
  }
}

/** Options for {@linkcode git}. */
export interface GitOptions {
  /** Directory git runs in. */
  cwd: string;
  /** Extra environment for git (the daemon's environment is inherited). */
  env?: Record<string, string>;
  /** Kill git after this many milliseconds. @default {60_000} */
  timeoutMs?: number;
  /** Called with each chunk of output as it arrives. */
  onOutput?: RunOptions["onOutput"];
}

/** Runs git with `args` in `options.cwd` and returns its stdout; throws {@linkcode GitError} on failure. */
export async function git(args: string[], options: GitOptions): Promise<string> {
  const result = await runGit(args, options);
  if (result.code !== 0 || result.timedOut) {
    const stderr = result.timedOut
      ? `git timed out after ${options.timeoutMs ?? DEFAULT_TIMEOUT_MS} ms`
      : result.stderr;
    throw new GitError(args, result.timedOut ? -1 : result.code, stderr);
  }
  return result.stdout;
}

const DEFAULT_TIMEOUT_MS = 60_000;

/** Runs git and returns the whole result, for the callers that need the output of a failure. */
async function runGit(args: string[], options: GitOptions) {
  try {
    return await run("git", args, {
      cwd: options.cwd,
      // No prompts (a credential prompt would hang a daemon), and the C locale so the few messages we
      // pass on to users are the ones documented everywhere.
      env: { ...options.env, GIT_TERMINAL_PROMPT: "0", LC_ALL: "C" },
      timeoutMs: options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      onOutput: options.onOutput,
      group: false,
    });
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    // Spawning fails with NotFound both when git is missing and when the folder is gone.
    if (!(await exists(options.cwd))) {
      throw new DockError("not_found", `folder '${options.cwd}' not found`, { status: 404, cause: error });
    }
    throw new DockError("git_not_found", "git is not installed (not found on PATH)", {
      status: 500,
      cause: error,
    });
  }
}

// ---------------------------------------------------------------------------------------------------
// Worktrees

/** One entry of `git worktree list --porcelain -z`. */
export interface GitWorktree {
  path: string;
  /** The checked-out commit; null before the first commit and for a bare repository. */
  head: string | null;
  /** Short branch name (`feature`, not `refs/heads/feature`); null when detached or bare. */
  branch: string | null;
  bare: boolean;
  detached: boolean;
  locked: boolean;
  /** The worktree's folder is gone; `git worktree prune` would drop it. */
  prunable: boolean;
}

const ZERO_OID = /^0+$/;

/** Parses `git worktree list --porcelain -z`; the first entry is the main worktree. */
export function parseWorktreeList(porcelain: string): GitWorktree[] {
  const worktrees: GitWorktree[] = [];
  let current: GitWorktree | null = null;
  // With -z every attribute ends in NUL and an empty attribute ends the record.
  for (const field of porcelain.split("\0")) {
    if (field === "") {
      if (current) worktrees.push(current);
      current = null;
      continue;
    }
    const space = field.indexOf(" ");
    const key = space < 0 ? field : field.slice(0, space);
    const value = space < 0 ? "" : field.slice(space + 1);
    if (key === "worktree") {
      if (current) worktrees.push(current);
      current = {
        path: value,
        head: null,
        branch: null,
        bare: false,
        detached: false,
        locked: false,
        prunable: false,
      };
      continue;
    }
    if (!current) continue;
    switch (key) {
      case "HEAD":
        current.head = ZERO_OID.test(value) ? null : value;
        break;
      case "branch":
        current.branch = shortRef(value);
        break;
      case "bare":
        current.bare = true;
        break;
      case "detached":
        current.detached = true;
        break;
      case "locked":
        current.locked = true;
        break;
      case "prunable":
        current.prunable = true;
        break;
        // Unknown attributes are ignored: newer gits may add some.
    }
  }
  if (current) worktrees.push(current);
  return worktrees;
}

/** The worktrees of the repository at `repo` (any of its checkouts), main worktree first. */
export async function listWorktrees(repo: string): Promise<GitWorktree[]> {
  return parseWorktreeList(await git(["worktree", "list", "--porcelain", "-z"], { cwd: repo }));
}

function shortRef(ref: string): string {
  return ref.startsWith("refs/heads/") ? ref.slice("refs/heads/".length) : ref;
}

// ---------------------------------------------------------------------------------------------------
// Status

/** The git state of a checkout, as read from `git status --porcelain=v2 --branch -z`. */
export type GitStatus = Omit<WorktreeStatus, "location" | "name" | "path" | "dirty">;

/** Parses `git status --porcelain=v2 --branch -z`. A path both staged and modified counts in both. */
export function parseStatusV2(text: string): GitStatus {
  const status: GitStatus = {
    branch: null,
    head: null,
    upstream: null,
    ahead: 0,
    behind: 0,
    staged: 0,
    modified: 0,
    untracked: 0,
    conflicted: 0,
  };
  const fields = text.split("\0");
  for (let i = 0; i < fields.length; i++) {
    const field = fields[i];
    if (field === "") continue;
    if (field.startsWith("# ")) {
      const [key, ...rest] = field.slice(2).split(" ");
      const value = rest.join(" ");
      if (key === "branch.oid") status.head = value === "(initial)" ? null : value;
      else if (key === "branch.head") status.branch = value === "(detached)" ? null : value;
      else if (key === "branch.upstream") status.upstream = value;
      else if (key === "branch.ab") {
        const match = /^\+(\d+) -(\d+)$/.exec(value);
        if (match) {
          status.ahead = Number(match[1]);
          status.behind = Number(match[2]);
        }
      }
      continue;
    }
    switch (field[0]) {
      case "1":
      case "2": {
        const xy = field.slice(2, 4);
        if (xy[0] !== ".") status.staged++;
        if (xy[1] !== ".") status.modified++;
        // A rename or copy is followed by its original path as a field of its own.
        if (field[0] === "2") i++;
        break;
      }
      case "u":
        status.conflicted++;
        break;
      case "?":
        status.untracked++;
        break;
        // "!" (ignored) is not asked for; anything else is a newer git's addition.
    }
  }
  return status;
}

/** The git status of the checkout at `path`, for `GET worktrees` (the caller adds location and name). */
export async function worktreeStatus(path: string): Promise<Omit<WorktreeStatus, "location" | "name">> {
  // --no-optional-locks: a status poll must never take index.lock from under the user's own git.
  const text = await git(["--no-optional-locks", "status", "--porcelain=v2", "--branch", "-z"], {
    cwd: path,
  });
  const status = parseStatusV2(text);
  const dirty = status.staged + status.modified + status.untracked + status.conflicted > 0;
  return { path, ...status, dirty };
}

// ---------------------------------------------------------------------------------------------------
// Log

/** `git log --format` of {@linkcode log}: fields split by US (0x1f), commits ended by NUL. */
export const LOG_FORMAT = "%H%x1f%an%x1f%ae%x1f%aI%x1f%s%x00";

/** Parses `git log --format=LOG_FORMAT`. `time` is the author date in strict ISO 8601 (RFC 3339). */
export function parseLog(text: string): Commit[] {
  const commits: Commit[] = [];
  for (const record of text.split("\0")) {
    // tformat puts a newline after each NUL terminator; it belongs to no field.
    const trimmed = record.replace(/^\n/, "");
    if (trimmed === "") continue;
    const [hash, author, email, time, subject] = trimmed.split("\x1f");
    commits.push({ hash, author, email, time, subject: subject ?? "" });
  }
  return commits;
}

/** The newest `limit` commits reachable from HEAD of the checkout at `path`; none before the first commit. */
export async function log(path: string, limit: number): Promise<Commit[]> {
  if (!(await hasCommits(path))) return [];
  const count = Number.isFinite(limit) ? Math.max(1, Math.floor(limit)) : 50;
  return parseLog(
    await git(["log", `--max-count=${count}`, `--format=${LOG_FORMAT}`, "HEAD", "--"], { cwd: path }),
  );
}

async function hasCommits(path: string): Promise<boolean> {
  const result = await runGit(["rev-parse", "--quiet", "--verify", "HEAD^{commit}"], { cwd: path });
  return result.code === 0;
}

// ---------------------------------------------------------------------------------------------------
// Branches

/** `git for-each-ref --format` of {@linkcode branches}: fields and records both end in NUL. */
export const BRANCH_FORMAT = "%(refname)%00%(objectname)%00%(HEAD)%00%(worktreepath)%00%(symref)%00";

/** Same as {@linkcode BRANCH_FORMAT} for gits older than 2.23, which lack `%(worktreepath)`. */
const BRANCH_FORMAT_OLD = "%(refname)%00%(objectname)%00%(HEAD)%00%00%(symref)%00";

const BRANCH_FIELDS = 5;

/** Parses `git for-each-ref --format=BRANCH_FORMAT refs/heads refs/remotes`; symbolic refs are skipped. */
export function parseBranches(text: string): Branch[] {
  const fields = text.split("\0");
  const out: Branch[] = [];
  for (let i = 0; i + BRANCH_FIELDS <= fields.length; i += BRANCH_FIELDS) {
    // for-each-ref ends each record with a newline after our last NUL.
    const refname = fields[i].replace(/^\n/, "");
    const [head, star, worktree, symref] = fields.slice(i + 1, i + BRANCH_FIELDS);
    // refs/remotes/origin/HEAD is a pointer, not a branch.
    if (refname === "" || symref !== "") continue;
    const remote = refname.startsWith("refs/remotes/");
    if (!remote && !refname.startsWith("refs/heads/")) continue;
    const branch: Branch = {
      name: refname.slice(remote ? "refs/remotes/".length : "refs/heads/".length),
      remote,
      head,
      current: star === "*",
    };
    if (worktree) branch.worktree = worktree;
    out.push(branch);
  }
  return out;
}

/** Local and remote-tracking branches of the repository at `repo`; `current` is the branch checked out there. */
export async function branches(repo: string): Promise<Branch[]> {
  const args = (format: string) => ["for-each-ref", `--format=${format}`, "refs/heads", "refs/remotes"];
  try {
    return parseBranches(await git(args(BRANCH_FORMAT), { cwd: repo }));
  } catch (error) {
    if (!(error instanceof GitError) || !/worktreepath/.test(error.stderr)) throw error;
  }
  const list = parseBranches(await git(args(BRANCH_FORMAT_OLD), { cwd: repo }));
  const checkedOut = new Map<string, string>();
  for (const worktree of await listWorktrees(repo)) {
    if (worktree.branch) checkedOut.set(worktree.branch, worktree.path);
  }
  for (const branch of list) {
    const path = branch.remote ? undefined : checkedOut.get(branch.name);
    if (path) branch.worktree = path;
  }
  return list;
}

// ---------------------------------------------------------------------------------------------------
// Repository facts

/**
 * How many commits of HEAD the checkout at `path` has that `base` has not, or null when `base` is not a
 * revision there. `base` comes from a worktree's record (or the default branch), after `--end-of-options`.
 */
export async function commitsAhead(path: string, base: string): Promise<number | null> {
  const out = await runGit(["rev-list", "--count", "--end-of-options", `${base}..HEAD`], { cwd: path });
  return out.code === 0 ? Number(out.stdout.trim()) : null;
}

/** The URL of the repository's `origin` remote, or null when it has none. */
export async function originUrl(repo: string): Promise<string | null> {
  const out = await runGit(["remote", "get-url", "origin"], { cwd: repo });
  return out.code === 0 && out.stdout.trim() ? out.stdout.trim() : null;
}

/**
 * The branch new worktrees start from: origin's HEAD if known, else the branch of the main checkout,
 * else `init.defaultBranch`, else `main`.
 */
export async function defaultBranch(repo: string): Promise<string> {
  const origin = await runGit(["symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD"], {
    cwd: repo,
  });
  const remoteHead = origin.code === 0 ? origin.stdout.trim() : "";
  if (remoteHead.startsWith("origin/")) return remoteHead.slice("origin/".length);
  const worktrees = await listWorktrees(repo).catch(() => []);
  const main = worktrees[0];
  if (main && !main.bare && main.branch) return main.branch;
  const configured = await runGit(["config", "--get", "init.defaultBranch"], { cwd: repo });
  const name = configured.code === 0 ? configured.stdout.trim() : "";
  return name || "main";
}

// ---------------------------------------------------------------------------------------------------
// Values from input. A branch, base or ref a request names reaches git as an argument: one that starts
// with '-' would be read as an option (`base: "--exec=…"` once ran a command at the next rebase), so it
// is refused here, and every call that takes one also puts it after `--end-of-options`.

/** The longest branch name or revision accepted from input. */
const MAX_REVISION = 256;

/**
 * Checks a revision that came from input (a `base`, a `ref`): 1 to 256 characters, no leading '-', no
 * NUL or control character. Throws a 400 naming `field`.
 */
export function checkRevision(field: string, value: string): string {
  if (value.length === 0 || value.length > MAX_REVISION) {
    throw badField(field, `must be 1 to ${MAX_REVISION} characters, got ${value.length}`);
  }
  if (value.startsWith("-")) {
    throw badField(
      field,
      `must not start with '-' (git would read it as an option), got ${JSON.stringify(value)}`,
    );
  }
  // deno-lint-ignore no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(value)) throw badField(field, "must not contain control characters");
  return value;
}

/** Checks a branch name from input: a revision that is also a valid `refs/heads/<name>` (`git check-ref-format`). */
export async function checkBranch(field: string, value: string, repo: string): Promise<string> {
  checkRevision(field, value);
  const result = await runGit(["check-ref-format", `refs/heads/${value}`], { cwd: repo });
  if (result.code !== 0) throw badField(field, `is not a valid branch name, got ${JSON.stringify(value)}`);
  return value;
}

/** True when `path` is the top of a main checkout (not a linked worktree, not a subfolder, not bare). */
export async function isRepository(path: string): Promise<boolean> {
  let real: string;
  try {
    real = await Deno.realPath(path);
  } catch {
    return false;
  }
  const result = await runGit(
    ["rev-parse", "--path-format=absolute", "--show-toplevel", "--git-common-dir"],
    {
      cwd: real,
    },
  );
  if (result.code !== 0) return false;
  const [top, common] = result.stdout.split("\n");
  if (!top || !common) return false;
  const [realTop, realCommon] = await Promise.all([realOrSelf(top), realOrSelf(common)]);
  return realTop === real && realCommon === join(real, ".git");
}

/** What one `for-each-ref` tells about a branch name: where it exists, and what origin's HEAD is. */
export interface BranchRefs {
  local: boolean;
  remote: boolean;
  /** The branch origin's HEAD points at (`main`), or null when origin has no HEAD. */
  originHead: string | null;
}

/** Looks up `branch` locally and on origin, and origin's HEAD, in one git call (worktree create is hot). */
export async function branchRefs(repo: string, branch: string): Promise<BranchRefs> {
  const local = `refs/heads/${branch}`;
  const remote = `refs/remotes/origin/${branch}`;
  const out = await git(
    ["for-each-ref", "--format=%(refname)%00%(symref)", local, remote, "refs/remotes/origin/HEAD"],
    { cwd: repo },
  );
  const refs = new Map(out.split("\n").filter(Boolean).map((line) => line.split("\0") as [string, string]));
  const head = refs.get("refs/remotes/origin/HEAD");
  return {
    local: refs.has(local),
    remote: refs.has(remote),
    originHead: head?.startsWith("refs/remotes/origin/") ? head.slice("refs/remotes/origin/".length) : null,
  };
}

/** The branch checked out at `path`, or null when HEAD is detached. */
export async function currentBranch(path: string): Promise<string | null> {
  const result = await runGit(["symbolic-ref", "--quiet", "--short", "HEAD"], { cwd: path });
  return result.code === 0 ? result.stdout.trim() : null;
}

/**
 * Creates a repository at `path` with an empty first commit on `main`, so worktrees can branch from
 * it at once. Refuses a folder that already has content.
 */
export async function initRepository(path: string): Promise<void> {
  try {
    for await (const _ of Deno.readDir(path)) {
      throw new DockError("exists", `path: ${path} already exists and is not empty`, {
        status: 409,
        detail: { field: "path" },
      });
    }
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  await Deno.mkdir(path, { recursive: true });
  await git(["init", "-q", "-b", "main"], { cwd: path });
  // A box without a git identity must still be able to make the first commit.
  const named = (await runGit(["config", "user.email"], { cwd: path })).code === 0;
  const identity = named ? [] : ["-c", "user.name=dock", "-c", "user.email=dock@localhost"];
  await git([...identity, "commit", "-q", "--allow-empty", "-m", "Initial commit"], { cwd: path });
}

/** The absolute path of the repository's shared git directory (the main checkout's `.git`). */
export async function commonDir(path: string): Promise<string> {
  const out = await git(["rev-parse", "--path-format=absolute", "--git-common-dir"], { cwd: path });
  return resolve(path, out.trim());
}

// ---------------------------------------------------------------------------------------------------
// Sync

/** Options for {@linkcode sync}. */
export interface SyncOptions {
  /** Called with each chunk of git's output as it arrives. */
  onOutput?: RunOptions["onOutput"];
  /** Kill git after this many milliseconds. @default {600_000} */
  timeoutMs?: number;
}

/**
 * Rebases the checkout at `path` onto `base` (or merges `base` into it). On a conflict the rebase or
 * merge is aborted, so the worktree is left as it was, and the answer is `ok: false` with git's output.
 */
export async function sync(
  path: string,
  base: string,
  mode: "rebase" | "merge",
  options: SyncOptions = {},
): Promise<SyncResult> {
  const fail = (output: string): SyncResult => ({ ok: false, mode, onto: base, output });
  // Someone else's rebase or merge in progress must never be aborted by ours.
  if ((await operationInProgress(path, "rebase")) || (await operationInProgress(path, "merge"))) {
    return fail("a rebase or merge is already in progress in this worktree; finish or abort it first\n");
  }
  // An abort can only restore committed state: uncommitted changes caught in a conflicted merge may be
  // lost, so a dirty worktree is refused up front instead.
  const before = parseStatusV2(
    await git(["--no-optional-locks", "status", "--porcelain=v2", "--branch", "-z"], { cwd: path }),
  );
  if (before.staged + before.modified + before.conflicted > 0) {
    return fail("the worktree has uncommitted changes; commit or stash them before syncing\n");
  }
  // A base recorded before bases were checked could still read as an option.
  checkRevision("base", base);
  const args = mode === "rebase"
    ? ["rebase", "--end-of-options", base]
    : ["merge", "--no-edit", "--end-of-options", base];
  const gitOptions = { cwd: path, onOutput: options.onOutput, timeoutMs: options.timeoutMs ?? 600_000 };
  const result = await runGit(args, gitOptions);
  if (result.code === 0 && !result.timedOut) return { ok: true, mode, onto: base, output: result.output };
  let output = result.timedOut ? `${result.output}\ngit ${mode} timed out\n` : result.output;
  if (await operationInProgress(path, mode)) {
    const abort = await runGit([mode, "--abort"], { cwd: path });
    output += abort.code === 0
      ? `\n${mode} aborted; the worktree is unchanged\n`
      : `\n${mode} --abort failed:\n${abort.output}`;
  }
  return fail(output);
}

async function operationInProgress(path: string, mode: "rebase" | "merge"): Promise<boolean> {
  if (mode === "merge") {
    const result = await runGit(["rev-parse", "--quiet", "--verify", "MERGE_HEAD"], { cwd: path });
    return result.code === 0;
  }
  // A rebase in progress keeps its state in one of these, inside the worktree's own git dir.
  const out = await git([
    "rev-parse",
    "--path-format=absolute",
    "--git-path",
    "rebase-merge",
    "--git-path",
    "rebase-apply",
  ], {
    cwd: path,
  });
  for (const dir of out.split("\n").filter(Boolean)) {
    if (await exists(resolve(path, dir))) return true;
  }
  return false;
}

// ---------------------------------------------------------------------------------------------------

async function realOrSelf(path: string): Promise<string> {
  try {
    return await Deno.realPath(path);
  } catch {
    return path;
  }
}
