/**
 * Schedules: croner's reading of the spec's grammar, where a scheduled flow runs (spec 3.6), and the
 * scheduler on a clock moved by hand (no replay of missed minutes, no minute fired twice across a
 * restart), alone and over the real flows engine.
 */
import { join } from "node:path";
import { DockError } from "../client/errors.ts";
import type { FlowConfig, FlowRun } from "../client/wire.ts";
import { Store } from "../core/store.ts";
import { assert, assertEquals, assertThrows } from "../tests/assert.ts";
import { FakeClock } from "../tests/fake_clock.ts";
import { engine, flow, worktree } from "../tests/flows_engine.ts";
import {
  compileSchedule,
  firesAt,
  minuteOf,
  schedulePlaces,
  Schedules,
  type SchedulesOptions,
} from "./flow_schedule.ts";
import type { TriggeredStart } from "./flows.ts";
import type { EffectiveFlow, InactiveReason } from "./flow_sources.ts";
import { MemoryLog } from "../core/log.ts";

/** Local time, as the box reads schedules. */
function local(text: string): number {
  return new Date(text).getTime();
}

function fires(expression: string, at: string): boolean {
  return firesAt(compileSchedule(expression), local(at));
}

Deno.test("compileSchedule: *, */N, ranges, lists and the @ names, in local time", () => {
  assert(fires("* * * * *", "2026-03-02T10:07:00"));
  assert(fires("*/15 * * * *", "2026-03-02T10:45:00"));
  assert(!fires("*/15 * * * *", "2026-03-02T10:46:00"));
  assert(fires("1-5,10 9 * * *", "2026-03-02T09:10:00"));
  assert(!fires("1-5,10 9 * * *", "2026-03-02T09:06:00"));
  assert(fires("@hourly", "2026-03-02T13:00:00"));
  assert(!fires("@hourly", "2026-03-02T13:01:00"));
  for (const name of ["@daily", "@midnight"]) assert(fires(name, "2026-03-03T00:00:00"));
  assert(fires("@weekly", "2026-03-08T00:00:00")); // a Sunday
  assert(fires("@monthly", "2026-04-01T00:00:00"));
  for (const name of ["@yearly", "@annually"]) assert(fires(name, "2027-01-01T00:00:00"));
  assert(fires("0 0 * * 7", "2026-03-08T00:00:00")); // 7 is Sunday too
  // Seconds within the minute do not matter: the minute is what fires.
  assert(fires("7 10 * * *", "2026-03-02T10:07:42"));
});

Deno.test("compileSchedule: with both day fields restricted either one matching fires", () => {
  // The 1st of the month or a Monday, at 03:00.
  assert(fires("0 3 1 * 1", "2026-03-09T03:00:00")); // a Monday, not the 1st
  assert(fires("0 3 1 * 1", "2026-04-01T03:00:00")); // the 1st, a Wednesday
  assert(!fires("0 3 1 * 1", "2026-04-02T03:00:00"));
  // One restricted day field alone restricts.
  assert(!fires("0 3 1 * *", "2026-03-09T03:00:00"));
  assert(!fires("0 3 * * 1", "2026-04-01T03:00:00"));
});

Deno.test("compileSchedule: six fields or nonsense is a 400 naming the schedule", () => {
  for (const bad of ["* * * * * *", "@reboot", "61 * * * *"]) {
    const error = assertThrows(() => compileSchedule(bad), DockError) as DockError;
    assertEquals([error.code, error.status], ["invalid_schedule", 400]);
    assert(error.message.startsWith(`schedule "${bad}": `), error.message);
  }
});

const TREES = [
  worktree("app", "main", true, "main"),
  worktree("app", "feat", false, "feature/x"),
  worktree("app", "fix", false, "fix/y"),
  worktree("web", "main", true, "trunk"),
];

function places(config: Partial<FlowConfig>, scope: string): string[] {
  return schedulePlaces({ flow: flow("f", config), scope }, ["app", "web"], TREES)
    .map((p) => p.location ? `${p.location}/${p.worktree}` : "~");
}

Deno.test("schedulePlaces: once in the main checkout; each_worktree with where.branch; a box flow at home", () => {
  assertEquals(places({ trigger: { schedule: "@daily" } }, "repo:app"), ["app/main"]);
  assertEquals(places({ trigger: { schedule: "@daily", each_worktree: true } }, "repo:app"), [
    "app/main",
    "app/feat",
    "app/fix",
  ]);
  const featureOnly = { schedule: "@daily", each_worktree: true, where: { branch: "feature/*" } };
  assertEquals(places({ trigger: featureOnly }, "repo:app"), ["app/feat"]);
  const mainToo = { schedule: "@daily", each_worktree: true, where: { branch: "ma*" } };
  assertEquals(places({ trigger: mainToo }, "repo:app"), ["app/main"]);
  // Without each_worktree, where.branch still has to admit the main checkout.
  assertEquals(places({ trigger: { schedule: "@daily", where: { branch: "feature/*" } } }, "repo:app"), []);
  // A box flow: at home without a location, even with each_worktree; else in each matching location.
  assertEquals(places({ trigger: { schedule: "@daily", each_worktree: true } }, "box"), ["~"]);
  assertEquals(places({ trigger: { schedule: "@daily", where: { location: "*" } } }, "box"), [
    "app/main",
    "web/main",
  ]);
  assertEquals(places({ trigger: { schedule: "@daily", where: { location: "w*" } } }, "box"), ["web/main"]);
  // where.agent means nothing to a schedule.
  assertEquals(places({ trigger: { schedule: "@daily", where: { agent: "claude" } } }, "repo:web"), [
    "web/main",
  ]);
});

type FlowsPort = SchedulesOptions["flows"];

/** A flows engine that only records what the scheduler asks of it. */
class RecordingFlows implements FlowsPort {
  flows: EffectiveFlow[] = [];
  started: TriggeredStart[] = [];
  reasons: InactiveReason[] = [];
  effective(): Promise<EffectiveFlow[]> {
    return Promise.resolve(this.flows);
  }
  startTriggered(start: TriggeredStart): Promise<FlowRun> {
    this.started.push(start);
    return Promise.resolve({} as FlowRun);
  }
  explainInactive(reason: InactiveReason): void {
    this.reasons.push(reason);
  }
  /** What was started, as `time place` lines. */
  lines(): string[] {
    return this.started.map((s) =>
      `${s.flow.flow.id} ${(s.event.data?.time as string).slice(11, 16)} ${s.place.worktree ?? "~"}`
    );
  }
}

function scheduler(dir: string, clock: FakeClock, flows: RecordingFlows) {
  const store = new Store(join(dir, "box.db"));
  const schedules = new Schedules({
    flows,
    store,
    clock,
    log: new MemoryLog(),
    locations: { list: () => [{ name: "app", path: "/srv/app", local: null, created: "" }] },
    worktrees: { list: () => TREES.filter((w) => w.location === "app") },
  });
  return {
    schedules,
    async [Symbol.asyncDispose]() {
      schedules.close();
      await schedules.settled();
      store.close();
    },
  };
}

function effective(id: string, trigger: Record<string, unknown>): EffectiveFlow {
  return { flow: flow(id, { trigger }), scope: "repo:app", source: "repo" };
}

Deno.test("Schedules: fires at each matching minute boundary, never a minute passed before it started", async () => {
  const dir = await Deno.makeTempDir({ prefix: "dock-schedule-" });
  const clock = new FakeClock(local("2026-03-02T10:00:30"));
  const flows = new RecordingFlows();
  flows.flows = [
    effective("every", { schedule: "* * * * *" }),
    effective("quarter", { schedule: "*/15 * * * *", each_worktree: true }),
    effective("bad", { schedule: "* * * * * *" }),
  ];
  await using s = scheduler(dir, clock, flows);
  s.schedules.start();
  await s.schedules.settled();
  assertEquals(flows.lines(), []); // 10:00 began 30 s before the start: not replayed
  clock.set(local("2026-03-02T10:15:59"));
  await s.schedules.settled();
  assertEquals(flows.lines(), [
    ...["01", "02", "03", "04", "05", "06", "07", "08", "09", "10", "11", "12", "13", "14"].map((m) =>
      `every 10:${m} main`
    ),
    "every 10:15 main",
    "quarter 10:15 main",
    "quarter 10:15 feat",
    "quarter 10:15 fix",
  ]);
  const fired = flows.started.at(-1)!;
  assertEquals(fired.event, {
    type: "schedule.fired",
    data: { schedule: "*/15 * * * *", time: new Date(local("2026-03-02T10:15:00")).toISOString() },
  });
  assertEquals(flows.reasons.map((why) => why(flows.flows[2].flow, "repo:app")).map((r) => r?.slice(0, 19)), [
    'schedule "* * * * *',
  ]);
  assertEquals(flows.reasons[0](flows.flows[0].flow, "repo:app"), undefined);
  const nowhere = flow("n", { trigger: { schedule: "@daily", where: { branch: "nope/*" } } });
  assertEquals(
    flows.reasons[0](nowhere, "repo:app"),
    "no checkout on the box matches its where (location, branch)",
  );
  s.schedules.close();
  clock.advance(10 * 60_000);
  await s.schedules.settled();
  assertEquals(flows.started.length, 18); // closed: nothing more
  await Deno.remove(dir, { recursive: true });
});

Deno.test("Schedules: a restart at the boundary fires the minute once; a restart after it never again", async () => {
  const dir = await Deno.makeTempDir({ prefix: "dock-schedule-" });
  const boundary = local("2026-03-02T11:00:00");
  const flows = new RecordingFlows();
  flows.flows = [effective("hourly", { schedule: "@hourly" })];
  {
    // Started 2 s after the boundary: within the grace, so 11:00 still fires.
    await using s = scheduler(dir, new FakeClock(boundary + 2000), flows);
    s.schedules.start();
    await s.schedules.settled();
    assertEquals(flows.lines(), ["hourly 11:00 main"]);
  }
  {
    // Restarted a second later, still within the grace: 11:00 was fired already and is kept in the store.
    const clock = new FakeClock(boundary + 3000);
    await using s = scheduler(dir, clock, flows);
    s.schedules.start();
    await s.schedules.settled();
    assertEquals(flows.lines(), ["hourly 11:00 main"]);
    clock.set(boundary + 3_600_000);
    await s.schedules.settled();
    assertEquals(flows.lines(), ["hourly 11:00 main", "hourly 12:00 main"]);
  }
  assertEquals(minuteOf(boundary + 59_999), boundary);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("Schedules over the flows engine: schedule.fired starts each run, in its checkout, with the flow's origin", async () => {
  await using e = await engine({
    box: [flow("home", { trigger: { schedule: "*/5 * * * *" } })],
    repo: [
      flow("each", {
        trigger: { schedule: "0 * * * *", each_worktree: true, where: { branch: "feature/*" } },
      }),
      flow("off", { enabled: false, trigger: { schedule: "* * * * *" } }),
    ],
  });
  const clock = new FakeClock(local("2026-03-02T09:58:10"));
  const schedules = new Schedules({
    flows: e.flows,
    store: e.store,
    clock,
    log: e.log,
    locations: e.locations,
    worktrees: e.worktrees,
  });
  schedules.start();
  clock.set(local("2026-03-02T10:00:00"));
  await schedules.settled();
  await e.flows.settled();
  schedules.close();
  const fired = e.events.filter((event) => event.type === "schedule.fired")
    .map((
      event,
    ) => [event.origin, event.data?.time, event.data?.location ?? "~", event.data?.worktree ?? "~"]);
  const ten = new Date(local("2026-03-02T10:00:00")).toISOString();
  assertEquals(fired, [["flow:home", ten, "~", "~"], ["flow:each", ten, "app", "feat"]]);
  const runs = e.flows.runs({ limit: 10 }).map((
    run,
  ) => [run.flow, run.trigger, run.status, run.worktree ?? "~"]);
  assertEquals(runs.sort(), [["each", "schedule.fired", "succeeded", "feat"], [
    "home",
    "schedule.fired",
    "succeeded",
    "~",
  ]]);
  const titles = e.events.filter((event) => event.type === "notify").map((event) => event.data?.title).sort();
  assertEquals(titles, ["schedule.fired  */5 * * * *", "schedule.fired feat 0 * * * *"]);
});
