/**
 * The real-agent rows of `deno task bench truth` (issue 30): the real-agent suite's score (scenarios
 * passed, per tool, `tests/real_agents/scenarios.ts`), and how soon a state reported by the real Claude
 * Code's hook is visible: the hook command `dockd integrations install claude` wrote, run as Claude Code
 * runs it (`sh -c`, the payload on stdin, in the session's environment), then `GET sessions/{name}`
 * asked until the state shows, timed from the hook process's exit (goal ≤ 5 ms).
 *
 * @module
 */
import { join } from "node:path";
import { installTools } from "../tests/real_agents/install.ts";
import { RealBox, runScenario, scenariosOf } from "../tests/real_agents/scenarios.ts";
import { REAL_TOOLS } from "../tests/real_agents/tools.ts";
import { type Row, summarize, table } from "./stats.ts";

/** Hook runs timed. */
const HOOK_RUNS = 20;

/** The suite's score per tool, and the hook → state figure on the real Claude Code's box. */
export async function benchRealAgents(): Promise<Row[]> {
  const installed = await installTools();
  if (!installed.ok) {
    return [{
      label: "real agents",
      summary: summarize([0]),
      unit: "%",
      note: `skipped: ${installed.reason}`,
    }];
  }
  const rows: Row[] = [];
  for (const tool of Object.values(REAL_TOOLS)) {
    await using t = await RealBox.start(tool, installed.tools);
    const scenarios = scenariosOf(tool);
    const failed: string[] = [];
    for (const scenario of scenarios) {
      const checks = await runScenario(t, scenario);
      const wrong = checks.filter((c) => !c.ok);
      if (wrong.length) {
        failed.push(`${scenario.name} (${wrong.map((c) => `${c.step}: got ${c.actual}`).join("; ")})`);
      }
    }
    const passed = scenarios.length - failed.length;
    // DOCK_REAL_SCENARIOS may leave a tool none (the hook figure alone): no score to print then.
    if (scenarios.length) {
      rows.push({
        label: `real ${tool.id}: scenarios passed${tool.scoredOnly ? " (not asserted by the test)" : ""}`,
        summary: summarize([(100 * passed) / scenarios.length]),
        unit: "%",
        note: `${passed}/${scenarios.length}${failed.length ? `; failed: ${failed.join("; ")}` : ""}`.slice(
          0,
          600,
        ),
      });
    }
    if (tool.id === "claude") rows.push(await hookToState(t));
  }
  return rows;
}

/** Runs Claude's installed UserPromptSubmit and Stop hooks in turn; ms from each exit to the state seen. */
async function hookToState(t: RealBox): Promise<Row> {
  const name = "bench-hook";
  await t.create(name);
  const settings = JSON.parse(await Deno.readTextFile(join(t.box.dirs.home, ".claude", "settings.json")));
  const command = (event: string) => settings.hooks[event][0].hooks[0].command as string;
  const times: number[] = [];
  for (let i = 0; i < HOOK_RUNS; i++) {
    const [event, state] = i % 2 === 0 ? ["UserPromptSubmit", "running"] : ["Stop", "finished"];
    const payload = JSON.stringify({
      session_id: "bench",
      transcript_path: join(t.box.dirs.home, "t.jsonl"),
      cwd: t.repo,
      hook_event_name: event,
      ...(event === "UserPromptSubmit" ? { prompt: "x" } : { stop_hook_active: false }),
    });
    const child = new Deno.Command("sh", {
      args: ["-c", command(event)],
      cwd: t.repo,
      env: { ...t.box.env, DOCK_SESSION: name },
      clearEnv: true,
      stdin: "piped",
      stdout: "null",
      stderr: "null",
    }).spawn();
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(payload));
    await writer.close();
    await child.status;
    const exited = performance.now();
    while ((await t.client.session(name)).agent_state !== state) {
      if (performance.now() - exited > 10_000) throw new Error(`${event} never showed ${state}`);
    }
    times.push(performance.now() - exited);
  }
  return {
    label: "real Claude Code hook → state visible, after the hook exits (goal ≤ 5 ms)",
    summary: summarize(times),
    note: "the installed hook command run as Claude Code runs it; one GET sessions/{name} is part of it",
  };
}

if (import.meta.main) console.log(table(await benchRealAgents()));
