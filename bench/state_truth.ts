/**
 * The truth score (issue 15; `deno task bench truth`, also `deno run -A bench/state_truth.ts`): the
 * truth suite's scenarios (`tests/state_truth.ts`) on a fresh box, right states over all states checked,
 * in total (goal ≥ 99 %) and per scenario, every miss named in the notes.
 *
 * @module
 */
import { join } from "node:path";
import {
  type Check,
  runScenario,
  SCENARIOS,
  score,
  Truth,
  type TruthBox,
  truthBox,
} from "../tests/state_truth.ts";
import { benchRealAgents } from "./real_agents.ts";
import { type Row, summarize, table } from "./stats.ts";

/** Turns timed per figure. */
const TURNS = 5;

/**
 * Esc typed into dock's terminal mid-turn → the session `waiting` (goal ≤ 1.5 s: Claude reports
 * nothing, the pane check decides); the agent's program killed mid-turn → `wait` returns (goal ≤ 500 ms).
 */
async function benchReconciliation(box: TruthBox): Promise<Row[]> {
  const t = new Truth(box, "bench");
  const interrupt: number[] = [];
  const exit: number[] = [];
  for (let i = 0; i < TURNS; i++) {
    const name = `bench-esc-${i}`;
    await t.create(name);
    await t.send(name, "long work SLOW:600000");
    await t.shows(name, "thinking on prompt 1");
    const pressed = performance.now();
    await t.press(name, "\x1b");
    await box.box.client.wait(name, { states: ["waiting"], timeout: "10s" });
    interrupt.push(performance.now() - pressed);

    const doomed = `bench-exit-${i}`;
    await t.create(doomed);
    await t.send(doomed, "long work SLOW:600000");
    await t.shows(doomed, "thinking on prompt 1");
    const waited = box.box.client.wait(doomed, { states: ["finished"], timeout: "10s" });
    const socket = join(box.box.dirs.state, "box", "tmux.sock");
    const pane = await new Deno.Command("tmux", {
      args: ["-S", socket, "display-message", "-p", "-t", `=${doomed}:`, "#{pane_pid}"],
    }).output();
    const killed = performance.now();
    Deno.kill(Number(new TextDecoder().decode(pane.stdout).trim()), "SIGKILL");
    await waited;
    exit.push(performance.now() - killed);
  }
  return [
    {
      label: "Esc in dock's terminal mid-turn → waiting (goal ≤ 1.5 s)",
      summary: summarize(interrupt),
      unit: "ms",
      note: "Claude fires no Stop on Esc: the pane settling decides (turn_check.ts)",
    },
    {
      label: "agent killed mid-turn → wait returns (goal ≤ 500 ms)",
      summary: summarize(exit),
      unit: "ms",
      note: "the exit watcher polls tmux every 500 ms",
    },
  ];
}

/** Runs every scenario, one after the other, and scores them. */
export async function benchTruth(): Promise<Row[]> {
  await using box = await truthBox();
  const checks: Check[] = [];
  const rows: Row[] = [];
  for (const scenario of SCENARIOS) {
    const found = await runScenario(box, scenario);
    checks.push(...found);
    const { right, all } = score(found);
    const missed = found.filter((c) => !c.ok).map((c) => `${c.step} (${c.expected}, got ${c.actual})`);
    rows.push({
      label: `truth: ${scenario.name}`,
      summary: summarize([all ? (100 * right) / all : 0]),
      unit: "%",
      note: `${right}/${all}${missed.length ? `; missed: ${missed.join("; ")}` : ""}`,
    });
  }
  rows.push(...await benchReconciliation(box));
  // The real tools (issue 30): the suite's score per tool and the real Claude Code's hook → state.
  rows.push(...await benchRealAgents());
  const { right, all } = score(checks);
  rows.unshift({
    label: "Truth score, all scenarios (goal ≥ 99 %)",
    summary: summarize([(100 * right) / all]),
    unit: "%",
    note: `${right}/${all} states right`,
  });
  return rows;
}

if (import.meta.main) console.log(table(await benchTruth()));
