import { assertEquals } from "../tests/assert.ts";
import { forgeItems } from "./forge.ts";

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
