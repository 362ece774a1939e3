/**
 * The truth score (issue 15; `deno task bench truth`, also `deno run -A bench/state_truth.ts`): the
 * truth suite's scenarios (`tests/state_truth.ts`) on a fresh box, right states over all states checked,
 * in total (goal ≥ 99 %) and per scenario, every miss named in the notes.
 *
 * @module
 */
import { type Check, runScenario, SCENARIOS, score, truthBox } from "../tests/state_truth.ts";
import { type Row, summarize, table } from "./stats.ts";

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
