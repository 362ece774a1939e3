/**
 * The one process runner: every child dockd starts (git, tmux, shells, setup, exec, hooks) goes
 * through here, so timeouts, process-group cleanup and output limits live in one place. The attach's
 * `tmux attach` runs in a PTY, started by core/pty.ts (its own module, so that only the attach loads
 * node-pty) and tracked here.
 *
 * Each child runs in its own session and process group (through `setsid`, see `inNewGroup`), so a
 * timeout or a stop kills the whole tree a shell may have forked, not just the shell.
 *
 * @module
 */

/** Options for {@linkcode run}. */
export interface RunOptions {
  /** Working directory. */
  cwd?: string;
  /** Environment of the child. With `clearEnv` it is the whole environment. */
  env?: Record<string, string>;
  /** Start from an empty environment instead of the daemon's. @default {false} */
  clearEnv?: boolean;
  /** Bytes, text or a stream written to the child's stdin, which is then closed. */
  stdin?: string | Uint8Array | ReadableStream<Uint8Array>;
  /** Kill the process group after this many milliseconds. */
  timeoutMs?: number;
  /** Kill the process group when aborted. */
  signal?: AbortSignal;
  /** Bytes of combined output kept (the newest). @default {16 MiB} */
  maxOutput?: number;
  /** Called with each chunk of stdout or stderr as it arrives. */
  onOutput?: (chunk: Uint8Array, stream: "stdout" | "stderr") => void;
  /**
   * Start the child in its own process group, so a timeout or abort kills everything it forked.
   * Off for short tools that fork nothing (git): one process less to start (see `inNewGroup` for
   * how a group is made cheaply). @default {true}
   */
  group?: boolean;
  /** Start the child inside this cgroup (v2) folder, before it runs anything (see `inCgroup`). */
  cgroup?: string;
}

/** What a finished child left behind. */
export interface RunResult {
  code: number;
  signal: string | null;
  stdout: string;
  stderr: string;
  /** stdout and stderr interleaved as they arrived, cut to the newest `maxOutput` bytes. */
  output: string;
  truncated: boolean;
  timedOut: boolean;
  durationMs: number;
}

const live = new Set<number>();

/**
 * `setsid(1)`, when the system has it (util-linux). Deno's `detached: true` makes a new session in the
 * child, which forces fork+exec instead of posix_spawn: in a daemon with ~90 MB of heap that call
 * blocks the event loop ~8 ms per spawn (measured: 7.97 ms p50, against 0.22 ms without). Running
 * the program through `setsid` gives it the same new session and process group (setsid(1) does not
 * fork when its caller is not a group leader, so the pid is the program's) for 0.23 ms.
 */
let setsid: string | null | undefined;

/**
 * The command line and spawn flag that start `cmd` as the leader of a new session and process group.
 * `setsid` is looked up on first use, not when the module loads: most CLI commands import the runner
 * and never spawn (a PATH walk of `statSync`s on every start otherwise).
 */
function inNewGroup(cmd: string, args: string[]): { cmd: string; args: string[]; detached: boolean } {
  if (setsid === undefined) setsid = Deno.build.os === "linux" ? which("setsid") : null;
  return setsid ? { cmd: setsid, args: [cmd, ...args], detached: false } : { cmd, args, detached: true };
}

/** Exit code of a child that could not enter its cgroup (the shell's message is on its stderr). */
export const CGROUP_ENTRY_FAILED = 125;

// $1 the cgroup folder, then the command and its arguments. `echo` is a builtin, so the shell moves
// itself; `exec` keeps its pid.
const ENTER_CGROUP = `echo $$ >"$1/cgroup.procs" || exit ${CGROUP_ENTRY_FAILED}; shift; exec "$@"`;

/**
 * The command line that runs `cmd` inside the cgroup `folder`: a shell moves itself in, then execs `cmd`.
 * Race-free, unlike writing the child's pid to `cgroup.procs` after the spawn returns: the child is in
 * its cgroup before it runs a line, so nothing it forks is ever born outside. Measured here: a service
 * whose first line is `setsid sleep … &` escaped a move made right after spawn 7 times in 200. Costs
 * one `sh` exec (Deno cannot clone into a cgroup, `CLONE_INTO_CGROUP`).
 */
function inCgroup(cmd: string, args: string[], folder: string | undefined): { cmd: string; args: string[] } {
  return folder === undefined
    ? { cmd, args }
    : { cmd: "/bin/sh", args: ["-c", ENTER_CGROUP, "dock-cgroup", folder, cmd, ...args] };
}

/** The most a child's pipe is read in one go: the chunk size of Deno's own pipe streams. */
const PIPE_READ_BYTES = 64 * 1024;
/** Read buffers kept between runs: two pipes of a few runs at once. */
const SPARE_READ_BUFFERS = 8;
const spareReadBuffers: ArrayBuffer[] = [];

/**
 * A buffer for reading a child's pipe, kept from run to run. Measured on `run("git", ["--version"])`
 * in 40 interleaved blocks of 25 runs: the default reader's fresh buffer for each read cost 516 µs of
 * CPU a run (median), a reused one 466, about what `Deno.Command.output()` costs (433, but it reads
 * without a bound); a worktree create's page faults in the daemon went from 84 to 42.
 */
function readBuffer(): ArrayBuffer {
  return spareReadBuffers.pop() ?? new ArrayBuffer(PIPE_READ_BYTES);
}

function returnReadBuffer(buffer: ArrayBuffer): void {
  if (spareReadBuffers.length < SPARE_READ_BUFFERS) spareReadBuffers.push(buffer);
}

/** Runs `cmd` with `args` to completion. Never throws for a non-zero exit; throws if it cannot start. */
export async function run(cmd: string, args: string[], options: RunOptions = {}): Promise<RunResult> {
  const started = performance.now();
  const maxOutput = options.maxOutput ?? 16 * 1024 * 1024;
  const grouped = options.group ?? true;
  ({ cmd, args } = inCgroup(cmd, args, options.cgroup));
  const spec = grouped ? inNewGroup(cmd, args) : { cmd, args, detached: false };
  const child = new Deno.Command(spec.cmd, {
    args: spec.args,
    cwd: options.cwd,
    env: options.env,
    clearEnv: options.clearEnv,
    stdin: options.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
    detached: spec.detached,
  }).spawn();
  live.add(child.pid);
  let timedOut = false;
  const kill = () => {
    if (grouped) killGroup(child.pid, "SIGKILL");
    // Also the child itself: in its first microseconds it may not lead its group yet.
    try {
      child.kill("SIGKILL");
    } catch { /* already gone */ }
  };
  const timer = options.timeoutMs === undefined ? undefined : setTimeout(() => {
    timedOut = true;
    kill();
  }, options.timeoutMs);
  options.signal?.addEventListener("abort", kill, { once: true });

  if (options.stdin instanceof ReadableStream) {
    options.stdin.pipeTo(child.stdin).catch(() => {/* the child may not read all of its stdin */});
  } else if (options.stdin !== undefined) {
    const writer = child.stdin.getWriter();
    const bytes = typeof options.stdin === "string" ? new TextEncoder().encode(options.stdin) : options.stdin;
    writer.write(bytes).then(() => writer.close()).catch(() => {/* the child may not read its stdin */});
  }

  const combined = new TailBuffer(maxOutput);
  const stdout = new TailBuffer(maxOutput);
  const stderr = new TailBuffer(maxOutput);
  // A reader read to its end and not released: `for await` releases it when the stream ends, and the
  // release builds a TypeError (with its stack) for the reader's closed promise: 60–70 µs of a run of
  // `git --version` for its two pipes (measured interleaved). A BYOB reader into a buffer kept from run
  // to run: the default reader gives every read a fresh, zeroed 64 KiB buffer (and every chunk kept its
  // whole buffer alive); see `readBuffer`.
  const pump = async (stream: ReadableStream<Uint8Array>, own: TailBuffer, name: "stdout" | "stderr") => {
    const reader = stream.getReader({ mode: "byob" });
    let buffer = readBuffer();
    try {
      for (;;) {
        const read = await reader.read(new Uint8Array(buffer));
        if (read.done) {
          // A stream that ended gives its buffer back (a cancelled one does not).
          if (read.value) returnReadBuffer(read.value.buffer);
          return;
        }
        // The bytes are copied out: the buffer is read into again, and the kept chunks must not change.
        const chunk = read.value.slice();
        buffer = read.value.buffer;
        own.push(chunk);
        combined.push(chunk);
        options.onOutput?.(chunk, name);
      }
    } catch (error) {
      reader.cancel().catch(() => {}); // an `onOutput` that threw: the pipe is not read on (as before)
      throw error;
    }
  };
  const [status] = await Promise.all([
    child.status,
    pump(child.stdout, stdout, "stdout"),
    pump(child.stderr, stderr, "stderr"),
  ]);
  clearTimeout(timer);
  options.signal?.removeEventListener("abort", kill);
  live.delete(child.pid);
  return {
    code: status.code,
    signal: status.signal,
    stdout: stdout.text(),
    stderr: stderr.text(),
    output: combined.text(),
    truncated: combined.truncated,
    timedOut,
    durationMs: performance.now() - started,
  };
}

/** Options for {@linkcode launch}. */
export interface LaunchOptions {
  cwd?: string;
  env?: Record<string, string>;
  clearEnv?: boolean;
  /** Start the child inside this cgroup (v2) folder, before it runs anything. */
  cgroup?: string;
}

/**
 * Starts a long-lived child in its own session and process group, with no pipes to this process:
 * it outlives the daemon (a crash, a kill -9 or an upgrade), and whatever it forks stays in its group
 * so it can be stopped as a whole. The caller redirects its output (services write to a log file).
 */
export function launch(cmd: string, args: string[], options: LaunchOptions = {}): Deno.ChildProcess {
  const inside = inCgroup(cmd, args, options.cgroup);
  const child = spawnInGroup(inside.cmd, inside.args, options, "null");
  child.unref(); // a service must not keep the daemon alive when it wants to exit
  return child;
}

/** Spawns `cmd` as the leader of a new session and process group, stdin closed, output as `output`. */
function spawnInGroup(
  cmd: string,
  args: string[],
  options: { cwd?: string; env?: Record<string, string>; clearEnv?: boolean },
  output: "null" | "piped",
): Deno.ChildProcess {
  const spec = inNewGroup(cmd, args);
  return new Deno.Command(spec.cmd, {
    args: spec.args,
    cwd: options.cwd,
    env: options.env,
    clearEnv: options.clearEnv,
    stdin: "null",
    stdout: output,
    stderr: output,
    detached: spec.detached,
  }).spawn();
}

/**
 * Runs a command in the foreground of the caller's terminal (stdin, stdout and stderr shared): what a
 * CLI command does when it hands the terminal to a program (`dockd secret exec`). Answers its exit code
 * (128 + the signal for one a signal ended).
 */
export async function runForeground(
  cmd: string,
  args: string[],
  options: { cwd?: string; env?: Record<string, string>; clearEnv?: boolean } = {},
): Promise<number> {
  const child = new Deno.Command(cmd, {
    args,
    cwd: options.cwd,
    env: options.env,
    clearEnv: options.clearEnv,
    stdin: "inherit",
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  const untrack = track(child.pid);
  try {
    // Deno already says a signal's end as 128 + the signal.
    return (await child.status).code;
  } finally {
    untrack();
  }
}

/** Options for {@linkcode startChild}. */
export interface StartChildOptions {
  cwd?: string;
  env?: Record<string, string>;
  clearEnv?: boolean;
}

/**
 * Starts a long-lived helper process this one owns (the plugin host): in its own process group (so a
 * kill reaches whatever it started), stdout and stderr piped to the caller, no stdin, and counted among
 * the live children so `killAll` ends it with the daemon. Unlike {@linkcode launch}, it is not meant to
 * outlive its parent. Returns the child and what to call once it has exited.
 */
export function startChild(
  cmd: string,
  args: string[],
  options: StartChildOptions = {},
): { child: Deno.ChildProcess; untrack: () => void } {
  const child = spawnInGroup(cmd, args, options, "piped");
  return { child, untrack: track(child.pid) };
}

/**
 * Counts a child started outside this module (a PTY: core/pty.ts) among the live ones, so `killAll`
 * ends it too; returns what to call once it has exited.
 */
export function track(pid: number): () => void {
  live.add(pid);
  return () => live.delete(pid);
}

/** The login shell commands run through: the user's `$SHELL` when set, else bash or sh. */
export function loginShell(): string {
  const shell = Deno.env.get("SHELL");
  if (shell && isExecutable(shell)) return shell;
  return isExecutable("/bin/bash") ? "/bin/bash" : "/bin/sh";
}

/** Runs `command` through a login shell (`$SHELL -l -c`). */
export function shell(command: string, options: RunOptions = {}): Promise<RunResult> {
  return run(loginShell(), ["-l", "-c", command], options);
}

/** Quotes a word for a POSIX shell; safe words stay bare so a command line reads naturally. */
export function shellQuote(word: string): string {
  if (/^[A-Za-z0-9_\/.,:@%+=-]+$/.test(word)) return word;
  return `'${word.replaceAll("'", `'\\''`)}'`;
}

/** Kills a process group; a group that is already gone is not an error. */
export function killGroup(pid: number, signal: Deno.Signal = "SIGTERM"): void {
  try {
    Deno.kill(-pid, signal);
  } catch {
    // already exited
  }
}

/** Kills every child still running (daemon shutdown): its group, and the child itself when it leads none. */
export function killAll(): void {
  for (const pid of live) {
    killGroup(pid, "SIGKILL");
    try {
      Deno.kill(pid, "SIGKILL");
    } catch {
      // already exited
    }
  }
}

/** Finds `name` on `path` (default: the daemon's PATH); returns its path or null. */
export function which(name: string, path: string = Deno.env.get("PATH") ?? ""): string | null {
  if (name.includes("/")) return isExecutable(name) ? name : null;
  for (const dir of path.split(":")) {
    if (dir && isExecutable(`${dir}/${name}`)) return `${dir}/${name}`;
  }
  return null;
}

/** Whether `path` is a file with an execute bit (what `which` and the tools cache look for). */
export function isExecutable(path: string): boolean {
  try {
    const info = Deno.statSync(path);
    return info.isFile && ((info.mode ?? 0o111) & 0o111) !== 0;
  } catch {
    return false;
  }
}

/** Keeps the newest `limit` bytes of a stream. */
export class TailBuffer {
  #chunks: Uint8Array[] = [];
  #size = 0;
  #limit: number;
  truncated = false;

  constructor(limit: number) {
    this.#limit = limit;
  }

  /** Appends a chunk, dropping the oldest bytes past the limit. */
  push(chunk: Uint8Array): void {
    this.#chunks.push(chunk);
    this.#size += chunk.length;
    while (this.#size > this.#limit && this.#chunks.length) {
      const excess = this.#size - this.#limit;
      const first = this.#chunks[0];
      this.truncated = true;
      if (first.length <= excess) {
        this.#chunks.shift();
        this.#size -= first.length;
      } else {
        this.#chunks[0] = first.subarray(excess);
        this.#size -= excess;
      }
    }
  }

  /** The kept bytes as text (a multi-byte character cut at the start becomes U+FFFD). */
  text(): string {
    const all = new Uint8Array(this.#size);
    let offset = 0;
    for (const chunk of this.#chunks) {
      all.set(chunk, offset);
      offset += chunk.length;
    }
    return new TextDecoder().decode(all);
  }
}
