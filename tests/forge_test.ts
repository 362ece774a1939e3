/**
 * Whole-system tests of forge-triggered flows (spec 3.5): a real dockd with real git asks a fake `gh`
 * (tests/fixtures/bin/gh) that serves JSON recorded from the real tool (tests/fixtures/gh/). Polls come
 * every 100 ms through the test knob `DOCK_FORGE_POLL_MS`; the fake logs each call with its poll number,
 * which is how the tests know a poll has passed without waiting a fixed time.
 */
import { join } from "node:path";
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import type { FlowConfig, FlowRun } from "../client/wire.ts";
import { which } from "../core/runner.ts";
import { type BoxDirs, makeDirs, makeRepo, startBox, type TestBox } from "./harness.ts";
import { until, untilEvent } from "./wait.ts";

const FAKE_BIN = new URL("./fixtures/bin", import.meta.url).pathname;
const recorded = (name: string) =>
  JSON.parse(Deno.readTextFileSync(new URL(`./fixtures/gh/${name}`, import.meta.url)));

interface Call {
  poll: number;
  folder: string;
  args: string;
}

function ghDir(dirs: BoxDirs): string {
  return join(dirs.root, "gh");
}

async function forgeBox(dirs?: BoxDirs, env: Record<string, string> = {}): Promise<TestBox> {
  dirs ??= await makeDirs();
  await Deno.mkdir(ghDir(dirs), { recursive: true });
  return await startBox({
    dirs,
    env: {
      PATH: `${FAKE_BIN}:${Deno.env.get("PATH")}`,
      FAKE_GH_DIR: ghDir(dirs),
      DOCK_FORGE_POLL_MS: "100",
      ...env,
    },
  });
}

/** Makes worktree `name`'s branch have a pull request that gh answers with `view` and `comments`. */
async function servePr(box: TestBox, name: string, view: unknown, comments: unknown = []): Promise<void> {
  const dir = join(ghDir(box.dirs), name);
  await Deno.mkdir(dir, { recursive: true });
  // Written whole, then renamed: gh never serves half a file.
  for (const [file, value] of [["pr_view.json", view], ["pr_comments.json", comments]] as const) {
    await Deno.writeTextFile(join(dir, `${file}.tmp`), JSON.stringify(value));
    await Deno.rename(join(dir, `${file}.tmp`), join(dir, file));
  }
}

/** The fake gh's record of its calls, one line each. */
function callsLog(box: TestBox): string {
  return join(ghDir(box.dirs), "calls.log");
}

async function calls(box: TestBox): Promise<Call[]> {
  const text = await Deno.readTextFile(callsLog(box)).catch(() => "");
  return text.split("\n").filter(Boolean).map((line) => {
    const [poll, folder, ...args] = line.split(" ");
    return { poll: Number(poll), folder, args: args.join(" ") };
  });
}

/** Resolves once a poll numbered at least `poll` has asked gh something. */
async function pollReached(box: TestBox, poll: number): Promise<Call[]> {
  return await until(async () => {
    const all = await calls(box);
    return all.some((c) => c.poll >= poll) && all;
  }, { watch: callsLog(box), timeoutMs: 20_000 });
}

function forgeFlow(id: string, on: string, extra: Partial<FlowConfig> = {}): FlowConfig {
  return {
    id,
    name: id,
    enabled: true,
    trigger: { forge: { on } },
    steps: [{
      kind: "notify",
      title: "{{event.author}} on {{event.file}}:{{event.line}}",
      text: "{{event.body}}",
    }],
    ...extra,
  };
}

async function writeFlows(box: TestBox, flows: FlowConfig[]): Promise<void> {
  await Deno.writeTextFile(join(box.dirs.dockHome, "flows.json"), JSON.stringify({ flows }));
}

async function withApp(box: TestBox): Promise<void> {
  const repo = await makeRepo(join(box.dirs.home, "work"), "app");
  await box.client.addLocation({ name: "app", path: repo });
}

async function runsOf(box: TestBox, flow: string): Promise<FlowRun[]> {
  return await box.client.flowRuns({ flow });
}

const NEW_LINE_COMMENT = {
  ...recorded("pr_comments.json")[0],
  id: 1845500002,
  path: "daemon/flows.ts",
  line: 7,
  original_line: 7,
  body: "$(touch pwned) and this one?",
  created_at: "2026-11-21T08:00:00Z",
  html_url: "https://github.com/octo-org/app/pull/12#discussion_r1845500002",
};

Deno.test("forge: the first look replays nothing; a new line comment is one run with its fields", async () => {
  await using box = await forgeBox();
  await withApp(box);
  await box.client.createWorktree("app", { name: "feat" });
  await servePr(box, "feat", recorded("pr_view.json"), recorded("pr_comments.json"));
  await writeFlows(box, [forgeFlow("review", "review_comment")]);
  // Poll 3 has begun only once poll 2 ended: two looks at what existed, and nothing ran.
  const early = await pollReached(box, 3);
  assertEquals(await runsOf(box, "review"), []);
  assert(early.every((c) => c.folder === "feat"), "the main checkout is never asked");
  assertEquals(
    early.filter((c) => c.poll === 1).map((c) => c.args),
    [
      "pr view --json number,url,title,state,author,comments,reviews,statusCheckRollup,mergedAt",
      "api -- repos/{owner}/{repo}/pulls/12/comments?per_page=100",
    ],
  );

  const { id: after } = await box.client.emit({ type: "test.mark" });
  await servePr(box, "feat", recorded("pr_view.json"), [...recorded("pr_comments.json"), NEW_LINE_COMMENT]);
  const event = await untilEvent(box.client, (e) => e.type === "forge.review_comment", { after });
  assertEquals(event.origin, "flow:review");
  assertEquals(event.data, {
    pr: 12,
    url: NEW_LINE_COMMENT.html_url,
    title: "Parse flows in one place",
    author: "hubot",
    body: NEW_LINE_COMMENT.body,
    file: "daemon/flows.ts",
    line: "7",
    check: "",
    state: "OPEN",
    location: "app",
    worktree: "feat",
  });
  const notify = await untilEvent(box.client, (e) => e.type === "notify", { after });
  assertEquals([notify.data?.title, notify.data?.text], [
    "hubot on daemon/flows.ts:7",
    NEW_LINE_COMMENT.body,
  ]);
  // Two more polls see the same comment again: still one run.
  const now = Math.max(...(await calls(box)).map((c) => c.poll));
  await pollReached(box, now + 2);
  const runs = await runsOf(box, "review");
  assertEquals(runs.map((r) => [r.trigger, r.status, r.location, r.worktree]), [
    ["forge.review_comment", "succeeded", "app", "feat"],
  ]);

  // Switched off, the flow forgets what it saw; switched on again, it replays nothing that came meanwhile.
  // A second forge flow keeps the polls coming while the first is off.
  const merged = forgeFlow("merged", "pr_merged");
  await writeFlows(box, [{ ...forgeFlow("review", "review_comment"), enabled: false }, merged]);
  // Once the box lists it off, every poll after the one under way forgets what the flow saw.
  await until(async () => (await box.client.flows()).flows.find((f) => f.id === "review")?.enabled === false);
  const off = Math.max(...(await calls(box)).map((c) => c.poll)) + 1;
  await pollReached(box, off + 1);
  await servePr(box, "feat", recorded("pr_view.json"), [
    ...recorded("pr_comments.json"),
    NEW_LINE_COMMENT,
    { ...NEW_LINE_COMMENT, id: 1845500003, body: "while it was off", created_at: "2026-11-21T09:00:00Z" },
  ]);
  await pollReached(box, off + 2);
  await writeFlows(box, [forgeFlow("review", "review_comment"), merged]);
  const on = await until(async () => {
    const all = await calls(box);
    return all.find((c) => c.poll > off && c.args.startsWith("api"))?.poll;
  }, { watch: callsLog(box), timeoutMs: 20_000 });
  await pollReached(box, on + 2);
  assertEquals((await runsOf(box, "review")).length, 1);
  assertEquals(await runsOf(box, "merged"), []);
});

Deno.test("forge: one poll makes at most 20 gh calls, shared between flows, and reaches every worktree", async () => {
  await using box = await forgeBox();
  await withApp(box);
  const names = Array.from({ length: 12 }, (_, i) => `w${i + 1}`);
  for (const name of names) {
    await box.client.createWorktree("app", { name });
    await servePr(box, name, recorded("pr_view.json"), recorded("pr_comments.json"));
  }
  await writeFlows(box, [forgeFlow("comments", "review_comment"), forgeFlow("reviews", "pr_review")]);
  const all = await until(async () => {
    const all = await calls(box);
    const asked = new Set(all.filter((c) => c.poll >= 1).map((c) => c.folder));
    return names.every((n) => asked.has(n)) && all.some((c) => c.poll >= 4) && all;
  }, { watch: callsLog(box), timeoutMs: 30_000 });
  const perPoll = Map.groupBy(all.filter((c) => c.poll < Math.max(...all.map((c) => c.poll))), (c) => c.poll);
  for (const [poll, made] of perPoll) {
    assert(made.length <= 20, `poll ${poll} made ${made.length} calls`);
    const views = made.filter((c) => c.args.startsWith("pr view")).map((c) => c.folder);
    assertEquals(views.length, new Set(views).size, `poll ${poll} asked a worktree twice for two flows`);
  }
  assert([...perPoll.values()].some((made) => made.length === 20), "24 calls wanted: the budget binds");
  assertEquals(await box.client.flowRuns(), []);
});

Deno.test("forge: what was seen survives a restart; what came while the daemon was down runs once", async () => {
  const dirs = await makeDirs();
  const first = await forgeBox(dirs);
  await withApp(first);
  await first.client.createWorktree("app", { name: "feat" });
  await servePr(first, "feat", recorded("pr_view.json"));
  await writeFlows(first, [forgeFlow("reviews", "pr_review")]);
  await pollReached(first, 2);
  await first.stop();

  const view = recorded("pr_view.json");
  view.reviews.push({
    ...view.reviews[0],
    id: "PRR_kwDOABCD5M6VgQ4y",
    author: { login: "monalisa" },
    body: "Good now.",
    state: "APPROVED",
    submittedAt: "2026-11-21T11:00:00Z",
  });
  await Deno.remove(join(ghDir(dirs), "calls.log"));
  await using box = await forgeBox(dirs);
  await servePr(box, "feat", view);
  const event = await untilEvent(box.client, (e) => e.type === "forge.pr_review");
  assertEquals([event.data?.author, event.data?.body, event.data?.state], [
    "monalisa",
    "Good now.",
    "APPROVED",
  ]);
  const now = Math.max(...(await calls(box)).map((c) => c.poll));
  await pollReached(box, now + 2);
  const runs = await runsOf(box, "reviews");
  assertEquals(runs.length, 1, "the review seen before the restart never runs");
  assertEquals(runs[0].status, "succeeded");
});

Deno.test({
  name: "forge: without gh, or with gh signed out, GET flows says why and nothing runs",
  ignore: which("gh") !== null, // this box has a real gh: a box without it cannot be made here
  async fn() {
    const flows = [forgeFlow("review", "review_comment"), {
      ...forgeFlow("plain", "review_comment"),
      trigger: { event: "ci.done" },
    }];
    {
      await using box = await startBox();
      await withApp(box);
      await box.client.createWorktree("app", { name: "feat" });
      await writeFlows(box, flows);
      const listed = await until(async () => {
        const state = await box.client.flows();
        return state.flows.length === 2 && state.flows;
      });
      assertStringIncludes(listed[0].inactive_reason ?? "", "no gh (GitHub CLI)");
      assertEquals(listed[1].inactive_reason, undefined);
    }
    await using box = await forgeBox(undefined, { FAKE_GH_AUTH: "no" });
    await withApp(box);
    await box.client.createWorktree("app", { name: "feat" });
    await servePr(box, "feat", recorded("pr_view.json"), recorded("pr_comments.json"));
    await writeFlows(box, flows);
    const reason = await until(async () => (await box.client.flows()).flows[0].inactive_reason);
    assertStringIncludes(reason, "not signed in");
    assertEquals(await runsOf(box, "review"), []);
  },
});
