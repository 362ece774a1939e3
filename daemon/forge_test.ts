import { assertEquals } from "../tests/assert.ts";
import { Forge, forgeItems } from "./forge.ts";
import { join } from "../core/posix_path.ts";
import type { Worktree } from "../client/wire.ts";
import { Store } from "../core/store.ts";
import { MemoryLog } from "../core/log.ts";
import { FakeClock } from "../tests/fake_clock.ts";
import { BOX_SCHEMA } from "./schema.ts";
import type { EffectiveFlow } from "./flow_sources.ts";

const fixture = (name: string) =>
  JSON.parse(Deno.readTextFileSync(new URL(`../tests/fixtures/gh/${name}`, import.meta.url)));

Deno.test("forgeItems: recorded gh answers become items in the order they happened", () => {
  const items = forgeItems(fixture("pr_view.json"), fixture("pr_comments.json"));
  assertEquals(items.map((i) => [i.on, i.key]), [
    ["review_comment", "comment:IC_kwDOABCD5M5xY1aA"],
    ["review_comment", "line:1845500001"],
    ["pr_review", "review:PRR_kwDOABCD5M6VgQ3x"],
  ]);
  assertEquals(items[1].data, {
    pr: 12,
    url: "https://github.com/octo-org/app/pull/12#discussion_r1845500001",
    title: "Parse flows in one place",
    author: "hubot",
    body: "This throws on an empty file.",
    file: "core/parse.ts",
    line: "14",
    check: "",
    state: "OPEN",
  });
  assertEquals([items[2].data.state, items[2].data.author], ["CHANGES_REQUESTED", "hubot"]);
});

Deno.test("forgeItems: failed, timed-out and waiting checks; a rerun is a new item; a merge", () => {
  const view = fixture("pr_view.json");
  view.statusCheckRollup[0].conclusion = "FAILURE";
  view.statusCheckRollup[1].state = "ERROR";
  view.statusCheckRollup.push({ ...view.statusCheckRollup[0], name: "e2e", conclusion: "TIMED_OUT" });
  view.statusCheckRollup.push({ ...view.statusCheckRollup[0], name: "cancelled", conclusion: "CANCELLED" });
  view.reviews.push({ ...view.reviews[0], id: "PRR_draft", state: "PENDING" });
  view.state = "MERGED";
  view.mergedAt = "2026-11-21T10:00:00Z";
  const items = forgeItems(view);
  const checks = items.filter((i) => i.on === "check_failed");
  assertEquals(checks.map((i) => [i.data.check, i.data.state]), [
    ["ci/circleci: build", "ERROR"],
    ["lint", "FAILURE"],
    ["e2e", "TIMED_OUT"],
  ]);
  assertEquals(checks[1].data.url, view.statusCheckRollup[0].detailsUrl);
  const rerun = structuredClone(view);
  rerun.statusCheckRollup[0].detailsUrl += "0";
  const again = forgeItems(rerun).find((i) => i.data.check === "lint")!;
  assertEquals(again.key === checks[1].key, false);
  assertEquals(items.filter((i) => i.on === "pr_review").length, 1, "a pending review is its author's draft");
  const merged = items.at(-1)!;
  assertEquals([merged.on, merged.key, merged.data.state, merged.data.author], [
    "pr_merged",
    "merged",
    "MERGED",
    "octocat",
  ]);
});

Deno.test("Forge: a forge flow is due every `poll` on the forge's clock, looked for each tick; close stops it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "dock-forge-" });
  const store = new Store(join(dir, "box.db"), { schema: BOX_SCHEMA });
  try {
    // A gh that counts its calls and answers that the branch has no pull request.
    const gh = join(dir, "gh");
    const calls = join(dir, "calls");
    await Deno.writeTextFile(
      gh,
      `#!/bin/sh\necho "$*" >> '${calls}'\necho 'no pull requests found' >&2\nexit 1\n`,
    );
    await Deno.chmod(gh, 0o755);
    const count = async () =>
      (await Deno.readTextFile(calls).catch(() => "")).split("\n").filter(Boolean).length;
    const flow: EffectiveFlow = {
      flow: {
        id: "reviews",
        name: "reviews",
        enabled: true,
        trigger: { forge: { on: "pr_review", poll: "2m" } },
        steps: [{ kind: "notify", title: "x" }],
      },
      scope: "repo:app",
      source: "repo",
    };
    const worktree = (name: string, main: boolean, branch: string): Worktree => ({
      name,
      location: "app",
      path: dir,
      branch,
      main,
      origin: "dock",
      ports: [],
      setup: { state: "none" },
      created: "2026-03-02T10:00:00.000Z",
    });
    const clock = new FakeClock(Date.parse("2026-03-02T10:00:00Z"));
    const log = new MemoryLog();
    const forge = new Forge({
      flows: {
        effective: () => Promise.resolve([flow]),
        startTriggered: () => Promise.reject(new Error("nothing starts here")),
        explainInactive: () => {},
      },
      worktrees: { list: () => [worktree("app", true, "main"), worktree("feat", false, "feature/x")] },
      store,
      gh: () => gh,
      clock,
      log,
    });
    const tick = async (ms: number) => {
      clock.advance(ms);
      await forge.settled();
    };
    forge.start();
    await tick(15_000 - 1);
    assertEquals(await count(), 0, "nothing before the first tick");
    await tick(1);
    assertEquals(await count(), 1, "the first tick asks about the one worktree off the default branch");
    await tick(15_000 * 7); // 1m45s after that poll: not due yet
    assertEquals(await count(), 1);
    await tick(15_000); // two minutes after it: due again
    assertEquals(await count(), 2);
    forge.close();
    await tick(10 * 60_000);
    assertEquals(await count(), 2, "closed: nothing more is asked");
    assertEquals(log.records, []);
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
});
