/**
 * Detection of worktrees made or removed outside dock, on a fake clock: each interval reads git's own
 * files, and only a changed signature asks for a reconcile (retried while it fails).
 */
import { assertEquals } from "../tests/assert.ts";
import { FakeClock } from "../tests/fake_clock.ts";
import type { Worktree } from "../client/wire.ts";
import { WorktreeWatch } from "./worktree_watch.ts";

Deno.test("WorktreeWatch: reconciles on its clock only when git's files changed, retries a failure, stops", async () => {
  const root = await Deno.makeTempDir({ prefix: "dock-watch-" });
  try {
    await Deno.mkdir(`${root}/.git`);
    await Deno.writeTextFile(`${root}/.git/HEAD`, "ref: refs/heads/main\n");
    const clock = new FakeClock(Date.parse("2026-03-02T10:00:00Z"));
    const asked: string[] = [];
    let answer = true;
    let known: Worktree[] = [];
    const watch = new WorktreeWatch({
      locations: () => [{ name: "app", path: root, local: null, created: "" }],
      worktrees: () => known,
      reconcile: (location) => {
        asked.push(location);
        return Promise.resolve(answer);
      },
      clock,
    });
    const tick = async (ms = 1000) => {
      clock.advance(ms);
      await watch.settled();
    };
    watch.start(1000);
    await tick(999);
    assertEquals(asked, [], "nothing before the first interval");
    await tick(1);
    assertEquals(asked, ["app"], "the first look reconciles");
    await tick();
    assertEquals(asked, ["app"], "nothing changed: git is not asked");

    // `git worktree add` outside dock: a new entry under .git/worktrees.
    const feat = `${root}/feat`;
    await Deno.mkdir(`${root}/.git/worktrees/feat`, { recursive: true });
    await Deno.mkdir(feat);
    await Deno.writeTextFile(`${root}/.git/worktrees/feat/gitdir`, `${feat}/.git\n`);
    answer = false; // git could not be read this time
    await tick();
    assertEquals(asked, ["app", "app"]);
    await tick();
    assertEquals(asked, ["app", "app", "app"], "a failed reconcile is tried again at the next check");
    answer = true;
    await tick();
    await tick();
    assertEquals(asked.length, 4, "once it succeeded, the same signature asks nothing");

    // A known worktree's folder removed by hand.
    known = [{ path: feat } as Worktree];
    await tick();
    assertEquals(asked.length, 5, "a known worktree is now part of the signature");
    await Deno.remove(feat, { recursive: true });
    await tick();
    assertEquals(asked.length, 6);

    watch.stop();
    await Deno.remove(`${root}/.git/worktrees`, { recursive: true });
    await tick(60_000);
    assertEquals(asked.length, 6, "stopped: no more checks");
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
