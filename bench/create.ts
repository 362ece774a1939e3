/**
 * Sections 1 and 1b of `deno task bench` (`create`): a worktree made through the box API against
 * `git worktree add` on a twin repository, and, on a separate box with every git process traced
 * (`GIT_TRACE2_EVENT`), where an API create spends its time: inside git or around it (process spawns,
 * the daemon's own work, HTTP). `bench/main.ts`'s header says what each row compares.
 *
 * @module
 */
import { join } from "node:path";
import type { BoxClient } from "../client/box.ts";
import { GIT_ENV, makeDirs, makeRepo, startBox } from "../tests/harness.ts";
import { cpuMs, ms, ratio, type Row, scaled, summarize, time } from "./stats.ts";

/** Options of the create benchmarks. */
export interface CreateOptions {
  /** `--quick`: fewer samples. */
  quick: boolean;
  /** `--same-repo`: the plain worktrees are added to the registered repository, not a twin. */
  sameRepo: boolean;
}

/** Creates of each kind measured (`--quick`: fewer). */
export function createCount(quick: boolean): number {
  return scaled(20, quick);
}
/** The goal for the API/plain ratio of worktree-create medians (issue 36). */
const CREATE_GOAL = 1.1;
/** Files in the benchmark repository, so a checkout is not trivially small. */
const REPO_FILES = 300;

/** Deterministic content for the benchmark repository: `REPO_FILES` files in 15 folders. */
export function repoFiles(): Record<string, string> {
  const files: Record<string, string> = {};
  for (let i = 0; i < REPO_FILES; i++) {
    const line = `export const value${i} = ${i}; // ${"x".repeat(40)}\n`;
    files[`src/mod${i % 15}/file${i}.ts`] = line.repeat(20 + (i % 30));
  }
  return files;
}

/** Runs a command to completion; throws with its stderr when it fails. */
export async function spawn(
  command: string,
  args: string[],
  options: Deno.CommandOptions = {},
): Promise<void> {
  const output = await new Deno.Command(command, { ...options, args }).output();
  if (!output.success) {
    throw new Error(`${command} ${args.join(" ")} failed: ${new TextDecoder().decode(output.stderr)}`);
  }
}

/** `git worktree add -q -b NAME PATH` in `repo`, as a user would type it. */
export function plainWorktreeAdd(repo: string, name: string, path: string, env: Record<string, string> = {}) {
  return spawn("git", ["worktree", "add", "-q", "-b", name, path], {
    cwd: repo,
    env: { ...GIT_ENV, ...env },
  });
}

/** Milliseconds since the epoch, with the sub-millisecond part (to compare with git's trace times). */
function wallNow(): number {
  return performance.timeOrigin + performance.now();
}

// ---------------------------------------------------------------------------------------------------
// 1. Worktree create

/** Section 1: `client.createWorktree` against `git worktree add`, alternating (and which goes first). */
export async function benchCreate(
  client: BoxClient,
  plainRepo: string,
  plainDir: string,
  options: CreateOptions & { daemonPid: number },
): Promise<Row[]> {
  const N_CREATE = createCount(options.quick);
  const SAME_REPO = options.sameRepo;
  const api: number[] = [];
  const plain: number[] = [];
  // What dockd itself spends on a create (its CPU while the API creates run), beside the paired overhead:
  // how much of that overhead is the daemon working rather than waiting (on HTTP, on git's start and end).
  let daemonCpu = 0;
  for (let i = 0; i < N_CREATE; i++) {
    const runApi = async () => {
      const before = cpuMs(options.daemonPid);
      api.push(await time(() => client.createWorktree("app", { name: `api-${i}` })));
      daemonCpu += cpuMs(options.daemonPid) - before;
    };
    const runPlain = async () =>
      plain.push(await time(() => plainWorktreeAdd(plainRepo, `plain-${i}`, join(plainDir, `plain-${i}`))));
    if (i % 2 === 0) {
      await runApi();
      await runPlain();
    } else {
      await runPlain();
      await runApi();
    }
  }
  const apiSummary = summarize(api);
  const plainSummary = summarize(plain);
  const r = apiSummary.p50 / plainSummary.p50;
  // The API's cost over git in absolute terms, pair by pair: it does not scale with how fast git
  // happens to be on the machine at the time, which the ratio does.
  const overhead = summarize(api.map((x, i) => x - plain[i])).p50;
  const verdict = `goal ≤ ${ratio(CREATE_GOAL)}: ${r <= CREATE_GOAL ? "met" : "**not met**"}; ` +
    `median paired overhead +${ms(overhead)} ms; dockd's own CPU ${
      ms(daemonCpu / N_CREATE)
    } ms a create (mean)`;
  return [
    {
      label: "1. worktree create: `client.createWorktree` (no setup, 1 port)",
      summary: apiSummary,
      baseline: plainSummary,
      note: verdict,
    },
    {
      label: `1. plain: \`git worktree add -q -b NAME PATH\`${SAME_REPO ? " (same repo)" : " (twin repo)"}`,
      summary: plainSummary,
      isBaseline: true,
      note: `${REPO_FILES + 1} files checked out`,
    },
  ];
}

// ---------------------------------------------------------------------------------------------------
// 1b. Where an API create spends its time (git trace2 on a separate box)

/** One git process as recorded by `GIT_TRACE2_EVENT`: wall-clock start and end, its arguments. */
interface GitProcess {
  argv: string[];
  start: number;
  end: number;
}

/** Parses git's trace2 event time (`2024-01-02T03:04:05.123456Z`) to epoch milliseconds. */
function traceTime(text: string): number {
  const match = /^(.*T\d\d:\d\d:\d\d)(\.\d+)?Z$/.exec(text);
  if (!match) return NaN;
  return Date.parse(`${match[1]}Z`) + Number(match[2] ?? 0) * 1000;
}

/** Reads the top-level git processes (not git's own children) of a trace2 event file. */
async function readTrace(file: string): Promise<GitProcess[]> {
  const text = await Deno.readTextFile(file).catch(() => "");
  const bySid = new Map<string, Partial<GitProcess>>();
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    const event = JSON.parse(line) as { event: string; sid: string; time?: string; argv?: string[] };
    if (event.sid.includes("/") || !event.time) continue;
    const process = bySid.get(event.sid) ?? {};
    if (event.event === "start") {
      process.start = traceTime(event.time);
      process.argv = event.argv;
    } else if (event.event === "atexit") {
      process.end = traceTime(event.time);
    }
    bySid.set(event.sid, process);
  }
  return [...bySid.values()].filter((p): p is GitProcess =>
    p.start !== undefined && p.end !== undefined && p.argv !== undefined
  );
}

/** A git command line with the worktree's name and absolute paths replaced, to group like calls. */
function template(argv: string[]): string {
  return ["git", ...argv.slice(1)].map((arg) =>
    arg.startsWith("/") ? "PATH" : arg.replace(/\bp-\d+\b/, "NAME")
  ).join(" ");
}

/** The git processes that started within `[from, to]`. */
function within(processes: GitProcess[], from: number, to: number): GitProcess[] {
  return processes.filter((p) => p.start >= from && p.start <= to).sort((a, b) => a.start - b.start);
}

/** Section 1b: API and plain creates on a separate box with git traced, cut into their steps. */
export async function profileCreate(options: { quick: boolean }): Promise<Row[]> {
  const N_PROFILE = scaled(10, options.quick);
  const dirs = await makeDirs();
  const apiTrace = join(dirs.root, "trace-api.jsonl");
  const plainTrace = join(dirs.root, "trace-plain.jsonl");
  // The folder watcher is slowed down so that none of its `git worktree list` runs lands inside a
  // measured request and gets counted as the request's own.
  await using box = await startBox({ dirs, env: { GIT_TRACE2_EVENT: apiTrace, DOCK_WATCH_MS: "600000" } });
  const repo = await makeRepo(join(dirs.home, "work"), "app", repoFiles());
  const twin = await makeRepo(dirs.root, "twin", repoFiles());
  await box.client.addLocation({ name: "app", path: repo });
  const plainDir = join(dirs.root, "plain-worktrees");
  await box.client.createWorktree("app", { name: "warm" });
  await plainWorktreeAdd(twin, "warm", join(plainDir, "warm"), { GIT_TRACE2_EVENT: plainTrace });

  const windows: { kind: "api" | "plain"; from: number; to: number }[] = [];
  for (let i = 0; i < N_PROFILE; i++) {
    let from = wallNow();
    await box.client.createWorktree("app", { name: `p-${i}` });
    windows.push({ kind: "api", from, to: wallNow() });
    from = wallNow();
    await plainWorktreeAdd(twin, `p-${i}`, join(plainDir, `p-${i}`), { GIT_TRACE2_EVENT: plainTrace });
    windows.push({ kind: "plain", from, to: wallNow() });
  }
  const traces = { api: await readTrace(apiTrace), plain: await readTrace(plainTrace) };

  const wall = { api: [] as number[], plain: [] as number[] };
  const inGit = { api: [] as number[], plain: [] as number[] };
  const outside = { api: [] as number[], plain: [] as number[] };
  // The request cut into its steps: each git process and the stretch of daemon time before it.
  const steps = new Map<string, number[]>();
  const step = (key: string, value: number) => steps.set(key, [...steps.get(key) ?? [], value]);
  let gitCalls = 0;
  for (const window of windows) {
    const processes = within(traces[window.kind], window.from, window.to);
    const total = window.to - window.from;
    const git = processes.reduce((sum, p) => sum + (p.end - p.start), 0);
    wall[window.kind].push(total);
    inGit[window.kind].push(git);
    outside[window.kind].push(total - git);
    if (window.kind !== "api") continue;
    gitCalls = processes.length;
    let last = window.from;
    processes.forEach((p, index) => {
      step(`before git #${index + 1}`, p.start - last);
      step(`git #${index + 1}: ${template(p.argv)}`, p.end - p.start);
      last = p.end;
    });
    step("after the last git, to the answer", window.to - last);
  }
  const rows: Row[] = [
    {
      label: "1b. profile, API create: whole request",
      summary: summarize(wall.api),
      baseline: summarize(wall.plain),
      note: `separate box, git traced; ${gitCalls} git processes per create`,
    },
    {
      label: "1b. profile, API create: time inside git (sum)",
      summary: summarize(inGit.api),
      baseline: summarize(inGit.plain),
      note: "ratio vs git's own time in plain add",
    },
    {
      label: "1b. profile, API create: outside git (spawns, daemon, HTTP)",
      summary: summarize(outside.api),
      baseline: summarize(outside.plain),
      note: "ratio vs spawn overhead of plain add",
    },
  ];
  for (const [name, samples] of steps) {
    rows.push({
      label: `1b. &nbsp;&nbsp;${name}`,
      summary: summarize(samples),
      note: "step of the API create",
    });
  }
  rows.push(
    { label: "1b. profile, plain add: whole", summary: summarize(wall.plain), isBaseline: true },
    { label: "1b. profile, plain add: inside git", summary: summarize(inGit.plain), isBaseline: true },
  );
  return rows;
}
