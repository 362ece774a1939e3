/**
 * Flows benchmarks (issue #13):
 *
 * 1. **Event → `flow.started`** with 100 enabled flows on the box (one matching the event): the real
 *    flows engine (its store in SQLite, its bus) in this process, as the daemon composes it, from the
 *    publish of the event to `flow.started` reaching a subscriber; each run finishes before the next
 *    event (a second one in the same place would be skipped). Goal p50 ≤ 5 ms.
 *    The same on a real `dockd`, from `POST events` to `flow.started` on an SSE stream, against the event
 *    itself on that stream.
 * 2. **1,000 events/s with 100 flows whose triggers do not match**: the bus's delivery lag (publish → a
 *    plain subscriber, `bench/bus_lag.ts`) with those flows and without flows. Goal: within 10 %.
 * 3. **A schedule fires within 1 s of its minute**: a real `dockd` whose schedule clock runs ahead
 *    (`DOCK_CLOCK_OFFSET_MS`) so a minute boundary comes about a second after it starts, with a
 *    `* * * * *` flow; the delay from the boundary to the `schedule.fired` event's journal time (both on
 *    this machine's clock, the offset taken back out). One sample per daemon start, each on a new minute.
 *
 * `deno run -A bench/flows.ts [--quick]` runs it alone.
 *
 * @module
 */
import { join } from "node:path";
import type { DockEvent, FlowConfig } from "../client/wire.ts";
import { killProcessesUnder, makeDirs, startBox } from "../tests/harness.ts";
import { untilEvent } from "../tests/wait.ts";
import { engine } from "../tests/flows_engine.ts";
import { busLag } from "./bus_lag.ts";
import { type Row, summarize, table } from "./stats.ts";

/** Options of {@linkcode benchFlows}. */
export interface FlowsBenchOptions {
  quick?: boolean;
  /** Only these parts (`started`, `daemon`, `storm`, `schedule`). @default {all} */
  only?: string[];
}

const FLOWS = 100;
/** How long after a daemon's start begins its schedule clock reaches a minute boundary. */
const LEAD_MS = 5000;

/** `count` enabled flows on events that never occur (`bench.miss.N`), plus those given. */
function boxFlows(count: number, extra: FlowConfig[] = []): FlowConfig[] {
  const flows: FlowConfig[] = [...extra];
  for (let i = flows.length; i < count; i++) {
    flows.push({
      id: `miss-${i}`,
      name: `miss ${i}`,
      enabled: true,
      trigger: { event: `bench.miss.${i}` },
      steps: [{ kind: "notify", title: "never" }],
    });
  }
  return flows;
}

/** The flow the measured events start: a notify step, and a budget the bench never reaches. */
const HIT: FlowConfig = {
  id: "hit",
  name: "hit",
  enabled: true,
  trigger: { event: "bench.hit" },
  steps: [{ kind: "notify", title: "{{event.i}}" }],
  max_runs_per_hour: 1_000_000,
};

async function eventToStarted(runs: number): Promise<Row[]> {
  await using e = await engine({ box: boxFlows(FLOWS, [HIT]) });
  e.flows.start();
  const samples: number[] = [];
  for (let i = 0; i < runs + 20; i++) {
    let startedAt = 0;
    const finished = new Promise<void>((resolve) => {
      const stop = e.bus.subscribe((event) => {
        if (event.type === "flow.started" && event.data?.flow === "hit") startedAt = performance.now();
        if (event.type === "flow.finished" && event.data?.flow === "hit") {
          stop();
          resolve();
        }
      });
    });
    const sent = performance.now();
    e.bus.publish({ type: "bench.hit", origin: "bench", data: { i } });
    await finished;
    if (i >= 20) samples.push(startedAt - sent); // the first 20 warm up
  }
  return [{
    label: `flows: event → flow.started, ${FLOWS} enabled flows (1 matching), in process`,
    summary: summarize(samples),
    note: "goal p50 ≤ 5 ms; the run (a notify step) finishes before the next event",
  }];
}

/**
 * Event → `flow.started` on a real `dockd` with the same 100 flows: from `POST events` to `flow.started`
 * on an SSE stream kept open, against the posted event itself arriving on that stream (no flow work).
 */
async function eventToStartedDaemon(runs: number): Promise<Row[]> {
  await using box = await startBox();
  await Deno.mkdir(box.dirs.dockHome, { recursive: true });
  await Deno.writeTextFile(
    join(box.dirs.dockHome, "flows.json"),
    JSON.stringify({ flows: boxFlows(FLOWS, [HIT]) }),
  );
  const controller = new AbortController();
  const waiters: { match: (e: DockEvent) => boolean; resolve: () => void }[] = [];
  const pump = (async () => {
    for await (const event of box.client.events({ after: 0, signal: controller.signal })) {
      for (const w of waiters.filter((w) => w.match(event))) {
        waiters.splice(waiters.indexOf(w), 1);
        w.resolve();
      }
    }
  })().catch(() => {}).finally(() => ended = true);
  // Each wait has a deadline naming what did not come (a full bench run once hung here, the stream's end
  // or an event never seen unknown): the section fails with a reason instead.
  let ended = false;
  const until = (what: string, match: (e: DockEvent) => boolean) =>
    new Promise<number>((resolve, reject) => {
      if (ended) return reject(new Error(`flows bench: the event stream ended before ${what}`));
      const timer = setTimeout(() => reject(new Error(`flows bench: no ${what} within 30 s`)), 30_000);
      waiters.push({ match, resolve: () => (clearTimeout(timer), resolve(performance.now())) });
    });
  const started: number[] = [];
  const echoed: number[] = [];
  for (let i = 0; i < runs + 20; i++) {
    const echo = until(`bench.hit ${i}`, (e) => e.type === "bench.hit" && e.data?.i === i);
    const flowStarted = until(
      `flow.started ${i}`,
      (e) => e.type === "flow.started" && e.data?.flow === "hit",
    );
    const finished = until(`flow.finished ${i}`, (e) => e.type === "flow.finished" && e.data?.flow === "hit");
    const sent = performance.now();
    await box.client.emit({ type: "bench.hit", data: { i } });
    const [echoAt, startedAt] = await Promise.all([echo, flowStarted, finished]);
    if (i < 20) continue; // warm-up
    echoed.push(echoAt - sent);
    started.push(startedAt - sent);
  }
  controller.abort();
  await Promise.race([pump, new Promise((resolve) => setTimeout(resolve, 5_000))]);
  const echo = summarize(echoed);
  return [
    {
      label: "flows: POST events → the event on SSE, real dockd (no flow work)",
      summary: echo,
      isBaseline: true,
    },
    {
      label: `flows: POST events → flow.started on SSE, real dockd, ${FLOWS} enabled flows`,
      summary: summarize(started),
      baseline: echo,
      note: "the engine's part is the difference",
    },
  ];
}

async function storm(seconds: number, rate: number): Promise<Row[]> {
  const lag = async (flows: number) => {
    await using e = await engine({ box: flows ? boxFlows(flows) : [] });
    e.flows.start();
    const result = await busLag(e.bus, { seconds, rate, type: "bench.storm" });
    await e.flows.settled();
    return result;
  };
  // Alternated, so a machine growing busier does not favour one side.
  const without = [await lag(0)];
  const withFlows = [await lag(FLOWS)];
  without.push(await lag(0));
  withFlows.push(await lag(FLOWS));
  const pick = (results: typeof without) => results.reduce((a, b) => a.lags.p50 <= b.lags.p50 ? a : b);
  const base = pick(without);
  const flows = pick(withFlows);
  return [
    {
      label: `flows: bus lag, ${rate}/s for ${seconds} s, no flows`,
      summary: base.lags,
      isBaseline: true,
      note: `${base.achieved.toFixed(0)} events/s published (better of 2 runs)`,
    },
    {
      label: `flows: bus lag, ${rate}/s for ${seconds} s, ${FLOWS} flows not matching`,
      summary: flows.lags,
      baseline: base.lags,
      note: `${flows.achieved.toFixed(0)} events/s published (better of 2 runs); goal within 10 %`,
    },
  ];
}

/** How far ahead a daemon's schedule clock must run so its `minutesAhead`-th next minute begins `leadMs` from now. */
function offsetToBoundary(leadMs: number, minutesAhead: number): number {
  const now = Date.now();
  const offset = Math.ceil(now / 60_000) * 60_000 - now - leadMs + minutesAhead * 60_000;
  return offset >= 1 ? offset : offset + 60_000;
}

async function scheduleDelay(samples: number): Promise<Row[]> {
  const dirs = await makeDirs();
  await Deno.mkdir(dirs.dockHome, { recursive: true });
  await Deno.writeTextFile(
    join(dirs.dockHome, "flows.json"),
    JSON.stringify({
      flows: [{
        id: "minute",
        name: "minute",
        enabled: true,
        trigger: { schedule: "* * * * *" },
        steps: [{ kind: "notify", title: "{{event.time}}" }],
      }],
    }),
  );
  const delays: number[] = [];
  let late = 0;
  let after = 0;
  for (let i = 0; delays.length < samples && late < samples; i++) {
    // Each start targets a later minute than the last, which the store has already seen fire; the
    // boundary comes LEAD_MS after the start begins, so the daemon waits for it on its timer.
    const offset = offsetToBoundary(LEAD_MS, i);
    const boundary = Math.ceil((Date.now() + offset) / 60_000) * 60_000 - offset;
    // Stopped, not disposed: the next start keeps the folders (and the minutes fired).
    const box = await startBox({ dirs, env: { DOCK_CLOCK_OFFSET_MS: String(offset) } });
    const ready = Date.now();
    try {
      const fired: DockEvent = await untilEvent(
        box.client,
        (e) => e.type === "schedule.fired",
        { after, timeoutMs: 75_000 },
      );
      after = fired.id ?? after;
      // Up only after the minute began (a loaded machine): it fired from its start, not its timer.
      if (ready > boundary) late++;
      else delays.push(Date.parse(fired.time) + offset - Date.parse(fired.data!.time as string));
    } finally {
      await box.stop();
    }
  }
  killProcessesUnder(dirs.root);
  await Deno.remove(dirs.root, { recursive: true }).catch(() => {});
  return [{
    label: "flows: schedule `* * * * *` → schedule.fired after its minute, real dockd",
    summary: summarize(delays),
    note: `one minute per daemon start (clock run ahead), ${late} starts too slow to count; goal ≤ 1000 ms`,
  }];
}

/** Every flows figure. */
export async function benchFlows(options: FlowsBenchOptions = {}): Promise<Row[]> {
  const quick = options.quick ?? false;
  const want = (part: string) => !options.only?.length || options.only.includes(part);
  return [
    ...want("started") ? await eventToStarted(quick ? 200 : 1000) : [],
    ...want("daemon") ? await eventToStartedDaemon(quick ? 100 : 500) : [],
    ...want("storm") ? await storm(quick ? 2 : 10, 1000) : [],
    ...want("schedule") ? await scheduleDelay(quick ? 2 : 5) : [],
  ];
}

if (import.meta.main) {
  const only = Deno.args.filter((arg) => !arg.startsWith("--"));
  console.log(table(await benchFlows({ quick: Deno.args.includes("--quick"), only })));
}
