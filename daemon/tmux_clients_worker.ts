/**
 * The worker thread of {@linkcode ReadyClients} (daemon/tmux_clients.ts): keeps tmux clients started
 * ahead of need (`tmux source-file -`, connected and waiting for their commands on stdin), hands each
 * command line it is given to one, and answers with how that client ended. The spawns happen here, off
 * the daemon's event loop: Deno's spawn holds its thread until the child has started (CPU profile of the
 * keys route: ~1.5 ms of the daemon's loop per client started), and a client started on the daemon's
 * loop right after a call delayed the next request, or that call's own answer, by as much.
 *
 * @module
 */
/// <reference lib="deno.worker" />
import { run, type RunResult } from "../core/runner.ts";

/** What the daemon's thread sends: the clients' set-up once, then lines to run, then the end. */
export type ToClients =
  | { type: "start"; tmux: readonly string[]; env: Record<string, string>; keep: number }
  | { type: "run"; id: number; line: Uint8Array; marker: string }
  | { type: "close" };

/** What the worker answers: a line's outcome, how many clients wait ready, and that it has closed. */
export type FromClients =
  | { type: "done"; id: number; result: RunResult }
  | { type: "ready"; count: number }
  | { type: "closed" };

/** A client started ahead, waiting for its commands on stdin. */
interface Client {
  input: ReadableStreamDefaultController<Uint8Array>;
  result: Promise<RunResult>;
  /** Ends it when its commands take too long (as `timeoutMs` ends a spawned tmux). */
  stop: AbortController;
  exited: boolean;
  /** Its stdout so far, once it has a line. */
  stdout: string;
  /** The line's last output, printed once every command before it succeeded, and who waits for it. */
  awaited?: { marker: string; seen: (stdout: string) => void };
}

/** How long a client may take over its commands before it is stopped, as for a spawned tmux. */
const LINE_TIMEOUT_MS = 15_000;

let setup: Extract<ToClients, { type: "start" }> | undefined;
let ready: Client[] = [];
let closing = false;
let refillTimer: ReturnType<typeof setTimeout> | undefined;

/** Starts one client; it runs, once its input ends, the line it was given. */
function startClient(): Client {
  let input!: ReadableStreamDefaultController<Uint8Array>;
  const stdin = new ReadableStream<Uint8Array>({ start: (controller) => void (input = controller) });
  const stop = new AbortController();
  const decoder = new TextDecoder();
  const result = run("tmux", [...setup!.tmux, "source-file", "-"], {
    stdin,
    group: false,
    env: setup!.env,
    signal: stop.signal,
    onOutput: (chunk, stream) => {
      const awaited = client.awaited;
      if (stream !== "stdout" || !awaited) return;
      client.stdout += decoder.decode(chunk, { stream: true });
      const end = `${awaited.marker}\n`;
      if (client.stdout.endsWith(end)) awaited.seen(client.stdout.slice(0, -end.length));
    },
  }).catch((error) => ({ code: 1, stdout: "", stderr: String(error) }) as RunResult);
  const client: Client = { input, stop, result, exited: false, stdout: "" };
  result.then(() => void (client.exited = true));
  return client;
}

/** Starts clients until `keep` wait ready (those that ended on their own, a server gone, are dropped). */
function refill(): void {
  if (closing || !setup) return;
  ready = ready.filter((client) => !client.exited);
  while (ready.length < setup.keep) ready.push(startClient());
  post({ type: "ready", count: ready.length });
}

/**
 * Runs `line` through a client started ahead, or one started now when none is left. The line is one
 * write no longer than PIPE_BUF (the caller's check), so the pipe holds all of it or none: a daemon
 * killed mid-way leaves the client the whole line, which it runs at its end of input, or nothing.
 * The line ends by printing `marker`, which tmux reaches only when every command before it succeeded:
 * its output answers at once (measured: p50 0.55 ms from the write, against 0.74 ms to the client's
 * exit); a failed line is answered by the client's exit, with what it said.
 */
async function runLine(id: number, line: Uint8Array, marker: string): Promise<void> {
  let client = ready.shift();
  while (client?.exited) client = ready.shift();
  client ??= startClient();
  const picked = client;
  const seen = new Promise<string>((resolve) => picked.awaited = { marker, seen: resolve });
  picked.input.enqueue(line);
  picked.input.close();
  // A guard on a child, on real time (allow-listed): a client that never ends is stopped.
  const timer = setTimeout(() => picked.stop.abort(), LINE_TIMEOUT_MS);
  const ended = picked.result.finally(() => clearTimeout(timer));
  const outcome = await Promise.race([seen, ended]);
  const result: RunResult = typeof outcome === "string"
    ? { ...SUCCEEDED, stdout: outcome, output: outcome }
    : outcome;
  post({ type: "done", id, result });
  // After the answer, at the timers' next tick (~1 ms, not `setImmediate`'s few µs: core/turn.ts): a
  // line that comes back to back is handed over first. Starting a client holds this thread until it
  // has started (~0.3 ms quiet, more under load); a line that comes meanwhile waits for that.
  clearTimeout(refillTimer);
  refillTimer = setTimeout(refill, 0);
}

/** A line whose marker came: every command of it succeeded (the client exits 0 right after). */
const SUCCEEDED: RunResult = {
  code: 0,
  signal: null,
  stdout: "",
  stderr: "",
  output: "",
  truncated: false,
  timedOut: false,
  durationMs: 0,
};

/** Ends every client waiting (they run nothing: their input ends empty). */
async function close(): Promise<void> {
  closing = true;
  clearTimeout(refillTimer);
  const waiting = ready;
  ready = [];
  for (const client of waiting) if (!client.exited) client.input.close();
  await Promise.all(waiting.map((client) => client.result));
  post({ type: "closed" });
}

function post(message: FromClients): void {
  self.postMessage(message);
}

self.onmessage = (event: MessageEvent<ToClients>) => {
  const message = event.data;
  if (message.type === "start") {
    setup = message;
    refill();
  } else if (message.type === "run") void runLine(message.id, message.line, message.marker);
  else void close();
};
