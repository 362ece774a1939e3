/**
 * Values a request names never reach git as options (issue 11): a `branch`, `base` or `ref` that starts
 * with '-' (or is no branch name) is a 400 naming the field at creation, through `POST tasks` too, and
 * nothing runs at a later sync.
 */
import { join } from "node:path";
import { assertEquals, assertRejects, assertStringIncludes } from "./assert.ts";
import { DockError } from "../client/errors.ts";
import { git, makeRepo, startBox } from "./harness.ts";

Deno.test("branch, base and ref from a request cannot inject git options at creation or at sync", async () => {
  await using box = await startBox();
  const repo = await makeRepo(join(box.dirs.home, "work"));
  await git(repo, "branch", "feat");
  await box.client.addLocation({ name: "app", path: repo });
  const marker = join(box.dirs.root, "PWNED");
  const attempts: [string, Record<string, string>][] = [
    // An existing branch once kept its base unchecked, and sync later ran `git rebase --exec=…`.
    ["base", { name: "w1", branch: "feat", base: `--exec=touch ${marker}` }],
    ["base", { name: "w2", base: `--exec=touch ${marker}` }],
    ["branch", { name: "w3", branch: "-b" }],
    ["branch", { name: "w4", branch: "--orphan" }],
    ["branch", { name: "w5", branch: "a..b" }],
    ["ref", { name: "w6", ref: `--output=${marker}` }],
    ["base", { name: "w7", base: "main\u0000x" }],
  ];
  for (const [field, body] of attempts) {
    const error = await assertRejects(
      () => box.client.createWorktree("app", body as { name: string }),
      DockError,
    ) as DockError;
    assertEquals(error.status, 400, `${JSON.stringify(body)}: ${error.message}`);
    assertStringIncludes(error.message, `${field}:`);
  }
  const task = await assertRejects(
    () =>
      box.client.createTask({ location: "app", name: "t1", base: `--exec=touch ${marker}`, command: "true" }),
    DockError,
  ) as DockError;
  assertEquals(task.status, 400);
  const [location] = await box.client.locations();
  assertEquals(location.worktrees.map((w) => w.name), ["app"]);

  // A legitimate existing branch with a real base syncs as before; nothing ran along the way.
  await box.client.createWorktree("app", { name: "w8", branch: "feat", base: "main" });
  const synced = await box.client.sync("app", "w8", { mode: "rebase" });
  assertEquals(synced.ok, true);
  assertEquals(await Deno.stat(marker).then(() => true, () => false), false);
});
