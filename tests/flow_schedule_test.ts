/**
 * Whole-system test of schedules: a real dockd with real git whose schedule clock runs ahead
 * (`DOCK_CLOCK_OFFSET_MS`, the test knob) so a minute boundary comes a second after it starts. The
 * finer rules (no replay, the grace at start, the places of spec 3.6) are driven by hand in
 * `daemon/flow_schedule_test.ts`; this one shows them holding in the daemon.
 */
import { join } from "node:path";
import { assertEquals, assertStringIncludes } from "./assert.ts";
import type { DockEvent, FlowConfig } from "../client/wire.ts";
import { makeRepo, startBox, type TestBox } from "./harness.ts";
import { untilEvent } from "./wait.ts";

/** How far ahead the daemon's schedule clock must run so its next minute begins `leadMs` from now. */
function offsetToBoundary(leadMs: number): number {
  const now = Date.now();
  const offset = Math.ceil(now / 60_000) * 60_000 - now - leadMs;
  return offset >= 1 ? offset : offset + 60_000;
}

async function writeFlows(box: TestBox, flows: FlowConfig[]): Promise<void> {
  await Deno.mkdir(box.dirs.dockHome, { recursive: true });
  await Deno.writeTextFile(join(box.dirs.dockHome, "flows.json"), JSON.stringify({ flows }));
}

function scheduled(id: string, trigger: Record<string, unknown>): FlowConfig {
  return {
    id,
    name: id,
    enabled: true,
    trigger,
    steps: [{ kind: "run", command: 'echo {{event.schedule}} {{event.time}} "$PWD"' }],
  };
}

/** Every minute: in each worktree of `app` on a `feature/` branch, and once at home. */
const everyMinute = [
  scheduled("each", {
    schedule: "* * * * *",
    each_worktree: true,
    where: { location: "app", branch: "feature/*" },
  }),
  scheduled("home", { schedule: "* * * * *" }),
];

Deno.test("schedules: each matching worktree and home fire at the minute; a restart never fires it twice", async () => {
  const first = await startBox();
  const dirs = first.dirs;
  const repo = await makeRepo(join(dirs.home, "work"), "app", {});
  await first.client.addLocation({ name: "app", path: repo });
  const feat = await first.client.createWorktree("app", { name: "feat", branch: "feature/a" });
  await first.client.createWorktree("app", { name: "other", branch: "other" });
  await writeFlows(first, [
    ...everyMinute,
    scheduled("nowhere", { schedule: "@hourly", where: { location: "app", branch: "nope/*" } }),
  ]);
  const listed = Object.fromEntries((await first.client.flows()).flows.map((f) => [f.id, f.inactive_reason]));
  assertEquals(listed, {
    each: undefined,
    home: undefined,
    nowhere: "no checkout on the box matches its where (location, branch)",
  });
  const listing = await first.cli(["flow", "list"]);
  assertEquals(listing.code, 0, listing.stderr);
  assertStringIncludes(
    listing.stdout,
    "nowhere (repo:app) cannot run: no checkout on the box matches its where (location, branch)",
  );
  const last = (await first.client.emit({ type: "test.mark" })).id;
  await first.stop();

  const env = { DOCK_CLOCK_OFFSET_MS: String(offsetToBoundary(1000)) };
  const second = await startBox({ dirs, env });
  const isFired = (flow: string) => (e: DockEvent) =>
    e.type === "schedule.fired" && e.origin === `flow:${flow}`;
  const fired = await untilEvent(second.client, isFired("each"), { after: last, timeoutMs: 75_000 });
  assertEquals([fired.data?.location, fired.data?.worktree, fired.data?.schedule], [
    "app",
    "feat",
    "* * * * *",
  ]);
  const home = await untilEvent(second.client, isFired("home"), { after: last, timeoutMs: 75_000 });
  assertEquals([home.data?.location, home.data?.time], [undefined, fired.data?.time]);
  const done = await untilEvent(
    second.client,
    (e) => e.type === "flow.finished" && e.data?.flow === "each",
    { after: fired.id, timeoutMs: 30_000 },
  );
  assertEquals(done.data?.status, "succeeded");
  const [run] = await second.client.flowRuns({ flow: "each" });
  assertEquals([run.trigger, run.worktree], ["schedule.fired", "feat"]);
  const output = run.steps[0].output ?? "";
  assertEquals(output.trim(), `* * * * * ${fired.data?.time} ${await Deno.realPath(feat.path)}`);
  await second.stop();

  // Restarted at once, most likely still within the start grace of the same minute: what fired there
  // is kept, so no flow fires that minute again. A flow added meanwhile marks the restart's first minute.
  await writeFlows(second, [
    ...everyMinute,
    scheduled("marker", { schedule: "* * * * *" }),
  ]);
  await using third = await startBox({ dirs, env });
  const marker = await untilEvent(third.client, isFired("marker"), { after: last, timeoutMs: 75_000 });
  const all: DockEvent[] = [];
  for await (const event of third.client.events({ after: last, signal: AbortSignal.timeout(10_000) })) {
    if (event.type === "schedule.fired") all.push(event);
    if (event.id === marker.id) break;
  }
  const keys = all.map((e) => `${e.origin} ${e.data?.worktree ?? "~"} ${e.data?.time}`);
  assertEquals(keys.length, new Set(keys).size, `a minute fired twice: ${keys.join(", ")}`);
});
