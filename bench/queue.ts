/**
 * The offline queue's section of `deno task bench`, on one real box and one real agent sharing its
 * directories (`add local`), with sessions running `cat > /dev/null` (a terminal that reads and drops
 * every line):
 *
 * - **Queue throughput, one session.** N prompts `POST /v1/queue`d (default `wait`) for one session,
 *   from the first request until the agent's merged event stream has shown every `queue.delivered`:
 *   delivered items per second. Against N plain `POST sessions/{name}/send` calls straight to the box's
 *   socket, one after another (what a person scripting the box would do).
 * - **Queue throughput, 20 sessions.** The same with N prompts spread round-robin over 20 sessions
 *   (the queue sends to sessions in parallel, one in flight each), against 20 concurrent loops of
 *   plain sends, one per session.
 *
 * Each figure is measured in several rounds, queue and plain alternating which goes first; the table
 * shows the median rate (items/s, higher is better).
 *
 * @module
 */
import { join } from "node:path";
import { AgentClient } from "../client/agent.ts";
import {
  killProcessesUnder,
  makeDirs,
  makeRepo,
  startAgent,
  startBox,
  stopWithin,
} from "../tests/harness.ts";
import { type Row, summarize } from "./stats.ts";

const SESSIONS = 20;

/** Items per second. */
function rate(items: number, ms: number): number {
  return items / (ms / 1000);
}

/** Runs the queue section; returns its rows. */
export async function benchQueue(options: { quick: boolean }): Promise<Row[]> {
  const nOne = options.quick ? 60 : 300;
  const nMany = options.quick ? 200 : 1000;
  const rounds = options.quick ? 1 : 3;
  const dirs = await makeDirs();
  let box: Awaited<ReturnType<typeof startBox>> | undefined;
  let agent: Awaited<ReturnType<typeof startAgent>> | undefined;
  let client: AgentClient | undefined;
  try {
    box = await startBox({ dirs });
    agent = await startAgent(dirs);
    client = new AgentClient({ url: agent.url, token: agent.token, origin: "bench" });
    const added = await client.addLocal("local");
    if (!added.online) throw new Error(`the local box is not online through the agent: ${added.error}`);
    const repo = await makeRepo(join(dirs.home, "work"), "app");
    await box.client.addLocation({ name: "app", path: repo });
    const names = Array.from({ length: SESSIONS }, (_, i) => `q${i}`);
    for (const name of names) {
      await box.client.createSession({ location: "app", name, command: "cat > /dev/null" });
    }
    const direct = box.client;
    const queue = client;

    /** Plain sends: `sessions.length` loops side by side, `n` sends in all. */
    const plain = async (sessions: string[], n: number, round: number) => {
      const started = performance.now();
      await Promise.all(sessions.map(async (name, s) => {
        for (let i = s; i < n; i += sessions.length) await direct.send(name, `plain-${round}-${i}`);
      }));
      return rate(n, performance.now() - started);
    };

    /** Queued sends: `n` items round-robin over `sessions`, until every one is delivered. */
    const queued = async (sessions: string[], n: number, round: number) => {
      const run = `r${round}-${sessions.length}-${crypto.randomUUID().slice(0, 8)}`;
      const mark = await queue.emit({ type: "bench.mark", data: { run } });
      const controller = new AbortController();
      let delivered = 0;
      let markAll!: () => void;
      const all = new Promise<void>((resolve) => markAll = resolve);
      const reading = (async () => {
        for await (const event of queue.events({ after: mark.id, signal: controller.signal })) {
          if (event.type !== "queue.delivered" || !String(event.data?.id).startsWith(run)) continue;
          if (++delivered === n) return markAll();
        }
      })();
      const started = performance.now();
      for (let i = 0; i < n; i++) {
        await queue.enqueue({
          id: `${run}-${i}`,
          box: "local",
          session: sessions[i % sessions.length],
          text: `queued-${round}-${i}`,
        });
      }
      const enqueued = performance.now() - started;
      const timeout = setTimeout(() => controller.abort(), 120_000);
      await Promise.race([
        all,
        reading.then(() => {
          if (delivered < n) throw new Error(`only ${delivered} of ${n} queue items delivered`);
        }),
      ]);
      const elapsed = performance.now() - started;
      clearTimeout(timeout);
      controller.abort();
      await reading.catch(() => {});
      return { rate: rate(n, elapsed), enqueueRate: rate(n, enqueued) };
    };

    // Warm-up: both paths once, briefly.
    await plain(names.slice(0, 1), 20, -1);
    await queued(names.slice(0, 1), 20, -1);

    const figures = { plainOne: [] as number[], queueOne: [] as number[], plainMany: [] as number[] };
    const queueMany: number[] = [];
    const enqueueRates: number[] = [];
    for (let round = 0; round < rounds; round++) {
      const one = names.slice(0, 1);
      const runQueue = async (sessions: string[], n: number, into: number[]) => {
        const result = await queued(sessions, n, round);
        into.push(result.rate);
        enqueueRates.push(result.enqueueRate);
      };
      if (round % 2 === 0) {
        figures.plainOne.push(await plain(one, nOne, round));
        await runQueue(one, nOne, figures.queueOne);
        figures.plainMany.push(await plain(names, nMany, round));
        await runQueue(names, nMany, queueMany);
      } else {
        await runQueue(one, nOne, figures.queueOne);
        figures.plainOne.push(await plain(one, nOne, round));
        await runQueue(names, nMany, queueMany);
        figures.plainMany.push(await plain(names, nMany, round));
      }
    }
    const plainOne = summarize(figures.plainOne);
    const plainMany = summarize(figures.plainMany);
    const enqueue = summarize(enqueueRates);
    const perSession = (summary: { p50: number }, sessions: number) =>
      `${(summary.p50 / sessions).toFixed(1)}/s per session`;
    return [
      {
        label: `Queue: plain \`POST sessions/{name}/send\` straight to the box, 1 session (N=${nOne})`,
        summary: plainOne,
        isBaseline: true,
        unit: "items/s",
        note: `median of ${rounds} rounds; sequential`,
      },
      {
        label: `Queue: \`POST /v1/queue\` → delivered, 1 session (N=${nOne})`,
        summary: summarize(figures.queueOne),
        baseline: plainOne,
        unit: "items/s",
        note: `from the first POST to the last \`queue.delivered\`; enqueueing alone ran at ` +
          `${Math.round(enqueue.p50)} items/s (median, all runs)`,
      },
      {
        label: `Queue: plain sends straight to the box, ${SESSIONS} sessions (N=${nMany})`,
        summary: plainMany,
        isBaseline: true,
        unit: "items/s",
        note: `${SESSIONS} loops side by side; ${perSession(plainMany, SESSIONS)}`,
      },
      {
        label: `Queue: \`POST /v1/queue\` → delivered, ${SESSIONS} sessions (N=${nMany})`,
        summary: summarize(queueMany),
        baseline: plainMany,
        unit: "items/s",
        note: `one in flight per session, sessions in parallel; ${
          perSession(summarize(queueMany), SESSIONS)
        }`,
      },
    ];
  } finally {
    client?.close();
    await stopWithin(agent);
    await stopWithin(box);
    killProcessesUnder(dirs.root);
    await Deno.remove(dirs.root, { recursive: true }).catch(() => {});
  }
}

if (import.meta.main) {
  // On its own (`deno run -A bench/queue.ts [--quick]`): one line per figure.
  for (const row of await benchQueue({ quick: Deno.args.includes("--quick") })) {
    const vs = row.baseline ? ` (${(row.summary.p50 / row.baseline.p50).toFixed(2)}× the plain sends)` : "";
    console.log(`${row.label}: ${row.summary.p50.toFixed(1)} ${row.unit}${vs}; ${row.note}`);
  }
}
