/**
 * The app's review (issue 32) with a diff of 2,000 changed lines, in Debian's Chromium through
 * Playwright against a real agent and box: from the click on the worktree's "review" on the board to the
 * frame that shows the whole diff (the page's `dock:diff-shown` mark, app/src/marks.ts), both read on the
 * page's clock. Beside it, the floor: `git diff` of the same change run by hand in the worktree (what the
 * box runs itself, before any HTTP, JSON or DOM). Goal ≤ 300 ms.
 *
 * Part of `deno task bench app`; alone: `deno run -A bench/app_review.ts [--quick]`. Needs /usr/bin/chromium.
 *
 * @module
 */
import { join } from "node:path";
import { AgentClient } from "../client/agent.ts";
import { run } from "../core/runner.ts";
import { git, makeDirs, makeRepo, startAgent, startBox } from "../tests/harness.ts";
import { launchChromium } from "../tests/browser.ts";
import { type Row, summarize, table, time } from "./stats.ts";

// deno-lint-ignore no-explicit-any
declare const document: any;
// deno-lint-ignore no-explicit-any
declare const globalThis: any;

/** Files in the change, and lines replaced in each: 10 × (100 removed + 100 added) = 2,000 changed lines. */
const FILES = 10;
const LINES = 100;

/** A file of TypeScript-like lines (keywords, strings, numbers, comments: the colouring has work to do). */
function source(file: number, version: string): string {
  let text = "";
  for (let i = 0; i < LINES; i++) {
    text += `export function f${file}_${i}(n: number): string { return "${version} " + n * ${i}; } // ${
      version === "old" ? "first" : "second"
    } try\n`;
  }
  return text;
}

/** Options of {@linkcode benchReviewDiff}. */
export interface ReviewBenchOptions {
  quick?: boolean;
}

/** The review's figure and its floor as rows of `deno task bench`. */
export async function benchReviewDiff(options: ReviewBenchOptions = {}): Promise<Row[]> {
  const samples = options.quick ? 5 : 20;
  const dirs = await makeDirs();
  await using box = await startBox({ dirs });
  await using agent = await startAgent(dirs);
  const client = new AgentClient({ url: agent.url, token: agent.token, origin: "bench" });
  const browser = await launchChromium();
  try {
    await client.addLocal("local");
    const files: Record<string, string> = {};
    for (let f = 0; f < FILES; f++) files[`src/mod${f}.ts`] = source(f, "old");
    const repo = await makeRepo(join(dirs.home, "work"), "app", files);
    await box.client.addLocation({ name: "app", path: repo });
    const wt = await box.client.createWorktree("app", { name: "big" });
    for (let f = 0; f < FILES; f++) {
      await Deno.writeTextFile(join(wt.path, `src/mod${f}.ts`), source(f, "new"));
    }
    await git(wt.path, "commit", "-qam", "rewrite every function");
    const changed = 2 * FILES * LINES;

    // The floor: git's own diff of the same change, as the box runs it.
    const floorTimes: number[] = [];
    for (let i = 0; i < samples + 2; i++) {
      const took = await time(() => run("git", ["diff", "main...HEAD"], { cwd: wt.path }));
      if (i >= 2) floorTimes.push(took);
    }

    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    await page.goto(`${agent.url}/app/#token=${encodeURIComponent(agent.token)}`);
    await page.evaluate(() =>
      document.addEventListener("click", () => globalThis.clicked = performance.now(), { capture: true })
    );
    const times: number[] = [];
    for (let i = 0; i < samples + 2; i++) {
      await page.locator('[data-view="board"]').click();
      const action = page.locator('.worktree:has([data-worktree="local/app/big"]) [data-action="review"]');
      await action.click();
      await page.waitForFunction(
        (n: number) =>
          performance.getEntriesByName("dock:diff-shown").some((m) => (m as PerformanceMark).detail === n),
        changed,
        { timeout: 30_000 },
      );
      const [clicked, shown, rows] = await page.evaluate(() =>
        [
          globalThis.clicked,
          performance.getEntriesByName("dock:diff-shown")[0].startTime,
          document.querySelectorAll(".review .line.add, .review .line.del").length,
        ] as [number, number, number]
      );
      if (rows !== changed) throw new Error(`the review drew ${rows} changed lines, not ${changed}`);
      await page.evaluate(() => performance.clearMarks("dock:diff-shown"));
      if (i >= 2) times.push(shown - clicked); // the first loads the review's code
    }
    await page.close();
    const floor = summarize(floorTimes);
    const shown = summarize(times);
    return [
      {
        label: `App review: git diff by hand, ${changed} changed lines in ${FILES} files (floor)`,
        summary: floor,
        isBaseline: true,
      },
      {
        label: `App review: click "review" → ${changed}-line diff drawn, coloured (goal ≤ 300 ms)`,
        summary: shown,
        baseline: floor,
        note: "the box's diff, commits and untracked lists over HTTP through the agent, then the page",
      },
    ];
  } finally {
    await browser.close();
    client.close();
  }
}

if (import.meta.main) console.log(table(await benchReviewDiff({ quick: Deno.args.includes("--quick") })));
