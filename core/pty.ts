/**
 * The runner's PTY launch: a child in a pseudo-terminal, for a terminal the user drives (the attach's
 * `tmux attach`). A module of its own because node-pty loads a native addon that only the attach
 * needs: what imports the runner (the CLI's commands among them) does not load it. Its children are
 * tracked by the runner (core/runner.ts), so `killAll` ends them with the rest.
 *
 * node-pty itself is imported on the first launch, not with the daemon: loading it (its CommonJS, the
 * Node modules it requires, the addon) cost 51 ms of a fresh box's first daemon start (24–30 ms on
 * later starts), which a box pays before it answers; the first attach pays it instead.
 *
 * @module
 */
import { track } from "./runner.ts";

let nodePty: Promise<typeof import("@lydell/node-pty")> | undefined;

/** Options for {@linkcode launchPty}. */
export interface PtyOptions {
  /** Initial width and height of the terminal. */
  cols: number;
  rows: number;
  /** Working directory. @default {"/"} */
  cwd?: string;
  /** The whole environment of the child. @default {the daemon's} */
  env?: Record<string, string>;
  /** The terminal type (`$TERM`) the PTY is made for. @default {"xterm-256color"} */
  term?: string;
}

/** A child in a pseudo-terminal, read and written as raw bytes. */
export interface Pty {
  readonly pid: number;
  /** Output as it arrives, never decoded: a multibyte character may be split across two chunks. */
  onData(listener: (chunk: Uint8Array) => void): void;
  onExit(listener: (exit: { code: number; signal: number | null }) => void): void;
  write(bytes: Uint8Array): void;
  resize(cols: number, rows: number): void;
  /** Stops reading the terminal: the child blocks once its output fills the terminal's buffer. */
  pause(): void;
  resume(): void;
  /** Signals the child (SIGHUP unless told, as when a terminal window closes). */
  kill(signal?: string): void;
}

/**
 * Starts `cmd` in a new pseudo-terminal (its own session, the terminal its controlling one), for a
 * terminal the user drives: the attach's `tmux attach`. Rejects if it cannot start.
 */
export async function launchPty(cmd: string, args: string[], options: PtyOptions): Promise<Pty> {
  const { spawn } = await (nodePty ??= import("@lydell/node-pty"));
  const child = spawn(cmd, args, {
    name: options.term ?? "xterm-256color",
    cols: options.cols,
    rows: options.rows,
    cwd: options.cwd ?? "/",
    env: options.env,
    // Raw Buffers: decoding here would mangle a multibyte character split across two reads.
    encoding: null,
  });
  // The child leads its own session and group (forkpty), so `killAll` can end it and what it forked.
  child.onExit(track(child.pid));
  return {
    pid: child.pid,
    onData: (listener) => child.onData((chunk) => listener(chunk as unknown as Uint8Array)),
    onExit: (listener) =>
      child.onExit(({ exitCode, signal }) => listener({ code: exitCode, signal: signal ?? null })),
    // node-pty hands the bytes to a stream, which takes a Uint8Array despite the typing.
    write: (bytes) => child.write(bytes as unknown as string),
    resize: (cols, rows) => child.resize(cols, rows),
    pause: () => child.pause(),
    resume: () => child.resume(),
    kill: (signal) => child.kill(signal),
  };
}
