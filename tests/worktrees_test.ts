/**
 * Whole-system tests of worktrees: creation forms, names, port blocks, restarts, detection, setup
 * and archive, against a real `dockd serve` and real git repositories.
 */
import { join } from "node:path";
import { assert, assertEquals, assertMatch, assertRejects, assertStringIncludes } from "./assert.ts";
import { DockError } from "../client/errors.ts";
import { git, makeRepo, startBox } from "./harness.ts";
import { until, untilEvent } from "./wait.ts";

Deno.test("a worktree gets a new branch from the default branch, its ports and its environment", async () => {
  await using box = await startBox();
  const repo = await makeRepo(join(box.dirs.home, "work"));
  await box.client.addLocation({ name: "app", path: repo });
  const wt = await box.client.createWorktree("app", { name: "feature-a" });
  assertEquals(wt.branch, "feature-a");
  assertEquals(wt.origin, "dock");
  assertEquals(wt.ports.length, 1);
  assert(wt.path.startsWith(join(box.dirs.dockHome, "worktrees", "app")), wt.path);
  assertEquals((await git(wt.path, "rev-parse", "--abbrev-ref", "HEAD")).trim(), "feature-a");
  const result = await box.client.exec({
    location: "app/feature-a",
    command:
      'echo "$DOCK_BOX|$DOCK_LOCATION|$DOCK_WORKTREE_NAME|$DOCK_BRANCH|$DOCK_PORT|$DOCK_ROOT_PATH|$PWD"',
  });
  assertEquals(result.exit_code, 0);
  const [boxName, location, name, branch, port, root, cwd] = result.output.trim().split("|");
  assert(boxName.length > 0);
  assertEquals([location, name, branch, port, root, cwd], [
    "app",
    "feature-a",
    "feature-a",
    String(wt.ports[0]),
    repo,
    wt.path,
  ]);
});

Deno.test("existing branches, refs and bases are honoured", async () => {
  await using box = await startBox();
  const repo = await makeRepo(join(box.dirs.home, "work"));
  await git(repo, "branch", "existing");
  await git(repo, "commit", "-q", "--allow-empty", "-m", "second");
  const first = (await git(repo, "rev-parse", "HEAD~1")).trim();
  await box.client.addLocation({ name: "app", path: repo });

  const existing = await box.client.createWorktree("app", { name: "ex", branch: "existing" });
  assertEquals(existing.branch, "existing");
  assertEquals((await git(existing.path, "rev-parse", "HEAD")).trim(), first);

  const detached = await box.client.createWorktree("app", { name: "at-ref", ref: first });
  assertEquals(detached.branch, null);
  assertEquals((await git(detached.path, "rev-parse", "HEAD")).trim(), first);

  const based = await box.client.createWorktree("app", { name: "based", branch: "topic", base: "existing" });
  assertEquals(based.branch, "topic");
  assertEquals((await git(based.path, "rev-parse", "HEAD")).trim(), first);

  const missingBase = await assertRejects(
    () => box.client.createWorktree("app", { name: "nope", base: "no-such-branch" }),
    DockError,
  );
  assertEquals((missingBase as DockError).status, 422);
  // A failed create leaves nothing behind: no record, no port block, no folder.
  const names = (await box.client.location("app")).worktrees.map((w) => w.name);
  assertEquals(names.includes("nope"), false);
});

Deno.test("with no origin and no base, a new worktree starts from the branch the main checkout has out", async () => {
  await using box = await startBox();
  const repo = await makeRepo(join(box.dirs.home, "work"));
  await git(repo, "checkout", "-q", "-b", "trunk");
  await git(repo, "commit", "-q", "--allow-empty", "-m", "on trunk");
  const trunk = (await git(repo, "rev-parse", "HEAD")).trim();
  await box.client.addLocation({ name: "app", path: repo });

  const fresh = await box.client.createWorktree("app", { name: "fresh" });
  assertEquals([fresh.branch, fresh.base], ["fresh", "trunk"]);
  assertEquals((await git(fresh.path, "rev-parse", "HEAD")).trim(), trunk);
});

Deno.test("worktree names that could escape or collide are refused", async () => {
  await using box = await startBox();
  const repo = await makeRepo(join(box.dirs.home, "work"));
  await box.client.addLocation({ name: "app", path: repo });
  for (const name of ["../x", "a/b", ".hidden", "x".repeat(65), "", "a..b"]) {
    const error = await assertRejects(() => box.client.createWorktree("app", { name }), DockError, "name:");
    assertEquals((error as DockError).status, 400);
  }
  await box.client.createWorktree("app", { name: "one" });
  const duplicate = await assertRejects(() => box.client.createWorktree("app", { name: "one" }), DockError);
  assertEquals((duplicate as DockError).status, 409);
  // Nothing was written outside the location's worktree folder.
  const entries = [...Deno.readDirSync(join(box.dirs.dockHome, "worktrees"))].map((e) => e.name);
  assertEquals(entries, ["app"]);
  assertEquals([...Deno.readDirSync(join(box.dirs.dockHome, "worktrees", "app"))].map((e) => e.name), [
    "one",
  ]);
});

Deno.test("20 concurrent worktree creations get disjoint port blocks that survive kill -9", async () => {
  const first = await startBox();
  const repo = await makeRepo(join(first.dirs.home, "work"), "app", {
    ".dock/config.json": JSON.stringify({ ports: 3 }),
  });
  await first.client.addLocation({ name: "app", path: repo });
  const created = await Promise.all(
    Array.from({ length: 20 }, (_, i) => first.client.createWorktree("app", { name: `wt-${i}` })),
  );
  const all = created.flatMap((w) => w.ports);
  assertEquals(all.length, 60);
  assertEquals(new Set(all).size, 60, "no port is in two blocks");
  for (const w of created) {
    assertEquals(w.ports.length, 3);
    assertEquals(w.ports[2] - w.ports[0], 2, "a block is contiguous");
  }
  const main = (await first.client.location("app")).worktrees.find((w) => w.main)!;
  assertEquals(all.some((p) => main.ports.includes(p)), false);

  await first.stop({ kill: true });
  await using second = await startBox({ dirs: first.dirs });
  const after = (await second.client.location("app")).worktrees;
  assertEquals(after.length, 21);
  for (const w of created) {
    assertEquals(after.find((a) => a.name === w.name)?.ports, w.ports, `${w.name} keeps its ports`);
  }
  // Removal frees the block; the next worktree may reuse it.
  await second.client.removeWorktree("app", "wt-0");
  const reused = await second.client.createWorktree("app", { name: "later" });
  assertEquals(reused.ports, created[0].ports);
});

Deno.test("a port something else listens on is skipped", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const busy = (listener.addr as Deno.NetAddr).port;
  try {
    await using box = await startBox({ portRange: [busy, busy + 5] });
    const repo = await makeRepo(join(box.dirs.home, "work"));
    await box.client.addLocation({ name: "app", path: repo });
    const wt = await box.client.createWorktree("app", { name: "w" });
    const main = (await box.client.location("app")).worktrees.find((w) => w.main)!;
    assertEquals([...main.ports, ...wt.ports].includes(busy), false);
  } finally {
    listener.close();
  }
});

Deno.test("worktrees made or removed outside dock are detected; prunable ones are not listed", async () => {
  await using box = await startBox();
  const repo = await makeRepo(join(box.dirs.home, "work"));
  await box.client.addLocation({ name: "app", path: repo });
  const start = (await box.client.emit({ type: "test.mark" })).id!;

  const outside = join(box.dirs.home, "work", "by-hand");
  await git(repo, "worktree", "add", "-q", outside);
  const created = await untilEvent(box.client, (e) => e.type === "worktree.created", { after: start });
  assertEquals(created.origin, "detected");
  assertEquals(created.data?.worktree, "by-hand");
  const listed = (await box.client.location("app")).worktrees.find((w) => w.name === "by-hand")!;
  assertEquals(listed.origin, "detected");
  assertEquals(listed.ports.length, 1);

  await git(repo, "worktree", "remove", outside);
  const removed = await untilEvent(box.client, (e) => e.type === "worktree.removed", { after: start });
  assertEquals(removed.data?.worktree, "by-hand");
  assertEquals(removed.origin, "detected");

  // A worktree whose folder vanished is prunable: it disappears from the list.
  const vanishing = join(box.dirs.home, "work", "vanishing");
  await git(repo, "worktree", "add", "-q", vanishing);
  await until(async () => (await box.client.location("app")).worktrees.some((w) => w.name === "vanishing"), {
    on: box,
  });
  await Deno.remove(vanishing, { recursive: true });
  await until(async () => !(await box.client.location("app")).worktrees.some((w) => w.name === "vanishing"), {
    on: box,
  });
});

Deno.test("setup runs in the worktree with its environment, is logged, and reports how it ended", async () => {
  await using box = await startBox();
  const repo = await makeRepo(join(box.dirs.home, "work"), "app", {
    ".dock/config.json": JSON.stringify({
      setup:
        'echo "setting up $DOCK_WORKTREE_NAME on $DOCK_PORT"; echo done > setup-ran; [ "$DOCK_WORKTREE_NAME" != bad ]',
    }),
  });
  await box.client.addLocation({ name: "app", path: repo });
  const start = (await box.client.emit({ type: "test.mark" })).id!;
  const wt = await box.client.createWorktree("app", { name: "good" });
  assert(["pending", "running", "succeeded"].includes(wt.setup.state), wt.setup.state);
  const finished = await untilEvent(
    box.client,
    (e) => e.type.startsWith("worktree.setup.") && e.type !== "worktree.setup.started",
    { after: start },
  );
  assertEquals(finished.type, "worktree.setup.finished");
  assertEquals((await box.client.worktree("app", "good")).setup.state, "succeeded");
  assertEquals(await Deno.readTextFile(join(wt.path, "setup-ran")), "done\n");
  const lines = [];
  for await (const line of box.client.setupLog("app", "good")) lines.push(line);
  assertEquals(lines[0].line, `setting up good on ${wt.ports[0]}`);
  assertEquals(lines.at(-1), { done: true, exit_code: 0 });

  await box.client.createWorktree("app", { name: "bad" });
  const failed = await untilEvent(box.client, (e) => e.type === "worktree.setup.failed", { after: start });
  assertEquals(failed.data?.worktree, "bad");
  assertEquals((await box.client.worktree("app", "bad")).setup.state, "failed");
  assertEquals((await box.client.worktree("app", "bad")).setup.exit_code, 1);

  // The CLI follows the log and exits non-zero for a failed setup.
  const cli = await box.cli(["worktree", "setup-log", "app/bad", "--follow"]);
  assertEquals(cli.code, 1);
  assertStringIncludes(cli.stdout, "setting up bad");
});

Deno.test("a failing archive keeps the worktree; force removes it, dirty or not", async () => {
  await using box = await startBox();
  const repo = await makeRepo(join(box.dirs.home, "work"), "app", {
    ".dock/config.json": JSON.stringify({ archive: 'echo "archiving $DOCK_WORKTREE_NAME"; [ ! -e keep ]' }),
  });
  await box.client.addLocation({ name: "app", path: repo });
  const wt = await box.client.createWorktree("app", { name: "w" });
  await Deno.writeTextFile(join(wt.path, "keep"), "x");
  const error = await assertRejects(() => box.client.removeWorktree("app", "w"), DockError, "archive failed");
  assertEquals((error as DockError).status, 409);
  assertStringIncludes(String((error as DockError).detail?.output), "archiving w");
  assert((await Deno.stat(wt.path)).isDirectory, "the worktree is kept");

  // Archive passes now, but the untracked file makes git refuse without force.
  await Deno.remove(join(wt.path, "keep"));
  await Deno.writeTextFile(join(wt.path, "README.md"), "changed\n");
  const dirty = await assertRejects(() => box.client.removeWorktree("app", "w"), DockError);
  assertEquals((dirty as DockError).code, "worktree_dirty");
  await Deno.writeTextFile(join(wt.path, "keep"), "x");
  const removed = await box.client.removeWorktree("app", "w", { force: true });
  assertEquals(removed.name, "w");
  await assertRejects(() => Deno.stat(wt.path), Deno.errors.NotFound);
  // The branch is kept.
  assertMatch(await git(repo, "branch", "--list", "w"), /w/);
});

Deno.test("the main checkout cannot be removed as a worktree", async () => {
  await using box = await startBox();
  const repo = await makeRepo(join(box.dirs.home, "work"));
  await box.client.addLocation({ name: "app", path: repo });
  const error = await assertRejects(
    () => box.client.removeWorktree("app", "app"),
    DockError,
    "main checkout",
  );
  assertEquals((error as DockError).status, 409);
});
