/**
 * The laptop agent's sections of `deno task bench`, on one real box and one real agent sharing its
 * directories (`add local`), each against a plain counterpart measured in the same run:
 *
 * 1. **Relay overhead.** `GET info` through the agent's relay (`AgentClient.box("local").info()`)
 *    against the same request straight to the box's unix socket, sequential (interleaved) and 50
 *    concurrent requests at once. The goal is at most 1 ms more than the direct request at p50.
 * 2. **Events.** 5 concurrent emitters each POSTing 1000 events/s to the box for 2 s, read by 10 SSE
 *    clients on the agent's merged stream, against the same 10 clients on the box's own stream: every
 *    client must receive every event exactly once; delivery latency is emit → arrival.
 * 3. **Status.** `GET /v1/status` latency with one box, and the agent's resident memory (the box
 *    daemon's beside it). Many boxes need the TLS pairing path, which this section does not yet drive.
 *
 * @module
 */
import { AgentClient } from "../client/agent.ts";
import { BoxClient } from "../client/box.ts";
import type { DockEvent } from "../client/wire.ts";
import { killProcessesUnder, makeDirs, startAgent, startBox } from "../tests/harness.ts";
import { ms, type Row, summarize, time } from "./stats.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** A difference with its sign: `+0.420`, `-0.130`. */
const signed = (value: number) => `${value < 0 ? "-" : "+"}${ms(Math.abs(value))}`;
/** The goal for the relay's p50 overhead over the direct request, in ms. */
const RELAY_GOAL_MS = 1;
const EMITTERS = 5;
const EMIT_RATE = 1000;
const SSE_CLIENTS = 10;
const CONCURRENCY = 50;
/** Requests an emitter may have in flight at once, so one slow answer does not stall its pace. */
const EMIT_IN_FLIGHT = 8;

/** `VmRSS` of a process, in MiB. */
async function rssMiB(pid: number): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  const kib = Number(/^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1]);
  return kib / 1024;
}

/** Stops a box or agent gracefully, killing it when that takes more than `ms` (open connections). */
async function stopWithin(
  handle: { process: Deno.ChildProcess; stop(): Promise<void> } | undefined,
  ms = 5000,
): Promise<void> {
  if (!handle) return;
  const timer = setTimeout(() => {
    try {
      handle.process.kill("SIGKILL");
    } catch { /* gone */ }
  }, ms);
  await handle.stop().catch(() => {});
  clearTimeout(timer);
}

/** What one SSE client of the events section saw. */
interface Reader {
  /** `emitter:seq` → times received. */
  counts: Map<string, number>;
  latencies: number[];
  ready: Promise<void>;
  done: Promise<void>;
  abort(): void;
}

/** Reads `stream` until the run's end mark, counting the run's load events and timing them. */
function reader(
  run: string,
  subscribe: (signal: AbortSignal) => AsyncGenerator<DockEvent>,
): Reader {
  const controller = new AbortController();
  const counts = new Map<string, number>();
  const latencies: number[] = [];
  let markReady!: () => void;
  const ready = new Promise<void>((resolve) => markReady = resolve);
  const done = (async () => {
    for await (const event of subscribe(controller.signal)) {
      const data = event.data ?? {};
      if (data.run !== run) continue;
      if (event.type === "bench.mark") {
        if (data.phase === "ready") markReady();
        if (data.phase === "end") return;
      } else if (event.type === "bench.load") {
        latencies.push(performance.now() - (data.t as number));
        const key = `${data.emitter}:${data.seq}`;
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
    }
  })();
  return { counts, latencies, ready, done, abort: () => controller.abort() };
}

/** Result of one events phase. */
interface EventsResult {
  latencies: number[];
  emitted: number;
  rate: number;
  /** Seconds the emitters took (more than asked when they could not keep the pace). */
  elapsed: number;
  lost: number;
  duplicated: number;
  emitErrors: number;
}

/**
 * One events phase: `SSE_CLIENTS` readers made by `subscribe`, `EMITTERS` emitters POSTing to the
 * box at `EMIT_RATE` each for `seconds`, then an end mark every reader must see.
 */
async function eventsPhase(
  socket: string,
  subscribe: (signal: AbortSignal) => AsyncGenerator<DockEvent>,
  seconds: number,
): Promise<EventsResult> {
  const run = crypto.randomUUID();
  const control = new BoxClient({ socket, origin: "bench" });
  const readers = Array.from({ length: SSE_CLIENTS }, () => reader(run, subscribe));
  try {
    // Until every stream is connected, a ready mark may be missed: repeat it until all saw one.
    const allReady = Promise.all(readers.map((r) => r.ready));
    let readyDone = false;
    allReady.then(() => readyDone = true);
    const readyDeadline = performance.now() + 20_000;
    while (!readyDone) {
      if (performance.now() > readyDeadline) throw new Error("SSE clients did not connect in 20 s");
      await control.emit({ type: "bench.mark", data: { run, phase: "ready" } });
      await Promise.race([allReady, sleep(100)]);
    }

    const perEmitter = Math.round(EMIT_RATE * seconds);
    const interval = 1000 / EMIT_RATE;
    let emitted = 0;
    let emitErrors = 0;
    const started = performance.now();
    await Promise.all(Array.from({ length: EMITTERS }, async (_, emitter) => {
      const client = new BoxClient({ socket, origin: "bench" });
      const inFlight = new Set<Promise<void>>();
      try {
        for (let seq = 0; seq < perEmitter; seq++) {
          const due = started + seq * interval;
          const wait = due - performance.now();
          if (wait > 1) await sleep(wait);
          while (inFlight.size >= EMIT_IN_FLIGHT) await Promise.race(inFlight);
          const t = performance.now();
          const request: Promise<void> = client
            .emit({ type: "bench.load", data: { run, emitter, seq, t } })
            .then(() => void emitted++, () => void emitErrors++)
            .finally(() => inFlight.delete(request));
          inFlight.add(request);
        }
        await Promise.all(inFlight);
      } finally {
        client.close();
      }
    }));
    const elapsed = (performance.now() - started) / 1000;
    await control.emit({ type: "bench.mark", data: { run, phase: "end" } });
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<"timeout">((resolve) => timer = setTimeout(() => resolve("timeout"), 30_000));
    const outcome = await Promise.race([Promise.all(readers.map((r) => r.done)), timeout]);
    clearTimeout(timer);
    if (outcome === "timeout") throw new Error("SSE clients did not see the end mark in 30 s");

    let lost = 0;
    let duplicated = 0;
    for (const r of readers) {
      for (let emitter = 0; emitter < EMITTERS; emitter++) {
        for (let seq = 0; seq < perEmitter; seq++) {
          const count = r.counts.get(`${emitter}:${seq}`) ?? 0;
          if (count === 0) lost++;
          if (count > 1) duplicated += count - 1;
        }
      }
    }
    return {
      latencies: readers.flatMap((r) => r.latencies),
      emitted,
      rate: emitted / elapsed,
      elapsed,
      lost,
      duplicated,
      emitErrors,
    };
  } finally {
    for (const r of readers) r.abort();
    await Promise.allSettled(readers.map((r) => r.done));
    control.close();
  }
}

/** The agent sections: relay overhead, event merge, status and memory. */
export async function benchAgent(options: { quick: boolean }): Promise<Row[]> {
  const nSequential = options.quick ? 60 : 300;
  const nBursts = options.quick ? 3 : 10;
  const nStatus = options.quick ? 50 : 200;
  const eventSeconds = options.quick ? 0.5 : 2;
  const warmup = options.quick ? 10 : 30;

  const dirs = await makeDirs();
  const rows: Row[] = [];
  let box: Awaited<ReturnType<typeof startBox>> | undefined;
  let agent: Awaited<ReturnType<typeof startAgent>> | undefined;
  let client: AgentClient | undefined;
  let relayed: BoxClient | undefined;
  try {
    box = await startBox({ dirs });
    agent = await startAgent(dirs);
    client = new AgentClient({ url: agent.url, token: agent.token, origin: "bench" });
    const added = await client.addLocal();
    if (!added.online) throw new Error(`the local box is not online through the agent: ${added.error}`);
    const local = relayed = client.box("local");
    const direct = box.client;

    // 1. Relay overhead, sequential: interleaved, which side goes first alternating.
    for (let i = 0; i < warmup; i++) await Promise.all([local.info(), direct.info()]);
    const viaAgent: number[] = [];
    const straight: number[] = [];
    for (let i = 0; i < nSequential; i++) {
      if (i % 2 === 0) {
        viaAgent.push(await time(() => local.info()));
        straight.push(await time(() => direct.info()));
      } else {
        straight.push(await time(() => direct.info()));
        viaAgent.push(await time(() => local.info()));
      }
    }
    const straightSummary = summarize(straight);
    const agentSummary = summarize(viaAgent);
    const overhead = agentSummary.p50 - straightSummary.p50;
    rows.push({
      label: `\`GET info\` straight to the box socket (sequential, N=${nSequential})`,
      summary: straightSummary,
      isBaseline: true,
    });
    rows.push({
      label: `\`GET /v1/boxes/local/api/info\` through the agent relay (sequential, N=${nSequential})`,
      summary: agentSummary,
      baseline: straightSummary,
      note:
        `p50 ${signed(overhead)} ms, p99 ${signed(agentSummary.p99 - straightSummary.p99)} ms over direct; ` +
        `goal ≤ ${RELAY_GOAL_MS} ms p50: ${overhead <= RELAY_GOAL_MS ? "met" : "missed"}`,
    });

    // 1b. 50 at once, repeated; per-request latency. The sides alternate burst by burst.
    const burst = async (fn: () => Promise<unknown>, into: number[]) => {
      into.push(...await Promise.all(Array.from({ length: CONCURRENCY }, () => time(fn))));
    };
    const burstAgent: number[] = [];
    const burstStraight: number[] = [];
    for (let i = 0; i < nBursts; i++) {
      if (i % 2 === 0) {
        await burst(() => local.info(), burstAgent);
        await burst(() => direct.info(), burstStraight);
      } else {
        await burst(() => direct.info(), burstStraight);
        await burst(() => local.info(), burstAgent);
      }
    }
    const burstStraightSummary = summarize(burstStraight);
    const burstAgentSummary = summarize(burstAgent);
    rows.push({
      label: `\`GET info\` straight to the box socket (${CONCURRENCY} at once × ${nBursts})`,
      summary: burstStraightSummary,
      isBaseline: true,
    });
    rows.push({
      label: `\`GET info\` through the agent relay (${CONCURRENCY} at once × ${nBursts})`,
      summary: burstAgentSummary,
      baseline: burstStraightSummary,
      note: `per-request; p50 ${signed(burstAgentSummary.p50 - burstStraightSummary.p50)} ms, p99 ${
        signed(burstAgentSummary.p99 - burstStraightSummary.p99)
      } ms over direct`,
    });

    // 2. Events: the box's own stream first (baseline), then the agent's merged one.
    const socket = dirs.socket;
    const url = agent.url;
    const token = agent.token;
    const eventsNote = (result: EventsResult) => {
      const target = EMITTERS * EMIT_RATE;
      const ok = result.lost === 0 && result.duplicated === 0 && result.emitErrors === 0;
      return `${result.emitted} events from ${EMITTERS} emitters in ${
        result.elapsed.toFixed(2)
      } s (asked ${eventSeconds} s), ` +
        `${Math.round(result.rate)}/s achieved (target ${target}/s); ${SSE_CLIENTS} clients: ` +
        `${result.lost} lost, ${result.duplicated} duplicated, ${result.emitErrors} emit errors` +
        (ok ? " (each event exactly once)" : " (NOT exactly once)");
    };
    const onBox = await eventsPhase(socket, async function* (signal) {
      const sub = new BoxClient({ socket, origin: "bench" });
      try {
        yield* sub.events({ signal });
      } finally {
        sub.close();
      }
    }, eventSeconds);
    const onBoxSummary = summarize(onBox.latencies);
    rows.push({
      label: `Event delivery emit → box SSE (${SSE_CLIENTS} clients straight on the box)`,
      summary: onBoxSummary,
      isBaseline: true,
      note: eventsNote(onBox),
    });
    const onAgent = await eventsPhase(socket, async function* (signal) {
      const sub = new AgentClient({ url, token, origin: "bench" });
      try {
        yield* sub.events({ signal });
      } finally {
        sub.close();
      }
    }, eventSeconds);
    const onAgentSummary = summarize(onAgent.latencies);
    rows.push({
      label: `Event delivery emit → agent SSE (${SSE_CLIENTS} clients on the merged stream)`,
      summary: onAgentSummary,
      baseline: onBoxSummary,
      note: eventsNote(onAgent) + `; p50 ${signed(onAgentSummary.p50 - onBoxSummary.p50)} ms over the box`,
    });

    // 3. Status and memory with one box.
    for (let i = 0; i < warmup; i++) await client.status();
    const status: number[] = [];
    for (let i = 0; i < nStatus; i++) status.push(await time(() => client!.status()));
    rows.push({
      label: `\`GET /v1/status\` on the agent, 1 box (N=${nStatus})`,
      summary: summarize(status),
      baseline: straightSummary,
      note: "compared with the direct `GET info` above; 50 boxes need paired TLS boxes " +
        "(the pairing path), left for the next session",
    });
    const boxRss = await rssMiB(box.process.pid);
    const agentRss = await rssMiB(agent.process.pid);
    rows.push({
      label: "Box daemon VmRSS (after the runs above)",
      summary: summarize([boxRss]),
      isBaseline: true,
      unit: "MiB",
    });
    rows.push({
      label: "Agent VmRSS, 1 box (after the runs above)",
      summary: summarize([agentRss]),
      baseline: summarize([boxRss]),
      unit: "MiB",
      note: "one box paired with `add local`; 50 paired boxes need the TLS pairing path (next session)",
    });
    return rows;
  } finally {
    relayed?.close();
    client?.close();
    await stopWithin(agent);
    await stopWithin(box);
    killProcessesUnder(dirs.root);
    await Deno.remove(dirs.root, { recursive: true }).catch(() => {});
  }
}
