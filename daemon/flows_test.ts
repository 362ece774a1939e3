/**
 * The flows engine in process, with a real store and bus and the rest of the box faked: the seam other
 * trigger sources (schedules, the forge) use to list the flows in force and start runs.
 */
import { DockError } from "../client/errors.ts";
import { assertEquals, assertRejects } from "../tests/assert.ts";
import { engine, flow } from "../tests/flows_engine.ts";
import { RUNS_KEPT } from "./flows.ts";

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
