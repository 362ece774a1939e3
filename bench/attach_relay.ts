/**
 * Attach through the laptop agent: echo latency (one byte typed into a session running `cat` until its
 * echo comes back) and bulk output (`seq 1 N` in a shell session until the line after it), by four
 * paths measured in the same run, interleaved:
 *
 * 1. **agent + paired box**: the platform WebSocket to the agent's
 *    `/v1/boxes/paired/sessions/NAME/attach?token=` (what the app does), relayed over TLS to the box's
 *    listener for laptops, where the laptop gate hands it to the attach handler. The same daemon serves
 *    all four paths; it is known to the agent twice, as `local` (its socket) and `paired` (TLS).
 * 2. **agent + box socket**: the same through the agent to the box's unix socket (`local`).
 * 3. **box socket**: the box's own attach WebSocket over its unix socket (`core/websocket.ts`).
 * 4. **tmux attach in a PTY** in this process (node-pty), no HTTP and no WebSocket: what the box's
 *    attach runs itself.
 *
 * Each path has sessions of its own, so tmux draws every keystroke to one client only. Part of
 * `deno task bench` (`benchAttach`); alone: `deno run -A bench/attach_relay.ts [--samples N] [--quick]`
 * (default 50 echo samples after 10 warm-ups, three bulk runs of `seq 1 2000000`).
 *
 * @module
 */
import { join } from "node:path";
import { type IPty, spawn } from "@lydell/node-pty";
import { AgentClient } from "../client/agent.ts";
import type { ConnWebSocket } from "../core/websocket.ts";
import { connectUnixWebSocket } from "../core/ws_client.ts";
import { makeDirs, makeRepo, startAgent, startBox } from "../tests/harness.ts";
import { ms, ratio, type Row, summarize, type Summary } from "./stats.ts";
import { seqBytes } from "./sessions.ts";

const COLS = 120;
const ROWS = 40;
const encoder = new TextEncoder();
// deno-lint-ignore no-control-regex
const ESCAPES = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b[\]P^_][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[ -~]/g;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A terminal's output: a byte count and a bounded tail of the text, with waits on what arrived. */
export abstract class Terminal {
  bytes = 0;
  /** UTF-16 units decoded so far; `#tail` holds the last of them. */
  length = 0;
  #tail = "";
  #decoder = new TextDecoder();
  #wake: (() => void) | null = null;

  abstract type(keys: string): void;
  abstract close(): Promise<void>;

  protected received(chunk: Uint8Array): void {
    this.bytes += chunk.length;
    const text = this.#decoder.decode(chunk, { stream: true });
    this.length += text.length;
    this.#tail += text;
    if (this.#tail.length > 256 * 1024) this.#tail = this.#tail.slice(-64 * 1024);
    this.#wake?.();
  }

  /** Text received since `mark` (a `length` read earlier), as far as the tail still holds it. */
  since(mark: number): string {
    const start = this.length - this.#tail.length;
    return this.#tail.slice(Math.max(0, mark - start));
  }

  async until(check: () => boolean, timeoutMs: number, what: string): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (!check()) {
      if (performance.now() > deadline) {
        // What came last says where it stopped: mid-output, at a prompt, or with the typed line garbled.
        throw new Error(
          `timed out waiting for ${what}; last received: ${JSON.stringify(this.since(this.length - 300))}`,
        );
      }
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
export class BrowserTerminal extends Terminal {
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
export async function echoLatency(term: Terminal, samples: number): Promise<number[]> {
  const keys = "qwertyuiop";
  const times: number[] = [];
  for (let i = 0; i < samples; i++) {
    const key = keys[i % keys.length];
    const mark = term.length;
    const started = performance.now();
    term.type(key);
    await term.until(
      () => term.since(mark).replace(ESCAPES, "").includes(key),
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

let marker = 1;

/** Runs `seq 1 count` in the terminal's shell; milliseconds until the line after it arrived. */
async function bulk(term: Terminal, count: number): Promise<number> {
  const m = marker++;
  // `$((…))` on the command line, so the marker appears only once the command has run.
  const done = `bulk-done-${m * 1000 + (m % 997)}`;
  const mark = term.length;
  const started = performance.now();
  term.type(`seq 1 $((${count / 1000}*1000)); echo bulk-done-$((${m}*1000+${m % 997}))\r`);
  let cursor = mark;
  await term.until(
    () => {
      const found = term.since(cursor).includes(done);
      cursor = Math.max(mark, term.length - done.length);
      return found;
    },
    180_000,
    done,
  );
  const elapsed = performance.now() - started;
  await term.settle(100);
  return elapsed;
}

/** One path's echo and bulk figures. */
interface PathResult {
  label: string;
  echo: Summary;
  bulk: Summary;
}

/** The four paths' figures: `samples` echoes each (rounds of ten) and `runs` bulk runs of `count` lines. */
async function measure(
  options: { samples: number; runs: number; count: number },
): Promise<PathResult[]> {
  const dirs = await makeDirs();
  await Deno.mkdir(dirs.dockHome, { recursive: true });
  await Deno.writeTextFile(join(dirs.dockHome, "box.json"), JSON.stringify({ name: "bench" }));
  await using box = await startBox({ dirs, env: { DOCK_LISTEN: "127.0.0.1:0" } });
  await using agent = await startAgent(dirs);
  const client = new AgentClient({ url: agent.url, token: agent.token, origin: "bench" });
  const terminals: Terminal[] = [];
  try {
    await client.addLocal();
    const paired = await box.cli(["pair", "--host", "127.0.0.1"]);
    const link = /dock:\/\/[^\s']+/.exec(paired.stdout)?.[0];
    if (!link) throw new Error(`dockd pair printed no link: ${paired.stdout} ${paired.stderr}`);
    await client.pairBox(link, "paired");
    const local = client.box("local");
    await local.addLocation({ name: "app", path: await makeRepo(join(dirs.home, "work")) });
    const kinds = ["paired", "relay", "socket", "pty"] as const;
    for (const kind of kinds) {
      await local.createSession({ location: "app", command: "cat", name: `echo-${kind}` });
      await local.createSession({ location: "app", command: "sh", name: `bulk-${kind}` });
    }
    await sleep(300);
    const tmuxSocket = join(dirs.state, "box", "tmux.sock");
    const query = `cols=${COLS}&rows=${ROWS}`;
    const open = async (kind: typeof kinds[number], session: string): Promise<Terminal> => {
      const agentUrl = (box: string) =>
        `ws://127.0.0.1:${agent.port}/v1/boxes/${box}/sessions/${session}/attach?${query}&token=${agent.token}`;
      const term = kind === "paired"
        ? await BrowserTerminal.open(agentUrl("paired"))
        : kind === "relay"
        ? await BrowserTerminal.open(agentUrl("local"))
        : kind === "socket"
        ? new SocketTerminal(
          await connectUnixWebSocket(box.dirs.socket, `/v1/sessions/${session}/attach?${query}`),
        )
        : new PtyTerminal(tmuxSocket, session);
      terminals.push(term);
      await term.until(() => term.bytes > 0, 10_000, `the first draw of ${session}`);
      await term.settle(50);
      return term;
    };
    const echoTerms = [];
    for (const kind of kinds) echoTerms.push(await open(kind, `echo-${kind}`));
    for (const term of echoTerms) await echoLatency(term, 10);
    const echo = kinds.map(() => [] as number[]);
    for (let round = 0; round * 10 < options.samples; round++) {
      const count = Math.min(10, options.samples - round * 10);
      for (const [index, term] of echoTerms.entries()) echo[index].push(...await echoLatency(term, count));
    }
    const bulkTerms = [];
    for (const kind of kinds) bulkTerms.push(await open(kind, `bulk-${kind}`));
    const bulks = kinds.map(() => [] as number[]);
    // Which path goes first rotates from run to run.
    for (let run = 0; run < options.runs; run++) {
      for (let i = 0; i < kinds.length; i++) {
        const index = (i + run) % kinds.length;
        bulks[index].push(await bulk(bulkTerms[index], options.count));
      }
    }
    const labels = {
      paired: "agent + paired box (platform WebSocket → agent → TLS → box's laptop gate → attach)",
      relay: "agent + box socket (platform WebSocket → agent → box socket)",
      socket: "box socket (core/websocket.ts over the unix socket)",
      pty: "tmux attach in a PTY (node-pty, in process)",
    };
    return kinds.map((kind, index) => ({
      label: labels[kind],
      echo: summarize(echo[index]),
      bulk: summarize(bulks[index]),
    }));
  } finally {
    for (const term of terminals) await term.close().catch(() => {});
    client.close();
  }
}

const signed = (value: number) => `${value >= 0 ? "+" : ""}${ms(value)}`;

/** Attach echo and bulk as rows of `deno task bench`: through the agent (paired box, box socket), the box socket, a PTY. */
export async function benchAttach(options: { quick: boolean }): Promise<Row[]> {
  const count = options.quick ? 300_000 : 2_000_000;
  const [paired, relay, socket, pty] = await measure({
    samples: options.quick ? 20 : 100,
    runs: options.quick ? 1 : 3,
    count,
  });
  const mb = (seqBytes(count) / 1e6).toFixed(1);
  const rate = (s: Summary) => `${(seqBytes(count) / 1e3 / s.p50).toFixed(1)} MB/s of program output`;
  return [
    {
      label: `Attach echo, one byte into \`cat\`: ${paired.label}`,
      summary: paired.echo,
      baseline: socket.echo,
      note: `p50 ${signed(paired.echo.p50 - socket.echo.p50)} ms over the box socket`,
    },
    {
      label: `Attach echo: ${relay.label}`,
      summary: relay.echo,
      baseline: socket.echo,
      note: `p50 ${signed(relay.echo.p50 - socket.echo.p50)} ms over the box socket`,
    },
    {
      label: `Attach echo: ${socket.label}`,
      summary: socket.echo,
      baseline: pty.echo,
      note: `p50 ${signed(socket.echo.p50 - pty.echo.p50)} ms over the PTY`,
    },
    { label: `Attach echo: ${pty.label}`, summary: pty.echo, isBaseline: true },
    {
      label: `Attach bulk, \`seq 1 ${count}\` (${mb} MB) until the line after it: ${paired.label}`,
      summary: paired.bulk,
      baseline: pty.bulk,
      note: `${rate(paired.bulk)}; ${ratio(paired.bulk.p50 / pty.bulk.p50)} the PTY`,
    },
    {
      label: `Attach bulk: ${relay.label}`,
      summary: relay.bulk,
      baseline: pty.bulk,
      note: `${rate(relay.bulk)}; ${ratio(relay.bulk.p50 / pty.bulk.p50)} the PTY`,
    },
    {
      label: `Attach bulk: ${socket.label}`,
      summary: socket.bulk,
      baseline: pty.bulk,
      note: `${rate(socket.bulk)}; ${ratio(socket.bulk.p50 / pty.bulk.p50)} the PTY`,
    },
    { label: `Attach bulk: ${pty.label}`, summary: pty.bulk, isBaseline: true, note: rate(pty.bulk) },
  ];
}

async function main(): Promise<void> {
  const quick = Deno.args.includes("--quick");
  const samplesArg = Deno.args.indexOf("--samples");
  const samples = samplesArg >= 0 ? Number(Deno.args[samplesArg + 1]) : 50;
  const count = quick ? 300_000 : 2_000_000;
  const runs = quick ? 1 : 3;
  const results = await measure({ samples, runs, count });
  console.log(
    `\nattach through the agent: echo of one byte into \`cat\` (${samples} samples each, 10 warm-ups); ` +
      `bulk \`seq 1 ${count}\` (${runs} runs each)\n`,
  );
  console.log("| path | echo p50 ms | echo p99 ms | bulk p50 ms | bulk ÷ PTY |");
  console.log("|---|---:|---:|---:|---:|");
  const pty = results.at(-1)!;
  for (const { label, echo, bulk } of results) {
    console.log(
      `| ${label} | ${ms(echo.p50)} | ${ms(echo.p99)} | ${ms(bulk.p50)} | ${
        ratio(bulk.p50 / pty.bulk.p50)
      } |`,
    );
  }
  const [paired, relay, socket] = results;
  console.log(
    `\necho p50 over the box socket: paired box ${signed(paired.echo.p50 - socket.echo.p50)} ms, ` +
      `box socket through the agent ${signed(relay.echo.p50 - socket.echo.p50)} ms`,
  );
}

if (import.meta.main) await main();
