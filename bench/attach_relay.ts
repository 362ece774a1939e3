/**
 * Attach echo latency through the laptop agent: one byte typed into a session running `cat` until
 * its echo comes back, by three paths measured in the same run, interleaved in rounds of ten:
 *
 * 1. **agent + box**: the platform WebSocket to the agent's
 *    `/v1/boxes/local/sessions/NAME/attach?token=` (what the app does), relayed to the box's socket.
 * 2. **box socket**: the box's own attach WebSocket over its unix socket (`client/websocket.ts`).
 * 3. **tmux attach in a PTY** in this process (node-pty), no HTTP and no WebSocket: what the box's
 *    bridge itself runs.
 *
 * Each path has a session of its own, so tmux draws every keystroke to one client only. Part of
 * `deno task bench` (`benchAttach`); alone: `deno run -A bench/attach_relay.ts [--samples N]`
 * (default 50, after 10 warm-ups).
 *
 * @module
 */
import { join } from "node:path";
import { type IPty, spawn } from "@lydell/node-pty";
import { AgentClient } from "../client/agent.ts";
import { connectUnixWebSocket, type ConnWebSocket } from "../client/websocket.ts";
import { makeDirs, makeRepo, startAgent, startBox } from "../tests/harness.ts";
import { ms, type Row, summarize, type Summary } from "./stats.ts";

const COLS = 120;
const ROWS = 40;
const encoder = new TextEncoder();
// deno-lint-ignore no-control-regex
const ESCAPES = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b[\]P^_][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[ -~]/g;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A terminal's output as text, with a wait for a condition on what arrived after a mark. */
abstract class Terminal {
  text = "";
  bytes = 0;
  #decoder = new TextDecoder();
  #wake: (() => void) | null = null;

  abstract type(keys: string): void;
  abstract close(): Promise<void>;

  protected received(chunk: Uint8Array): void {
    this.bytes += chunk.length;
    this.text += this.#decoder.decode(chunk, { stream: true });
    this.#wake?.();
  }

  async until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (!check()) {
      if (performance.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 50);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.#wake = null;
    }
  }

  /** Waits until nothing has arrived for `quietMs`. */
  async settle(quietMs: number): Promise<void> {
    let last = -1;
    while (last !== this.bytes) {
      last = this.bytes;
      await sleep(quietMs);
    }
  }
}

/** The platform WebSocket, as the app uses it. */
class BrowserTerminal extends Terminal {
  #ws: WebSocket;
  #closed: Promise<unknown>;

  private constructor(ws: WebSocket) {
    super();
    this.#ws = ws;
    ws.binaryType = "arraybuffer";
    ws.onmessage = (event) => this.received(new Uint8Array(event.data as ArrayBuffer));
    this.#closed = new Promise((resolve) => ws.addEventListener("close", resolve));
  }

  static async open(url: string): Promise<BrowserTerminal> {
    const ws = new WebSocket(url);
    const term = new BrowserTerminal(ws);
    await new Promise((resolve, reject) => {
      ws.addEventListener("open", resolve);
      ws.addEventListener("close", () => reject(new Error(`could not open ${url}`)));
    });
    return term;
  }

  type(keys: string): void {
    this.#ws.send(encoder.encode(keys));
  }

  async close(): Promise<void> {
    this.#ws.close();
    await this.#closed;
  }
}

/** The box's attach WebSocket over its unix socket. */
class SocketTerminal extends Terminal {
  #ws: ConnWebSocket;
  #pump: Promise<void>;

  constructor(ws: ConnWebSocket) {
    super();
    this.#ws = ws;
    this.#pump = (async () => {
      for (let message = await ws.next(); message; message = await ws.next()) this.received(message.data);
    })();
  }

  type(keys: string): void {
    this.#ws.sendBinary(encoder.encode(keys)).catch(() => {});
  }

  async close(): Promise<void> {
    await this.#ws.close(1000);
    await this.#pump;
  }
}

/** `tmux attach` in a PTY in this process. */
class PtyTerminal extends Terminal {
  #pty: IPty;
  #exited: Promise<unknown>;

  constructor(socket: string, session: string) {
    super();
    const env = Deno.env.toObject();
    delete env.TMUX;
    this.#pty = spawn("tmux", ["-u", "-S", socket, "attach-session", "-t", `=${session}`], {
      name: "xterm-256color",
      cols: COLS,
      rows: ROWS,
      cwd: "/",
      env: { ...env, TERM: "xterm-256color", LANG: "C.UTF-8", LC_CTYPE: "C.UTF-8" },
      encoding: null,
    });
    this.#pty.onData((chunk) => this.received(chunk as unknown as Uint8Array));
    this.#exited = new Promise((resolve) => this.#pty.onExit(resolve));
  }

  type(keys: string): void {
    this.#pty.write(keys);
  }

  async close(): Promise<void> {
    this.#pty.kill();
    await this.#exited;
  }
}

/** Times one typed byte until its echo is visible, `samples` times. */
async function echoLatency(term: Terminal, samples: number): Promise<number[]> {
  const keys = "qwertyuiop";
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const key = keys[i % keys.length];
    const mark = term.text.length;
    const started = performance.now();
    term.type(key);
    await term.until(
      () => term.text.slice(mark).replace(ESCAPES, "").includes(key),
      5000,
      `the echo of ${key}`,
    );
    times.push(performance.now() - started);
  }
  // Enter makes `cat` print the line, which keeps it short; let the redraw settle.
  term.type("\r");
  await term.settle(30);
  return times;
}

/** The three paths' labels and echo latencies, `samples` each, interleaved in rounds of ten. */
async function measure(samples: number): Promise<{ label: string; summary: Summary }[]> {
  const dirs = await makeDirs();
  await using box = await startBox({ dirs });
  await using agent = await startAgent(dirs);
  const client = new AgentClient({ url: agent.url, token: agent.token, origin: "bench" });
  const terminals: Terminal[] = [];
  try {
    await client.addLocal();
    const local = client.box("local");
    await local.addLocation({ name: "app", path: await makeRepo(join(dirs.home, "work")) });
    const names = { relay: "echo-relay", socket: "echo-socket", pty: "echo-pty" };
    for (const name of Object.values(names)) {
      await local.createSession({ location: "app", command: "cat", name });
    }
    await sleep(300);
    const tmuxSocket = join(dirs.state, "box", "tmux.sock");
    const relay = await BrowserTerminal.open(
      `ws://127.0.0.1:${agent.port}/v1/boxes/local/sessions/${names.relay}/attach?cols=${COLS}&rows=${ROWS}&token=${agent.token}`,
    );
    terminals.push(relay);
    const socket = new SocketTerminal(
      await connectUnixWebSocket(
        box.dirs.socket,
        `/v1/sessions/${names.socket}/attach?cols=${COLS}&rows=${ROWS}`,
      ),
    );
    terminals.push(socket);
    const pty = new PtyTerminal(tmuxSocket, names.pty);
    terminals.push(pty);
    const paths: [string, Terminal][] = [
      ["agent + box (platform WebSocket → agent → box socket)", relay],
      ["box socket (client/websocket.ts over the unix socket)", socket],
      ["tmux attach in a PTY (node-pty, in process)", pty],
    ];
    for (const [, term] of paths) {
      await term.until(() => term.bytes > 0, 10_000, "the first draw");
      await term.settle(50);
      await echoLatency(term, 10);
    }
    const times = paths.map(() => [] as number[]);
    for (let round = 0; round * 10 < samples; round++) {
      const count = Math.min(10, samples - round * 10);
      for (const [index, [, term]] of paths.entries()) times[index].push(...await echoLatency(term, count));
    }
    return paths.map(([label], index) => ({ label, summary: summarize(times[index]) }));
  } finally {
    for (const term of terminals) await term.close().catch(() => {});
    client.close();
  }
}

/** Attach echo latency as rows of `deno task bench`: through agent + box, the box socket, a PTY. */
export async function benchAttach(options: { quick: boolean }): Promise<Row[]> {
  const samples = options.quick ? 20 : 100;
  const [relay, socket, pty] = await measure(samples);
  return [
    {
      label: `Attach echo, one byte into \`cat\`: ${relay.label}`,
      summary: relay.summary,
      baseline: socket.summary,
      note: `p50 +${ms(relay.summary.p50 - socket.summary.p50)} ms over the box socket`,
    },
    {
      label: `Attach echo: ${socket.label}`,
      summary: socket.summary,
      baseline: pty.summary,
      note: `p50 +${ms(socket.summary.p50 - pty.summary.p50)} ms over the PTY`,
    },
    { label: `Attach echo: ${pty.label}`, summary: pty.summary, isBaseline: true },
  ];
}

async function main(): Promise<void> {
  const samplesArg = Deno.args.indexOf("--samples");
  const samples = samplesArg >= 0 ? Number(Deno.args[samplesArg + 1]) : 50;
  const results = await measure(samples);
  console.log(`\nattach echo latency, one byte into \`cat\`, ${samples} samples each (10 warm-ups)\n`);
  console.log("| path | p50 ms | p99 ms | mean ms |");
  console.log("|---|---:|---:|---:|");
  for (const { label, summary: s } of results) {
    console.log(`| ${label} | ${ms(s.p50)} | ${ms(s.p99)} | ${ms(s.mean)} |`);
  }
  const [relay, socket, pty] = results.map((r) => r.summary);
  console.log(
    `\nrelay overhead over the box socket: p50 +${ms(relay.p50 - socket.p50)} ms; ` +
      `box socket over the PTY: p50 +${ms(socket.p50 - pty.p50)} ms`,
  );
}

if (import.meta.main) await main();
