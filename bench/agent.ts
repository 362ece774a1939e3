/**
 * The laptop agent's sections of `deno task bench`, each on real `dockd` and `dock agent` processes
 * and against a plain counterpart measured in the same run where there is one:
 *
 * 1. **Relay overhead.** `GET info` through the agent's relay (`AgentClient.box("local").info()`)
 *    against the same request straight to the box's unix socket, sequential (interleaved) and 50
 *    concurrent requests at once (× 10 rounds). The goals (issue 36): at most 0.5 ms more than the
 *    direct request at p50, and at most 1.2× direct at p50 with 50 at once. A bare Deno proxy
 *    (`bare_proxy.ts`, a fresh connection per request) in the same rounds shows what a hop costs.
 * 2. **Events from 5 boxes** (`events.ts`): 5 boxes × 1,000/s and × 250/s through the agent to 10
 *    SSE clients, each beside its goal, with the agent's peak memory.
 * 3. **Attach echo** (`attach_relay.ts`): one byte into `cat` until its echo shows, through agent +
 *    box, against the box's own socket and a `tmux attach` in a PTY.
 * 4. **50 paired boxes.** `GET /v1/status` latency and the agent's resident memory with no box, then
 *    with 50 real `dockd` paired over TLS by link (`POST /v1/pair/code` on each box's socket, `POST
 *    /v1/boxes/pair` on the agent), all online and followed by the event merge.
 *
 * @module
 */
import { join } from "node:path";
import { AgentClient } from "../client/agent.ts";
import { BoxClient } from "../client/box.ts";
import { killGroup, launch } from "../core/runner.ts";
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
import { benchEvents } from "./events.ts";
import { cpuMs, ms, type Row, summarize, time } from "./stats.ts";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** A difference with its sign: `+0.420`, `-0.130`. */
const signed = (value: number) => `${value < 0 ? "-" : "+"}${ms(Math.abs(value))}`;
/** The goal for the relay's p50 overhead over the direct request, in ms (issue 36). */
const RELAY_GOAL_MS = 0.5;
/** The goal for the relay's p50 with 50 requests at once, as a multiple of direct (issue 36). */
const BURST_GOAL_RATIO = 1.2;
const CONCURRENCY = 50;
const MANY_BOXES = 50;
/** Boxes started at once in the 50-box section (each start costs ~0.3 s of CPU and a certificate). */
const START_AT_ONCE = 6;

/** `VmRSS` of a process, in MiB. */
export async function rssMiB(pid: number): Promise<number> {
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
export async function inBatches<T, R>(items: T[], limit: number, fn: (item: T, index: number) => Promise<R>) {
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
async function bareProxy(socket: string): Promise<{ client: BoxClient; pid: number; stop(): void }> {
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
      return { client, pid: child.pid, stop };
    } catch (error) {
      if (performance.now() > deadline) {
        stop();
        throw new Error(`the bare proxy did not start: ${(error as Error).message}`);
      }
      await sleep(50);
    }
  }
}

export async function benchRelay(options: { quick: boolean }): Promise<Row[]> {
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

    // 50 at once, repeated; per-request latency. The three sides take turns burst by burst, and each
    // side's bursts are timed for the CPU each process spent on them: the relay's work runs in the agent
    // while dockd works too, and on two cores what three processes spend is what the wait becomes.
    const pids = { agent: agent.process.pid, box: box.process.pid, proxy: bare.pid, bench: "self" as const };
    const sides = { agent: () => local.info(), straight: () => direct.info(), proxy: () => proxy.info() };
    const bursts = { agent: [] as number[], straight: [] as number[], proxy: [] as number[] };
    const cpu = Object.fromEntries(
      Object.keys(sides).map((side) => [side, { agent: 0, box: 0, proxy: 0, bench: 0 }]),
    ) as Record<keyof typeof sides, Record<keyof typeof pids, number>>;
    const order = Object.keys(sides) as (keyof typeof sides)[];
    for (let i = 0; i < nBursts; i++) {
      for (let k = 0; k < order.length; k++) {
        const side = order[(i + k) % order.length];
        const before = Object.fromEntries(Object.entries(pids).map(([name, pid]) => [name, cpuMs(pid)]));
        bursts[side].push(...await Promise.all(Array.from({ length: CONCURRENCY }, () => time(sides[side]))));
        for (const [name, pid] of Object.entries(pids)) {
          cpu[side][name as keyof typeof pids] += cpuMs(pid) - before[name];
        }
      }
    }
    // µs a request, for the processes that spent at least 1 µs a request on that side's bursts.
    const perRequest = (side: keyof typeof sides) =>
      Object.entries(cpu[side]).map(([name, spent]) =>
        [name, spent * 1000 / (nBursts * CONCURRENCY)] as const
      )
        .filter(([, us]) => us >= 1).map(([name, us]) => `${name} ${us.toFixed(0)}`).join(", ");
    const total = (side: keyof typeof sides) =>
      Object.values(cpu[side]).reduce((sum, spent) => sum + spent, 0);
    const burstStraightSummary = summarize(bursts.straight);
    const burstAgentSummary = summarize(bursts.agent);
    const burstProxySummary = summarize(bursts.proxy);
    const burstRatio = burstAgentSummary.p50 / burstStraightSummary.p50;
    rows.push({
      label: `\`GET info\` straight to the box socket (${CONCURRENCY} at once × ${nBursts})`,
      summary: burstStraightSummary,
      isBaseline: true,
      note: `CPU µs a request: ${perRequest("straight")}`,
    });
    rows.push({
      label: `\`GET info\` through the agent relay (${CONCURRENCY} at once × ${nBursts})`,
      summary: burstAgentSummary,
      baseline: burstStraightSummary,
      note: `per-request; p50 ${signed(burstAgentSummary.p50 - burstStraightSummary.p50)} ms, p99 ${
        signed(burstAgentSummary.p99 - burstStraightSummary.p99)
      } ms over direct; goal ≤ ${BURST_GOAL_RATIO}× direct p50: ${burstRatio.toFixed(2)}×, ${
        burstRatio <= BURST_GOAL_RATIO ? "met" : "missed"
      }; CPU µs a request: ${perRequest("agent")} (${
        (total("agent") / total("straight")).toFixed(2)
      }× direct's)`,
    });
    rows.push({
      label: `\`GET info\` through a bare Deno proxy (${CONCURRENCY} at once × ${nBursts})`,
      summary: burstProxySummary,
      baseline: burstStraightSummary,
      note: `the plain hop at the same load: ${
        (burstProxySummary.p50 / burstStraightSummary.p50).toFixed(2)
      }× direct p50; CPU µs a request: ${perRequest("proxy")} (${
        (total("proxy") / total("straight")).toFixed(2)
      }× direct's)`,
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
// 3. 50 paired boxes: status latency and the agent's memory

/** `GET /v1/status` N times, after a warm-up. */
export async function statusLatencies(client: AgentClient, n: number): Promise<number[]> {
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
