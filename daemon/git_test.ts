import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { assert, assertEquals, assertMatch, assertRejects, assertStringIncludes } from "../tests/assert.ts";
import { DockError } from "../client/errors.ts";
import {
  branches,
  checkBranch,
  checkRevision,
  commonDir,
  defaultBranch,
  git,
  GitError,
  isRepository,
  listWorktrees,
  log,
  parseBranches,
  parseLog,
  parseStatusV2,
  parseWorktreeList,
  sync,
  worktreeStatus,
} from "./git.ts";

const fixtures = join(dirname(fileURLToPath(import.meta.url)), "..", "tests", "fixtures", "git");
const fixture = (name: string) => Deno.readTextFileSync(join(fixtures, name));
const root = fixture("root.txt").trim();

// ---------------------------------------------------------------------------------------------------
// Parsers, on output captured from git (tests/fixtures/git/capture.ts)

Deno.test("parseWorktreeList reads main, detached, linked, prunable and locked worktrees", () => {
  assertEquals(parseWorktreeList(fixture("worktree_list.z")), [
    {
      path: `${root}/repo`,
      head: "824c8b43d486da19ed0612bef1d3e3534c51695d",
      branch: "main",
      bare: false,
      detached: false,
      locked: false,
      prunable: false,
    },
    {
      path: `${root}/wt-detached`,
      head: "fb64b59747bd7873738f6f3e9009129f55cabe5d",
      branch: null,
      bare: false,
      detached: true,
      locked: false,
      prunable: false,
    },
    {
      path: `${root}/wt-feature`,
      head: "824c8b43d486da19ed0612bef1d3e3534c51695d",
      branch: "feature",
      bare: false,
      detached: false,
      locked: false,
      prunable: false,
    },
    {
      path: `${root}/wt-gone`,
      head: "824c8b43d486da19ed0612bef1d3e3534c51695d",
      branch: "gone",
      bare: false,
      detached: false,
      locked: false,
      prunable: true,
    },
    {
      path: `${root}/wt-locked`,
      head: "824c8b43d486da19ed0612bef1d3e3534c51695d",
      branch: "locked-branch",
      bare: false,
      detached: false,
      locked: true,
      prunable: false,
    },
  ]);
});

Deno.test("parseWorktreeList reads a bare repository and a repository without commits", () => {
  assertEquals(parseWorktreeList(fixture("worktree_list_bare.z")), [
    {
      path: `${root}/bare.git`,
      head: null,
      branch: null,
      bare: true,
      detached: false,
      locked: false,
      prunable: false,
    },
    {
      path: `${root}/bare-wt`,
      head: "efcdf1a45340fa06ca4f0a8b5c250d76cb15bc45",
      branch: "main",
      bare: false,
      detached: false,
      locked: false,
      prunable: false,
    },
  ]);
  assertEquals(parseWorktreeList(fixture("worktree_list_initial.z")), [
    {
      path: `${root}/empty`,
      head: null,
      branch: "trunk",
      bare: false,
      detached: false,
      locked: false,
      prunable: false,
    },
  ]);
});

Deno.test("parseWorktreeList takes attributes without a reason, paths with spaces, and no input", () => {
  const text = "worktree /w/with space\0HEAD abc\0branch refs/heads/x\0locked\0prunable\0\0";
  assertEquals(parseWorktreeList(text), [
    {
      path: "/w/with space",
      head: "abc",
      branch: "x",
      bare: false,
      detached: false,
      locked: true,
      prunable: true,
    },
  ]);
  assertEquals(parseWorktreeList(""), []);
});

Deno.test("parseStatusV2 counts staged, modified, renamed and untracked paths and reads ahead/behind", () => {
  assertEquals(parseStatusV2(fixture("status_main.z")), {
    branch: "main",
    head: "824c8b43d486da19ed0612bef1d3e3534c51695d",
    upstream: "origin/main",
    ahead: 2,
    behind: 1,
    // a.txt (MM), the rename, new.txt
    staged: 3,
    // a.txt (MM), b.txt
    modified: 2,
    untracked: 2,
    conflicted: 0,
  });
});

Deno.test("parseStatusV2 reads conflicts, a detached HEAD and a repository without commits", () => {
  assertEquals(parseStatusV2(fixture("status_conflict.z")), {
    branch: "feature",
    head: "f91d7dd14d07f4fb8cda651266ec41ccaeef3b03",
    upstream: null,
    ahead: 0,
    behind: 0,
    staged: 0,
    modified: 0,
    untracked: 0,
    conflicted: 1,
  });
  const detached = parseStatusV2(fixture("status_detached.z"));
  assertEquals([detached.branch, detached.head], [null, "fb64b59747bd7873738f6f3e9009129f55cabe5d"]);
  const initial = parseStatusV2(fixture("status_initial.z"));
  assertEquals([initial.branch, initial.head, initial.untracked], ["trunk", null, 1]);
});

Deno.test("parseStatusV2 does not count a rename's original path as an entry of its own", () => {
  // An original path that looks like an entry ("? x") must be skipped, not counted as untracked.
  const text = "# branch.oid abc\0# branch.head main\0" +
    "2 R. N... 100644 100644 100644 aaa aaa R100 new\0? x\0";
  const status = parseStatusV2(text);
  assertEquals([status.staged, status.untracked], [1, 0]);
});

Deno.test("parseLog reads commits with separators and unicode in the subject", () => {
  const commits = parseLog(fixture("log.z"));
  assertEquals(commits.length, 5);
  assertEquals(commits[0], {
    hash: "7b53263df20f65cf5fee021e8131873a0194283d",
    author: "Ada Lovelace",
    email: "ada@example.com",
    time: "2024-01-02T03:04:05+01:00",
    subject: "Main edits c",
  });
  assertEquals(commits[3].subject, "Add c: pipes | tabs\tand ünïcödé");
  assertEquals(commits[4].subject, "Initial commit");
  assertEquals(parseLog(""), []);
});

Deno.test("parseBranches reads local and remote branches, skips origin/HEAD, marks current and worktrees", () => {
  assertEquals(parseBranches(fixture("branches.z")), [
    {
      name: "feature",
      remote: false,
      head: "f91d7dd14d07f4fb8cda651266ec41ccaeef3b03",
      current: false,
      worktree: `${root}/wt-feature`,
    },
    {
      name: "gone",
      remote: false,
      head: "824c8b43d486da19ed0612bef1d3e3534c51695d",
      current: false,
      worktree: `${root}/wt-gone`,
    },
    {
      name: "locked-branch",
      remote: false,
      head: "824c8b43d486da19ed0612bef1d3e3534c51695d",
      current: false,
      worktree: `${root}/wt-locked`,
    },
    {
      name: "main",
      remote: false,
      head: "7b53263df20f65cf5fee021e8131873a0194283d",
      current: true,
      worktree: `${root}/repo`,
    },
    { name: "origin/main", remote: true, head: "efcdf1a45340fa06ca4f0a8b5c250d76cb15bc45", current: false },
    {
      name: "origin/remote-only",
      remote: true,
      head: "dc8dea07c29a60d75172fa1e53466a21fe188a9d",
      current: false,
    },
  ]);
  assertEquals(parseBranches(""), []);
});

// ---------------------------------------------------------------------------------------------------
// Against real repositories

/** A temp repository on `main` with one commit, an identity of its own and no signing. */
async function tempRepo(): Promise<{ dir: string; repo: string; [Symbol.asyncDispose](): Promise<void> }> {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "dock-git-test-" }));
  const repo = join(dir, "repo");
  await Deno.mkdir(repo);
  await git(["init", "--quiet", "--initial-branch=main"], { cwd: repo });
  await configure(repo);
  await commitFile(repo, "a.txt", "one\n", "first");
  return { dir, repo, [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }) };
}

async function configure(repo: string): Promise<void> {
  await git(["config", "user.name", "Test"], { cwd: repo });
  await git(["config", "user.email", "test@example.com"], { cwd: repo });
  await git(["config", "commit.gpgsign", "false"], { cwd: repo });
}

async function commitFile(cwd: string, file: string, text: string, message: string): Promise<string> {
  await Deno.writeTextFile(join(cwd, file), text);
  await git(["add", file], { cwd });
  await git(["commit", "--quiet", "-m", message], { cwd });
  return (await git(["rev-parse", "HEAD"], { cwd })).trim();
}

Deno.test("git returns stdout and throws GitError with git's stderr on failure", async () => {
  await using t = await tempRepo();
  assertMatch(await git(["rev-parse", "HEAD"], { cwd: t.repo }), /^[0-9a-f]{40}\n$/);
  const error = await assertRejects(
    () => git(["rev-parse", "--verify", "no-such-ref"], { cwd: t.repo }),
    GitError,
    "fatal: Needed a single revision",
  ) as GitError;
  assertEquals([error.code, error.status, error.exitCode], ["git_failed", 422, 128]);
  assertEquals(error.detail, { args: ["rev-parse", "--verify", "no-such-ref"] });
  assertEquals(error.name, "GitError");
});

Deno.test("git runs with prompts off and the C locale, and streams output", async () => {
  await using t = await tempRepo();
  const chunks: string[] = [];
  const out = await git(["var", "GIT_EDITOR"], {
    cwd: t.repo,
    env: { GIT_EDITOR: "my-editor", LC_ALL: "fr_FR.UTF-8" },
    onOutput: (chunk) => chunks.push(new TextDecoder().decode(chunk)),
  });
  assertEquals(out, "my-editor\n");
  assertEquals(chunks.join(""), "my-editor\n");
  // The child's environment is visible through a shell alias, which git runs with its own env.
  await git(["config", "alias.env", "!env"], { cwd: t.repo });
  const env = await git(["env"], { cwd: t.repo, env: { LC_ALL: "fr_FR.UTF-8" } });
  assertStringIncludes(env, "GIT_TERMINAL_PROMPT=0\n");
  assertStringIncludes(env, "LC_ALL=C\n");
});

Deno.test("git in a missing folder is a 404, not a GitError", async () => {
  const error = await assertRejects(() => git(["status"], { cwd: "/nonexistent/dock/folder" }), DockError);
  assertEquals([(error as DockError).code, (error as DockError).status], ["not_found", 404]);
});

Deno.test("listWorktrees lists the main checkout, linked, detached, locked and prunable worktrees", async () => {
  await using t = await tempRepo();
  await git(["worktree", "add", "--quiet", join(t.dir, "feat"), "-b", "feat"], { cwd: t.repo });
  await git(["worktree", "add", "--quiet", "--detach", join(t.dir, "det")], { cwd: t.repo });
  await git(["worktree", "add", "--quiet", join(t.dir, "gone"), "-b", "gone"], { cwd: t.repo });
  await git(["worktree", "lock", join(t.dir, "feat")], { cwd: t.repo });
  await Deno.remove(join(t.dir, "gone"), { recursive: true });
  const list = await listWorktrees(join(t.dir, "feat"));
  const byPath = Object.fromEntries(list.map((w) => [w.path.slice(t.dir.length + 1), w]));
  assertEquals(list[0].path, t.repo);
  assertEquals(Object.keys(byPath).sort(), ["det", "feat", "gone", "repo"]);
  assertEquals([byPath.feat.branch, byPath.feat.locked], ["feat", true]);
  assertEquals([byPath.det.branch, byPath.det.detached], [null, true]);
  assertEquals(byPath.gone.prunable, true);
  assertEquals(byPath.repo.branch, "main");
});

Deno.test("worktreeStatus reports changes, dirtiness and ahead/behind", async () => {
  await using t = await tempRepo();
  const clean = await worktreeStatus(t.repo);
  assertEquals({ ...clean, head: null }, {
    path: t.repo,
    branch: "main",
    head: null,
    upstream: null,
    ahead: 0,
    behind: 0,
    staged: 0,
    modified: 0,
    untracked: 0,
    conflicted: 0,
    dirty: false,
  });
  await git(["branch", "--quiet", "up"], { cwd: t.repo });
  await git(["branch", "--quiet", "--set-upstream-to=up"], { cwd: t.repo });
  await commitFile(t.repo, "b.txt", "two\n", "second");
  await Deno.writeTextFile(join(t.repo, "a.txt"), "changed\n");
  await Deno.writeTextFile(join(t.repo, "c.txt"), "new\n");
  await Deno.writeTextFile(join(t.repo, "d.txt"), "untracked\n");
  await git(["add", "c.txt"], { cwd: t.repo });
  const status = await worktreeStatus(t.repo);
  assertEquals(
    [
      status.upstream,
      status.ahead,
      status.behind,
      status.staged,
      status.modified,
      status.untracked,
      status.dirty,
    ],
    ["up", 1, 0, 1, 1, 1, true],
  );
});

Deno.test("log returns the newest commits first, and nothing before the first commit", async () => {
  await using t = await tempRepo();
  const second = await commitFile(t.repo, "b.txt", "two\n", "second: with | separators");
  const commits = await log(t.repo, 10);
  assertEquals(commits.map((c) => c.subject), ["second: with | separators", "first"]);
  assertEquals([commits[0].hash, commits[0].author, commits[0].email], [second, "Test", "test@example.com"]);
  assert(!Number.isNaN(Date.parse(commits[0].time)));
  assertEquals((await log(t.repo, 1)).length, 1);
  const empty = join(t.dir, "empty");
  await Deno.mkdir(empty);
  await git(["init", "--quiet"], { cwd: empty });
  assertEquals(await log(empty, 10), []);
});

Deno.test("branches marks the current branch and the worktree each branch is checked out in", async () => {
  await using t = await tempRepo();
  await git(["worktree", "add", "--quiet", join(t.dir, "feat"), "-b", "feat"], { cwd: t.repo });
  await git(["branch", "idle"], { cwd: t.repo });
  const list = await branches(t.repo);
  assertEquals(list.map((b) => [b.name, b.remote, b.current, b.worktree ?? null]), [
    ["feat", false, false, join(t.dir, "feat")],
    ["idle", false, false, null],
    ["main", false, true, t.repo],
  ]);
  // Seen from the linked worktree, its own branch is the current one.
  const fromFeat = await branches(join(t.dir, "feat"));
  assertEquals(fromFeat.filter((b) => b.current).map((b) => b.name), ["feat"]);
});

Deno.test("branches include remote-tracking branches but not origin/HEAD", async () => {
  await using t = await tempRepo();
  const clone = join(t.dir, "clone");
  await git(["clone", "--quiet", t.repo, clone], { cwd: t.dir });
  const list = await branches(clone);
  assertEquals(list.map((b) => [b.name, b.remote]), [["main", false], ["origin/main", true]]);
});

Deno.test("defaultBranch prefers origin/HEAD, then the main checkout's branch, then init.defaultBranch", async () => {
  await using t = await tempRepo();
  await git(["checkout", "--quiet", "-b", "develop"], { cwd: t.repo });
  assertEquals(await defaultBranch(t.repo), "develop");
  await git(["worktree", "add", "--quiet", join(t.dir, "wt"), "-b", "wt"], { cwd: t.repo });
  assertEquals(await defaultBranch(join(t.dir, "wt")), "develop");

  const clone = join(t.dir, "clone");
  await git(["clone", "--quiet", "--branch", "main", t.repo, clone], { cwd: t.dir });
  await git(["checkout", "--quiet", "-b", "topic"], { cwd: clone });
  await git(["remote", "set-head", "origin", "develop"], { cwd: clone });
  assertEquals(await defaultBranch(clone), "develop");

  // A detached main checkout falls back to init.defaultBranch, then to "main".
  await git(["checkout", "--quiet", "--detach"], { cwd: t.repo });
  assertEquals(await defaultBranch(t.repo), "main");
  await git(["config", "init.defaultBranch", "trunk"], { cwd: t.repo });
  assertEquals(await defaultBranch(t.repo), "trunk");
});

Deno.test("isRepository is true only for the top of a main checkout; commonDir finds the shared .git", async () => {
  await using t = await tempRepo();
  await git(["worktree", "add", "--quiet", join(t.dir, "wt"), "-b", "wt"], { cwd: t.repo });
  await Deno.mkdir(join(t.repo, "sub"));
  await Deno.symlink(t.repo, join(t.dir, "link"));
  assertEquals(await isRepository(t.repo), true);
  assertEquals(await isRepository(join(t.dir, "link")), true);
  assertEquals(await isRepository(join(t.dir, "wt")), false);
  assertEquals(await isRepository(join(t.repo, "sub")), false);
  assertEquals(await isRepository(t.dir), false);
  assertEquals(await isRepository(join(t.dir, "missing")), false);
  assertEquals(await commonDir(join(t.dir, "wt")), join(t.repo, ".git"));
  assertEquals(await commonDir(join(t.repo, "sub")), join(t.repo, ".git"));
});

/** A repo whose `main` has moved on since `topic` (in worktree `wt`) branched off. */
async function divergedRepo(t: { dir: string; repo: string }, conflicting: boolean): Promise<string> {
  const wt = join(t.dir, "wt");
  await git(["worktree", "add", "--quiet", wt, "-b", "topic"], { cwd: t.repo });
  await commitFile(wt, conflicting ? "a.txt" : "topic.txt", "topic side\n", "topic change");
  await commitFile(t.repo, "a.txt", "main side\n", "main change");
  return wt;
}

Deno.test("sync rebases a worktree onto its base", async () => {
  await using t = await tempRepo();
  const wt = await divergedRepo(t, false);
  const result = await sync(wt, "main", "rebase");
  assertEquals([result.ok, result.mode, result.onto], [true, "rebase", "main"]);
  assertEquals((await log(wt, 10)).map((c) => c.subject), ["topic change", "main change", "first"]);
});

Deno.test("sync merges a worktree's base into it", async () => {
  await using t = await tempRepo();
  const wt = await divergedRepo(t, false);
  const result = await sync(wt, "main", "merge");
  assertEquals([result.ok, result.mode], [true, "merge"]);
  assertEquals((await log(wt, 1))[0].subject, "Merge branch 'main' into topic");
});

for (const mode of ["rebase", "merge"] as const) {
  Deno.test(`sync aborts a conflicting ${mode} and leaves the worktree as it was`, async () => {
    await using t = await tempRepo();
    const wt = await divergedRepo(t, true);
    const before = (await git(["rev-parse", "HEAD"], { cwd: wt })).trim();
    const result = await sync(wt, "main", mode);
    assertEquals([result.ok, result.mode, result.onto], [false, mode, "main"]);
    assertStringIncludes(result.output, "CONFLICT");
    assertStringIncludes(result.output, `${mode} aborted`);
    assertEquals((await git(["rev-parse", "HEAD"], { cwd: wt })).trim(), before);
    assertEquals((await worktreeStatus(wt)).dirty, false);
    assertEquals(await Deno.readTextFile(join(wt, "a.txt")), "topic side\n");
    assertEquals((await git(["status", "--porcelain=v2"], { cwd: wt })).trim(), "");
  });
}

Deno.test("sync refuses a worktree with uncommitted changes and an unknown base", async () => {
  await using t = await tempRepo();
  const wt = await divergedRepo(t, false);
  const unknown = await sync(wt, "no-such-branch", "rebase");
  assertEquals(unknown.ok, false);
  assertStringIncludes(unknown.output, "no-such-branch");
  await Deno.writeTextFile(join(wt, "topic.txt"), "uncommitted\n");
  const dirty = await sync(wt, "main", "merge");
  assertEquals(dirty.ok, false);
  assertStringIncludes(dirty.output, "uncommitted changes");
  assertEquals(await Deno.readTextFile(join(wt, "topic.txt")), "uncommitted\n");
});

Deno.test("sync leaves a rebase someone else started alone", async () => {
  await using t = await tempRepo();
  const wt = await divergedRepo(t, true);
  await assertRejects(() => git(["rebase", "main"], { cwd: wt }), GitError);
  const result = await sync(wt, "main", "rebase");
  assertEquals(result.ok, false);
  assertStringIncludes(result.output, "already in progress");
  // The user's rebase is still there to finish or abort.
  await git(["rebase", "--abort"], { cwd: wt });
});

Deno.test("values from input never read as git options: leading '-', control characters, bad branch names", async () => {
  await using t = await tempRepo();
  for (const value of ["--exec=touch PWNED", "-b", "-"]) {
    const error = (() => {
      try {
        checkRevision("base", value);
      } catch (error) {
        return error as DockError;
      }
    })();
    assertEquals([error?.status, error?.message.startsWith("base:")], [400, true]);
  }
  for (const value of ["a\u0000b", "a\nb", "x".repeat(257), ""]) {
    await assertRejects(() => Promise.resolve().then(() => checkRevision("ref", value)), DockError);
  }
  assertEquals(checkRevision("ref", "v1.2^{commit}~2"), "v1.2^{commit}~2");
  assertEquals(await checkBranch("branch", "feature/x-1", t.repo), "feature/x-1");
  for (const value of ["a..b", "x.lock", "@{-1}", "a b", "--upload-pack=x", "end/"]) {
    const error = await assertRejects(() => checkBranch("branch", value, t.repo), DockError);
    assertStringIncludes(error.message, "branch:");
  }
});

Deno.test("sync puts its base after --end-of-options and refuses one that reads as an option", async () => {
  await using t = await tempRepo();
  const wt = await divergedRepo(t, false);
  const marker = join(t.dir, "PWNED");
  await assertRejects(() => sync(wt, `--exec=touch ${marker}`, "rebase"), DockError);
  await assertRejects(() => sync(wt, `--exec=touch ${marker}`, "merge"), DockError);
  assertEquals(await Deno.stat(marker).then(() => true, () => false), false);
  assertEquals((await sync(wt, "main", "rebase")).ok, true);
});
