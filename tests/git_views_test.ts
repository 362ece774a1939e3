/**
 * Whole-system tests of the git views (status, log, sync), pull-request worktrees and the box facts
 * (info, stats, doctor, fs).
 */
import { join } from "node:path";
import { assert, assertEquals, assertRejects, assertStringIncludes } from "./assert.ts";
import { DockError } from "../client/errors.ts";
import { git, makeRepo, startBox } from "./harness.ts";

const FIXTURE_BIN = new URL("./fixtures/bin", import.meta.url).pathname;

Deno.test("status, log and sync of worktrees", async () => {
  await using box = await startBox();
  const repo = await makeRepo(join(box.dirs.home, "work"));
  await box.client.addLocation({ name: "app", path: repo });
  const wt = await box.client.createWorktree("app", { name: "topic" });
  await Deno.writeTextFile(join(wt.path, "new.txt"), "x\n");
  await Deno.writeTextFile(join(wt.path, "README.md"), "changed\n");
  const statuses = await box.client.worktreeStatus("app");
  const topic = statuses.find((s) => s.name === "topic")!;
  assertEquals([topic.branch, topic.modified, topic.untracked, topic.dirty], ["topic", 1, 1, true]);
  assertEquals(statuses.find((s) => s.name === "app")?.dirty, false);

  await git(wt.path, "checkout", "-q", "README.md");
  await git(wt.path, "add", "new.txt");
  await git(wt.path, "commit", "-q", "-m", "add new");
  await Deno.writeTextFile(join(repo, "main.txt"), "m\n");
  await git(repo, "add", "main.txt");
  await git(repo, "commit", "-q", "-m", "main moves");

  const log = await box.client.log("app", "topic", 5);
  assertEquals(log.map((c) => c.subject), ["add new", "initial"]);
  assertEquals(log[0].author, "Dock Test");

  const synced = await box.client.sync("app", "topic");
  assertEquals(synced.ok, true, synced.output);
  assertEquals(synced.mode, "rebase");
  assertEquals((await box.client.log("app", "topic", 5)).map((c) => c.subject), [
    "add new",
    "main moves",
    "initial",
  ]);

  // A conflicting sync is undone and reported.
  await Deno.writeTextFile(join(wt.path, "main.txt"), "topic side\n");
  await git(wt.path, "commit", "-qam", "topic edits main.txt");
  await Deno.writeTextFile(join(repo, "main.txt"), "main side\n");
  await git(repo, "commit", "-qam", "main edits main.txt");
  const conflict = await box.client.sync("app", "topic", { mode: "merge" });
  assertEquals(conflict.ok, false);
  assertEquals((await box.client.worktreeStatus("app")).find((s) => s.name === "topic")?.conflicted, 0);

  const badLimit = await assertRejects(() => box.client.log("app", "topic", 0), DockError, "limit");
  assertEquals((badLimit as DockError).status, 400);
  const cli = await box.cli(["worktree", "status", "app", "--json"]);
  assertEquals(JSON.parse(cli.stdout).length, 2);
});

Deno.test("a pull request is checked out with the forge CLI", async () => {
  await using box = await startBox({ env: { PATH: `${FIXTURE_BIN}:${Deno.env.get("PATH")}` } });
  const upstream = await makeRepo(join(box.dirs.root, "upstream"), "origin");
  await git(upstream, "checkout", "-q", "-b", "pr-7-head");
  await git(upstream, "commit", "-q", "--allow-empty", "-m", "the change under review");
  await git(upstream, "checkout", "-q", "main");
  const clone = join(box.dirs.home, "work", "app");
  await git(box.dirs.root, "clone", "-q", upstream, clone);
  await box.client.addLocation({ name: "app", path: clone });
  const wt = await box.client.createWorktree("app", { name: "review-7", pr: 7 });
  assertEquals(wt.branch, "pr-7");
  assertEquals((await git(wt.path, "log", "-1", "--format=%s")).trim(), "the change under review");
  const missing = await assertRejects(
    () => box.client.createWorktree("app", { name: "review-8", pr: 8 }),
    DockError,
  );
  assertStringIncludes(missing.message, "gh pr checkout 8 failed");
  assertEquals((await box.client.location("app")).worktrees.some((w) => w.name === "review-8"), false);
  const mixed = await assertRejects(
    () => box.client.createWorktree("app", { name: "x", pr: 1, ref: "main" }),
    DockError,
  );
  assertEquals((mixed as DockError).status, 400);
});

Deno.test("without the forge CLI a pull request is a clear error", async () => {
  // A PATH holding only what the daemon needs, so no gh can be found.
  const bin = await Deno.makeTempDir();
  for (const tool of ["git", "sh", "env"]) {
    const path = (await new Deno.Command("sh", { args: ["-c", `command -v ${tool}`] }).output()).stdout;
    await Deno.symlink(new TextDecoder().decode(path).trim(), join(bin, tool));
  }
  await using box = await startBox({ env: { PATH: bin } });
  const repo = await makeRepo(join(box.dirs.home, "work"));
  await box.client.addLocation({ name: "app", path: repo });
  const error = await assertRejects(
    () => box.client.createWorktree("app", { name: "pr", pr: 3 }),
    DockError,
    "gh",
  );
  assertEquals((error as DockError).code, "forge_cli_missing");
  assertEquals((error as DockError).status, 422);
  await Deno.remove(bin, { recursive: true });
});

Deno.test("info sees a tool installed while the daemon runs (its PATH listings are cached)", async () => {
  const bin = await Deno.makeTempDir();
  for (const tool of ["git", "sh", "env", "tmux"]) {
    const path = (await new Deno.Command("sh", { args: ["-c", `command -v ${tool}`] }).output()).stdout;
    await Deno.symlink(new TextDecoder().decode(path).trim(), join(bin, tool));
  }
  // An old folder: the daemon keeps its listing (a folder changed in the last two seconds is re-read).
  const past = new Date(Date.now() - 3_600_000);
  await Deno.utime(bin, past, past);
  try {
    await using box = await startBox({ env: { PATH: bin } });
    const before = await box.client.info();
    assertEquals(before.tools.includes("gh") || before.agents.some((a) => a.id === "codex"), false);
    await Deno.writeTextFile(join(bin, "gh"), "#!/bin/sh\n", { mode: 0o755 });
    await Deno.writeTextFile(join(bin, "codex"), "#!/bin/sh\n", { mode: 0o755 });
    const after = await box.client.info();
    assert(after.tools.includes("gh") && after.tools.includes("codex"), after.tools.join(" "));
    assertEquals(after.agents.map((a) => a.id), ["codex"]);
    await Deno.remove(join(bin, "gh"));
    assertEquals((await box.client.info()).tools.includes("gh"), false);
  } finally {
    await Deno.remove(bin, { recursive: true });
  }
});

Deno.test("info, stats, doctor and fs describe the box", async () => {
  await using box = await startBox();
  const repo = await makeRepo(join(box.dirs.home, "work"));
  await box.client.addLocation({ name: "app", path: repo });
  const info = await box.client.info();
  assertEquals(info.os, Deno.build.os);
  assertEquals(info.home, box.dirs.home);
  assert(info.tools.includes("git"));
  assert(info.build.length > 0);
  const stats = await box.client.stats();
  assert(stats.memory.total > 0);
  assertEquals([stats.locations, stats.worktrees], [1, 1]);
  const checks = await box.client.doctor();
  const byName = Object.fromEntries(checks.map((c) => [c.name, c]));
  assertEquals(byName.git.ok, true);
  assertEquals(byName.socket.ok, true);
  assertStringIncludes(byName.socket.detail, "0600");
  assertEquals((await Deno.stat(box.dirs.socket)).mode! & 0o777, 0o600);

  const listing = await box.client.fs();
  assertEquals(listing.path, join(box.dirs.home, "work"));
  assertEquals(listing.entries.map((e) => [e.name, e.dir, e.git]), [["app", true, true]]);
  const outside = await assertRejects(() => box.client.fs("/etc"), DockError);
  assertEquals((outside as DockError).status, 403);
  const escape = await assertRejects(() => box.client.fs("work/../../.."), DockError);
  assertEquals((escape as DockError).status, 403);
});
