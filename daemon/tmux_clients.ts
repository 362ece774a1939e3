/**
 * Tmux clients started ahead of need, on a worker thread of their own (daemon/tmux_clients_worker.ts).
 * A short command sequence (keys, a short paste, a capture) handed to a client that is already connected
 * costs ~0.7 ms, against 3–4 ms to spawn `tmux` for it; the worker starts the next clients off the
 * daemon's event loop, and keeps two waiting so that calls back to back (a send, then its screen polled)
 * each find one connected.
 *
 * Not tmux's control mode (`tmux -C`): tmux 3.3a's server crashes (a NULL dereference) when a control
 * client attaches while another client makes a session, ending every session on the box.
 *
 * @module
 */
import type { RunResult } from "../core/runner.ts";
import { hex } from "../core/bytes.ts";
import type { FromClients, ToClients } from "./tmux_clients_worker.ts";

const WORKER = new URL("../daemon/tmux_clients_worker.ts", import.meta.url);

/** Clients kept waiting: one for the call at hand, one for the call right after it. */
const KEEP = 2;

/** The most a pipe takes in one write, whole or not at all (POSIX: at least 512; Linux: 4096). */
const PIPE_BUF = 4096;

/** Options of {@linkcode ReadyClients}. */
export interface ReadyClientsOptions {
  /** The options every tmux command of this server starts with (`-S socket -f config`). */
  tmux: readonly string[];
  /** The clients' environment. */
  env: Record<string, string>;
}

/** Clients of one tmux server started ahead of need, on a worker thread; started on first use. */
export class ReadyClients {
  #options: ReadyClientsOptions;
  #worker?: Worker;
  #calls = new Map<number, (result: RunResult | undefined) => void>();
  /** Whether the worker has answered at all: until then no client can have had a line. */
  #alive = false;
  #nextId = 0;
  #count = 0;
  #handed = 0;
  #closed = false;
  #closedWorker?: () => void;
  /** What no pane's text can guess: the end of each line's marker (see the worker's `runLine`). */
  #nonce = hex(crypto.getRandomValues(new Uint8Array(8)));

  constructor(options: ReadyClientsOptions) {
    this.#options = options;
  }

  /** How many clients wait ready, as the worker last said (none before the first line). */
  get count(): number {
    return this.#count;
  }

  /** How many lines clients started ahead have run (tests check the path a call took). */
  get handed(): number {
    return this.#handed;
  }

  /**
   * Runs `sequence` (one tmux command sequence in tmux's syntax, on one line) through a client started
   * ahead, and resolves with how it ended; with undefined when it was not run (too long for one pipe
   * write, closed, or a worker that never started), which the caller then spawns itself.
   */
  run(sequence: string): Promise<RunResult | undefined> {
    if (this.#closed) return Promise.resolve(undefined);
    const id = this.#nextId++;
    const marker = `dock-done-${id}-${this.#nonce}`;
    const line = new TextEncoder().encode(`${sequence} ; display-message -p '${marker}'\n`);
    if (line.length > PIPE_BUF) return Promise.resolve(undefined);
    const worker = this.#worker ?? this.#start();
    const done = new Promise<RunResult | undefined>((resolve) => this.#calls.set(id, resolve));
    worker.postMessage({ type: "run", id, line, marker } satisfies ToClients);
    return done;
  }

  /** Ends the clients waiting (they type nothing) and the worker; later lines are spawned by the caller. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const worker = this.#worker;
    if (!worker) return;
    const closed = new Promise<void>((resolve) => this.#closedWorker = resolve);
    worker.postMessage({ type: "close" } satisfies ToClients);
    await closed;
    worker.terminate();
    this.#worker = undefined;
  }

  #start(): Worker {
    const worker = new Worker(WORKER, { type: "module", name: "tmux clients" });
    worker.onmessage = (event: MessageEvent<FromClients>) => {
      const message = event.data;
      this.#alive = true;
      if (message.type === "done") {
        this.#handed++;
        this.#calls.get(message.id)?.(message.result);
        this.#calls.delete(message.id);
      } else if (message.type === "ready") this.#count = message.count;
      else this.#closedWorker?.();
    };
    worker.onerror = (event) => {
      event.preventDefault();
      this.#failed(`the tmux clients' worker failed: ${event.message}`);
    };
    worker.postMessage(
      { type: "start", tmux: this.#options.tmux, env: this.#options.env, keep: KEEP } satisfies ToClients,
    );
    this.#worker = worker;
    return worker;
  }

  /**
   * The worker is gone. Once it had answered, its calls end as failed, not spawned again: a client may
   * have had a line already, and typing it twice is worse than an error. A worker that never answered
   * (its module did not load) ran nothing: its calls are the caller's to spawn. Later lines are too.
   */
  #failed(reason: string): void {
    this.#closed = true;
    this.#count = 0;
    this.#worker?.terminate();
    this.#worker = undefined;
    const result: RunResult = {
      code: 1,
      signal: null,
      stdout: "",
      stderr: reason,
      output: reason,
      truncated: false,
      timedOut: false,
      durationMs: 0,
    };
    for (const resolve of this.#calls.values()) resolve(this.#alive ? result : undefined);
    this.#calls.clear();
    this.#closedWorker?.();
  }
}
