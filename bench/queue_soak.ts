/**
 * Issue 11's prompt soak (also `deno run -A bench/queue_soak.ts [--quick] [--seed=N]`): 1,000 prompts
 * queued on a laptop agent for a box (`add local`), while the agent and dockd are killed with SIGKILL
 * 50 times at random moments, alternately, each restarted at once on the same state. The sessions run
 * `tests/fixtures/prompt_logger.ts`, which appends every line its terminal receives to a file; each
 * prompt's text is its queue id, so the logs tell what arrived and how often.
 *
 * Prompts are added by a loop of their own while the kills go on, each `POST /v1/queue` repeated with
 * its id until the agent answers (a repeat of an id already added returns that item). A kill happens
 * when the sessions have received a random number of lines (spread over the run, sorted), after a
 * further random delay of up to 50 ms, so kills land before, during and after sends. At the end:
 * prompts that never arrived (lost), arrivals beyond the first (duplicated), lines that are no prompt
 * (mangled), and prompts out of their session's order. The goal: 0 lost, 0 duplicated.
 *
 * `--quick`: 200 prompts and 10 kills.
 *
 * @module
 */
import { join } from "node:path";
import { AgentClient } from "../client/agent.ts";
import type { QueueItem } from "../client/wire.ts";
import {
  killProcessesUnder,
  makeDirs,
  makeRepo,
  startAgent,
  startBox,
  stopWithin,
  type TestAgent,
  type TestBox,
} from "../tests/harness.ts";
import { type Row, summarize } from "./stats.ts";

const DENO = Deno.execPath();
const LOGGER = new URL("../tests/fixtures/prompt_logger.ts", import.meta.url).pathname;
const SESSIONS = 4;
/** How long the soak waits for any progress before it gives up and counts what arrived. */
const STALL_MS = 90_000;

/** What the soak found. */
export interface SoakResult {
  prompts: number;
  kills: { agent: number; daemon: number };
  lost: number;
  duplicated: number;
  mangled: number;
  outOfOrder: number;
  /** Queue items not delivered at the end, by state (and error, for failed ones). */
  undelivered: Record<string, number>;
  wallMs: number;
  seed: number;
}

/** A small seeded generator (mulberry32), so a run that finds something can be repeated. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

async function readLines(log: string): Promise<string[]> {
  return (await Deno.readTextFile(log).catch(() => "")).split("\n").filter(Boolean);
}

/** Polls `check` every 50 ms until it is true; false when `ms` pass without it. */
async function until(check: () => Promise<boolean>, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (await check().catch(() => false)) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

/** Runs the soak: `prompts` queued, `kills` kill -9s alternating between the agent and dockd. */
export async function soakQueue(
  options: { prompts: number; kills: number; seed?: number },
): Promise<SoakResult> {
  const seed = options.seed ?? Math.floor(Math.random() * 2 ** 31);
  const rand = random(seed);
  const dirs = await makeDirs();
  const agentEnv = { DOCK_AGENT_HEALTH_MS: "200" };
  let box: TestBox | undefined;
  let agent: TestAgent | undefined;
  let client: AgentClient | undefined;
  try {
    box = await startBox({ dirs });
    agent = await startAgent(dirs, { env: agentEnv });
    client = new AgentClient({ url: agent.url, token: agent.token, origin: "soak" });
    const added = await client.addLocal("local");
    if (!added.online) throw new Error(`the local box is not online through the agent: ${added.error}`);
    const repo = await makeRepo(join(dirs.home, "work"), "app");
    await box.client.addLocation({ name: "app", path: repo });
    const names = Array.from({ length: SESSIONS }, (_, i) => `soak${i}`);
    const logs = names.map((name) => join(dirs.root, `${name}.log`));
    for (const [i, name] of names.entries()) {
      await box.client.createSession({
        location: "app",
        name,
        command: `'${DENO}' run -A --cached-only '${LOGGER}' '${logs[i]}'`,
      });
    }
    const ready = await until(async () => {
      const screens = await Promise.all(names.map((name) => box!.client.screen(name)));
      return screens.every((s) => s.screen.includes("logger ready"));
    }, 30_000);
    if (!ready) throw new Error("the prompt loggers did not start");

    const texts = Array.from({ length: options.prompts }, (_, i) => `soak-${String(i).padStart(5, "0")}`);
    const sessionOf = (i: number) => names[i % SESSIONS];
    const received = async () => (await Promise.all(logs.map(readLines))).reduce((n, l) => n + l.length, 0);
    const started = performance.now();

    // Added while the kills go on: a POST to an agent that is down (or killed while answering) is made
    // again with the same id.
    let adding = true;
    const adder = (async () => {
      for (const [i, text] of texts.entries()) {
        for (;;) {
          try {
            await client!.enqueue({ id: text, box: "local", session: sessionOf(i), text });
            break;
          } catch {
            await new Promise((r) => setTimeout(r, 20));
          }
        }
      }
      adding = false;
    })();

    const points = Array.from({ length: options.kills }, () => Math.floor(rand() * options.prompts * 0.95))
      .sort((a, b) => a - b);
    const kills = { agent: 0, daemon: 0 };
    const firstIsAgent = rand() < 0.5;
    for (const [k, point] of points.entries()) {
      // Progress, not time: a soak stuck behind a lost prompt stops killing and is counted.
      if (!await until(async () => await received() >= point, STALL_MS)) break;
      await new Promise((r) => setTimeout(r, Math.floor(rand() * 50)));
      if ((k % 2 === 0) === firstIsAgent) {
        await agent.stop({ kill: true });
        client.close();
        agent = await startAgent(dirs, { port: agent.port, env: agentEnv });
        client = new AgentClient({ url: agent.url, token: agent.token, origin: "soak" });
        kills.agent++;
      } else {
        await box.stop({ kill: true });
        box = await startBox({ dirs });
        kills.daemon++;
      }
    }
    await adder;
    // Done when every item is delivered and every line is in; or when nothing moves for STALL_MS.
    let last = -1;
    let lastChange = Date.now();
    let items: QueueItem[] = [];
    for (;;) {
      items = await client.queue().catch(() => items);
      const count = await received();
      const delivered = items.filter((i) => i.state === "delivered").length;
      if (!adding && delivered === texts.length && count >= texts.length) break;
      if (count + delivered !== last) {
        last = count + delivered;
        lastChange = Date.now();
      } else if (Date.now() - lastChange > STALL_MS) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const wallMs = performance.now() - started;

    const seen = new Map<string, number>();
    let mangled = 0;
    let outOfOrder = 0;
    const wanted = new Set(texts);
    for (const [s, log] of logs.entries()) {
      let previous = -1;
      for (const line of await readLines(log)) {
        if (!wanted.has(line)) {
          mangled++;
          continue;
        }
        seen.set(line, (seen.get(line) ?? 0) + 1);
        const index = Number(line.slice("soak-".length));
        if (sessionOf(index) !== names[s] || index < previous) outOfOrder++;
        previous = Math.max(previous, index);
      }
    }
    const undelivered: Record<string, number> = {};
    for (const item of items) {
      if (item.state === "delivered") continue;
      const key = item.error ? `${item.state} (${item.error})` : item.state;
      undelivered[key] = (undelivered[key] ?? 0) + 1;
    }
    return {
      prompts: texts.length,
      kills,
      lost: texts.filter((t) => !seen.has(t)).length,
      duplicated: [...seen.values()].reduce((n, c) => n + c - 1, 0),
      mangled,
      outOfOrder,
      undelivered,
      wallMs,
      seed,
    };
  } finally {
    client?.close();
    await stopWithin(agent);
    await stopWithin(box);
    killProcessesUnder(dirs.root);
    await Deno.remove(dirs.root, { recursive: true }).catch(() => {});
  }
}

/** One line of the result, for the table's note and the standalone print. */
export function describeSoak(result: SoakResult): string {
  const rest = Object.entries(result.undelivered).map(([state, n]) => `${n} ${state}`).join(", ");
  return `${result.prompts} prompts, ${result.kills.agent + result.kills.daemon} kills ` +
    `(${result.kills.agent} agent, ${result.kills.daemon} dockd): ${result.lost} lost, ` +
    `${result.duplicated} duplicated, ${result.mangled} mangled lines, ${result.outOfOrder} out of order` +
    `${rest ? `; not delivered: ${rest}` : ""}; ${(result.wallMs / 1000).toFixed(1)} s; seed ${result.seed}`;
}

/** The soak as a row of `deno task bench` (wall time; the counts in the note). */
export async function benchQueueSoak(options: { quick: boolean; seed?: number }): Promise<Row[]> {
  const result = await soakQueue({
    prompts: options.quick ? 200 : 1000,
    kills: options.quick ? 10 : 50,
    seed: options.seed,
  });
  return [{
    label: `Queue soak: ${result.prompts} queued prompts, ${result.kills.agent + result.kills.daemon} ` +
      `kill -9s of agent and dockd (goal 0 lost, 0 duplicated)`,
    summary: summarize([result.wallMs]),
    note: describeSoak(result),
  }];
}

if (import.meta.main) {
  const seedArg = Deno.args.find((arg) => arg.startsWith("--seed="));
  const result = await soakQueue({
    prompts: Deno.args.includes("--quick") ? 200 : 1000,
    kills: Deno.args.includes("--quick") ? 10 : 50,
    seed: seedArg ? Number(seedArg.slice("--seed=".length)) : undefined,
  });
  console.log("| prompts | kills (agent/dockd) | lost | duplicated | mangled | out of order | wall time |");
  console.log("|---|---|---|---|---|---|---|");
  console.log(
    `| ${result.prompts} | ${
      result.kills.agent + result.kills.daemon
    } (${result.kills.agent}/${result.kills.daemon}) | ` +
      `${result.lost} | ${result.duplicated} | ${result.mangled} | ${result.outOfOrder} | ` +
      `${(result.wallMs / 1000).toFixed(1)} s |`,
  );
  console.log(describeSoak(result));
}
