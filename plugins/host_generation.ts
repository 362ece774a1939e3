/**
 * One plugin-host process as the module host keeps it (a generation: its grant, its workers, its
 * lifecycle), what it is started with (the union of its workers' grants, as `deno run` flags) and how
 * (`launchHost`), and what is read of it from /proc (resident memory, worker threads). The module host (`module_host.ts`) decides
 * when a generation starts, retires and ends; this file only describes one.
 *
 * @module
 */
import { join } from "../core/posix_path.ts";
import { type Clock, every } from "../core/clock.ts";
import type { Log } from "../core/log.ts";
import { startChild } from "../core/runner.ts";
import { FrameConnection } from "./frames.ts";
import type { HostLanes } from "./lanes.ts";
import { type HostEvent, type HostPhase, type HostPhaseChange, nextHostPhase } from "./host_phase.ts";
import {
  type FromHost,
  laneHost,
  PROTOCOL_VERSION,
  type ToHost,
  type WorkerGrant,
  type WorkerSpec,
} from "./protocol.ts";
import { SDK_DIR, writeSdkImportMap } from "./sdk_map.ts";

// Named from plugins/, not "./": in a package this module runs from a bundle in cli/, while the host's
// modules stay sources here (package/unbundled.ts).
const HOST_MAIN = new URL("../plugins/host_main.ts", import.meta.url);
/** The worker bootstrap the host reads to start a worker. */
export const WORKER_MAIN = new URL("../plugins/worker_main.ts", import.meta.url);

/** The workers' grants merged: what a host process is started with. */
export function unionGrant(grants: WorkerGrant[]): WorkerGrant {
  const merged: WorkerGrant = { read: [], write: [], net: [], env: [] };
  for (const grant of grants) {
    for (const key of ["read", "write", "net", "env"] as const) {
      for (const value of grant[key]) if (!merged[key].includes(value)) merged[key].push(value);
    }
  }
  for (const key of ["read", "write", "net", "env"] as const) merged[key].sort();
  return merged;
}

/** Whether `outer` allows everything `inner` does (paths by prefix, hosts and names exactly). */
export function covers(outer: WorkerGrant, inner: WorkerGrant): boolean {
  const under = (path: string, roots: string[]) =>
    roots.some((root) => path === root || path.startsWith(root.endsWith("/") ? root : `${root}/`));
  return inner.read.every((p) => under(p, outer.read)) &&
    inner.write.every((p) => under(p, outer.write)) &&
    inner.net.every((h) => outer.net.includes(h) || outer.net.includes(h.split(":")[0])) &&
    inner.env.every((n) => outer.env.includes(n));
}

/** What {@linkcode hostArgs} builds a host's command line from. */
export interface HostLaunch {
  grant: WorkerGrant;
  /** Paths it may read besides its workers' grants. */
  baseRead: string[];
  /** The unix socket it connects back on. */
  socket: string;
  /** The import map that maps `@dock/plugin` to the SDK, and the SDK's folder. */
  importMap: string;
  sdkDir: string;
  /** V8 heap cap, MB. */
  memoryMb: number;
  /** The loopback port its workers' lanes dial (plugins/lanes.ts). */
  lanePort?: number;
}

/** `deno run` arguments of a host process: no prompt, config, remote or npm imports; only its grant. */
export function hostArgs(launch: HostLaunch): string[] {
  const { grant, socket, importMap } = launch;
  // The host reads the worker bootstrap to start a worker (the check is the host's, not the worker's).
  // The SDK (`@dock/plugin`, by the import map) is read with the host's permission (plugins/sdk_map.ts).
  const read = unionList([
    ...grant.read,
    ...launch.baseRead,
    socket,
    WORKER_MAIN.pathname,
    launch.sdkDir,
    importMap,
  ]);
  const flag = (name: string, values: string[]) =>
    values.length ? [`--allow-${name}=${values.join(",")}`] : [];
  return [
    "run",
    "--no-prompt",
    "--no-config",
    "--no-lock",
    "--no-remote",
    "--no-npm",
    "--unstable-worker-options",
    `--v8-flags=--max-old-space-size=${launch.memoryMb}`,
    `--import-map=${importMap}`,
    ...flag("read", read),
    ...flag("write", unionList([...grant.write, socket])),
    // Deno asks for net access to a unix socket too (`unix:<path>`); each worker is granted the lanes' port.
    ...flag("net", unionList([...grant.net, `unix:${socket}`, ...lanePort(launch)])),
    ...flag("env", grant.env),
    HOST_MAIN.pathname,
    socket,
  ];
}

/** One host process and what it runs. */
export class Generation {
  readonly number: number;
  readonly grant: WorkerGrant;
  child?: Deno.ChildProcess;
  frames?: FrameConnection<FromHost, ToHost>;
  ready: Promise<void>;
  /** Set once `ready` resolved: a warm call takes it without awaiting that. */
  started = false;
  /** Specs whose grant its own was found to cover (a spec is made once per start of its worker). */
  readonly covered = new WeakSet<WorkerSpec>();
  /** Keys of the workers it runs. */
  readonly workers = new Set<string>();
  /** The epoch whose spec it was sent, by key (a warm call carries none: protocol.ts). */
  readonly specs = new Map<string, number>();
  /** Its workers' lanes (set once it is made). */
  lanes!: HostLanes;
  inFlight = 0;
  /** Cancels its idle stop, and its /proc watch. */
  cancelIdle = () => {};
  cancelWatch = () => {};
  /** Its lifecycle (plugins/host_phase.ts); changed only by {@linkcode Generation.move}. */
  phase: HostPhase = "live";
  lastOutput = "";
  /** The one worker a quarantine host runs (its calls retried after a crash). */
  quarantine?: string;
  /** Since when (clock time) it has had more worker threads than workers. */
  excessSince?: number;
  /** Output budget: bytes written in the current minute, and lines dropped. */
  output = { window: 0, bytes: 0, dropped: 0 };

  readonly #log: Log;
  readonly #trace?: (change: HostPhaseChange) => void;

  constructor(
    number: number,
    grant: WorkerGrant,
    ready: Promise<void>,
    options: { log: Log; trace?: (change: HostPhaseChange) => void },
  ) {
    this.number = number;
    this.grant = grant;
    this.ready = ready;
    this.#log = options.log;
    this.#trace = options.trace;
  }

  /** New calls go elsewhere; it finishes its calls in flight. */
  get retired(): boolean {
    return this.phase === "retired";
  }

  /** Its process is gone. */
  get ended(): boolean {
    return this.phase === "ended";
  }

  /** Moves it along its lifecycle; false (and logged) for a change the lifecycle does not allow. */
  move(event: HostEvent): boolean {
    const from = this.phase;
    const to = nextHostPhase(this.number, from, event, (message) => this.#log.warn(message));
    if (to === null) return false;
    this.phase = to;
    this.#trace?.({ generation: this.number, from, event, to });
    return true;
  }
}

/** What {@linkcode launchHost} starts a generation's process with, and tells of it. */
export interface HostStart {
  /** The private folder (0700) of its socket. */
  dir: string;
  baseRead: string[];
  memoryMb: number;
  lanePort: number;
  /** The values of the variables it is granted. */
  env: Record<string, string>;
  /** A line of its output, within its budget (`own`: it may be its sole plugin's). */
  say(line: string, own: boolean): void;
  /** It exited (any time after its start), and why as far as its output says. */
  onExit(why: string): void;
}

/**
 * Starts a generation's host process (through the runner, its environment only what it is granted and
 * `HOME`, `DENO_DIR`, `XDG_CACHE_HOME`), waits for it to connect back on a socket of its own and say the
 * protocol's version, and sets the generation's `child` and `frames`. Returns the messages that follow.
 */
export async function launchHost(
  generation: Generation,
  start: HostStart,
): Promise<{ messages: AsyncGenerator<FromHost>; pid: number }> {
  Deno.mkdirSync(start.dir, { recursive: true, mode: 0o700 });
  const socket = join(start.dir, `host-${Deno.pid}-${generation.number}.sock`);
  await Deno.remove(socket).catch(() => {});
  const listener = Deno.listen({ transport: "unix", path: socket });
  try {
    const args = hostArgs({
      grant: generation.grant,
      baseRead: start.baseRead,
      socket,
      importMap: await writeSdkImportMap(start.dir),
      sdkDir: SDK_DIR,
      memoryMb: start.memoryMb,
      lanePort: start.lanePort,
    });
    const env: Record<string, string> = { ...start.env, NO_COLOR: "1" };
    for (const name of ["HOME", "DENO_DIR", "XDG_CACHE_HOME"]) {
      const value = Deno.env.get(name);
      if (value !== undefined) env[name] = value;
    }
    const { child, untrack } = startChild(Deno.execPath(), args, { env, clearEnv: true });
    generation.child = child;
    readHostOutput(generation, child.stdout, start.say);
    readHostOutput(generation, child.stderr, start.say);
    child.status.then(() => {
      untrack();
      start.onExit(`the plugin host exited${generation.lastOutput ? `: ${generation.lastOutput}` : ""}`);
    });
    const accepted = await Promise.race([
      listener.accept(),
      child.status.then((status) => {
        throw new Error(
          `it exited with ${status.code}${generation.lastOutput ? `: ${generation.lastOutput}` : ""}`,
        );
      }),
    ]);
    const frames = new FrameConnection<FromHost, ToHost>(accepted);
    const messages = frames.messages();
    const first = await messages.next();
    const hello = first.value as FromHost | undefined;
    if (!hello || hello.t !== "hello" || hello.v !== PROTOCOL_VERSION) {
      throw new Error(
        `it spoke protocol ${hello && hello.t === "hello" ? hello.v : "?"}, not ${PROTOCOL_VERSION}`,
      );
    }
    generation.frames = frames;
    return { messages, pid: child.pid };
  } finally {
    listener.close();
    await Deno.remove(socket).catch(() => {});
  }
}

/** What {@linkcode watchHost} needs besides the generation. */
export interface HostWatch {
  clock: Clock;
  rssLimitMb: number;
  /** How long it may run more worker threads than workers before it is recycled. */
  orphanGraceMs: number;
  /** Says why it was killed or recycled. */
  say(line: string): void;
  kill(why: string): void;
  retire(): void;
}

/**
 * Watches a host's process (read from /proc twice a second; elsewhere not watched): past its memory it is
 * killed; with worker threads no worker of it accounts for (a nested `Worker` left running) for longer
 * than the grace, recycled. Sets the generation's `cancelWatch`.
 */
export function watchHost(generation: Generation, pid: number, watch: HostWatch): void {
  if (Deno.build.os !== "linux") return;
  const limit = watch.rssLimitMb * 1024;
  const clock = watch.clock;
  generation.cancelWatch = every(clock, 500, () => {
    const kb = residentKb(pid);
    if (kb === null) return; // gone: its exit is handled where it is awaited
    if (kb > limit) {
      watch.say(`the plugin host used ${Math.round(kb / 1024)} MB, over its ${limit / 1024} MB: killed`);
      watch.kill(`the plugin host used more than ${limit / 1024} MB`);
      return;
    }
    if (generation.retired) return;
    const threads = workerThreads(pid);
    if (threads <= generation.workers.size) {
      generation.excessSince = undefined;
      return;
    }
    generation.excessSince ??= clock.now();
    if (clock.now() - generation.excessSince > watch.orphanGraceMs) {
      watch.say(
        `the plugin host runs ${threads} worker threads for ${generation.workers.size} workers ` +
          `(a nested Worker left running?): recycled`,
      );
      watch.retire();
    }
  });
}

/** A process's resident memory in KB (Linux), or null when it is gone. */
export function residentKb(pid: number): number | null {
  try {
    return Number(/VmRSS:\s+(\d+)/.exec(Deno.readTextFileSync(`/proc/${pid}/status`))?.[1] ?? 0);
  } catch {
    return null;
  }
}

/** The Web Worker threads of a process (`worker-<n>`, as Deno names them), nested ones included. */
export function workerThreads(pid: number): number {
  let count = 0;
  try {
    for (const task of Deno.readDirSync(`/proc/${pid}/task`)) {
      try {
        if (Deno.readTextFileSync(`/proc/${pid}/task/${task.name}/comm`).startsWith("worker-")) count++;
      } catch {
        // the thread ended meanwhile
      }
    }
  } catch {
    return 0; // gone
  }
  return count;
}

/** Bytes of output a host may write a minute (stdout and stderr together); past them lines are dropped. */
export const HOST_OUTPUT_BYTES = 64 * 1024;

/**
 * Reads what a host writes, within {@linkcode HOST_OUTPUT_BYTES} a minute: past it the bytes are read and
 * dropped undecoded (a worker writing to stdout in a loop wrote 20 MB in 1.8 s into the daemon's log), and
 * the drop is said once a minute. `say` gets each line (`own`: it may be attributed to the host's one
 * plugin) and each drop's notice.
 */
export async function readHostOutput(
  generation: Generation,
  stream: ReadableStream<Uint8Array>,
  say: (line: string, own: boolean) => void,
): Promise<void> {
  let buffered = "";
  const decoder = new TextDecoder();
  const budget = generation.output;
  try {
    for await (const chunk of stream) {
      const minute = Math.floor(performance.now() / 60_000);
      if (minute !== budget.window) {
        if (budget.dropped > 0) {
          say(`${budget.dropped} bytes of output dropped (over ${HOST_OUTPUT_BYTES} a minute)`, false);
        }
        budget.window = minute;
        budget.bytes = 0;
        budget.dropped = 0;
      }
      if (budget.bytes + chunk.length > HOST_OUTPUT_BYTES) {
        budget.dropped += chunk.length;
        buffered = "";
        continue;
      }
      budget.bytes += chunk.length;
      buffered += decoder.decode(chunk, { stream: true });
      const lines = buffered.split("\n");
      buffered = lines.pop()!.slice(-8192);
      for (const line of lines) {
        const text = stripAnsi(line).trim();
        if (!text) continue;
        generation.lastOutput = text.slice(0, 300);
        say(text.slice(0, 8192), true);
      }
    }
  } catch {
    // the process is gone
  }
}

/** A line of the host's output without its colours. */
export function stripAnsi(text: string): string {
  // deno-lint-ignore no-control-regex
  return text.replace(/\x1b\[[0-9;]*m/g, "");
}

function lanePort(launch: HostLaunch): string[] {
  return launch.lanePort ? [laneHost(launch.lanePort)] : [];
}

function unionList(values: string[]): string[] {
  return [...new Set(values)].sort();
}
