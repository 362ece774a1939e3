/**
 * The CLI section of `deno task bench` (`deno task bench cli`): the wall time of `dock` and `dockd`
 * commands, spawn to exit, against `deno run -A --cached-only` of an empty file in a temporary folder
 * (no `deno.json` found there: the floor of any `deno run`), in the same run, interleaved with the order
 * rotating. A real box (one location, two worktrees) and a real agent with that box added run meanwhile,
 * so `dock status` and `dockd worktree list` do their whole round trip.
 *
 * Goals (ratio of medians to the empty run), for the commands as installed: `dock --version`,
 * `dockd --help`, `dock status` and `dockd worktree list` ≤ 1.5×; `dock hook claude Stop` (to the
 * running daemon) ≤ 1.1×. The empty run with dock's `deno.json` (`--config`) is shown too: what the
 * project's config costs any command.
 *
 * Each command is measured twice: from a package for this machine (`deno task package`: its launcher
 * and bundled command line, what `dock add ssh` installs on a box and `deno task install` on a laptop),
 * through the link a box has on its PATH and writes into agent tools' hook settings (`~/.dock/bin/dock`
 * → `../current/bin/dock`), against the goals; and, for comparison, from this checkout (`deno run
 * cli/dock.ts`, how a developer runs it, with the V8 flags the launcher gives a command:
 * `COMMAND_V8_FLAGS`), which loads its ~30 modules as sources with the project's config.
 *
 * @module
 */
import { join } from "node:path";
import { AgentClient } from "../client/agent.ts";
import { makeDirs, makeRepo, startAgent, startBox, stopWithin } from "../tests/harness.ts";
import { buildPackage } from "../package/build.ts";
import { hostTarget } from "../package/release.ts";
import { COMMAND_V8_FLAGS } from "../package/unbundled.ts";
import { run as runProcess } from "../core/runner.ts";
import { ms, ratio, type Row, summarize, type Summary } from "./stats.ts";

const DENO = Deno.execPath();
const ROOT = new URL("..", import.meta.url).pathname;
const DOCK = join(ROOT, "cli/dock.ts");
const DOCKD = join(ROOT, "cli/dockd.ts");
const CONFIG = join(ROOT, "deno.json");
const GOAL = 1.5;
/** The installed `dock hook` over an empty run (issue 36). */
const HOOK_GOAL = 1.1;
const CHECKOUT = "from the sources, for comparison (the goal is the installed command's, below)";

/** One command measured: its `deno` arguments, its stdin, and what its output must show. */
interface Case {
  key: string;
  label: string;
  /** The program run. @default {this Deno} */
  command?: string;
  args: string[];
  env: Record<string, string>;
  stdin?: () => string;
  /** What the row's note says first (in place of a goal). */
  remark?: string;
  /** Checked on the first run: a command that failed quickly would look fast. */
  expect?: RegExp;
  goal?: number;
}

/** Spawns `deno ARGS`; resolves with the wall time, spawn to exit, and its stdout. */
async function run(c: Case, cwd: string): Promise<{ ms: number; stdout: string }> {
  const started = performance.now();
  const child = new Deno.Command(c.command ?? DENO, {
    args: c.args,
    env: c.env,
    clearEnv: true,
    cwd,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  try {
    if (c.stdin) await writer.write(new TextEncoder().encode(c.stdin()));
    await writer.close();
  } catch { /* it exited without reading */ }
  const [status, stdout, stderr] = await Promise.all([
    child.status,
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
  ]);
  const elapsed = performance.now() - started;
  if (!status.success) {
    throw new Error(`${c.command ?? "deno"} ${c.args.join(" ")} exited ${status.code}: ${stderr}`);
  }
  return { ms: elapsed, stdout };
}

/** The process's environment without dock's own variables, with `extra`. */
function env(extra: Record<string, string>): Record<string, string> {
  const base = Deno.env.toObject();
  for (const key of Object.keys(base)) {
    if (key.startsWith("DOCK_") || key.startsWith("TMUX")) delete base[key];
  }
  return { ...base, NO_COLOR: "1", ...extra };
}

/** The CLI rows. */
export async function benchCli(options: { quick: boolean }): Promise<Row[]> {
  const n = options.quick ? 8 : 30;
  const warmup = 3;
  const dirs = await makeDirs();
  await using box = await startBox({ dirs });
  const agent = await startAgent(dirs);
  try {
    const repo = await makeRepo(join(dirs.home, "work"));
    await box.client.addLocation({ name: "app", path: repo });
    for (const name of ["one", "two"]) await box.client.createWorktree("app", { name });
    const laptop = new AgentClient({ url: agent.url, token: agent.token });
    await laptop.addLocal("local");
    laptop.close();

    const scratch = join(dirs.root, "scratch");
    await Deno.mkdir(scratch);
    const empty = join(scratch, "empty.ts");
    await Deno.writeTextFile(empty, "");
    const boxEnv = env({ DOCK_STATE_DIR: dirs.state, DOCK_HOME: dirs.dockHome });
    const laptopEnv = env({ ...boxEnv, DOCK_AGENT_PORT: String(agent.port) });
    const run_ = (...args: string[]) => ["run", "-A", "--cached-only", ...args];
    // A command from the checkout with the V8 flags the package's launcher gives it.
    const command_ = (...args: string[]) => run_(`--v8-flags=${COMMAND_V8_FLAGS}`, ...args);
    const hookPayload = () =>
      JSON.stringify({ session_id: `bench-${crypto.randomUUID()}`, cwd: scratch, hook_event_name: "Stop" });
    const packaged = await packagedCases(dirs.root, hookPayload);
    const cases: Case[] = [
      {
        key: "floor",
        label: "plain: `deno run -A --cached-only empty.ts` (temp folder, no config)",
        args: run_(empty),
        env: boxEnv,
      },
      {
        key: "config",
        label: "plain: the empty file with dock's deno.json (`--config`)",
        args: ["run", "-A", "--cached-only", "--config", CONFIG, empty],
        env: boxEnv,
      },
      {
        key: "version",
        label: "`dock --version`, checkout (V8 flags as packaged)",
        args: command_(DOCK, "--version"),
        env: laptopEnv,
        expect: /^\d+\.\d+/,
        remark: CHECKOUT,
      },
      {
        key: "help",
        label: "`dockd --help`, checkout (V8 flags as packaged)",
        args: command_(DOCKD, "--help"),
        env: boxEnv,
        expect: /Usage: dockd/,
        remark: CHECKOUT,
      },
      {
        key: "status",
        label: "`dock status` (agent running, 1 box), checkout (V8 flags as packaged)",
        args: command_(DOCK, "status"),
        env: laptopEnv,
        expect: /local\s+socket\s+online/,
        remark: CHECKOUT,
      },
      {
        key: "list",
        label: "`dockd worktree list` (1 location, 3 worktrees), checkout (V8 flags as packaged)",
        args: command_(DOCKD, "worktree", "list"),
        env: boxEnv,
        expect: /two/,
        remark: CHECKOUT,
      },
      {
        key: "hook",
        label: "`dock hook claude Stop` → running daemon, checkout (V8 flags as packaged)",
        args: command_(DOCK, "hook", "claude", "Stop"),
        env: boxEnv,
        stdin: hookPayload,
        remark: CHECKOUT,
      },
      ...packaged.map((c): Case => ({ ...c, env: c.key.startsWith("pkg-status") ? laptopEnv : boxEnv })),
    ];
    for (const c of cases) {
      const { stdout } = await run(c, scratch);
      if (c.expect && !c.expect.test(stdout)) throw new Error(`${c.label} printed: ${stdout}`);
      for (let i = 1; i < warmup; i++) await run(c, scratch);
    }
    const samples = new Map<string, number[]>(cases.map((c) => [c.key, []]));
    for (let i = 0; i < n; i++) {
      // Interleaved, the order rotating, so a noisy moment or a warm cache favours none.
      for (let j = 0; j < cases.length; j++) {
        const c = cases[(i + j) % cases.length];
        samples.get(c.key)!.push((await run(c, scratch)).ms);
      }
    }
    const s = new Map<string, Summary>([...samples].map(([key, values]) => [key, summarize(values)]));
    const floor = s.get("floor")!;
    return cases.map((c): Row => {
      const summary = s.get(c.key)!;
      const label = `CLI: ${c.label}`;
      if (c.key === "floor") return { label, summary, isBaseline: true, note: `p90 ${ms(summary.p90)} ms` };
      const r = summary.p50 / floor.p50;
      const first = c.goal !== undefined
        ? `goal ≤ ${ratio(c.goal)}: ${r <= c.goal ? "met" : "**not met**"}`
        : c.remark;
      const note = [first, `p90 ${ms(summary.p90)} ms`].filter(Boolean).join("; ");
      return { label, summary, baseline: floor, note };
    });
  } finally {
    await stopWithin(agent);
  }
}

/**
 * The same commands from a package for this machine, unpacked as `dock add ssh` installs one
 * (`<home>/versions/<folder>`, `<home>/current` linked to it, `<home>/bin/<program>` linked to
 * `../current/bin/<program>`) and run through those links.
 */
async function packagedCases(root: string, hookPayload: () => string): Promise<Omit<Case, "env">[]> {
  const target = hostTarget();
  if (!target) return [];
  const home = join(root, "package-home");
  const versions = join(home, "versions");
  await Deno.mkdir(versions, { recursive: true });
  const built = await buildPackage({ target, out: join(root, "package-out") });
  const unpacked = await runProcess("tar", ["-xzf", built.file, "-C", versions], { timeoutMs: 120_000 });
  if (unpacked.code !== 0) throw new Error(`tar: ${unpacked.output}`);
  const folder = built.file.split("/").at(-1)!.replace(/\.tar\.gz$/, "");
  await Deno.symlink(`versions/${folder}`, join(home, "current"));
  await Deno.mkdir(join(home, "bin"));
  for (const program of ["dock", "dockd"]) {
    await Deno.symlink(`../current/bin/${program}`, join(home, "bin", program));
  }
  const bin = (program: string) => join(home, "bin", program);
  const label = (what: string) => `${what}, package (\`~/.dock/bin\` launcher, bundled)`;
  return [
    {
      key: "pkg-version",
      label: label("`dock --version`"),
      command: bin("dock"),
      args: ["--version"],
      expect: /^\d+\.\d+/,
      goal: GOAL,
    },
    {
      key: "pkg-help",
      label: label("`dockd --help`"),
      command: bin("dockd"),
      args: ["--help"],
      expect: /Usage: dockd/,
      goal: GOAL,
    },
    {
      key: "pkg-status",
      label: label("`dock status`"),
      command: bin("dock"),
      args: ["status"],
      expect: /local\s+socket\s+online/,
      goal: GOAL,
    },
    {
      key: "pkg-list",
      label: label("`dockd worktree list`"),
      command: bin("dockd"),
      args: ["worktree", "list"],
      expect: /two/,
      goal: GOAL,
    },
    {
      key: "pkg-hook",
      label: label("`dock hook claude Stop`"),
      command: bin("dock"),
      args: ["hook", "claude", "Stop"],
      stdin: hookPayload,
      goal: HOOK_GOAL,
    },
  ];
}
