/**
 * The laptop agent's sections of `deno task bench`, each on real `dockd` and `dock agent` processes
 * and against a plain counterpart measured in the same run where there is one:
 *
 * 1. **Relay overhead.** `GET info` through the agent's relay (`AgentClient.box("local").info()`)
 *    against the same request straight to the box's unix socket, sequential (interleaved) and 50
 *    concurrent requests at once. The goal is at most 1 ms more than the direct request at p50. A
 *    bare Deno proxy (`bare_proxy.ts`) in the same rounds shows what the extra hop alone costs.
 * 2. **Events from 5 boxes.** Five `dockd` (each its own state, `DOCK_LISTEN=off`) registered with one
 *    agent as socket boxes; each box takes `POST events` paced by a timer at a target rate for a few
 *    seconds (the goal: 1,000/s per box), while 10 SSE clients read the agent's merged `GET /v1/events`.
 *    Every client must receive every emitted event exactly once; latency is emit → arrival. When the
 *    target is not sustained (the rate falls short, an event is lost, or delivery falls more than a
 *    second behind), lower rates are tried until one is, and both are reported.
 * 3. **Attach echo** (`attach_relay.ts`): one byte into `cat` until its echo shows, through agent +
 *    box, against the box's own socket and a `tmux attach` in a PTY.
 * 4. **50 paired boxes.** `GET /v1/status` latency and the agent's resident memory with no box, then
 *    with 50 real `dockd` paired over TLS by link (`POST /v1/pair/code` on each box's socket, `POST
 *    /v1/boxes/pair` on the agent), all online and followed by the event merge.
 *
 * @module
 */
import { join } from "node:path";
import { Boxes } from "../agent/boxes.ts";
import { AgentClient } from "../client/agent.ts";
import { BoxClient } from "../client/box.ts";
import { EventBus } from "../core/events.ts";
import { killGroup, launch } from "../core/runner.ts";
import { Store } from "../core/store.ts";
import {
  type BoxDirs,
  freePort,
  killProcessesUnder,
  makeDirs,
  startAgent,
  startBox,
  stopWithin,
  type TestAgent,
  type TestBox,
} from "../tests/harness.ts";
import { benchAttach } from "./attach_relay.ts";
import { ms, type Row, summarize, time } from "./stats.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** A difference with its sign: `+0.420`, `-0.130`. */
const signed = (value: number) => `${value < 0 ? "-" : "+"}${ms(Math.abs(value))}`;
/** The goal for the relay's p50 overhead over the direct request, in ms. */
const RELAY_GOAL_MS = 1;
const CONCURRENCY = 50;
const EVENT_BOXES = 5;
/** The goal rate per box, events a second. */
const EVENT_RATE = 1000;
const SSE_CLIENTS = 10;
/** `POST events` an emitter may have in flight at once (per box). */
const EMIT_IN_FLIGHT = 64;
/** How often the emitters wake up to send what has come due. */
const EMIT_TICK_MS = 10;
/** A rate counts as sustained only if every event reaches every client within this. */
const SUSTAINED_P99_MS = 1000;
const MANY_BOXES = 50;
/** Boxes started at once in the 50-box section (each start costs ~0.3 s of CPU and a certificate). */
const START_AT_ONCE = 6;

/** CPU time (user + system) a process has used so far, in ms; `self` for this one. */
function cpuMs(pid: number | "self"): number {
  const fields = Deno.readTextFileSync(`/proc/${pid}/stat`).split(") ")[1].split(" ");
  // utime and stime, in clock ticks of 10 ms (USER_HZ is 100 on Linux).
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

/** `VmRSS` of a process, in MiB. */
async function rssMiB(pid: number): Promise<number> {
  const status = await Deno.readTextFile(`/proc/${pid}/status`);
  const kib = Number(/^VmRSS:\s+(\d+)\s+kB/m.exec(status)?.[1]);
  return kib / 1024;
}

/** Stops boxes (and their services) and removes every temporary folder. */
async function cleanUp(boxes: (TestBox | undefined)[], dirs: BoxDirs[]): Promise<void> {
  await Promise.all(boxes.map((box) => stopWithin(box)));
  for (const d of dirs) {
    killProcessesUnder(d.root);
    await Deno.remove(d.root, { recursive: true }).catch(() => {});
  }
}

/** Runs `fn` over `items`, at most `limit` at once. */
async function inBatches<T, R>(items: T[], limit: number, fn: (item: T, index: number) => Promise<R>) {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      results[index] = await fn(items[index], index);
    }
  }));
  return results;
}

// ---------------------------------------------------------------------------------------------------
// 1. Relay overhead

/** Starts `bare_proxy.ts` in front of `socket`; resolves with its client once it answers. */
async function bareProxy(socket: string): Promise<{ client: BoxClient; stop(): void }> {
  const port = freePort();
  const file = new URL("./bare_proxy.ts", import.meta.url).pathname;
  const child = launch(Deno.execPath(), ["run", "-A", "--cached-only", file, socket, String(port)]);
  const client = new BoxClient({ url: `http://127.0.0.1:${port}`, box: "local", origin: "bench" });
  const stop = () => {
    client.close();
    killGroup(child.pid, "SIGKILL");
  };
  const deadline = performance.now() + 20_000;
  for (;;) {
    try {
      await client.info();
      return { client, stop };
    } catch (error) {
      if (performance.now() > deadline) {
        stop();
        throw new Error(`the bare proxy did not start: ${(error as Error).message}`);
      }
      await sleep(50);
    }
  }
}

async function benchRelay(options: { quick: boolean }): Promise<Row[]> {
  const nSequential = options.quick ? 60 : 400;
  const nBursts = options.quick ? 3 : 10;
  const warmup = options.quick ? 10 : 30;
  const dirs = await makeDirs();
  let box: TestBox | undefined;
  let agent: TestAgent | undefined;
  let client: AgentClient | undefined;
  let relayed: BoxClient | undefined;
  let bare: Awaited<ReturnType<typeof bareProxy>> | undefined;
  try {
    box = await startBox({ dirs });
    agent = await startAgent(dirs);
    client = new AgentClient({ url: agent.url, token: agent.token, origin: "bench" });
    const added = await client.addLocal();
    if (!added.online) throw new Error(`the local box is not online through the agent: ${added.error}`);
    const local = relayed = client.box("local");
    const direct = box.client;
    const rows: Row[] = [];

    // Sequential: the three paths interleaved, their order turning round after round.
    bare = await bareProxy(dirs.socket);
    const proxy = bare.client;
    const paths = [() => local.info(), () => direct.info(), () => proxy.info()];
    for (let i = 0; i < warmup; i++) await Promise.all(paths.map((path) => path()));
    const samples: number[][] = [[], [], []];
    for (let i = 0; i < nSequential; i++) {
      for (let k = 0; k < 3; k++) {
        const which = (i + k) % 3;
        samples[which].push(await time(paths[which]));
      }
    }
    const [viaAgent, straight, viaBare] = samples;
    const straightSummary = summarize(straight);
    const agentSummary = summarize(viaAgent);
    const bareSummary = summarize(viaBare);
    const overhead = agentSummary.p50 - straightSummary.p50;
    // The pairwise difference is steadier than the difference of medians on a busy machine.
    const paired = (sample: number[]) => summarize(sample.map((value, i) => value - straight[i])).p50;
    rows.push({
      label: `\`GET info\` straight to the box socket (sequential, N=${nSequential})`,
      summary: straightSummary,
      isBaseline: true,
    });
    rows.push({
      label: `\`GET /v1/boxes/local/api/info\` through the agent relay (sequential, N=${nSequential})`,
      summary: agentSummary,
      baseline: straightSummary,
      note: `p50 ${signed(overhead)} ms (median paired difference ${signed(paired(viaAgent))} ms), p99 ${
        signed(agentSummary.p99 - straightSummary.p99)
      } ms over direct; goal ≤ ${RELAY_GOAL_MS} ms p50: ${overhead <= RELAY_GOAL_MS ? "met" : "missed"}`,
    });
    rows.push({
      label: `\`GET info\` through a bare Deno proxy (bare_proxy.ts; sequential, N=${nSequential})`,
      summary: bareSummary,
      baseline: straightSummary,
      note: `the extra hop alone: p50 ${signed(bareSummary.p50 - straightSummary.p50)} ms (paired ${
        signed(paired(viaBare))
      } ms) over direct; the agent's own work is the rest`,
    });

    // 50 at once, repeated; per-request latency. The sides alternate burst by burst.
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
    return rows;
  } finally {
    bare?.stop();
    relayed?.close();
    client?.close();
    await stopWithin(agent);
    await cleanUp([box], [dirs]);
  }
}

// ---------------------------------------------------------------------------------------------------
// 2. Events from 5 boxes into 10 SSE clients

/**
 * Registers socket boxes in the registry of the agent that will run on `laptop`, before it starts: what
 * `dock add local` stores, with each box's own socket (one agent cannot share five state folders).
 */
async function registerSocketBoxes(laptop: BoxDirs, sockets: string[]): Promise<void> {
  const client = join(laptop.state, "client");
  await Deno.mkdir(client, { recursive: true, mode: 0o700 });
  const store = new Store(join(client, "agent.db"));
  const boxes = new Boxes(store, new EventBus(store));
  try {
    for (const [i, socket] of sockets.entries()) {
      const added = await boxes.add({ name: `box${i}`, kind: "socket", address: socket }, "bench");
      if (!added.online) throw new Error(`box${i} is not online: ${added.error}`);
    }
  } finally {
    boxes.close();
    store.close();
  }
}

/** One SSE client of the merged stream: counts the run's events per box and sequence, and their latency. */
interface EventReader {
  counts: Uint8Array[];
  latencies: number[];
  ready: Promise<void>;
  done: Promise<void>;
  abort(): void;
}

/**
 * Reads the agent's `GET /v1/events` until every box's end mark of `run` came by. Parsing is kept lean
 * (frames split by hand, one `JSON.parse` each): the ten clients share this process with the emitters.
 */
function eventReader(agent: TestAgent, run: string, perBox: number): EventReader {
  const controller = new AbortController();
  const counts = Array.from({ length: EVENT_BOXES }, () => new Uint8Array(perBox));
  const latencies: number[] = [];
  const ready = Promise.withResolvers<void>();
  const finished = Promise.withResolvers<void>();
  const done = (async () => {
    const response = await fetch(`${agent.url}/v1/events`, {
      headers: { authorization: `Bearer ${agent.token}` },
      signal: controller.signal,
    });
    const decoder = new TextDecoder();
    let buffered = "";
    let ends = 0;
    for await (const chunk of response.body!) {
      buffered += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = buffered.indexOf("\n\n")) >= 0) {
        const frame = buffered.slice(0, end);
        buffered = buffered.slice(end + 2);
        const at = frame.indexOf("data: ");
        if (at < 0) continue;
        const event = JSON.parse(frame.slice(at + 6));
        const data = event.data;
        if (data?.run !== run) continue;
        if (event.type === "bench.load") {
          latencies.push(performance.now() - data.t);
          if (data.seq < perBox) counts[data.box][data.seq]++;
        } else if (data.phase === "ready") {
          ready.resolve();
        } else if (data.phase === "end" && ++ends === EVENT_BOXES) {
          finished.resolve();
          return;
        }
      }
    }
  })().catch(() => {});
  return {
    counts,
    latencies,
    ready: ready.promise,
    done: Promise.race([finished.promise, done]),
    abort: () => controller.abort(),
  };
}

/** One `POST events` over a box's socket; true when the box took it. */
async function postEvent(client: Deno.HttpClient, body: unknown): Promise<boolean> {
  const response = await fetch("http://localhost/v1/events", {
    method: "POST",
    client,
    headers: { "content-type": "application/json", "x-dock-origin": "bench" },
    body: JSON.stringify(body),
  } as RequestInit);
  await response.arrayBuffer();
  return response.ok;
}

/** The result of one events phase at one target rate. */
interface EventsPhase {
  rate: number;
  seconds: number;
  /** Events each box took (its `POST events` answered 201). */
  emitted: number[];
  elapsed: number;
  lost: number;
  duplicated: number;
  errors: number;
  latencies: number[];
  sustained: boolean;
  /** CPU ms per event taken, while emitting and delivering: the boxes together, the agent, this process. */
  cpu: { boxes: number; agent: number; bench: number };
}

/**
 * One phase: every box's emitter sends what has come due every tick (at most `EMIT_IN_FLIGHT` in
 * flight), until `seconds` are over; then an end mark on each box, which a client sees only after all
 * that box's events (the merge keeps each box's order).
 */
async function eventsPhase(
  agent: TestAgent,
  boxes: TestBox[],
  clients: Deno.HttpClient[],
  rate: number,
  seconds: number,
): Promise<EventsPhase> {
  const run = crypto.randomUUID();
  const perBox = Math.round(rate * seconds);
  const readers = Array.from({ length: SSE_CLIENTS }, () => eventReader(agent, run, perBox));
  const control = new AgentClient({ url: agent.url, token: agent.token, origin: "bench" });
  try {
    // Until every stream is connected a ready mark may be missed: repeat it until all saw one.
    let allReady = false;
    Promise.all(readers.map((r) => r.ready)).then(() => allReady = true);
    const readyDeadline = performance.now() + 20_000;
    while (!allReady) {
      if (performance.now() > readyDeadline) throw new Error("SSE clients did not connect in 20 s");
      await control.emit({ type: "bench.mark", data: { run, phase: "ready" } });
      await sleep(100);
    }

    const cpuBefore = {
      boxes: boxes.reduce((sum, box) => sum + cpuMs(box.process.pid), 0),
      agent: cpuMs(agent.process.pid),
      bench: cpuMs("self"),
    };
    const emitted = new Array<number>(EVENT_BOXES).fill(0);
    // Which events each box took (its answer was 201): exactly those must reach every client.
    const taken = Array.from({ length: EVENT_BOXES }, () => new Uint8Array(perBox));
    let errors = 0;
    const started = performance.now();
    const deadline = started + seconds * 1000;
    await Promise.all(clients.map(async (client, box) => {
      const inFlight = new Set<Promise<void>>();
      let next = 0;
      while (next < perBox && performance.now() < deadline) {
        const due = Math.min(perBox, Math.floor((performance.now() - started) * rate / 1000) + 1);
        while (next < due && inFlight.size < EMIT_IN_FLIGHT) {
          const data = { run, box, seq: next++, t: performance.now() };
          const took = () => {
            emitted[box]++;
            taken[box][data.seq] = 1;
          };
          const request: Promise<void> = postEvent(client, { type: "bench.load", data })
            .then((ok) => ok ? took() : void errors++, () => void errors++)
            .finally(() => inFlight.delete(request));
          inFlight.add(request);
        }
        await sleep(EMIT_TICK_MS);
      }
      await Promise.all(inFlight);
      await postEvent(client, { type: "bench.mark", data: { run, phase: "end" } });
    }));
    const elapsed = (performance.now() - started) / 1000;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<"timeout">((resolve) => timer = setTimeout(() => resolve("timeout"), 30_000));
    const outcome = await Promise.race([Promise.all(readers.map((r) => r.done)), timeout]);
    clearTimeout(timer);
    if (outcome === "timeout") throw new Error("SSE clients did not see every end mark in 30 s");
    const total = emitted.reduce((sum, n) => sum + n, 0) || 1;
    const cpu = {
      boxes: (boxes.reduce((sum, box) => sum + cpuMs(box.process.pid), 0) - cpuBefore.boxes) / total,
      agent: (cpuMs(agent.process.pid) - cpuBefore.agent) / total,
      bench: (cpuMs("self") - cpuBefore.bench) / total,
    };

    let lost = 0;
    let duplicated = 0;
    for (const reader of readers) {
      for (let box = 0; box < EVENT_BOXES; box++) {
        for (let seq = 0; seq < perBox; seq++) {
          const count = reader.counts[box][seq];
          if (count === 0 && taken[box][seq]) lost++;
          if (count > 1) duplicated += count - 1;
        }
      }
    }
    const latencies = readers.flatMap((r) => r.latencies);
    const sustained = lost === 0 && duplicated === 0 && errors === 0 &&
      total / elapsed >= 0.95 * rate * EVENT_BOXES && summarize(latencies).p99 <= SUSTAINED_P99_MS;
    return { rate, seconds, emitted, elapsed, lost, duplicated, errors, latencies, sustained, cpu };
  } finally {
    for (const reader of readers) reader.abort();
    await Promise.allSettled(readers.map((r) => r.done));
    control.close();
  }
}

async function benchEvents(options: { quick: boolean }): Promise<Row[]> {
  const seconds = options.quick ? 1 : 3;
  const laptop = await makeDirs();
  const boxes: TestBox[] = [];
  let agent: TestAgent | undefined;
  const clients: Deno.HttpClient[] = [];
  try {
    boxes.push(...await Promise.all(Array.from({ length: EVENT_BOXES }, () => startBox())));
    await registerSocketBoxes(laptop, boxes.map((box) => box.dirs.socket));
    agent = await startAgent(laptop);
    // The emitters' own connections keep alive: the bench's emitting must cost the machine little.
    for (const box of boxes) {
      clients.push(Deno.createHttpClient({ proxy: { transport: "unix", path: box.dirs.socket } }));
    }
    const phases = [await eventsPhase(agent, boxes, clients, EVENT_RATE, seconds)];
    // Lower rates until one is sustained: the most this machine carries with nothing lost.
    for (const rate of [600, 400, 250, 150, 100, 50]) {
      if (phases.at(-1)!.sustained) break;
      phases.push(await eventsPhase(agent, boxes, clients, rate, seconds));
    }
    const best = phases.find((phase) => phase.sustained);
    const describe = (phase: EventsPhase) => {
      const total = phase.emitted.reduce((sum, n) => sum + n, 0);
      const perBox = phase.emitted.map((n) => Math.round(n / phase.elapsed));
      const latency = summarize(phase.latencies);
      return `target ${phase.rate}/s × ${EVENT_BOXES} boxes for ${phase.seconds} s: achieved ${
        Math.round(total / phase.elapsed)
      }/s in all (per box ${perBox.join(", ")}/s; ${total} events in ${phase.elapsed.toFixed(2)} s); ` +
        `${SSE_CLIENTS} clients: ${phase.lost} lost, ${phase.duplicated} duplicated, ${phase.errors} emit errors; ` +
        `p50 ${ms(latency.p50)} ms, p99 ${ms(latency.p99)} ms emit → client; CPU per event: boxes ${
          Math.round(phase.cpu.boxes * 1000)
        } µs, agent ${Math.round(phase.cpu.agent * 1000)} µs (10 clients), bench emitter + readers ${
          Math.round(phase.cpu.bench * 1000)
        } µs; ` +
        (phase.sustained
          ? "sustained"
          : `not sustained (needs ≥ 95% of the rate, none lost, p99 ≤ ${SUSTAINED_P99_MS} ms)`);
    };
    const rows: Row[] = [{
      label: `Events, ${EVENT_BOXES} boxes × ${EVENT_RATE}/s → agent SSE, ${SSE_CLIENTS} clients (the goal)`,
      summary: summarize(phases[0].latencies),
      note: describe(phases[0]),
    }];
    if (best && best !== phases[0]) {
      rows.push({
        label: `Events, ${EVENT_BOXES} boxes × ${best.rate}/s → agent SSE (highest rate sustained here)`,
        summary: summarize(best.latencies),
        note: describe(best) + `; ${EVENT_BOXES} dockd, the agent and the ${SSE_CLIENTS} clients share ` +
          `${navigator.hardwareConcurrency} CPUs`,
      });
    } else if (!best) {
      rows[0].note += `; no rate down to ${phases.at(-1)!.rate}/s was sustained on this machine`;
    }
    return rows;
  } finally {
    for (const client of clients) client.close();
    await stopWithin(agent);
    await cleanUp(boxes, [laptop, ...boxes.map((box) => box.dirs)]);
  }
}

// ---------------------------------------------------------------------------------------------------
// 3. 50 paired boxes: status latency and the agent's memory

/** `GET /v1/status` N times, after a warm-up. */
async function statusLatencies(client: AgentClient, n: number): Promise<number[]> {
  for (let i = 0; i < 20; i++) await client.status();
  const samples: number[] = [];
  for (let i = 0; i < n; i++) samples.push(await time(() => client.status()));
  return samples;
}

/** Starts a box named `name` listening for laptops on a loopback port of its own. */
async function listeningBox(name: string): Promise<TestBox> {
  const dirs = await makeDirs();
  await Deno.mkdir(dirs.dockHome, { recursive: true });
  await Deno.writeTextFile(join(dirs.dockHome, "box.json"), JSON.stringify({ name }));
  // The folder watcher has no location to watch here; slowed so 50 idle daemons stay idle.
  return await startBox({ dirs, env: { DOCK_LISTEN: "127.0.0.1:0", DOCK_WATCH_MS: "60000" } });
}

async function benchManyBoxes(options: { quick: boolean }): Promise<Row[]> {
  const nStatus = options.quick ? 50 : 300;
  const count = options.quick ? 10 : MANY_BOXES;
  const laptop = await makeDirs();
  const boxes: TestBox[] = [];
  let agent: TestAgent | undefined;
  let client: AgentClient | undefined;
  try {
    agent = await startAgent(laptop);
    client = new AgentClient({ url: agent.url, token: agent.token, origin: "bench" });
    const none = summarize(await statusLatencies(client, nStatus));
    const rssNone = await rssMiB(agent.process.pid);

    const setupStarted = performance.now();
    const names = Array.from({ length: count }, (_, i) => `b${String(i).padStart(2, "0")}`);
    // Started and paired a few at a time: all at once would only queue on the machine's two cores.
    await inBatches(names, START_AT_ONCE, async (name) => {
      const box = await listeningBox(name);
      boxes.push(box);
      const { link } = await box.client.transport.json<{ link: string }>("/v1/pair/code", {
        body: { host: "127.0.0.1" },
      });
      const status = await client!.pairBox(link);
      if (status.kind !== "tls") throw new Error(`box ${name} paired as ${status.kind}`);
    });
    const setup = (performance.now() - setupStarted) / 1000;
    const online = () => client!.status().then((s) => s.boxes.filter((b) => b.online).length);
    const onlineDeadline = performance.now() + 30_000;
    while (await online() < count) {
      if (performance.now() > onlineDeadline) {
        throw new Error(`only ${await online()} of ${count} boxes online`);
      }
      await sleep(200);
    }
    // Let the merge's event streams (one per box) settle before measuring.
    await sleep(2000);
    const many = summarize(await statusLatencies(client, nStatus));
    const rssMany = await rssMiB(agent.process.pid);
    const boxRss = await Promise.all(boxes.map((box) => rssMiB(box.process.pid)));
    const onlineNow = await online();
    const what = `${count} real \`dockd\` (own state each, TLS on a loopback port) paired by link ` +
      `through the agent, ${onlineNow} online while measured; set up in ${setup.toFixed(1)} s`;
    return [
      {
        label: `\`GET /v1/status\` on the agent, no box (N=${nStatus})`,
        summary: none,
        isBaseline: true,
      },
      {
        label: `\`GET /v1/status\` on the agent, ${count} paired boxes (N=${nStatus})`,
        summary: many,
        baseline: none,
        note: what,
      },
      { label: "Agent VmRSS, no box", summary: summarize([rssNone]), isBaseline: true, unit: "MiB" },
      {
        label: `Agent VmRSS, ${count} paired boxes`,
        summary: summarize([rssMany]),
        baseline: summarize([rssNone]),
        unit: "MiB",
        note: `${signed((rssMany - rssNone) / count)} MiB per box; each box's dockd: median ${
          ms(summarize(boxRss).p50)
        } MiB`,
      },
    ];
  } finally {
    client?.close();
    await stopWithin(agent);
    await cleanUp(boxes, [laptop, ...boxes.map((box) => box.dirs)]);
  }
}

/** The agent sections: relay overhead, events from 5 boxes, attach echo, 50 paired boxes. */
export async function benchAgent(options: { quick: boolean }): Promise<Row[]> {
  return [
    ...await benchRelay(options),
    ...await benchEvents(options),
    ...await benchAttach(options),
    ...await benchManyBoxes(options),
  ];
}
