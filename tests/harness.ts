/**
 * Whole-system test harness: starts a real `dockd serve` process with its own temporary
 * `DOCK_HOME`, `DOCK_STATE_DIR` and `HOME`, makes real git repositories, and hands back the typed
 * client talking to the daemon's socket.
 *
 * @module
 */
import { join } from "node:path";
import { BoxClient } from "../client/box.ts";
import { AgentClient } from "../client/agent.ts";
import { boxCgroupFolder, removeCgroup } from "../daemon/cgroups.ts";
import { buildPackage, type BuiltPackage } from "../package/build.ts";
import { hostTarget } from "../package/release.ts";

const ROOT = new URL("..", import.meta.url).pathname;

/** Environment every git command in tests runs with (no global config, a fixed identity). */
export const GIT_ENV: Record<string, string> = {
  GIT_AUTHOR_NAME: "Dock Test",
  GIT_AUTHOR_EMAIL: "test@dock.invalid",
  GIT_COMMITTER_NAME: "Dock Test",
  GIT_COMMITTER_EMAIL: "test@dock.invalid",
  GIT_CONFIG_NOSYSTEM: "1",
};

/**
 * The Deno cache of this test run, shared with the processes it starts (their `HOME` is a temporary
 * folder, whose cache would be empty): a package build's `deno bundle` finds its esbuild there, which
 * `deno task test` fetched before the tests (`package/bundler.ts`), and no process transpiles dock again.
 */
const DENO_DIR = Deno.env.get("DENO_DIR") ||
  (Deno.build.os === "darwin"
    ? `${Deno.env.get("HOME")}/Library/Caches/deno`
    : `${Deno.env.get("XDG_CACHE_HOME") || `${Deno.env.get("HOME")}/.cache`}/deno`);

/** The environment every dock process of a test runs with: its own home and dock directories. */
function processEnv(dirs: BoxDirs): Record<string, string> {
  return {
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    HOME: dirs.home,
    DENO_DIR,
    SHELL: "/bin/sh",
    DOCK_HOME: dirs.dockHome,
    DOCK_STATE_DIR: dirs.state,
    NO_COLOR: "1",
    // No desktop notices from test agents on a developer's laptop.
    DOCK_DESKTOP_NOTIFY: "0",
  };
}

/** Options of {@linkcode startBox}. */
export interface StartBoxOptions {
  /** Reuse these directories (a restart of the same box). */
  dirs?: BoxDirs;
  /** Extra environment for the daemon. */
  env?: Record<string, string>;
  /** Port range for worktree blocks. @default {a range unique to this test process} */
  portRange?: [number, number];
  /** Run the daemon with this hard and soft limit on open files (`ulimit -n`). */
  openFiles?: number;
  /** Run `<launcher> serve` (a package's `bin/dockd`) instead of this checkout's `cli/dockd.ts`. */
  launcher?: string;
}

/** The temporary directories of a test box. */
export interface BoxDirs {
  root: string;
  home: string;
  dockHome: string;
  state: string;
  socket: string;
  /** The port range of worktree blocks, kept with the directories so a restart uses the same. */
  portRange: [number, number];
}

/** A running test box. */
export interface TestBox {
  dirs: BoxDirs;
  client: BoxClient;
  process: Deno.ChildProcess;
  /** Stops the daemon (SIGTERM, or SIGKILL with `kill`) and waits for it. */
  stop(options?: { kill?: boolean }): Promise<void>;
  /** Stops the daemon and removes its directories. */
  [Symbol.asyncDispose](): Promise<void>;
  /** Runs `dockd ARGS` against this box and returns its exit code and output. */
  cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string }>;
  /** Environment the daemon runs with. */
  env: Record<string, string>;
  /** Its ready line (cli/ready.ts): what it bound. */
  ready: ReadyLine;
}

let rangeCounter = 0;

/**
 * Every folder {@linkcode makeDirs} made in this test module. A box's dispose removes its own; what a
 * test without one leaves (an agent's package cache, releases an upgrade test installed: 250 MB each)
 * goes when the module's tests are done, with whatever still runs under it.
 */
const madeRoots = new Set<string>();

function removeMadeRoots(): void {
  for (const root of madeRoots) {
    try {
      Deno.statSync(root);
    } catch {
      continue; // removed by its test (a box's dispose), with what ran under it
    }
    killProcessesUnder(root);
    try {
      Deno.removeSync(root, { recursive: true });
    } catch { /* a file being written as its process died: /tmp keeps it */ }
  }
}

/** Makes the temporary directories of a box. */
export async function makeDirs(): Promise<BoxDirs> {
  const root = await Deno.makeTempDir({ prefix: "dock-test-" });
  if (madeRoots.size === 0) globalThis.addEventListener("unload", removeMadeRoots);
  madeRoots.add(root);
  // Each box gets its own slice of ports so parallel test files never share a block.
  const base = 30000 + ((Deno.pid * 37 + rangeCounter++ * 400) % 30000);
  const dirs: BoxDirs = {
    portRange: [base, base + 399],
    root,
    home: join(root, "home"),
    dockHome: join(root, "home", ".dock"),
    state: join(root, "state"),
    socket: join(root, "state", "box", "dockd.sock"),
  };
  await Deno.mkdir(dirs.home, { recursive: true });
  await Deno.mkdir(join(dirs.home, "work"));
  return dirs;
}

/** Starts `dockd serve` and waits until its socket answers. */
export async function startBox(options: StartBoxOptions = {}): Promise<TestBox> {
  const dirs = options.dirs ?? await makeDirs();
  const range = options.portRange ?? dirs.portRange;
  const env: Record<string, string> = {
    ...processEnv(dirs),
    DOCK_PORT_RANGE: `${range[0]}-${range[1]}`,
    DOCK_WATCH_MS: "200",
    // No TLS listener unless a test pairs: certificates cost ~90 ms and boxes would race for 1379.
    DOCK_LISTEN: "off",
    ...GIT_ENV,
    ...options.env,
  };
  const [program, ...args] = options.launcher
    ? [options.launcher, "serve"]
    : [Deno.execPath(), "run", "-A", "--cached-only", join(ROOT, "cli/dockd.ts"), "serve"];
  const process = new Deno.Command(options.openFiles ? "/bin/sh" : program, {
    args: options.openFiles
      ? ["-c", `ulimit -n ${options.openFiles} && exec "$0" "$@"`, program, ...args]
      : args,
    env,
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const logs: string[] = [];
  const out = drainReady(process.stdout, logs);
  const drained = Promise.all([out.drained, drainReady(process.stderr, logs).drained]);
  const client = new BoxClient({ socket: dirs.socket, origin: "test" });
  // The daemon prints its ready line once its socket answers (cli/ready.ts): no polling for it.
  const ready = await readyOrExit(process, out.ready, 20_000);
  if (!ready) {
    client.close();
    await drained;
    throw new Error(`dockd did not start (no ready line in 20 s, or it exited):\n${logs.join("")}`);
  }
  let stopped = false;
  const stop = async (stopOptions: { kill?: boolean } = {}) => {
    if (stopped) return;
    stopped = true;
    client.close();
    await terminate(process, "dockd", stopOptions.kill);
    await drained;
  };
  return {
    dirs,
    client,
    process,
    env,
    ready,
    stop,
    async [Symbol.asyncDispose]() {
      await stop();
      killProcessesUnder(dirs.root);
      // Services outlive their daemon: what ran in the box's cgroups (even a process that left no trace of
      // the box in its command line) goes with the box's folder.
      const cgroups = await boxCgroupFolder(dirs.state);
      if ("folder" in cgroups) await removeCgroup(cgroups.folder);
      await Deno.remove(dirs.root, { recursive: true }).catch(() => {});
    },
    cli: (args: string[]) => runCli("dockd", args, { env, cwd: dirs.home }),
  };
}

/** How long a daemon or agent may take to exit after SIGTERM (it stops its services first). */
const EXIT_MS = 30_000;

/**
 * Ends `process` (SIGTERM, or SIGKILL when `kill`) and waits for it; one that has not exited
 * `EXIT_MS` after SIGTERM is killed and the test fails saying so, rather than hanging the run.
 */
async function terminate(process: Deno.ChildProcess, what: string, kill = false): Promise<void> {
  try {
    process.kill(kill ? "SIGKILL" : "SIGTERM");
  } catch { /* already gone */ }
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<"late">((resolve) => timer = setTimeout(() => resolve("late"), EXIT_MS));
  const outcome = await Promise.race([process.status, late]);
  clearTimeout(timer);
  if (outcome !== "late") return;
  try {
    process.kill("SIGKILL");
  } catch { /* exited just now */ }
  await process.status;
  throw new Error(`${what} had not exited ${EXIT_MS / 1000} s after SIGTERM (killed)`);
}

/** Stops a box or agent gracefully, killing it when that takes more than `ms` (open connections). */
export async function stopWithin(
  handle: { process: Deno.ChildProcess; stop(): Promise<void> } | undefined,
  ms = 5000,
): Promise<void> {
  if (!handle) return;
  const timer = setTimeout(() => {
    try {
      handle.process.kill("SIGKILL");
    } catch { /* gone */ }
  }, ms);
  await handle.stop().catch(() => {});
  clearTimeout(timer);
}

/** What a CLI run left: its exit code and output. */
export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `dock ARGS` or `dockd ARGS` (the sources, as a user would) with exactly `env`, in `cwd`. */
export async function runCli(
  command: "dock" | "dockd",
  args: string[],
  options: { env: Record<string, string>; cwd: string },
): Promise<CliResult> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--cached-only", join(ROOT, `cli/${command}.ts`), ...args],
    env: options.env,
    clearEnv: true,
    cwd: options.cwd,
  }).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  return { code: output.code, stdout: decode(output.stdout), stderr: decode(output.stderr) };
}

/**
 * The environment of a `dock` command run against `agent` with the test's directories (`DOCK_HOME`
 * may be told apart, for a laptop with its own).
 */
export function laptopEnv(dirs: BoxDirs, agent: { port: number }, extra: Record<string, string> = {}) {
  return { ...processEnv(dirs), DOCK_AGENT_PORT: String(agent.port), ...extra };
}

/**
 * Writes a `tmux` in front of the real one that sleeps `seconds` before a command line naming
 * `command` (and touches `marker`, when given, as it starts to): a slow tmux, on cue, also for the
 * command lines a client started ahead (`source-file -`) is handed. Each command line is appended to
 * `tmux.calls` beside it as it starts (a handed line once handed), and `<marker>.done` is touched once
 * a command line naming `command` has ended. Returns the PATH that puts it first.
 */
export async function slowTmux(
  dirs: BoxDirs,
  command: string,
  seconds: number,
  marker?: string,
): Promise<string> {
  const shims = join(dirs.root, "bin");
  await Deno.mkdir(shims, { recursive: true });
  const real = new TextDecoder().decode(
    (await new Deno.Command("sh", { args: ["-c", "command -v tmux"] }).output()).stdout,
  ).trim();
  const touch = marker ? `touch '${marker}' && ` : "";
  await Deno.writeTextFile(
    join(shims, "tmux"),
    `#!/bin/sh
echo "$*" >> '${join(shims, "tmux.calls")}'
for a in "$@"; do
  if [ "$a" = source-file ]; then
    # A client the daemon started ahead: its commands come on stdin (each word quoted) once it is
    # handed them; a line naming the command waits as a spawned one would, and reaches tmux even when
    # the daemon died meanwhile (its end of input is what lets the client run it).
    input=$(cat)
    printf '%s\n' "$input" >> '${join(shims, "tmux.calls")}'
    cued=
    case "$input" in *"'${command}'"*) cued=1; ${touch}sleep ${seconds};; esac
    printf '%s\n' "$input" | '${real}' "$@"; code=$?
    ${marker ? `[ -n "$cued" ] && touch '${marker}.done'` : ":"}
    exit $code
  fi
done
cued=
for a in "$@"; do [ "$a" = ${command} ] && cued=1 && ${touch}sleep ${seconds} && break; done
` +
      (marker
        ? `[ -z "$cued" ] && exec '${real}' "$@"
'${real}' "$@"; code=$?
touch '${marker}.done'
exit $code
`
        : `exec '${real}' "$@"
`),
    { mode: 0o755 },
  );
  return `${shims}:${Deno.env.get("PATH")}`;
}

/** Runs git in `cwd` with the test identity; throws with git's output on failure. */
export async function git(cwd: string, ...args: string[]): Promise<string> {
  const output = await new Deno.Command("git", { args, cwd, env: GIT_ENV }).output();
  const decode = (b: Uint8Array) => new TextDecoder().decode(b);
  if (!output.success) throw new Error(`git ${args.join(" ")} failed: ${decode(output.stderr)}`);
  return decode(output.stdout);
}

/** Makes a repository with one commit (and optional files) under `dir`; returns its path. */
export async function makeRepo(
  dir: string,
  name = "app",
  files: Record<string, string> = {},
): Promise<string> {
  const path = join(dir, name);
  await Deno.mkdir(path, { recursive: true });
  await git(path, "init", "-q", "-b", "main");
  await Deno.writeTextFile(join(path, "README.md"), `# ${name}\n`);
  for (const [file, text] of Object.entries(files)) {
    await Deno.mkdir(join(path, file, ".."), { recursive: true });
    await Deno.writeTextFile(join(path, file), text);
  }
  await git(path, "add", "-A");
  await git(path, "commit", "-q", "-m", "initial");
  return path;
}

/**
 * The pids of the processes started with `DOCK_STATE_DIR=state` (an agent a command started in the
 * background), those with `word` among their arguments when given (`agent`).
 */
export function processesOf(state: string, word?: string): number[] {
  const pids: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const environ = Deno.readTextFileSync(`/proc/${entry.name}/environ`).split("\0");
      if (!environ.includes(`DOCK_STATE_DIR=${state}`)) continue;
      if (word && !Deno.readTextFileSync(`/proc/${entry.name}/cmdline`).split("\0").includes(word)) continue;
      pids.push(Number(entry.name));
    } catch { /* gone meanwhile, or not ours to read */ }
  }
  return pids;
}

/** Stops every process started with `DOCK_STATE_DIR=state` (an agent started in the background). */
export function stopProcessesOf(state: string): void {
  for (const pid of processesOf(state)) {
    try {
      Deno.kill(pid, "SIGTERM");
    } catch { /* gone meanwhile */ }
  }
}

/**
 * Kills the process groups of everything whose command line names a path under `root`, or that runs in
 * a folder under it: services outlive their daemon by design, so a test box's services must be ended by
 * the test that made them. An agent tool in a session's pane names no such path (`node …/cli.js`), and
 * when its tmux server went it took the SIGHUP and wrote its cache into the box's home after the folder
 * was removed (a test folder holding only `home/.cache/claude-cli-nodejs` was left after full runs).
 */
export function killProcessesUnder(root: string): void {
  const pgidOf = (pid: string) =>
    Number(Deno.readTextFileSync(`/proc/${pid}/stat`).split(") ")[1].split(" ")[2]);
  const own = pgidOf("self");
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name) || Number(entry.name) === Deno.pid) continue;
    try {
      const cmdline = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`);
      if (!cmdline.includes(`${root}/`) && !cwdOf(entry.name).startsWith(`${root}/`)) continue;
      const pgid = pgidOf(entry.name);
      // Never the test runner's own group; a process started in it (a test that runs a box's start
      // line itself, as cron would at boot) is killed alone: skipped, it outlived the run.
      if (pgid !== own) Deno.kill(-pgid, "SIGKILL");
      else Deno.kill(Number(entry.name), "SIGKILL");
    } catch { /* gone meanwhile, or not ours to kill */ }
  }
}

/** The folder a process runs in ("" when it cannot be read: gone, or not ours). */
function cwdOf(pid: string): string {
  try {
    return Deno.readLinkSync(`/proc/${pid}/cwd`);
  } catch {
    return "";
  }
}

/** A running laptop agent. */
export interface TestAgent {
  url: string;
  port: number;
  /** The private-URL proxy's port. */
  proxyPort: number;
  token: string;
  process: Deno.ChildProcess;
  /** Its ready line (cli/ready.ts): what it bound. */
  ready: ReadyLine;
  stop(options?: { kill?: boolean }): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Where test processes lock the ports they hand out, one file per port: one place per machine. */
const PORT_LOCKS = "/tmp/dock-test-ports";
/** Ports handed out: below Linux's ephemeral range (32768–60999), which no `port: 0` bind gets. */
const PORT_RANGE: [number, number] = [20000, 29999];
/** The locked files, held open until this process ends (the kernel drops the locks then, even on kill -9). */
const heldPorts: Deno.FsFile[] = [];

/** Unpacks a package (`package/build.ts`) under `dockHome` as `dock add ssh` does; returns its folder's name. */
export async function installPackage(
  dockHome: string,
  built: { file: string; release: { version: string; id: string } },
): Promise<string> {
  const folder = `${built.release.version}-${built.release.id}`;
  const into = join(dockHome, "versions", folder);
  await Deno.mkdir(into, { recursive: true });
  const unpacked = await new Deno.Command("tar", {
    args: ["-xzf", built.file, "-C", into, "--strip-components=1"],
  })
    .output();
  if (!unpacked.success) throw new Error(`tar: ${new TextDecoder().decode(unpacked.stderr)}`);
  await Deno.symlink(`versions/${folder}`, join(dockHome, "current"));
  await Deno.mkdir(join(dockHome, "bin"));
  await Deno.symlink("../current/bin/dockd", join(dockHome, "bin", "dockd"));
  return folder;
}

/**
 * A box on a release older than these sources' (version 0.0.9, commit `aaaaaaaaaaaa`), built into `out` and
 * installed under `dirs.dockHome` as `dock add ssh` installs one, with a location `app` and a shell session
 * `keep` (what an upgrade must leave running).
 */
export async function startOlderBox(
  dirs: BoxDirs,
  out: string,
): Promise<{ old: BuiltPackage; box: TestBox }> {
  const target = hostTarget();
  if (!target) throw new Error(`${Deno.build.os}/${Deno.build.arch} is no target dock packages for`);
  const old = await buildPackage({ target, out, commit: "aaaaaaaaaaaa", version: "0.0.9" });
  await installPackage(dirs.dockHome, old);
  const box = await startBox({ dirs, launcher: join(dirs.dockHome, "bin", "dockd") });
  await box.client.addLocation({ name: "app", path: await makeRepo(join(dirs.home, "work"), "app") });
  await box.client.createSession({ location: "app", command: "sh", name: "keep" });
  return { old, box };
}

/**
 * The pids of live processes (zombies left out) whose command line starts with `prefix` and holds
 * `marker`: what a test counts to see a service run once, not twice, and not at all once stopped.
 */
export function processesWith(prefix: string, marker: string): number[] {
  const pids: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const cmdline = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`).replaceAll("\0", " ");
      const state = Deno.readTextFileSync(`/proc/${entry.name}/stat`).split(") ")[1]?.[0];
      if (cmdline.startsWith(prefix) && cmdline.includes(marker) && state !== "Z") {
        pids.push(Number(entry.name));
      }
    } catch { /* gone meanwhile */ }
  }
  return pids;
}

/**
 * A TCP port for a test to listen on that no other test process on this machine gets while this one
 * runs (two suites at once included): each port handed out is locked with `flock` in {@linkcode
 * PORT_LOCKS} for the life of this process. Binding port 0 and closing it again, as this did before,
 * raced: the kernel hands the same ephemeral port to the next `port: 0` caller.
 */
export function freePort(): number {
  Deno.mkdirSync(PORT_LOCKS, { recursive: true });
  for (let attempt = 0; attempt < 500; attempt++) {
    const port = PORT_RANGE[0] + Math.floor(Math.random() * (PORT_RANGE[1] - PORT_RANGE[0] + 1));
    const file = Deno.openSync(join(PORT_LOCKS, String(port)), { create: true, write: true });
    if (!file.tryLockSync(true)) {
      file.close(); // another test process (or this one) holds it
      continue;
    }
    heldPorts.push(file); // kept even when it is busy below, so it is not tried again
    try {
      Deno.listen({ hostname: "127.0.0.1", port }).close();
      return port;
    } catch {
      // Taken by something that is not a dock test: try another.
    }
  }
  throw new Error(`no free port in ${PORT_RANGE.join("–")} after 500 tries (see ${PORT_LOCKS})`);
}

/** A parsed ready line (cli/ready.ts): the process and what it bound. */
export type ReadyLine = Record<string, string | number | null>;

/**
 * Reads a child's output `stream` into `logs`; `ready` resolves with the first ready line (a JSON line
 * with a `ready` field, cli/ready.ts), or null if the stream ends without one.
 */
function drainReady(
  stream: ReadableStream<Uint8Array>,
  logs: string[],
): { ready: Promise<ReadyLine | null>; drained: Promise<void> } {
  let found: (ready: ReadyLine | null) => void = () => {};
  const ready = new Promise<ReadyLine | null>((resolve) => found = resolve);
  const drained = (async () => {
    let partial = "";
    for await (const chunk of stream.pipeThrough(new TextDecoderStream())) {
      logs.push(chunk);
      const lines = (partial + chunk).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) {
        if (!line.startsWith(`{"ready":`)) continue;
        try {
          found(JSON.parse(line));
        } catch { /* not a ready line after all */ }
      }
    }
    found(null);
  })();
  return { ready, drained };
}

/**
 * The ready line of `process`, or null when it exits first or gives none within `ms` (then it is killed:
 * a process still running holds its output open, and waiting for its logs would never end).
 */
async function readyOrExit(
  process: Deno.ChildProcess,
  ready: Promise<ReadyLine | null>,
  ms: number,
): Promise<ReadyLine | null> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<null>((resolve) => timer = setTimeout(() => resolve(null), ms));
  const line = await Promise.race([ready, process.status.then(() => null), late]);
  clearTimeout(timer);
  if (line) return line;
  try {
    process.kill("SIGKILL");
  } catch { /* exited already */ }
  return null;
}

/** The port of a `HOST:PORT` (or `[V6]:PORT`) a ready line names. */
function portOf(address: string): number {
  return Number(address.slice(address.lastIndexOf(":") + 1));
}

/** Starts `dock agent` sharing `dirs` (so `add local` pairs that box) and waits until it answers. */
export async function startAgent(
  dirs: BoxDirs,
  options: { port?: number; env?: Record<string, string>; openFiles?: number } = {},
) {
  const env: Record<string, string> = {
    ...processEnv(dirs),
    // Port 0: the agent binds what the system chooses and names it in its ready line (cli/ready.ts).
    DOCK_AGENT_PORT: String(options.port ?? 0),
    DOCK_PROXY_PORT: "0",
    ...options.env,
  };
  const args = ["run", "-A", "--cached-only", join(ROOT, "cli/dock.ts"), "agent"];
  const process = new Deno.Command(options.openFiles ? "/bin/sh" : Deno.execPath(), {
    args: options.openFiles
      ? ["-c", `ulimit -n ${options.openFiles} && exec "$0" "$@"`, Deno.execPath(), ...args]
      : args,
    env,
    clearEnv: true,
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const logs: string[] = [];
  const out = drainReady(process.stdout, logs);
  const drained = Promise.all([out.drained, drainReady(process.stderr, logs).drained]);
  const ready = await readyOrExit(process, out.ready, 20_000);
  if (!ready || typeof ready.api !== "string") {
    await drained;
    throw new Error(`dock agent did not start:\n${logs.join("")}`);
  }
  const port = portOf(ready.api);
  const proxyPort = typeof ready.proxy === "string" ? portOf(ready.proxy) : 0;
  const url = `http://127.0.0.1:${port}`;
  // Written before the agent listens, so there once it is ready.
  const token = (await Deno.readTextFile(join(dirs.state, "client", "ui-token"))).trim();
  let stopped = false;
  const stop = async (stopOptions: { kill?: boolean } = {}) => {
    if (stopped) return;
    stopped = true;
    await terminate(process, "dock agent", stopOptions.kill);
    await drained;
  };
  return {
    url,
    port,
    proxyPort,
    token,
    process,
    ready,
    stop,
    [Symbol.asyncDispose]: () => stop(),
  } satisfies TestAgent;
}

/**
 * The TCP ports process `pid` listens on: its socket descriptors matched against the LISTEN rows of
 * `/proc/<pid>/net/tcp*`. Finds every port a local process could dial, loopback hops included, not only
 * the ones the process announces.
 */
export function listeningPorts(pid: number): number[] {
  const inodes = new Set<string>();
  for (const entry of Deno.readDirSync(`/proc/${pid}/fd`)) {
    try {
      const inode = /^socket:\[(\d+)\]$/.exec(Deno.readLinkSync(`/proc/${pid}/fd/${entry.name}`))?.[1];
      if (inode) inodes.add(inode);
    } catch { /* closed meanwhile */ }
  }
  const ports = new Set<number>();
  for (const table of ["tcp", "tcp6"]) {
    for (const line of Deno.readTextFileSync(`/proc/${pid}/net/${table}`).split("\n").slice(1)) {
      // local_address is HEXIP:HEXPORT, state 0A is LISTEN, the tenth field is the socket's inode.
      const fields = line.trim().split(/\s+/);
      if (fields.length > 9 && fields[3] === "0A" && inodes.has(fields[9])) {
        ports.add(parseInt(fields[1].split(":")[1], 16));
      }
    }
  }
  return [...ports].sort((a, b) => a - b);
}

/**
 * A real box and a real agent that has it as its local box `name`, with the repository `app`
 * registered on the box: where the app's browser tests start. Disposed whole (client, agent, box).
 */
export async function startBoxAndAgent(name = "local") {
  const dirs = await makeDirs();
  const box = await startBox({ dirs });
  const agent = await startAgent(dirs);
  const client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  const stop = async () => {
    client.close();
    await agent[Symbol.asyncDispose]();
    await box[Symbol.asyncDispose]();
  };
  try {
    await client.addLocal(name);
    await box.client.addLocation({ name: "app", path: await makeRepo(join(dirs.home, "work"), "app") });
  } catch (error) {
    await stop();
    throw error;
  }
  return { dirs, box, agent, client, [Symbol.asyncDispose]: stop };
}
