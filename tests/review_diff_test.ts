/**
 * Whole-system tests of one worktree's review (issue 32 item 1): a real dockd, real git. The diff against
 * where the worktree left its base (committed and not), commits ahead of the base without an upstream
 * and of the upstream once pushed, untracked files, pages bounded in bytes, the pull request through the
 * box's `gh` (422 naming what to install without it), hostile input refused; `dock diff` through the
 * laptop's relay.
 */
import { join } from "node:path";
import { assert, assertEquals, assertRejects, assertStringIncludes } from "./assert.ts";
import { DockError } from "../client/errors.ts";
import { which } from "../core/runner.ts";
import { AgentClient } from "../client/agent.ts";
import { git, laptopEnv, makeDirs, makeRepo, runCli, startAgent, startBox } from "./harness.ts";

const FIXTURE_BIN = new URL("./fixtures/bin", import.meta.url).pathname;

/** The daemon's PATH with no folder that holds a `gh`. */
function pathWithoutGh(): string {
  const path = (Deno.env.get("PATH") ?? "").split(":").filter((dir) => dir && !which("gh", dir)).join(":");
  assertEquals(which("gh", path), null);
  return path;
}

Deno.test("review: a worktree one commit ahead of main without upstream, its diff, untracked files", async () => {
  await using box = await startBox({ env: { PATH: pathWithoutGh() } });
  const repo = await makeRepo(join(box.dirs.home, "work"), "app", { "src/a.ts": "one\ntwo\nthree\n" });
  await box.client.addLocation({ name: "app", path: repo });
  const wt = await box.client.createWorktree("app", { name: "topic" });
  await Deno.writeTextFile(join(wt.path, "src/a.ts"), "one\n2\nthree\nfour\n");
  await git(wt.path, "commit", "-qam", "edit a");
  // main moves on after the worktree left it: its change is not the worktree's.
  await Deno.writeTextFile(join(repo, "main-only.txt"), "m\n");
  await git(repo, "add", "main-only.txt");
  await git(repo, "commit", "-qm", "main moves");
  // Uncommitted work is part of what there is to review, untracked files listed apart.
  await Deno.writeTextFile(join(wt.path, "README.md"), "# changed\n");
  await Deno.writeTextFile(join(wt.path, "notes.md"), "new\n");

  const commits = await box.client.worktreeCommits("app", "topic");
  assertEquals(commits.base, "main");
  assertEquals(commits.ahead?.map((c) => c.subject), ["edit a"]);
  assertEquals(commits.behind, 1);
  assertEquals([commits.upstream, commits.ahead_upstream, commits.behind_upstream], [null, null, null]);

  const diff = await box.client.diff("app", "topic");
  assertEquals(diff.files.map((f) => [f.path, f.status, f.additions, f.deletions]), [
    ["README.md", "modified", 1, 1],
    ["src/a.ts", "modified", 2, 1],
  ]);
  assertEquals([diff.additions, diff.deletions, diff.next_offset], [3, 2, null]);
  assertEquals(diff.from, (await git(repo, "rev-parse", "main~1")).trim());
  const a = diff.patches.find((p) => p.path === "src/a.ts")!;
  assertStringIncludes(a.patch, "@@ -1,3 +1,4 @@\n one\n-two\n+2\n three\n+four\n");
  assertEquals(diff.untracked, ["notes.md"]);
  assertEquals((await box.client.untracked("app", "topic")).files, ["notes.md"]);
  // One path alone, taken literally (a pathspec's magic is not read).
  assertEquals((await box.client.diff("app", "topic", { path: "src/a.ts" })).files.map((f) => f.path), [
    "src/a.ts",
  ]);
  assertEquals((await box.client.diff("app", "topic", { path: ":(glob)*" })).files, []);

  // Renamed, added, deleted and binary files say so.
  await git(wt.path, "mv", "src/a.ts", "src/b.ts");
  await Deno.writeFile(join(wt.path, "logo.bin"), new Uint8Array([0, 1, 2, 0, 255]));
  await git(wt.path, "add", "logo.bin");
  await Deno.remove(join(wt.path, "README.md"));
  const moved = await box.client.diff("app", "topic");
  const byPath = Object.fromEntries(moved.files.map((f) => [f.path, f]));
  assertEquals(byPath["src/b.ts"].status, "renamed");
  assertEquals(byPath["src/b.ts"].old_path, "src/a.ts");
  assertEquals([byPath["logo.bin"].status, byPath["logo.bin"].binary], ["added", true]);
  assertEquals(byPath["README.md"].status, "deleted");

  // Without gh on the box, a pull request is a 422 that says what to install.
  for (
    const call of [
      () => box.client.createPr("app", "topic", { title: "x" }),
      () => box.client.pullRequest("app", "topic"),
    ]
  ) {
    const error = await assertRejects(call, DockError);
    assertEquals([(error as DockError).status, (error as DockError).code], [422, "gh_not_found"]);
    assertStringIncludes(error.message, "install it");
  }
  // Nothing to push to.
  const push = await assertRejects(() => box.client.push("app", "topic"), DockError);
  assertEquals([(push as DockError).status, (push as DockError).code], [422, "no_remote"]);
});

Deno.test("review: large diffs come a page at a time, each within its bytes", async () => {
  await using box = await startBox();
  const repo = await makeRepo(join(box.dirs.home, "work"));
  await box.client.addLocation({ name: "app", path: repo });
  const wt = await box.client.createWorktree("app", { name: "big" });
  const line = (n: number) => `line ${n} ${"x".repeat(40)}\n`;
  for (let f = 0; f < 30; f++) {
    await Deno.writeTextFile(
      join(wt.path, `f${String(f).padStart(2, "0")}.txt`),
      Array.from({ length: 20 }, (_, i) => line(i)).join(""),
    );
  }
  // One file larger than a page alone: cut at a line, and said to be.
  await Deno.writeTextFile(
    join(wt.path, "huge.txt"),
    Array.from({ length: 2000 }, (_, i) => line(i)).join(""),
  );
  await git(wt.path, "add", "-A");
  await git(wt.path, "commit", "-qm", "many files");

  const maxBytes = 4096;
  const seen: string[] = [];
  let offset: number | null = 0;
  let pages = 0;
  let total = 0;
  while (offset !== null) {
    const page: Awaited<ReturnType<typeof box.client.diff>> = await box.client.diff("app", "big", {
      offset,
      maxBytes,
    });
    assertEquals(page.offset, offset);
    assertEquals(page.files.length, 31);
    const bytes = page.patches.reduce((sum, p) => sum + new TextEncoder().encode(p.patch).length, 0);
    assert(bytes <= maxBytes, `page of ${bytes} bytes`);
    assert(page.patches.length > 0);
    for (const patch of page.patches) {
      seen.push(patch.path);
      if (patch.path === "huge.txt") {
        assertEquals(patch.truncated, true);
        assert(patch.patch.endsWith("\n"));
      } else assertEquals(patch.truncated, false);
    }
    total = page.additions;
    offset = page.next_offset;
    pages++;
  }
  assertEquals(seen, (await box.client.diff("app", "big")).files.map((f) => f.path));
  assert(pages > 5, `${pages} pages`);
  assertEquals(total, 30 * 20 + 2000);
});

Deno.test("review: push sets the upstream; the pull request is found with gh; bad input refused", async () => {
  const fakeGh = await Deno.makeTempDir({ prefix: "dock-fake-gh-" });
  await using box = await startBox({
    env: { PATH: `${FIXTURE_BIN}:${Deno.env.get("PATH")}`, FAKE_GH_DIR: fakeGh },
  });
  const origin = join(box.dirs.root, "origin.git");
  await git(box.dirs.root, "init", "-q", "--bare", "-b", "main", origin);
  const repo = await makeRepo(join(box.dirs.home, "work"));
  await git(repo, "remote", "add", "origin", origin);
  await git(repo, "push", "-q", "origin", "main");
  await box.client.addLocation({ name: "app", path: repo });
  const wt = await box.client.createWorktree("app", { name: "pushed", base: "main" });
  await Deno.writeTextFile(join(wt.path, "x.txt"), "x\n");
  await git(wt.path, "add", "x.txt");
  await git(wt.path, "commit", "-qm", "add x");

  const pushed = await box.client.push("app", "pushed");
  assertEquals([pushed.ok, pushed.branch], [true, "pushed"], pushed.output);
  assertEquals((await git(origin, "log", "-1", "--format=%s", "pushed")).trim(), "add x");
  await git(wt.path, "commit", "-q", "--allow-empty", "-m", "not pushed yet");
  const commits = await box.client.worktreeCommits("app", "pushed");
  assertEquals(commits.upstream, "origin/pushed");
  assertEquals(commits.ahead_upstream?.map((c) => c.subject), ["not pushed yet"]);
  assertEquals(commits.behind_upstream, 0);
  assertEquals(commits.ahead?.map((c) => c.subject), ["not pushed yet", "add x"]);

  // The branch's pull request, as gh answers in the worktree's folder (recorded shape).
  const missing = await assertRejects(() => box.client.pullRequest("app", "pushed"), DockError);
  assertEquals([(missing as DockError).status, (missing as DockError).code], [404, "no_pr"]);
  await Deno.mkdir(join(fakeGh, "pushed"));
  await Deno.writeTextFile(
    join(fakeGh, "pushed", "pr_view.json"),
    JSON.stringify({ url: "https://github.com/o/app/pull/12", number: 12, state: "OPEN", title: "Add x" }),
  );
  assertEquals(await box.client.pullRequest("app", "pushed"), {
    url: "https://github.com/o/app/pull/12",
    number: 12,
    state: "OPEN",
    title: "Add x",
  });

  const nul = await assertRejects(() => box.client.diff("app", "pushed", { path: "a\0b" }), DockError);
  assertEquals((nul as DockError).status, 400);
  const offset = await assertRejects(() => box.client.diff("app", "pushed", { offset: -1 }), DockError);
  assertEquals((offset as DockError).status, 400);
  const typo = await assertRejects(
    () => box.client.createPr("app", "pushed", { titel: "x" } as never),
    DockError,
  );
  assertEquals((typo as DockError).status, 400);
  assertStringIncludes(typo.message, "title");
  const gone = await assertRejects(() => box.client.diff("app", "nope"), DockError);
  assertEquals((gone as DockError).status, 404);
});

Deno.test("review: dock diff prints a worktree's diff through the laptop (plain into a pipe, --json)", async () => {
  const dirs = await makeDirs();
  await using box = await startBox({ dirs });
  await using agent = await startAgent(dirs);
  const client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  await client.addLocal("devbox");
  client.close();
  const repo = await makeRepo(join(dirs.home, "work"), "app", { "a.txt": "old\n" });
  await box.client.addLocation({ name: "app", path: repo });
  const wt = await box.client.createWorktree("app", { name: "topic" });
  await Deno.writeTextFile(join(wt.path, "a.txt"), "new\n");
  await git(wt.path, "commit", "-qam", "change a");
  await Deno.writeTextFile(join(wt.path, "b.txt"), "untracked\n");

  const env = laptopEnv(dirs, agent);
  const plain = await runCli("dock", ["diff", "devbox/app/topic"], { env, cwd: dirs.home });
  assertEquals(plain.code, 0, plain.stderr);
  assertStringIncludes(plain.stdout, "change a");
  assertStringIncludes(plain.stdout, "-old\n+new\n");
  assertStringIncludes(plain.stdout, "b.txt");
  assertEquals(plain.stdout.includes("\x1b["), false, "no colour into a pipe");
  const json = await runCli("dock", ["diff", "devbox/app/topic", "--json"], { env, cwd: dirs.home });
  assertEquals(json.code, 0, json.stderr);
  const parsed = JSON.parse(json.stdout);
  assertEquals(parsed.diff.files.map((f: { path: string }) => f.path), ["a.txt"]);
  assertEquals(parsed.commits.ahead.map((c: { subject: string }) => c.subject), ["change a"]);
  const missing = await runCli("dock", ["diff", "devbox/app/nope"], { env, cwd: dirs.home });
  assertEquals(missing.code === 0, false);
  assertStringIncludes(missing.stderr, "nope");
});
