/**
 * A tmux client kept connected in control mode (`tmux -C`), which runs the command sequences written to
 * it, one line each, and answers each command with a block (`%begin` … `%end` or `%error`). Handing a
 * line to it costs ~0.1 ms, against ~0.7 ms for a client started ahead and ~2–3 ms for a spawned
 * `tmux`: most of a keystroke sent through the API (bench sessions 9), and of a screen polled back to
 * back after a send.
 *
 * A control client must be attached to a session: it attaches to {@linkcode CONTROL_SESSION}, made for
 * it (a name no dock session can take: those start with a letter or digit), which the daemon's pane
 * listing leaves out. Each sequence goes in one write no longer than PIPE_BUF, so the pipe holds all of
 * it or none: a daemon killed mid-way leaves the client the whole line, which it runs before it sees the
 * end of its input, as a spawned `tmux` outlives the daemon.
 *
 * What tmux 3.3a does here (measured): each command of a line answers with its own block, and a failing
 * one ends the line (an `%error` block, none for the commands after it); the first block answers the
 * attach itself; a control client that is not attached exits once its command is done, which is why it
 * needs a session; notifications (`%session-changed`, `%output`, `%exit`) come between blocks, never
 * inside one; a block's `%end` repeats its `%begin`'s time, number and flags, which is how a pane line
 * reading `%end …` is told apart.
 *
 * @module
 */
import { run, type RunResult } from "../core/runner.ts";

/** The session the control client attaches to: no dock session's name (`[A-Za-z0-9]…`). */
export const CONTROL_SESSION = "_dock-control";

/** The most a block's output keeps (the newest lines), as a spawned client's output is bounded. */
const MAX_BLOCK_BYTES = 16 * 1024 * 1024;

/** A sequence written to the client and not answered yet. */
interface Pending {
  /** Commands in the line: a block each, unless one fails (tmux skips the rest of the line then). */
  commands: number;
  blocks: number;
  stdout: string[];
  started: number;
  resolve(result: RunResult | "unreached"): void;
}

/** The block being read: its `%begin` line's time, number and flags, which its `%end` repeats. */
interface Block {
  id: string;
  lines: string[];
  bytes: number;
}

/** A tmux control-mode client of one server, attached to {@linkcode CONTROL_SESSION}. */
export class ControlClient {
  #input!: ReadableStreamDefaultController<Uint8Array>;
  #stop = new AbortController();
  #pending: Pending[] = [];
  #block: Block | null = null;
  /** The attach command's own block comes first: every later block answers a line written here. */
  #attached = false;
  #ended = false;
  #partial = "";
  #decoder = new TextDecoder();
  /** Resolves once the client is attached (true) or has ended without attaching (false). */
  readonly attached: Promise<boolean>;
  #attach!: (attached: boolean) => void;
  /** Resolves when the client process has ended. */
  readonly ended: Promise<void>;

  /** Starts a client with tmux's global options `global` (socket, config) and environment `env`. */
  constructor(global: string[], env: Record<string, string>) {
    this.attached = new Promise((resolve) => this.#attach = resolve);
    const stdin = new ReadableStream<Uint8Array>({ start: (controller) => void (this.#input = controller) });
    // The session is made when missing (`-A` attaches to it otherwise), small, running a program
    // that prints nothing; never the server (`-N`): one starting here beside a first session's own
    // `new-session` raced it for the socket ("server exited unexpectedly" for that session).
    const result = run("tmux", [
      ...global,
      "-N",
      "-C",
      "new-session",
      "-A",
      "-s",
      CONTROL_SESSION,
      "-x",
      "80",
      "-y",
      "24",
      "cat",
    ], {
      stdin,
      group: false,
      env,
      signal: this.#stop.signal,
      // Read as it comes (below); what run keeps of it is only for an end that is not understood.
      maxOutput: 64 * 1024,
      onOutput: (chunk, stream) => {
        if (stream === "stdout") this.#read(chunk);
      },
    }).catch(() => undefined);
    this.ended = result.then(() => this.#end());
  }

  /** Whether lines can be written to it: attached, and not ended. */
  get alive(): boolean {
    return this.#attached && !this.#ended && !this.#closing;
  }

  /** Whether its process has ended (or is ending: its input was closed or it was stopped). */
  get finished(): boolean {
    return this.#ended || this.#closing;
  }

  #closing = false;

  /**
   * Runs the `commands` of `line` (one line of tmux's command syntax, at most PIPE_BUF bytes): their
   * output and, for a failing one, its error, as a spawned client's would be. `"unreached"` when the
   * client had ended, or ended before tmux started on the line: nothing of it ran.
   */
  run(line: Uint8Array, commands: number): Promise<RunResult | "unreached"> {
    if (!this.alive) return Promise.resolve("unreached");
    return new Promise((resolve) => {
      this.#pending.push({ commands, blocks: 0, stdout: [], started: performance.now(), resolve });
      this.#input.enqueue(line);
    });
  }

  /** Stops the client when a line takes too long (as a spawned client's timeout ends it). */
  abort(): void {
    this.#closing = true;
    this.#stop.abort();
  }

  /** Ends the client's input; it detaches and exits. */
  async close(): Promise<void> {
    this.#closing = true;
    if (!this.#ended) {
      try {
        this.#input.close();
      } catch { /* closed already */ }
    }
    await this.ended;
  }

  #read(chunk: Uint8Array): void {
    const text = this.#partial + this.#decoder.decode(chunk, { stream: true });
    const lines = text.split("\n");
    this.#partial = lines.pop()!;
    for (const line of lines) this.#line(line);
  }

  #line(line: string): void {
    const block = this.#block;
    if (block) {
      if (line === `%end ${block.id}` || line === `%error ${block.id}`) {
        this.#block = null;
        this.#answer(block, line.startsWith("%error"));
        return;
      }
      block.lines.push(line);
      block.bytes += line.length + 1;
      while (block.bytes > MAX_BLOCK_BYTES && block.lines.length > 1) {
        block.bytes -= block.lines.shift()!.length + 1;
      }
      return;
    }
    // Outside a block: notifications (`%session-changed`, `%output` of the hidden pane, `%exit`…).
    if (line.startsWith("%begin ")) this.#block = { id: line.slice("%begin ".length), lines: [], bytes: 0 };
  }

  #answer(block: Block, failed: boolean): void {
    if (!this.#attached) {
      // A failed attach ends the client (it exits); nothing is written to it meanwhile.
      this.#attached = !failed;
      this.#attach(!failed);
      return;
    }
    const pending = this.#pending[0];
    if (!pending) return; // nothing written asked for it
    pending.blocks++;
    if (!failed) pending.stdout.push(...block.lines.map((line) => `${line}\n`));
    if (!failed && pending.blocks < pending.commands) return;
    this.#pending.shift();
    pending.resolve({
      code: failed ? 1 : 0,
      signal: null,
      stdout: pending.stdout.join(""),
      stderr: failed ? block.lines.join("\n") + "\n" : "",
      output: "",
      truncated: false,
      timedOut: false,
      durationMs: performance.now() - pending.started,
    });
  }

  #end(): void {
    this.#ended = true;
    this.#attach(false);
    const pending = this.#pending.splice(0);
    for (const [i, request] of pending.entries()) {
      // The first may have been started by tmux (a block begun, or some of its commands answered):
      // whether it ran is not known, so it fails. Later ones never began: nothing of them ran.
      const begun = i === 0 && (request.blocks > 0 || this.#block !== null);
      request.resolve(
        begun
          ? {
            code: 1,
            signal: null,
            stdout: request.stdout.join(""),
            stderr: "the tmux control client ended while running the command\n",
            output: "",
            truncated: false,
            timedOut: false,
            durationMs: performance.now() - request.started,
          }
          : "unreached",
      );
    }
  }
}
