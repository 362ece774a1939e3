/**
 * The session sections of `deno task bench` (7 to 11), on one fresh box with a location `app`, each
 * against a plain counterpart measured in the same run (interleaved where the two do not disturb
 * each other):
 *
 * 7. **`dock hook` wall time.** `deno run -A --cached-only cli/dock.ts hook claude Stop` with a
 *    Claude Stop payload on stdin, spawn to exit, against a running daemon and with no daemon (the
 *    event goes to the spool), against `deno run -A --cached-only` of an empty file in a temporary
 *    folder (no `deno.json` found there) and of the same file with dock's `deno.json` (`--config`),
 *    which is what `cli/dock.ts` picks up by its location. The goal: hook/empty ≤ 1.5×.
 * 8. **Hook → event.** From spawning the hook to its `agent.finished` event arriving on the box's
 *    server-sent events stream, against `client.emit()` → its event on the same stream.
 * 9. **Send → screen.** `client.send(name, token, { enter: false })` to a session running `cat`
 *    (the terminal echoes what is typed) and `client.screen(name)` polled back to back until the
 *    token shows, against `tmux send-keys -l` and `tmux capture-pane -p -J` polled the same way.
 *    Then **keys**: `client.keys(name, ["x"])` (`POST sessions/{name}/keys`, keyed as every client
 *    sends it: recorded in the send ledger, typed with its tmux slot claimed) from call to answer,
 *    against spawning `tmux send-keys -l x` to its exit. The goal: keys/tmux ≤ 1.5× (issue 30).
 * 10. **Attach echo.** One byte typed over the attach WebSocket (`/v1/sessions/NAME/attach`) to a
 *    session running `cat` until its echo comes back, against a PTY running `tmux attach` in this
 *    process (node-pty, what the daemon's bridge runs), and as the floor a PTY running `cat` itself.
 * 11. **Bulk output through attach.** `seq 1 N` in a shell session while attached, until the line
 *    echoed after it arrives: bytes received (tmux skips redraws, so fewer than `seq` writes) and
 *    MB/s, against the direct PTY attach and, as the floor, `seq` in a PTY of its own.
 *
 * @module
 */
import { join } from "node:path";
import { type IPty, spawn as spawnPty } from "@lydell/node-pty";
import type { BoxClient } from "../client/box.ts";
import type { DockEvent } from "../client/wire.ts";
import { killProcessesUnder, makeRepo, startBox, type TestBox } from "../tests/harness.ts";
import { connectUnixWebSocket, type UnixWebSocket } from "../tests/ws_unix.ts";
import { ms, ratio, type Row, summarize, type Summary } from "./stats.ts";

const DENO = Deno.execPath();
const ROOT = new URL("..", import.meta.url).pathname;
const DOCK = join(ROOT, "cli/dock.ts");
const DOCK_CONFIG = join(ROOT, "deno.json");
/** Number of the first section here, in the table. */
const FIRST = 7;
/** The goal for `dock hook` over an empty `deno run`, ratio of medians. */
const HOOK_GOAL = 1.5;
/** The goal for the keys route over a bare `tmux send-keys`, ratio of medians (issue 30). */
const KEYS_GOAL = 1.5;
/** Calls made between the fresh and the warm keys samples (a daemon that has served a while). */
const KEYS_WARM_CALLS = 300;

/** The goal for send → visible over `tmux send-keys` + `capture-pane` by hand, ratio of medians (issue 36). */
const SEND_GOAL = 1.3;
/** Attached terminal size, the same for every attach. */
const COLS = 120;
const ROWS = 40;

const encoder = new TextEncoder();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const label = (offset: number, text: string) => `${FIRST + offset}. ${text}`;
const p = (summary: Summary, key: "p50" | "p90" | "p99") => `${key} ${ms(summary[key])} ms`;
// deno-lint-ignore no-control-regex
const ESCAPES = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b[\]P^_][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[ -~]/g;
/** Terminal output without its escape sequences (what a person would read). */
const visible = (text: string) => text.replace(ESCAPES, "");

/** Rejects after `timeoutMs` with a message naming what was awaited. */
async function within<T>(promise: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)),
      timeoutMs,
    );
  });
  try {
    return await Promise.race([promise, expired]);
  } finally {
    clearTimeout(timer);
  }
}

/** The environment of spawned `deno` runs: this one's, without dock's variables (no DOCK_SESSION). */
function denoEnv(stateDir: string): Record<string, string> {
  const env = Deno.env.toObject();
  for (const key of Object.keys(env)) if (key.startsWith("DOCK_") || key.startsWith("TMUX")) delete env[key];
  return { ...env, DOCK_STATE_DIR: stateDir, NO_COLOR: "1" };
}

/** A tmux client's environment, as the daemon's bridge makes it (daemon/attach.ts `clientEnv`). */
function ptyEnv(): Record<string, string> {
  const env = Deno.env.toObject();
  delete env.TMUX;
  delete env.TMUX_PANE;
  return { ...env, TERM: "xterm-256color", LANG: "C.UTF-8", LC_CTYPE: "C.UTF-8", LC_ALL: "C.UTF-8" };
}

/** Spawns `deno ARGS` with `stdin` written and closed; resolves with the wall time, spawn to exit. */
async function runDeno(
  args: string[],
  env: Record<string, string>,
  cwd: string,
  stdin = "",
): Promise<number> {
  const started = performance.now();
  const child = new Deno.Command(DENO, {
    args,
    env,
    clearEnv: true,
    cwd,
    stdin: "piped",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  try {
    if (stdin) await writer.write(encoder.encode(stdin));
    await writer.close();
  } catch { /* it exited without reading */ }
  const [status, stderr] = await within(
    Promise.all([child.status, new Response(child.stderr).text()]),
    20_000,
    `deno ${args.join(" ")}`,
  );
  const elapsed = performance.now() - started;
  if (!status.success) throw new Error(`deno ${args.join(" ")} exited ${status.code}: ${stderr}`);
  return elapsed;
}

/** A Claude Code `Stop` hook payload with a unique session id. */
function stopPayload(sessionId: string, cwd: string): string {
  return JSON.stringify({
    session_id: sessionId,
    transcript_path: join(cwd, ".claude", `${sessionId}.jsonl`),
    cwd,
    permission_mode: "default",
    hook_event_name: "Stop",
    stop_hook_active: false,
  });
}

/** Runs `tmux -S SOCKET ARGS`; throws with its stderr when it fails. */
async function tmux(socket: string, ...args: string[]): Promise<string> {
  const output = await new Deno.Command("tmux", { args: ["-u", "-S", socket, ...args], stdin: "null" })
    .output();
  const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
  if (!output.success) throw new Error(`tmux ${args.join(" ")}: ${decode(output.stderr).trim()}`);
  return decode(output.stdout);
}

/** Polls `check` back to back until it holds; resolves with how many polls it took. */
async function pollUntil(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<number> {
  const deadline = performance.now() + timeoutMs;
  for (let polls = 1;; polls++) {
    if (await check()) return polls;
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
  }
}

/** Waits until a process named `comm` runs under the pane of session `name` (the login shell's child). */
async function waitForProgram(socket: string, name: string, comm: string): Promise<void> {
  const pane = Number((await tmux(socket, "list-panes", "-t", `=${name}:`, "-F", "#{pane_pid}")).trim());
  const runs = () => {
    const parent = new Map<number, number>();
    const named: number[] = [];
    for (const entry of Deno.readDirSync("/proc")) {
      if (!/^\d+$/.test(entry.name)) continue;
      try {
        const stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
        const open = stat.indexOf("(");
        const close = stat.lastIndexOf(")");
        const fields = stat.slice(close + 2).split(" ");
        parent.set(Number(entry.name), Number(fields[1]));
        if (stat.slice(open + 1, close) === comm && fields[0] !== "Z") named.push(Number(entry.name));
      } catch { /* gone meanwhile */ }
    }
    return named.some((pid) => {
      for (let at: number | undefined = pid; at && at > 1; at = parent.get(at)) if (at === pane) return true;
      return false;
    });
  };
  const deadline = performance.now() + 10_000;
  while (!runs()) {
    if (performance.now() > deadline) throw new Error(`${comm} did not start in session ${name} in 10 s`);
    await sleep(20);
  }
}

/** The bytes `seq 1 n` writes. */
export function seqBytes(n: number): number {
  let total = 0;
  for (let digits = 1, low = 1; low <= n; digits++, low *= 10) {
    const high = Math.min(n, low * 10 - 1);
    total += (high - low + 1) * (digits + 1);
  }
  return total;
}

// ---------------------------------------------------------------------------------------------------
// Event stream tap

/** One subscription to the box's events; each event is timestamped on arrival and handed to waiters. */
class EventTap {
  #waiters = new Set<{ match: (event: DockEvent) => boolean; resolve: (at: number) => void }>();
  #controller = new AbortController();
  #done: Promise<void>;
  #failed: unknown = null;

  private constructor(client: BoxClient, after: number) {
    this.#done = (async () => {
      for await (const event of client.events({ after, signal: this.#controller.signal })) {
        const at = performance.now();
        for (const waiter of this.#waiters) {
          if (waiter.match(event)) {
            this.#waiters.delete(waiter);
            waiter.resolve(at);
          }
        }
      }
    })().catch((error) => {
      this.#failed = error;
    });
  }

  /** Subscribes and waits until the subscription is live (a marker event came through). */
  static async open(client: BoxClient): Promise<EventTap> {
    const start = (await client.emit({ type: "bench.start" })).id!;
    const tap = new EventTap(client, start);
    const token = crypto.randomUUID();
    const seen = tap.expect((event) => event.data?.token === token, 10_000, "the marker event");
    await client.emit({ type: "bench.marker", data: { token } });
    await seen;
    return tap;
  }

  /** Registers now; resolves with the arrival time of the first later event that matches. */
  expect(match: (event: DockEvent) => boolean, timeoutMs: number, what: string): Promise<number> {
    if (this.#failed) return Promise.reject(new Error(`the event stream failed: ${this.#failed}`));
    let waiter!: { match: (event: DockEvent) => boolean; resolve: (at: number) => void };
    const arrived = new Promise<number>((resolve) => {
      waiter = { match, resolve };
      this.#waiters.add(waiter);
    });
    return within(arrived, timeoutMs, `${what} on the event stream`).finally(() =>
      this.#waiters.delete(waiter)
    );
  }

  async close(): Promise<void> {
    this.#controller.abort();
    await this.#done;
  }
}

// ---------------------------------------------------------------------------------------------------
// Terminals: the attach WebSocket and PTYs in this process

/** Terminal output as it arrives: a byte count and a bounded tail of the decoded text. */
abstract class Terminal {
  /** Bytes received. */
  bytes = 0;
  /** When the last chunk arrived (`performance.now()`). */
  lastAt = 0;
  /** UTF-16 units decoded so far; `tail` holds the last of them. */
  length = 0;
  #tail = "";
  #decoder = new TextDecoder();
  #listeners = new Set<() => void>();
  #ended: string | null = null;

  abstract type(keys: string): void;
  abstract close(): Promise<void>;

  /** Text received since `mark` (a `length` read earlier), as far as the tail still holds it. */
  since(mark: number): string {
    const start = this.length - this.#tail.length;
    return this.#tail.slice(Math.max(0, mark - start));
  }

  /** Resolves once `check` holds, checked on every chunk received. */
  until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
    if (check()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const finish = (error?: Error) => {
        clearTimeout(timer);
        this.#listeners.delete(listener);
        if (error) reject(error);
        else resolve();
      };
      const timer = setTimeout(
        () =>
          finish(
            new Error(
              `timed out after ${timeoutMs} ms waiting for ${what}; last output: ${
                JSON.stringify(visible(this.#tail.slice(-300)))
              }`,
            ),
          ),
        timeoutMs,
      );
      const listener = () => {
        if (check()) finish();
        else if (this.#ended !== null) {
          finish(new Error(`the terminal closed (${this.#ended}) waiting for ${what}`));
        }
      };
      this.#listeners.add(listener);
    });
  }

  /** Resolves once `needle` is in the raw output received after `mark`. */
  waitFor(needle: string, mark: number, timeoutMs: number): Promise<void> {
    let cursor = mark;
    return this.until(
      () => {
        const found = this.since(cursor).includes(needle);
        cursor = Math.max(mark, this.length - needle.length);
        return found;
      },
      timeoutMs,
      JSON.stringify(needle),
    );
  }

  /** Resolves once nothing has arrived for `quietMs` (at most `timeoutMs`). */
  async settle(quietMs: number, timeoutMs = 10_000): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    let last = -1;
    while (this.bytes !== last && performance.now() < deadline) {
      last = this.bytes;
      await sleep(quietMs);
    }
  }

  protected received(chunk: Uint8Array): void {
    this.bytes += chunk.length;
    this.lastAt = performance.now();
    const text = this.#decoder.decode(chunk, { stream: true });
    this.length += text.length;
    this.#tail += text;
    if (this.#tail.length > 256 * 1024) this.#tail = this.#tail.slice(-64 * 1024);
    for (const listener of this.#listeners) listener();
  }

  protected ended(why: string): void {
    this.#ended = why;
    for (const listener of this.#listeners) listener();
  }
}

/** The box's attach WebSocket, read by one pump (never two readers at once). */
class WsTerminal extends Terminal {
  #ws: UnixWebSocket;
  #pump: Promise<void>;

  private constructor(ws: UnixWebSocket) {
    super();
    this.#ws = ws;
    this.#pump = (async () => {
      for (;;) {
        const message = await ws.next();
        if (message === null) break;
        if (message.binary) this.received(message.data);
      }
      this.ended(`close code ${ws.closeCode}`);
    })().catch((error) => this.ended(String(error)));
  }

  static async open(socket: string, session: string): Promise<WsTerminal> {
    const ws = await within(
      connectUnixWebSocket(socket, `/v1/sessions/${session}/attach?cols=${COLS}&rows=${ROWS}`),
      10_000,
      `the attach of ${session}`,
    );
    const terminal = new WsTerminal(ws);
    await terminal.until(() => terminal.bytes > 0, 10_000, `the first draw of ${session}`);
    return terminal;
  }

  type(keys: string): void {
    this.#ws.sendBinary(encoder.encode(keys)).catch((error) => this.ended(String(error)));
  }

  async close(): Promise<void> {
    await this.#ws.close();
    await this.#pump;
  }
}

/** A PTY in this process running `file args` (node-pty, as the daemon's bridge uses). */
class PtyTerminal extends Terminal {
  #pty: IPty;
  #exited: Promise<void>;

  constructor(file: string, args: string[]) {
    super();
    this.#pty = spawnPty(file, args, {
      name: "xterm-256color",
      cols: COLS,
      rows: ROWS,
      cwd: "/",
      env: ptyEnv(),
      encoding: null,
    });
    this.#pty.onData((chunk) => this.received(chunk as unknown as Uint8Array));
    this.#exited = new Promise<void>((resolve) =>
      this.#pty.onExit(({ exitCode }) => {
        this.ended(`exit ${exitCode}`);
        resolve();
      })
    );
  }

  /** `tmux attach` to `session` on `socket`, as the daemon's bridge runs it. */
  static async attach(socket: string, session: string): Promise<PtyTerminal> {
    const terminal = new PtyTerminal("tmux", ["-u", "-S", socket, "attach-session", "-t", `=${session}`]);
    await terminal.until(() => terminal.bytes > 0, 10_000, `the first draw of ${session} (direct)`);
    return terminal;
  }

  /** Resolves once the program exits. */
  exited(timeoutMs: number, what: string): Promise<void> {
    return within(this.#exited, timeoutMs, what);
  }

  type(keys: string): void {
    this.#pty.write(keys);
  }

  async close(): Promise<void> {
    try {
      this.#pty.kill();
    } catch { /* already gone */ }
    await within(this.#exited, 5000, "a PTY to exit").catch(() => {
      try {
        this.#pty.kill("SIGKILL");
      } catch { /* already gone */ }
    });
  }
}

/** Times one typed byte until its echo is visible, `samples` times after `warmup` untimed ones. */
async function echoLatency(term: Terminal, samples: number, warmup: number): Promise<number[]> {
  const keys = "qwertyuiop";
  const times: number[] = [];
  for (let i = 0; i < warmup + samples; i++) {
    if (i % 25 === 24) {
      // Keep the line short: Enter makes `cat` print it, then let the redraw settle.
      term.type("\r");
      await term.settle(30);
    }
    const key = keys[i % keys.length];
    const mark = term.length;
    const started = performance.now();
    term.type(key);
    await term.until(
      () => visible(term.since(mark)).includes(key),
      5000,
      `the echo of ${JSON.stringify(key)}`,
    );
    const elapsed = performance.now() - started;
    if (i >= warmup) times.push(elapsed);
  }
  return times;
}

// ---------------------------------------------------------------------------------------------------
// Sections

interface Context {
  box: TestBox;
  client: BoxClient;
  tap: EventTap;
  scratch: string;
  /** Where the hooks run and what their payload names as `cwd` (no session works there). */
  hookDir: string;
  quick: boolean;
}

/** Section 7 and 8: the hook's wall time, and from the hook to its event on the stream. */
async function benchHooks(ctx: Context): Promise<Row[]> {
  const { box, client, tap, scratch, hookDir } = ctx;
  const n = ctx.quick ? 8 : 30;
  const warmup = 3;
  const empty = join(scratch, "empty.ts");
  await Deno.writeTextFile(empty, "");
  const noDaemon = join(scratch, "no-daemon");
  await Deno.mkdir(noDaemon);
  const liveEnv = denoEnv(box.dirs.state);
  const spoolEnv = denoEnv(noDaemon);
  const hookArgs = ["run", "-A", "--cached-only", DOCK, "hook", "claude", "Stop"];

  // One hook run against the daemon, verified to have reached it (a hook that gave up on the daemon
  // would spool and take its full timeout instead).
  const hook = async () => {
    const id = `bench-${crypto.randomUUID()}`;
    const arrived = tap.expect(
      (event) => event.type === "agent.finished" && event.data?.session_id === id,
      10_000,
      "the hook's agent.finished",
    );
    const started = performance.now();
    const wall = await runDeno(hookArgs, liveEnv, hookDir, stopPayload(id, hookDir));
    const event = (await arrived) - started;
    return { wall, event };
  };
  const spooled = () =>
    runDeno(hookArgs, spoolEnv, hookDir, stopPayload(`bench-${crypto.randomUUID()}`, hookDir));
  const plain = () => runDeno(["run", "-A", "--cached-only", empty], liveEnv, hookDir);
  const plainConfig = () =>
    runDeno(["run", "-A", "--cached-only", "--config", DOCK_CONFIG, empty], liveEnv, hookDir);
  const emit = async () => {
    const token = crypto.randomUUID();
    const arrived = tap.expect((event) => event.data?.token === token, 10_000, "the emitted event");
    const started = performance.now();
    await client.emit({ type: "bench.ping", data: { token } });
    const answered = performance.now() - started;
    return { event: (await arrived) - started, answered };
  };

  for (let i = 0; i < warmup; i++) {
    await hook();
    await spooled();
    await plain();
    await plainConfig();
    await emit();
  }
  const samples = {
    hook: [] as number[],
    event: [] as number[],
    spool: [] as number[],
    plain: [] as number[],
    plainConfig: [] as number[],
    emit: [] as number[],
    emitAnswered: [] as number[],
  };
  const runs: (() => Promise<void>)[] = [
    async () => {
      const { wall, event } = await hook();
      samples.hook.push(wall);
      samples.event.push(event);
    },
    async () => void samples.spool.push(await spooled()),
    async () => void samples.plain.push(await plain()),
    async () => void samples.plainConfig.push(await plainConfig()),
    async () => {
      const { event, answered } = await emit();
      samples.emit.push(event);
      samples.emitAnswered.push(answered);
    },
  ];
  for (let i = 0; i < n; i++) {
    // Interleaved, and the order rotates, so a noisy moment or a warm cache favours none.
    for (let j = 0; j < runs.length; j++) await runs[(i + j) % runs.length]();
  }

  // The daemon case must not have spooled anything; the no-daemon case must have spooled every run.
  const spoolFiles = (dir: string) => {
    try {
      return [...Deno.readDirSync(dir)].filter((entry) => entry.name.endsWith(".json")).length;
    } catch {
      return 0;
    }
  };
  const liveSpooled = spoolFiles(join(box.dirs.state, "box", "spool"));
  if (liveSpooled > 0) throw new Error(`${liveSpooled} hook events were spooled with the daemon running`);
  const deadSpooled = spoolFiles(join(noDaemon, "box", "spool"));
  if (deadSpooled !== n + warmup) {
    throw new Error(`${deadSpooled} of ${n + warmup} hook events were spooled with no daemon`);
  }

  const s = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, summarize(v)])) as Record<
    keyof typeof samples,
    Summary
  >;
  const hookRatio = s.hook.p50 / s.plain.p50;
  const goal = `goal ≤ ${HOOK_GOAL.toFixed(1)}× the empty run: ${hookRatio <= HOOK_GOAL ? "met" : "NOT met"}`;
  return [
    {
      label: label(0, "`dock hook claude Stop` → running daemon (spawn to exit)"),
      summary: s.hook,
      baseline: s.plain,
      note: `${goal}; ${p(s.hook, "p90")}; ${ratio(s.hook.p50 / s.plainConfig.p50)} the empty run with ` +
        "dock's deno.json; `deno run -A --cached-only cli/dock.ts`, Claude Stop payload on stdin",
    },
    {
      label: label(0, "`dock hook claude Stop`, no daemon (to the spool)"),
      summary: s.spool,
      baseline: s.plain,
      note: `${p(s.spool, "p90")}; DOCK_STATE_DIR without a socket; all ${n + warmup} spooled`,
    },
    {
      label: label(0, "plain: `deno run` of the empty file with dock's deno.json (`--config`)"),
      summary: s.plainConfig,
      baseline: s.plain,
      note: `${
        p(s.plainConfig, "p90")
      }; cli/dock.ts finds that config by its location: what the config costs`,
    },
    {
      label: label(0, "plain: `deno run -A --cached-only empty.ts` (temp folder, no config)"),
      summary: s.plain,
      isBaseline: true,
      note: `${p(s.plain, "p90")}; the floor of any \`deno run\``,
    },
    {
      label: label(1, "hook → its `agent.finished` on the SSE stream (spawn to arrival)"),
      summary: s.event,
      baseline: s.emit,
      note: `${p(s.event, "p99")}; hook exit p50 ${ms(s.hook.p50)} ms: the event lands ` +
        `${ms(s.hook.p50 - s.event.p50)} ms before the process is gone`,
    },
    {
      label: label(1, "plain: `client.emit()` → its event on the SSE stream"),
      summary: s.emit,
      isBaseline: true,
      note: `${p(s.emit, "p99")}; the POST answered after p50 ${ms(s.emitAnswered.p50)} ms`,
    },
  ];
}

/** Section 9: send → visible in the screen. */
async function benchSendScreen(ctx: Context): Promise<Row[]> {
  const { box, client } = ctx;
  const n = ctx.quick ? 8 : 30;
  const warmup = 3;
  const socket = join(box.dirs.state, "box", "tmux.sock");
  const name = "bench-send";
  await client.createSession({ location: "app", command: "cat", name });
  await waitForProgram(socket, name, "cat");

  const api = { total: [] as number[], send: [] as number[], polls: 0, screen: [] as number[] };
  const plain = { total: [] as number[], send: [] as number[], polls: 0 };
  let count = 0;
  const token = () => `tok${count++}z${Math.random().toString(36).slice(2, 8)}`;
  const viaApi = async (record: boolean) => {
    const text = token();
    const started = performance.now();
    // Keyed, as every send of the product is (the CLI's, the app's, MCP's, the queue's, a broadcast's).
    await client.send(name, text, { enter: false, key: crypto.randomUUID() });
    const sent = performance.now();
    const polls = await pollUntil(
      async () => {
        const before = performance.now();
        const { screen } = await client.screen(name);
        if (record) api.screen.push(performance.now() - before);
        return screen.includes(text);
      },
      10_000,
      `${text} in client.screen`,
    );
    if (!record) return;
    api.total.push(performance.now() - started);
    api.send.push(sent - started);
    api.polls += polls;
  };
  const viaTmux = async (record: boolean) => {
    const text = token();
    const started = performance.now();
    await tmux(socket, "send-keys", "-t", `=${name}:`, "-l", text);
    const sent = performance.now();
    const polls = await pollUntil(
      async () => (await tmux(socket, "capture-pane", "-p", "-J", "-t", `=${name}:`)).includes(text),
      10_000,
      `${text} in tmux capture-pane`,
    );
    if (!record) return;
    plain.total.push(performance.now() - started);
    plain.send.push(sent - started);
    plain.polls += polls;
  };
  // Enter between samples (untimed) keeps the line short; `cat` prints it back.
  const enter = () => tmux(socket, "send-keys", "-t", `=${name}:`, "Enter");
  try {
    for (let i = 0; i < warmup; i++) {
      await viaApi(false);
      await viaTmux(false);
      await enter();
    }
    for (let i = 0; i < n; i++) {
      if (i % 2 === 0) {
        await viaApi(true);
        await viaTmux(true);
      } else {
        await viaTmux(true);
        await viaApi(true);
      }
      await enter();
      await sleep(10);
    }
  } finally {
    await client.removeSession(name).catch(() => {});
  }
  const total = summarize(api.total);
  const plainTotal = summarize(plain.total);
  const sendRatio = total.p50 / plainTotal.p50;
  return [
    {
      label: label(2, "`client.send` (keyed, no Enter) → token in `client.screen` (polled back to back)"),
      summary: total,
      baseline: plainTotal,
      note: `goal ≤ ${SEND_GOAL.toFixed(1)}× by hand: ${sendRatio <= SEND_GOAL ? "met" : "NOT met"}; ` +
        `${p(total, "p90")}; session running \`cat\`; the send answered after p50 ` +
        `${ms(summarize(api.send).p50)} ms, one screen call takes p50 ${ms(summarize(api.screen).p50)} ms, ` +
        `${(api.polls / n).toFixed(1)} screen calls per sample`,
    },
    {
      label: label(2, "plain: `tmux send-keys -l` → token in `tmux capture-pane -p -J` (polled)"),
      summary: plainTotal,
      isBaseline: true,
      note: `${p(plainTotal, "p90")}; send-keys took p50 ${ms(summarize(plain.send).p50)} ms, ` +
        `${(plain.polls / n).toFixed(1)} captures per sample`,
    },
  ];
}

/**
 * Section 9, keys: the keys route from call to answer against a bare `tmux send-keys`, on a fresh daemon
 * (its first calls: V8 has not compiled the route's code yet) and then warm, after a few hundred calls, as
 * a daemon that has served for a while is. The goal is read on the warm figure; the fresh one is printed.
 */
async function benchKeys(ctx: Context): Promise<Row[]> {
  const { box, client } = ctx;
  const n = ctx.quick ? 20 : 100;
  const warmup = 5;
  const socket = join(box.dirs.state, "box", "tmux.sock");
  const name = "bench-keys";
  await client.createSession({ location: "app", command: "cat", name });
  await waitForProgram(socket, name, "cat");
  const viaRoute = async (into?: number[]) => {
    const started = performance.now();
    await client.keys(name, ["x"]);
    into?.push(performance.now() - started);
  };
  const viaTmux = async (into?: number[]) => {
    const started = performance.now();
    await tmux(socket, "send-keys", "-t", `=${name}:`, "-l", "x");
    into?.push(performance.now() - started);
  };
  const interleaved = async (route: number[], bare: number[]) => {
    for (let i = 0; i < n; i++) {
      // Interleaved, each first half the time: load on the machine falls on both alike.
      if (i % 2 === 0) {
        await viaRoute(route);
        await viaTmux(bare);
      } else {
        await viaTmux(bare);
        await viaRoute(route);
      }
      if (i % 40 === 39) await tmux(socket, "send-keys", "-t", `=${name}:`, "Enter"); // a short line
    }
  };
  const fresh = { route: [] as number[], bare: [] as number[] };
  const warm = { route: [] as number[], bare: [] as number[] };
  try {
    for (let i = 0; i < warmup; i++) {
      await viaRoute();
      await viaTmux();
    }
    await interleaved(fresh.route, fresh.bare);
    for (let i = 0; i < KEYS_WARM_CALLS; i++) {
      await viaRoute();
      if (i % 40 === 39) await tmux(socket, "send-keys", "-t", `=${name}:`, "Enter");
    }
    await interleaved(warm.route, warm.bare);
  } finally {
    await client.removeSession(name).catch(() => {});
  }
  const keys = summarize(warm.route);
  const plain = summarize(warm.bare);
  const keysRatio = keys.p50 / plain.p50;
  const freshRatio = summarize(fresh.route).p50 / summarize(fresh.bare).p50;
  return [
    {
      label: label(2, 'keys route: `client.keys(name, ["x"])` call → answer (keyed), warm'),
      summary: keys,
      baseline: plain,
      note: `goal ≤ ${KEYS_GOAL.toFixed(1)}× a bare \`tmux send-keys\`: ${
        keysRatio <= KEYS_GOAL ? "met" : "NOT met"
      }; ${p(keys, "p90")}; ${ratio(keysRatio)} the bare send-keys after ${
        n + warmup + KEYS_WARM_CALLS
      } calls; a fresh daemon's first ${n}: p50 ${ms(summarize(fresh.route).p50)} ms, ${ratio(freshRatio)}`,
    },
    {
      label: label(2, "plain: spawn `tmux send-keys -l x` → exit"),
      summary: plain,
      isBaseline: true,
      note: `${p(plain, "p90")}`,
    },
  ];
}

/** Section 10: echo latency of one typed byte. */
async function benchEcho(ctx: Context): Promise<Row[]> {
  const { box, client } = ctx;
  const samples = ctx.quick ? 20 : 50;
  const warmup = 10;
  const socket = join(box.dirs.state, "box", "tmux.sock");
  const names = ["bench-echo-ws", "bench-echo-pty"];
  for (const name of names) await client.createSession({ location: "app", command: "cat", name });
  for (const name of names) await waitForProgram(socket, name, "cat");
  const terminals: Terminal[] = [];
  try {
    // One client per session, so tmux draws every keystroke to one client only.
    const ws = await WsTerminal.open(box.dirs.socket, names[0]);
    terminals.push(ws);
    const direct = await PtyTerminal.attach(socket, names[1]);
    terminals.push(direct);
    const floor = new PtyTerminal("cat", []);
    terminals.push(floor);
    await Promise.all([ws.settle(50), direct.settle(50)]);
    const times = { ws: [] as number[], direct: [] as number[], floor: [] as number[] };
    for (const term of [ws, direct, floor]) {
      await echoLatency(term, 0, warmup);
      await term.settle(30);
    }
    // Interleaved in rounds of 10.
    const rounds = Math.ceil(samples / 10);
    for (let round = 0; round < rounds; round++) {
      const count = Math.min(10, samples - round * 10);
      for (const [kind, term] of [["ws", ws], ["direct", direct], ["floor", floor]] as const) {
        times[kind].push(...await echoLatency(term, count, 0));
        term.type("\r");
        await term.settle(30);
      }
    }
    const s = { ws: summarize(times.ws), direct: summarize(times.direct), floor: summarize(times.floor) };
    return [
      {
        label: label(3, "attach echo: one byte over the box's WebSocket → its echo back"),
        summary: s.ws,
        baseline: s.direct,
        note: `${p(s.ws, "p99")}; ${warmup} warm-ups; session running \`cat\` (the tty echoes); ` +
          `${s.ws.p50 - s.direct.p50 >= 0 ? "+" : ""}${
            ms(s.ws.p50 - s.direct.p50)
          } ms over the direct attach`,
      },
      {
        label: label(3, "plain: `tmux attach` in a PTY in this process (node-pty)"),
        summary: s.direct,
        baseline: s.floor,
        note: `${p(s.direct, "p99")}; what the daemon's bridge runs, without HTTP and WebSocket`,
      },
      {
        label: label(3, "floor: `cat` in a PTY in this process, no tmux"),
        summary: s.floor,
        isBaseline: true,
        note: `${p(s.floor, "p99")}; the kernel's tty echo and node-pty's read`,
      },
    ];
  } finally {
    for (const term of terminals) await term.close().catch(() => {});
    for (const name of names) await client.removeSession(name).catch(() => {});
  }
}

/** Section 11: bulk output through attach. */
async function benchBulk(ctx: Context): Promise<Row[]> {
  const { box, client } = ctx;
  const count = ctx.quick ? 300_000 : 2_000_000;
  const runs = ctx.quick ? 2 : 3;
  const produced = seqBytes(count);
  const socket = join(box.dirs.state, "box", "tmux.sock");
  const names = ["bench-bulk-ws", "bench-bulk-pty"];
  for (const name of names) await client.createSession({ location: "app", command: "sh", name });
  const terminals: Terminal[] = [];
  // `$((…))` on the command line, so neither the count nor the marker appears before the output does.
  const line = (marker: number) =>
    `seq 1 $((${count / 1000}*1000)); echo bulk-done-$((${marker}*1000+${marker % 997}))\r`;
  const markerText = (marker: number) => `bulk-done-${marker * 1000 + (marker % 997)}`;
  let marker = 1;
  const timeoutMs = 180_000;
  try {
    const ws = await WsTerminal.open(box.dirs.socket, names[0]);
    terminals.push(ws);
    const direct = await PtyTerminal.attach(socket, names[1]);
    terminals.push(direct);
    await Promise.all([ws.settle(100), direct.settle(100)]);

    const attached = async (term: Terminal, name: string) => {
      const mark = term.length;
      const bytes = term.bytes;
      const m = marker++;
      const started = performance.now();
      term.type(line(m));
      await term.waitFor(markerText(m), mark, timeoutMs);
      const elapsed = performance.now() - started;
      const received = term.bytes - bytes;
      await term.settle(100);
      // The last number is on the screen: tmux drew the final state.
      const screen = await tmux(socket, "capture-pane", "-p", "-J", "-t", `=${name}:`);
      if (!screen.split("\n").some((row) => row.trim() === String(count))) {
        throw new Error(`${count} is not on the screen of ${name} after the run: ${screen.slice(-400)}`);
      }
      return { elapsed, received };
    };
    const floor = async () => {
      const term = new PtyTerminal("seq", ["1", String(count)]);
      const started = performance.now();
      await term.exited(timeoutMs, "seq in a PTY to exit");
      const exitedAt = performance.now();
      // node-pty may deliver the last chunks just after the exit (the tty turns each \n into \r\n).
      await term.until(() => term.bytes >= produced + count, 2000, "all of seq's output").catch(() => {});
      const elapsed = Math.max(exitedAt, term.lastAt) - started;
      const received = term.bytes;
      if (received < produced) throw new Error(`seq in a PTY: only ${received} of ${produced} bytes read`);
      await term.close();
      return { elapsed, received };
    };

    type Run = { elapsed: number; received: number };
    const results = { ws: [] as Run[], direct: [] as Run[] };
    const floors: Run[] = [];
    // A small warm-up of each, then the runs, alternating which goes first.
    for (let r = 0; r < runs; r++) {
      const order = r % 2 === 0 ? ["ws", "direct"] as const : ["direct", "ws"] as const;
      for (const kind of order) {
        results[kind].push(await attached(kind === "ws" ? ws : direct, kind === "ws" ? names[0] : names[1]));
      }
      floors.push(await floor());
    }
    const describe = (list: Run[]) => {
      const s = summarize(list.map((x) => x.elapsed));
      const received = list.reduce((sum, x) => sum + x.received, 0) / list.length;
      const seconds = s.p50 / 1000;
      return {
        s,
        text: `received ${(received / 1e6).toFixed(2)} MB of ${(produced / 1e6).toFixed(2)} MB written ` +
          `(${((received / produced) * 100).toFixed(0)}%); at p50 ${
            (received / 1e6 / seconds).toFixed(1)
          } MB/s ` +
          `on the wire, ${(produced / 1e6 / seconds).toFixed(1)} MB/s of program output`,
      };
    };
    const wsD = describe(results.ws);
    const directD = describe(results.direct);
    const floorD = describe(floors);
    return [
      {
        label: label(4, `bulk \`seq 1 ${count}\` through the attach WebSocket, until the line after it`),
        summary: wsD.s,
        baseline: directD.s,
        note: `${wsD.text}; ${COLS}×${ROWS}`,
      },
      {
        label: label(4, "plain: the same through `tmux attach` in a PTY in this process"),
        summary: directD.s,
        baseline: floorD.s,
        note: directD.text,
      },
      {
        label: label(4, `floor: \`seq 1 ${count}\` in a PTY of its own, no tmux`),
        summary: floorD.s,
        isBaseline: true,
        note: `${floorD.text}; every byte read by node-pty`,
      },
    ];
  } finally {
    for (const term of terminals) await term.close().catch(() => {});
    for (const name of names) await client.removeSession(name).catch(() => {});
  }
}

/** Sections 7 to 11, on one box; everything started is stopped and removed, also on failure. */
export async function benchSessions(
  options: {
    quick: boolean; /** Only these sections: `hook`, `send`, `keys`, `echo`, `bulk`. */
    only?: string[];
  },
): Promise<Row[]> {
  const chosen = (section: string) => !options.only?.length || options.only.includes(section);
  const scratch = await Deno.makeTempDir({ prefix: "dock-bench-sessions-" });
  let box: TestBox | undefined;
  let tap: EventTap | undefined;
  try {
    box = await startBox();
    const repo = await makeRepo(join(box.dirs.home, "work"), "app");
    await box.client.addLocation({ name: "app", path: repo });
    tap = await EventTap.open(box.client);
    const hookDir = join(scratch, "agent-cwd");
    await Deno.mkdir(hookDir);
    const ctx: Context = { box, client: box.client, tap, scratch, hookDir, quick: options.quick };
    const rows: Row[] = [];
    if (chosen("hook")) rows.push(...await benchHooks(ctx));
    if (chosen("send")) rows.push(...await benchSendScreen(ctx));
    if (chosen("keys")) rows.push(...await benchKeys(ctx));
    if (chosen("echo")) rows.push(...await benchEcho(ctx));
    if (chosen("bulk")) rows.push(...await benchBulk(ctx));
    return rows;
  } finally {
    await tap?.close().catch(() => {});
    if (box) {
      await box.stop().catch(() => {});
      killProcessesUnder(box.dirs.root);
      await Deno.remove(box.dirs.root, { recursive: true }).catch(() => {});
    }
    killProcessesUnder(scratch);
    await Deno.remove(scratch, { recursive: true }).catch(() => {});
  }
}

// Alone: `deno run -A bench/sessions.ts [--quick] [hook|send|keys|echo|bulk…]`.
if (import.meta.main) {
  const only = Deno.args.filter((arg) => !arg.startsWith("--"));
  for (const row of await benchSessions({ quick: Deno.args.includes("--quick"), only })) {
    const s = row.summary;
    const vs = row.baseline ? `, ${ratio(s.p50 / row.baseline.p50)} the plain` : "";
    console.log(`${row.label}: p50 ${ms(s.p50)} ms${vs}${row.note ? ` (${row.note})` : ""}`);
  }
}
