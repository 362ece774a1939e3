/**
 * What a worktree create (`daemon/worktrees.ts`) reads and checks before `git worktree add`: the
 * location's effective config, the new folder and the plan (branch, base and git's arguments). The
 * three are read at once: one after another they cost ~2 ms before git could start (bench/main.ts
 * section 1b, "before git #1": 4.3 ms p50 with them in a row). Nothing here writes but the parent
 * folder's mkdir.
 *
 * @module
 */
import { DockError } from "../client/errors.ts";
import type { DockConfig, WorktreeCreate } from "../client/wire.ts";
import { join, sep } from "../core/posix_path.ts";
import { which } from "../core/runner.ts";
import * as git from "./git.ts";
import type { LocationRecord } from "./locations.ts";

/** The branch the worktree will have out, its base, and the arguments that follow `git worktree add`. */
export interface WorktreePlan {
  branch: string | null;
  base: string | null;
  args: (path: string) => string[];
}

/** What {@linkcode prepareCreate} needs. */
export interface PrepareCreateOptions {
  /** Reads the location's effective config (throws for a config with errors). */
  config: () => Promise<DockConfig>;
  /** The folder the worktree goes in (made when missing): `<worktrees>/<location>`. */
  parentDir: string;
  location: LocationRecord;
  /** The worktree's name, checked already. */
  name: string;
  request: WorktreeCreate;
  /** The branch the main checkout has out (the base when origin names no HEAD). */
  mainBranch: () => string | null;
}

/**
 * Reads the config, makes the parent folder and plans the checkout at once, then checks them in a
 * fixed order (the config, the folder, `gh` for a pull request, the refs), so a request wrong in two
 * ways always gets the same error.
 */
export async function prepareCreate(
  options: PrepareCreateOptions,
): Promise<{ config: DockConfig; path: string; plan: WorktreePlan }> {
  const [config, path, plan] = await Promise.allSettled([
    options.config(),
    newPath(options.parentDir, options.name),
    planCheckout(options),
  ]);
  const checked = { config: settled(config), path: settled(path) };
  if (options.request.pr !== undefined && !which("gh")) {
    throw new DockError(
      "forge_cli_missing",
      "pr: checking out a pull request needs the GitHub CLI (gh) on the box: install it (https://cli.github.com) and run gh auth login",
      { status: 422, detail: { field: "pr" } },
    );
  }
  return { ...checked, plan: settled(plan) };
}

/**
 * The new worktree's folder under the resolved parent, so the path recorded is the one git reports.
 * Synchronous calls: each is one quick syscall on a local folder, where each awaited one costs a trip
 * through Deno's blocking pool and an event-loop turn (see {@linkcode refsFromFiles}).
 */
// deno-lint-ignore require-await
async function newPath(parentDir: string, name: string): Promise<string> {
  Deno.mkdirSync(parentDir, { recursive: true });
  const parent = Deno.realPathSync(parentDir);
  const path = join(parent, name);
  if (!path.startsWith(parent + sep)) {
    throw new DockError("invalid_request", "name: escapes the worktrees folder");
  }
  if (lstatOrNull(path)) {
    throw new DockError("exists", `${path} already exists on the box`, { status: 409 });
  }
  return path;
}

/** What `git worktree add` gets: checked values, and every input after `--end-of-options`. */
async function planCheckout(options: PrepareCreateOptions): Promise<WorktreePlan> {
  const { location, name, request } = options;
  if (request.branch !== undefined) await git.checkBranch("branch", request.branch, location.path);
  if (request.base !== undefined) git.checkRevision("base", request.base);
  if (request.ref !== undefined) git.checkRevision("ref", request.ref);
  const branch = request.branch ?? name;
  const refs = await refsFromFiles(location.path, branch) ?? await git.branchRefs(location.path, branch);
  // The default branch: origin's HEAD, else what the main checkout has out (kept fresh by detection).
  const base = request.base ?? refs.originHead ?? options.mainBranch() ?? "HEAD";
  if (request.pr !== undefined) {
    return { branch: null, base, args: (path) => ["--detach", "--end-of-options", path, base] };
  }
  if (request.ref) {
    const ref = request.ref;
    return request.branch
      ? { branch: request.branch, base: ref, args: (path) => ["-b", branch, "--end-of-options", path, ref] }
      : { branch: null, base: ref, args: (path) => ["--detach", "--end-of-options", path, ref] };
  }
  if (refs.local) {
    return { branch, base: request.base ?? null, args: (path) => ["--end-of-options", path, branch] };
  }
  if (refs.remote) {
    return {
      branch,
      base: `origin/${branch}`,
      args: (path) => ["--track", "-b", branch, "--end-of-options", path, `origin/${branch}`],
    };
  }
  return { branch, base, args: (path) => ["--no-track", "-b", branch, "--end-of-options", path, base] };
}

/**
 * What {@linkcode git.branchRefs} answers, read from the repository's files instead of a git process
 * (a spawn and its reaping cost ~2.5 ms of a create's ~10 ms around git: bench 1b, "before git #2").
 * Null where the files may not tell the whole truth: no `.git` folder (a linked checkout, a bare repo),
 * a ref backend other than files (`extensions.refStorage`), or anything unreadable; git answers then.
 * The files are read with synchronous calls: a handful of small local files, where the five awaited
 * steps this took before cost ~1 ms of event-loop turns (a create's whole `prepareCreate`, timed
 * in the daemon on a shared 2-core machine: 1.58 ms p50 before, 0.78 ms after). A `packed-refs` past {@linkcode PACKED_REFS_SYNC_BYTES} is read awaited, so
 * a repository with a huge one does not hold up the daemon's other requests.
 * Exported for its test, which holds it to git's answer.
 */
export async function refsFromFiles(repo: string, branch: string): Promise<git.BranchRefs | null> {
  const gitDir = join(repo, ".git");
  try {
    if (!lstatOrNull(gitDir)?.isDirectory) return null;
    if (/refstorage/i.test(Deno.readTextFileSync(join(gitDir, "config")))) return null;
    const packedFile = join(gitDir, "packed-refs");
    const packedSize = statOrNullSync(packedFile)?.size ?? -1;
    const packed = packedSize < 0
      ? ""
      : packedSize <= PACKED_REFS_SYNC_BYTES
      ? Deno.readTextFileSync(packedFile)
      : await Deno.readTextFile(packedFile);
    const names = new Set(
      packed.split("\n").filter((line) => /^[0-9a-f]{40,64} /.test(line)).map((line) =>
        line.slice(line.indexOf(" ") + 1)
      ),
    );
    // A loose ref is a file; a folder of that name holds longer names (`feature/x` under `feature`).
    const has = (ref: string) => names.has(ref) || Boolean(statOrNullSync(join(gitDir, ref))?.isFile);
    const headFile = join(gitDir, "refs/remotes/origin/HEAD");
    const head = statOrNullSync(headFile)?.isFile ? Deno.readTextFileSync(headFile) : "";
    const symref = /^ref: refs\/remotes\/origin\/(\S+)\s*$/.exec(head);
    return {
      local: has(`refs/heads/${branch}`),
      remote: has(`refs/remotes/origin/${branch}`),
      originHead: symref ? symref[1] : null,
    };
  } catch {
    return null;
  }
}

/** The largest `packed-refs` read synchronously (a few thousand refs; ~0.1 ms to read). */
const PACKED_REFS_SYNC_BYTES = 256 * 1024;

function statOrNullSync(path: string): Deno.FileInfo | null {
  try {
    return Deno.statSync(path);
  } catch {
    return null;
  }
}

function lstatOrNull(path: string): Deno.FileInfo | null {
  try {
    return Deno.lstatSync(path);
  } catch {
    return null;
  }
}

/** The value of a settled promise, or its reason thrown. */
function settled<T>(result: PromiseSettledResult<T>): T {
  if (result.status === "rejected") throw result.reason;
  return result.value;
}
