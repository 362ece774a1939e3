/**
 * A program in a PTY as one side of a pump (`pump.ts`): the box's attach (a WebSocket ↔ the PTY running
 * `tmux attach`).
 *
 * @module
 */
import { BaseEnd, type Close, CLOSE_LOST, type End, type Message } from "./pump.ts";
import type { Pty } from "./pty.ts";

const decoder = new TextDecoder();

/** Options of {@linkcode ptyEnd}. */
export interface PtyEndOptions {
  /** Starts the program in its PTY (`launchPty`, core/pty.ts); called once both sides are ready. */
  launch(): Pty | Promise<Pty>;
  /**
   * Handles a text message (the PTY takes only bytes): act on it, or throw `RefusedMessage` (`pump.ts`)
   * to close its sender. Text is dropped when absent.
   */
  control?(text: string, pty: Pty): void;
  /**
   * Holds input until the program's first output. A program that switches the terminal to raw mode
   * (a tmux client) has not done so before it draws, and the line discipline would echo keys typed
   * earlier as garbage.
   */
  holdInput?: boolean;
  /** The close the other side gets when the program exits; `tail` is its last output. */
  exited(exitCode: number, tail: Uint8Array): Close;
}

/** Bytes of recent output kept for {@linkcode PtyEndOptions.exited}. */
const TAIL_BYTES = 256;

/**
 * A program in a PTY as a side: its output becomes binary messages, binary messages are its input.
 * Reading pauses the PTY (the program blocks on a full terminal); closing hangs it up (SIGHUP).
 */
export function ptyEnd(name: string, options: PtyEndOptions): End {
  return new PtyEnd(name, options);
}

class PtyEnd extends BaseEnd {
  readonly ready: Promise<void> = Promise.resolve();
  #options: PtyEndOptions;
  #pty: Pty | null = null;
  /** Input that waits for the PTY (to start, or to draw with `holdInput`); null once it flows. */
  #held: Uint8Array[] | null = [];
  #tail = new Uint8Array(0);
  #paused = false;
  #closed = false;

  constructor(name: string, options: PtyEndOptions) {
    super(name);
    this.#options = options;
  }

  get backlog(): number {
    return 0;
  }

  protected override async read(): Promise<void> {
    let pty: Pty;
    try {
      pty = await this.#options.launch();
    } catch (error) {
      this.end({ code: CLOSE_LOST, reason: (error as Error).message });
      return;
    }
    if (this.#closed) {
      kill(pty);
      return;
    }
    this.#pty = pty;
    if (this.#paused) pty.pause();
    if (!this.#options.holdInput) this.#release(pty);
    pty.onData((chunk) => {
      this.#release(pty);
      this.#keepTail(chunk);
      this.deliver({ binary: true, data: chunk });
    });
    pty.onExit(({ code }) => this.end(this.#options.exited(code, this.#tail)));
  }

  pause(): void {
    this.#paused = true;
    this.#pty?.pause();
  }

  resume(): void {
    this.#paused = false;
    this.#pty?.resume();
  }

  send(message: Message): void {
    if (!message.binary) {
      if (this.#pty) this.#options.control?.(decoder.decode(message.data), this.#pty);
      return;
    }
    if (this.#held) this.#held.push(message.data);
    else this.#pty?.write(message.data);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.finished = true;
    // A paused PTY would never read the hang-up.
    this.resume();
    if (this.#pty) kill(this.#pty);
  }

  /** Writes the held input, and lets what follows through. */
  #release(pty: Pty): void {
    const held = this.#held;
    if (!held) return;
    this.#held = null;
    for (const keys of held) pty.write(keys);
  }

  #keepTail(chunk: Uint8Array): void {
    if (chunk.length >= TAIL_BYTES) {
      this.#tail = chunk.slice(chunk.length - TAIL_BYTES);
      return;
    }
    const joined = new Uint8Array(Math.min(TAIL_BYTES, this.#tail.length + chunk.length));
    const keep = joined.length - chunk.length;
    joined.set(this.#tail.subarray(this.#tail.length - keep));
    joined.set(chunk, keep);
    this.#tail = joined;
  }
}

function kill(pty: Pty): void {
  try {
    pty.kill();
  } catch { /* gone already: its exit raced the close */ }
}
