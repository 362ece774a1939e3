/**
 * The flows engine in process, with a real store and bus and the rest of the box faked: the seam other
 * trigger sources (schedules, the forge) use to list the flows in force and start runs.
 */
import { DockError } from "../client/errors.ts";
import { assertEquals, assertRejects } from "../tests/assert.ts";
import { engine, flow } from "../tests/flows_engine.ts";
import { RUNS_KEPT } from "./flow_runs.ts";
import { CONFIG_TTL_MS } from "./flow_sources.ts";
import type { FlowsOptions } from "./flows.ts";
import { FakeClock } from "../tests/fake_clock.ts";

Deno.test("effective: the box's and each location's flows in force, enabled ones only", async () => {
  await using e = await engine({
    box: [
      flow("nightly"),
      flow("off", { enabled: false }),
      flow("here", { trigger: { schedule: "@daily", where: { location: "app" } } }),
    ],
    repo: [flow("lint"), flow("replaced"), flow("switched")],
    local: [flow("replaced", { name: "mine" }), flow("switched", { enabled: false })],
  });
  const listed = (await e.flows.effective()).map((f) => `${f.scope}:${f.flow.id}:${f.flow.name}:${f.source}`);
  assertEquals(listed.sort(), [
    "box:nightly:nightly:box",
    "repo:app:here:here:box",
    "repo:app:lint:lint:repo",
    "repo:app:replaced:mine:local",
  ]);
});

Deno.test("startTriggered: announces the event with the flow's origin and place, then runs there", async () => {
  await using e = await engine({ repo: [flow("lint")] });
  const [lint] = await e.flows.effective();
  const run = await e.flows.startTriggered({
    flow: lint,
    event: { type: "schedule.fired", data: { schedule: "@hourly", time: "2026-01-01T10:00:00.000Z" } },
    place: { location: "app", worktree: "feat" },
  });
  assertEquals([run.status, run.trigger, run.scope, run.location, run.worktree], [
    "succeeded",
    "schedule.fired",
    "repo:app",
    "app",
    "feat",
  ]);
  const fired = e.events.find((event) => event.type === "schedule.fired")!;
  assertEquals(fired.origin, "flow:lint");
  assertEquals(fired.data, {
    schedule: "@hourly",
    time: "2026-01-01T10:00:00.000Z",
    location: "app",
    worktree: "feat",
  });
  const notify = e.events.find((event) => event.type === "notify")!;
  assertEquals(notify.data?.title, "schedule.fired feat @hourly");

  const home = await e.flows.startTriggered({ flow: lint, event: { type: "schedule.fired" }, place: {} });
  assertEquals([home.status, home.location, home.worktree], ["succeeded", undefined, undefined]);
  const main = await e.flows.startTriggered({ flow: lint, event: { type: "x" }, place: { location: "app" } });
  assertEquals(main.worktree, "main");
});

Deno.test("startTriggered: an unknown place is a 404 and announces nothing", async () => {
  await using e = await engine({ repo: [flow("lint")] });
  const [lint] = await e.flows.effective();
  const error = await assertRejects(
    () =>
      e.flows.startTriggered({ flow: lint, event: { type: "schedule.fired" }, place: { location: "gone" } }),
    DockError,
  );
  assertEquals((error as DockError).status, 404);
  assertEquals(e.events.filter((event) => event.type === "schedule.fired"), []);
});

Deno.test("explainInactive: GET flows shows the first reason for enabled flows in force only", async () => {
  await using e = await engine({
    box: [flow("bad"), flow("off", { enabled: false })],
    repo: [flow("replaced")],
    local: [flow("replaced")],
  });
  e.flows.explainInactive(() => undefined);
  e.flows.explainInactive((f, scope) => `no ${f.id} in ${scope}`);
  e.flows.explainInactive(() => "never shown: an earlier reason wins");
  const listed = (await e.flows.list()).flows.map((f) => [f.id, f.source, f.inactive_reason]);
  assertEquals(listed, [
    ["bad", "box", "no bad in box"],
    ["off", "box", undefined],
    ["replaced", "repo", undefined],
    ["replaced", "local", "no replaced in repo:app"],
  ]);
});

Deno.test("a flow's own events reach the bus's later listeners after the event that started it", async () => {
  await using e = await engine({ box: [flow("hit", { trigger: { event: "bench.hit" } })] });
  e.flows.start();
  const order: string[] = [];
  const finished = new Promise<void>((resolve) => {
    e.bus.subscribe((event) => {
      order.push(event.type);
      if (event.type === "flow.finished") resolve();
    });
  });
  e.bus.publish({ type: "bench.hit", origin: "test" });
  await finished;
  assertEquals(order, ["bench.hit", "flow.started", "notify", "flow.finished"]);
});

Deno.test("runs: the last RUNS_KEPT are kept, the older ones go", async () => {
  await using e = await engine({ repo: [flow("lint", { max_runs_per_hour: 1000 })] });
  const [lint] = await e.flows.effective();
  const ids: number[] = [];
  for (let i = 0; i < RUNS_KEPT + 5; i++) {
    const run = await e.flows.startTriggered({
      flow: lint,
      event: { type: "schedule.fired", data: { schedule: "@hourly", time: "2026-01-01T10:00:00.000Z" } },
      place: { location: "app", worktree: "feat" },
    });
    assertEquals(run.status, "succeeded");
    ids.push(run.id);
  }
  const kept = e.flows.runs({ limit: 1000 }).map((run) => run.id);
  assertEquals(kept, ids.slice(5).reverse());
  assertEquals(ids.slice(0, 5).map((id) => e.flows.run(id)), [
    undefined,
    undefined,
    undefined,
    undefined,
    undefined,
  ]);
});

Deno.test("a location's config flows are read again once a second has passed on the engine's clock", async () => {
  const clock = new FakeClock(Date.parse("2026-03-02T10:00:00Z"));
  const repo = [flow("lint")];
  await using e = await engine({ repo, clock });
  const ids = async () => (await e.flows.effective()).map((f) => f.flow.id);
  assertEquals(await ids(), ["lint"]);
  repo.push(flow("test")); // the repository's config changes
  assertEquals(await ids(), ["lint"], "read less than a second ago: the cached flows");
  clock.advance(CONFIG_TTL_MS - 1);
  assertEquals(await ids(), ["lint"]);
  clock.advance(1);
  assertEquals(await ids(), ["lint", "test"]);
});

Deno.test("the hourly budget is counted on the engine's clock, and runs are dated by it", async () => {
  const start = Date.parse("2026-03-02T10:00:00Z");
  const clock = new FakeClock(start);
  await using e = await engine({ repo: [flow("capped", { max_runs_per_hour: 1 })], clock });
  const [capped] = await e.flows.effective();
  const fire = () =>
    e.flows.startTriggered({ flow: capped, event: { type: "x" }, place: { location: "app" } });
  const first = await fire();
  assertEquals([first.status, first.start], ["succeeded", new Date(start).toISOString()]);
  clock.advance(3_600_000 - 1);
  const skipped = await fire();
  assertEquals([skipped.status, skipped.reason], ["skipped", "over its budget of 1 runs per hour"]);
  clock.advance(1); // the first run is an hour old: out of the budget's window
  assertEquals((await fire()).status, "succeeded");
});

Deno.test("a wait step times out on the engine's clock: nothing waits for real time", async () => {
  const clock = new FakeClock(Date.parse("2026-03-02T10:00:00Z"));
  const waiting = Promise.withResolvers<AbortSignal>();
  const sessions = {
    get: () => {
      throw new DockError("not_found", "no session", { status: 404 });
    },
    // What Sessions.wait does at its signal: gives up, timed out.
    wait: (_name: string, options: { signal?: AbortSignal }) => {
      waiting.resolve(options.signal!);
      return new Promise((resolve) =>
        options.signal!.addEventListener("abort", () => resolve({ state: "running", timed_out: true }))
      );
    },
  } as unknown as FlowsOptions["sessions"];
  const steps = [{ kind: "wait" as const, session: "s1", timeout: "5m" }];
  await using e = await engine({ repo: [flow("waits", { steps })], clock, sessions });
  const [waits] = await e.flows.effective();
  const run = e.flows.startTriggered({ flow: waits, event: { type: "x" }, place: { location: "app" } });
  const signal = await waiting.promise;
  clock.advance(5 * 60_000 - 1);
  assertEquals(signal.aborted, false, "not before its timeout");
  clock.advance(1);
  const ended = await run;
  assertEquals(ended.status, "failed");
  assertEquals(ended.steps.map((s) => [s.status, s.error]), [["failed", "timed out"]]);
});

Deno.test("a flows file that stops parsing is logged once; the last good flows stay in force", async () => {
  await using e = await engine({ box: [flow("nightly")] });
  assertEquals((await e.flows.effective()).map((f) => f.flow.id), ["nightly"]);
  await Deno.writeTextFile(e.file, "{ not json");
  const listed = await e.flows.list();
  assertEquals(listed.flows.filter((f) => f.scope === "box").map((f) => f.id), ["nightly"]);
  assertEquals(typeof listed.error, "string");
  await e.flows.list(); // unchanged since: not said again
  assertEquals(e.log.records.map((r) => [r.level, r.message]), [
    ["error", `flows: ${listed.error} (the last good flows stay in force)`],
  ]);
});
