/**
 * Hooks benchmarks (issue #6), on a real `dockd` with a real `~/.dock/hooks.json`:
 *
 * 1. **Event → hook process started**, with 20 hooks configured: each hook writes the event's id into
 *    a FIFO the benchmark holds open, which stamps the line as it arrives (`echo` is a shell builtin,
 *    so the stamp is the shell's start plus one write). One event at a time, after the previous hook
 *    reported. Two cases: one of ten shell hooks matches, and all ten match (time to the tenth start).
 *    Baseline: the benchmark spawning the same `sh -c 'echo … > fifo'` itself (what starting a shell
 *    costs here), and the event's arrival on the box's SSE stream. The goal: the tenth of ten matching
 *    starts within 2× the time one matching hook takes to start (the ten are builtin-only, so dockd
 *    starts them together from one `/bin/sh`: core/hook_exec.ts). The same again with ten hooks that need
 *    no shell (`tee -a FIFO`, started directly: core/hook_command.ts), stamped when the tenth copy
 *    of the event reaches the FIFO. The four cases take turns event by event.
 * 2. **1,000 events/s with hooks attached**: four emitters pace `POST events` at 250/s each for a few
 *    seconds while one SSE client reads; the ten hooks match 1 % (and in a second run 10 %) of the
 *    events. Reported: the rate achieved, the SSE client's lag behind the last emit, and the hook
 *    backlog (`GET hooks` → `runs.queued`, sampled every 100 ms) at its peak and at the end.
 *
 * @module
 */
import { join } from "node:path";
import type { BoxClient } from "../client/box.ts";
import type { HookConfig } from "../client/wire.ts";
import { startBox, type TestBox } from "../tests/harness.ts";
import { type Row, summarize } from "./stats.ts";
import { HOOK_CONCURRENCY } from "../core/hooks.ts";

/** The goal for the 10th of ten matching hooks against one matching hook, ratio of medians (issue 36). */
const TEN_GOAL = 2;

/** Options of {@linkcode benchHooks}. */
export interface HooksBenchOptions {
  quick?: boolean;
}

/**
 * Makes a FIFO at `path` and opens it for reading, with a writer of our own (`keepOpen`): the FIFO then
 * reports end-of-file only once that writer is closed and every hook has closed its end.
 */
async function openFifo(path: string): Promise<{ file: Deno.FsFile; keepOpen: Deno.FsFile }> {
  const made = await new Deno.Command("mkfifo", { args: [path] }).output();
  if (!made.success) throw new Error("mkfifo failed");
  const reading = Deno.open(path, { read: true });
  const keepOpen = await Deno.open(path, { write: true });
  return { file: await reading, keepOpen };
}

/** Reads lines from a FIFO, stamping each with `performance.now()` as it arrives. */
class FifoStamps {
  readonly path: string;
  #waiters = new Map<string, (stamp: number) => void>();
  #early = new Map<string, number>();
  #file?: Deno.FsFile;
  #keepOpen?: Deno.FsFile;
  #reading?: Promise<void>;

  constructor(path: string) {
    this.path = path;
  }

  async open(): Promise<void> {
    ({ file: this.#file, keepOpen: this.#keepOpen } = await openFifo(this.path));
    this.#reading = this.#read();
  }

  async #read(): Promise<void> {
    const decoder = new TextDecoder();
    let partial = "";
    for await (const chunk of this.#file!.readable) {
      const stamp = performance.now();
      partial += decoder.decode(chunk, { stream: true });
      const lines = partial.split("\n");
      partial = lines.pop()!;
      for (const line of lines) {
        const waiter = this.#waiters.get(line);
        if (waiter) {
          this.#waiters.delete(line);
          waiter(stamp);
        } else this.#early.set(line, stamp);
      }
    }
  }

  /** Resolves with the stamp of `line` (or the time it already arrived). */
  next(line: string, timeoutMs = 10_000): Promise<number> {
    const early = this.#early.get(line);
    if (early !== undefined) {
      this.#early.delete(line);
      return Promise.resolve(early);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(line);
        reject(new Error(`no hook wrote '${line}' within ${timeoutMs} ms`));
      }, timeoutMs);
      this.#waiters.set(line, (stamp) => {
        clearTimeout(timer);
        resolve(stamp);
      });
    });
  }

  /** Closes our writer: the reader then sees end-of-file (every hook has closed its end) and stops. */
  async close(): Promise<void> {
    this.#keepOpen?.close();
    await this.#reading;
  }
}

/**
 * Ten hooks of one kind running `run(i)`: the first on `bench.<kind>.*` (so `bench.<kind>.one` matches
 * it alone), the other nine on `bench.<kind>.ten` (so that matches all ten).
 */
function tenHooks(kind: string, run: (i: number) => string): HookConfig[] {
  return Array.from(
    { length: 10 },
    (_, i) => ({ on: `bench.${kind}.${i === 0 ? "*" : "ten"}`, run: run(i) }),
  );
}

/** One measured case: the event emitted, and when its `count`-th hook started. */
interface HookCase {
  key: string;
  type: string;
  count: number;
  /** Resolves with the stamp of the `count`-th hook's start for the event whose `n` is `id`. */
  arrived: (id: string, count: number) => Promise<number>;
}

/**
 * Event → the last hook started, for each case in turn, event by event, with one configuration
 * throughout: on a shared machine a noisy stretch then weighs on every case alike.
 */
async function inTurn(
  box: TestBox,
  hooks: HookConfig[],
  n: number,
  cases: HookCase[],
): Promise<Map<string, number[]>> {
  await box.client.putHooks(hooks);
  const samples = new Map(cases.map((c) => [c.key, [] as number[]]));
  for (let i = 0; i < n + 5; i++) {
    for (const c of cases) {
      const id = `${c.key}${i}-${crypto.randomUUID().slice(0, 8)}`;
      const started = performance.now();
      const last = c.arrived(id, c.count);
      await box.client.emit({ type: c.type, data: { n: id } });
      const stamp = await last;
      if (i >= 5) samples.get(c.key)!.push(stamp - started);
    }
  }
  return samples;
}

/**
 * Shell hooks (`echo "$DOCK_N-<i>" > FIFO`, stamped line by line) and hooks that need no shell (`tee -a
 * FIFO`, started directly: each copies the event's JSON in, counted), one and ten of each matching.
 */
function eventToHooks(box: TestBox, stamps: FifoStamps, copies: FifoCopies, n: number) {
  const hooks = [
    ...tenHooks("shell", (i) => `echo "$DOCK_N-${i}" > ${stamps.path}`),
    ...tenHooks("tee", () => `tee -a ${copies.path}`),
  ];
  const lines = async (id: string, count: number) => {
    const arrivals = Array.from({ length: count }, (_, k) => stamps.next(`${id}-${k}`));
    return Math.max(...await Promise.all(arrivals));
  };
  const copied = (id: string, count: number) => copies.copies(id, count);
  return inTurn(box, hooks, n, [
    { key: "one", type: "bench.shell.one", count: 1, arrived: lines },
    { key: "ten", type: "bench.shell.ten", count: 10, arrived: lines },
    { key: "directOne", type: "bench.tee.one", count: 1, arrived: copied },
    { key: "directTen", type: "bench.tee.ten", count: 10, arrived: copied },
  ]);
}

/**
 * Counts the events that hooks running `tee -a FIFO` copy into a FIFO (the event's JSON, no newline;
 * one write each, below PIPE_BUF, so never interleaved), stamping the moment an event's `n` has been
 * seen `want` times.
 */
class FifoCopies {
  readonly path: string;
  #counts = new Map<string, number>();
  #waiters = new Map<string, { want: number; resolve: (stamp: number) => void }>();
  #keepOpen?: Deno.FsFile;
  #reading?: Promise<void>;

  constructor(path: string) {
    this.path = path;
  }

  async open(): Promise<void> {
    const { file, keepOpen } = await openFifo(this.path);
    this.#keepOpen = keepOpen;
    this.#reading = (async () => {
      const decoder = new TextDecoder();
      let text = "";
      for await (const chunk of file.readable) {
        const stamp = performance.now();
        text += decoder.decode(chunk, { stream: true });
        const end = text.lastIndexOf("}");
        for (const match of text.slice(0, end + 1).matchAll(/"n":"([^"]+)"/g)) {
          const count = (this.#counts.get(match[1]) ?? 0) + 1;
          this.#counts.set(match[1], count);
          const waiter = this.#waiters.get(match[1]);
          if (waiter && count >= waiter.want) {
            this.#waiters.delete(match[1]);
            waiter.resolve(stamp);
          }
        }
        text = text.slice(end + 1);
      }
    })();
  }

  /** Resolves with the stamp of the `want`-th copy of the event whose data has `n` = `id`. */
  copies(id: string, want: number, timeoutMs = 10_000): Promise<number> {
    if ((this.#counts.get(id) ?? 0) >= want) return Promise.resolve(performance.now());
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiters.delete(id);
        reject(
          new Error(`only ${this.#counts.get(id) ?? 0} of ${want} hooks copied '${id}' in ${timeoutMs} ms`),
        );
      }, timeoutMs);
      this.#waiters.set(id, {
        want,
        resolve: (stamp) => {
          clearTimeout(timer);
          resolve(stamp);
        },
      });
    });
  }

  async close(): Promise<void> {
    this.#keepOpen?.close();
    await this.#reading;
  }
}

/**
 * The same program started by hand: `count` copies of `tee -a FIFO` spawned one after another from this
 * process, each given an event's JSON on stdin, until the `count`-th copy arrived. What starting one and
 * ten programs costs on this machine from one Deno event loop, whatever starts them; the two take turns.
 */
async function plainTee(copies: FifoCopies, n: number): Promise<{ one: number[]; ten: number[] }> {
  const samples = { one: [] as number[], ten: [] as number[] };
  const encoder = new TextEncoder();
  for (let i = 0; i < n + 5; i++) {
    for (const [key, count] of [["one", 1], ["ten", 10]] as const) {
      const id = `plain-${key}${i}`;
      const started = performance.now();
      const arrived = copies.copies(id, count);
      const children = Array.from({ length: count }, () => {
        const child = new Deno.Command("tee", {
          args: ["-a", copies.path],
          stdin: "piped",
          stdout: "null",
          stderr: "null",
        }).spawn();
        const writer = child.stdin.getWriter();
        writer.write(encoder.encode(JSON.stringify({ type: "bench.plain", data: { n: id } })))
          .then(() => writer.close()).catch(() => {});
        return child;
      });
      const stamp = await arrived;
      await Promise.all(children.map((child) => child.status));
      if (i >= 5) samples[key].push(stamp - started);
    }
  }
  return samples;
}

async function plainSpawn(stamps: FifoStamps, n: number): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < n + 5; i++) {
    const started = performance.now();
    const arrival = stamps.next(`plain${i}`);
    const child = new Deno.Command("/bin/sh", { args: ["-c", `echo plain${i} > ${stamps.path}`] }).spawn();
    const stamp = await arrival;
    await child.status;
    if (i >= 5) samples.push(stamp - started);
  }
  return samples;
}

async function emitToSse(client: BoxClient, n: number): Promise<number[]> {
  const controller = new AbortController();
  const waiting = new Map<string, (t: number) => void>();
  const reader = (async () => {
    for await (const event of client.events({ signal: controller.signal })) {
      const key = String(event.data?.n ?? "");
      waiting.get(key)?.(performance.now());
    }
  })();
  await new Promise((r) => setTimeout(r, 100)); // the stream is open
  const samples: number[] = [];
  for (let i = 0; i < n + 5; i++) {
    const key = `sse${i}`;
    const arrived = new Promise<number>((resolve) => waiting.set(key, resolve));
    const started = performance.now();
    await client.emit({ type: "bench.sse", data: { n: key } });
    const stamp = await arrived;
    if (i >= 5) samples.push(stamp - started);
  }
  controller.abort();
  await reader.catch(() => {});
  return samples;
}

/** Paces `rate` events/s for `seconds` with hooks matching `hookedShare` of them; reports rate, lag, backlog. */
async function sustained(
  box: TestBox,
  rate: number,
  seconds: number,
  hookedShare: number,
): Promise<
  { achieved: number; lagMs: number; peakQueued: number; endQueued: number; hooksRun: number; lost: number }
> {
  // Ten hooks on `bench.load.hooked`, none of which writes to the FIFO (they only need to run).
  await box.client.putHooks(
    Array.from(
      { length: 10 },
      (_, i) => ({ on: i === 0 ? "bench.load.hooked" : `other.kind${i}.*`, run: "true" }),
    ),
  );
  const before = (await box.client.hooks()).runs!;
  const total = rate * seconds;
  const controller = new AbortController();
  let received = 0;
  let lastReceived = 0;
  const firstId = (await box.client.emit({ type: "bench.load.start" })).id!;
  const reader = (async () => {
    for await (const event of box.client.events({ after: firstId, signal: controller.signal })) {
      if (event.type.startsWith("bench.load.")) {
        received++;
        lastReceived = performance.now();
      }
    }
  })();
  let peakQueued = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      peakQueued = Math.max(peakQueued, (await box.client.hooks()).runs!.queued);
      await new Promise((r) => setTimeout(r, 100));
    }
  })();
  const emitters = 4;
  const perEmitter = Math.ceil(total / emitters);
  const interval = 1000 / (rate / emitters);
  const started = performance.now();
  const every = Math.max(1, Math.round(1 / hookedShare));
  let sent = 0;
  await Promise.all(Array.from({ length: emitters }, async (_, e) => {
    for (let i = 0; i < perEmitter; i++) {
      const due = started + i * interval;
      const wait = due - performance.now();
      if (wait > 1) await new Promise((r) => setTimeout(r, wait));
      const index = i * emitters + e;
      await box.client.emit({ type: index % every === 0 ? "bench.load.hooked" : "bench.load.plain" });
      sent++;
    }
  }));
  const lastEmit = performance.now();
  const elapsed = (lastEmit - started) / 1000;
  const deadline = Date.now() + 15_000;
  while (received < sent && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  const lagMs = Math.max(0, lastReceived - lastEmit);
  const endQueued = (await box.client.hooks()).runs!.queued;
  sampling = false;
  await sampler;
  // Let the last hooks finish before counting them.
  const settle = Date.now() + 15_000;
  let after = (await box.client.hooks()).runs!;
  while ((after.running > 0 || after.queued > 0) && Date.now() < settle) {
    await new Promise((r) => setTimeout(r, 50));
    after = (await box.client.hooks()).runs!;
  }
  controller.abort();
  // Not awaited: a stream aborted while far behind may not settle until its body is drained.
  reader.catch(() => {});
  return {
    achieved: sent / elapsed,
    lagMs,
    peakQueued,
    endQueued,
    hooksRun: after.started - before.started,
    lost: sent - received,
  };
}

/** Runs the hooks benchmarks and returns their table rows. */
export async function benchHooks(options: HooksBenchOptions = {}): Promise<Row[]> {
  const n = options.quick ? 20 : 100;
  const seconds = options.quick ? 2 : 5;
  await using box = await startBox();
  const stamps = new FifoStamps(join(box.dirs.root, "hooks.fifo"));
  await stamps.open();
  const copies = new FifoCopies(join(box.dirs.root, "copies.fifo"));
  await copies.open();
  try {
    const plain = summarize(await plainSpawn(stamps, n));
    const sse = summarize(await emitToSse(box.client, n));
    const hooks = await eventToHooks(box, stamps, copies, n);
    const byHand = await plainTee(copies, n);
    const [teeOne, teeTen] = [summarize(byHand.one), summarize(byHand.ten)];
    const [one, ten, plainOne, plainTen] = ["one", "ten", "directOne", "directTen"].map((key) =>
      summarize(hooks.get(key)!)
    );
    const rows: Row[] = [
      { label: "hooks: spawn `sh -c 'echo > fifo'` directly (plain)", summary: plain, isBaseline: true },
      { label: "hooks: emit → event on the box's SSE", summary: sse },
      {
        label: "hooks: emit → hook started, 20 configured, 1 matching (in turn with the three below)",
        summary: one,
        baseline: plain,
        note: "includes the POST and the shell's start",
      },
      {
        label: "hooks: emit → 10th hook started, 10 matching",
        summary: ten,
        baseline: one,
        note: `goal ≤ ${TEN_GOAL}× one matching: ${ten.p50 / one.p50 <= TEN_GOAL ? "met" : "NOT met"}; ` +
          `${(ten.p50 / one.p50).toFixed(2)}× one, ${(ten.p50 / plain.p50).toFixed(2)}× the plain spawn; ` +
          `at most ${HOOK_CONCURRENCY} run at once; builtin-only, so forked by one shell (core/hook_exec.ts)`,
      },
      {
        label: "hooks: emit → hook started, 1 of 10 matching, a command needing no shell (`tee -a FIFO`)",
        summary: plainOne,
        baseline: one,
        note: "started directly (`setsid tee`), not through `sh -c`; ratio vs the shell hook above",
      },
      {
        label: "hooks: emit → 10th hook started, 10 matching, a command needing no shell",
        summary: plainTen,
        baseline: plainOne,
        note:
          `goal ≤ ${TEN_GOAL}× one matching: ${
            plainTen.p50 / plainOne.p50 <= TEN_GOAL ? "met" : "NOT met"
          }; ` +
          `${(plainTen.p50 / one.p50).toFixed(2)}× one shell hook; by hand (below) ${
            (teeTen.p50 / teeOne.p50).toFixed(2)
          }×`,
      },
      {
        label: "hooks: by hand: spawn `tee -a FIFO` with an event on stdin, 1 (plain)",
        summary: teeOne,
        isBaseline: true,
      },
      {
        label: "hooks: by hand: spawn 10 × `tee -a FIFO`, one after another, until the 10th copy (plain)",
        summary: teeTen,
        baseline: teeOne,
        note: "what ten program starts cost against one on this machine, whoever starts them",
      },
    ];
    for (const share of [0.01, 0.1]) {
      const result = await sustained(box, 1000, seconds, share);
      const lag = summarize([result.lagMs]);
      rows.push({
        label: `hooks: 1,000 events/s for ${seconds}s, ${share * 100}% hooked — SSE lag after last emit`,
        summary: lag,
        note:
          `achieved ${
            Math.round(result.achieved)
          } ev/s, lost ${result.lost}; hook backlog peak ${result.peakQueued}, ` +
          `at end ${result.endQueued}; ${result.hooksRun} hooks ran`,
      });
    }
    return rows;
  } finally {
    await stamps.close();
    await copies.close();
  }
}

if (import.meta.main) {
  const rows = await benchHooks({ quick: Deno.args.includes("--quick") });
  for (const row of rows) {
    const s = row.summary;
    console.log(
      `${row.label}: p50 ${s.p50.toFixed(2)} ms, p99 ${s.p99.toFixed(2)} ms${
        row.note ? ` (${row.note})` : ""
      }`,
    );
  }
}
