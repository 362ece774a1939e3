/**
 * Terminal attach (spec 4.3): bridges one WebSocket to one `tmux attach-session` client running in a
 * PTY on the daemon's private tmux socket.
 *
 * Why a PTY running a real tmux client rather than control mode (`tmux -C`): control mode hands over
 * each pane's output as escaped text, and turning that back into one terminal stream means
 * re-implementing tmux's renderer (status line, splits, copy mode, the redraw on attach, resizes). A
 * real client does all of it and speaks the terminal the app emulates (xterm-256color). One client per
 * WebSocket gives several viewers at once with no shared state here, and hanging up a client detaches
 * it while the session runs on. The cost is one `tmux` process per open socket, which is small.
 *
 * Frames: binary out is raw PTY bytes (never decoded, so split UTF-8 sequences and escape sequences pass
 * intact); binary in is keystrokes; text in is JSON control (`{"type":"resize","cols","rows"}`).
 *
 * The socket and the PTY are joined by the one pump (core/pump.ts): a slow reader pauses the PTY, so the
 * tmux client blocks and tmux redraws once it catches up; the PTY is started by the runner's PTY launch
 * (core/pty.ts) with the command daemon/tmux.ts makes. A laptop's attach over TLS comes here
 * straight from the laptop gate, with the laptop's revocation as `signal`.
 *
 * @module
 */
import { badField } from "../client/errors.ts";
import { type Close, pump, RefusedMessage, webSocketEnd } from "../core/pump.ts";
import { ptyEnd } from "../core/pty_end.ts";
import { launchPty, type Pty } from "../core/pty.ts";
import { acceptWebSocket } from "../core/websocket.ts";
import { attachCommand } from "./tmux.ts";
import { readTyped } from "./turn_check.ts";

/** Largest accepted terminal width or height. */
export const ATTACH_MAX_SIZE = 1000;
/** Size used when the attach URL names none. */
export const ATTACH_DEFAULT_SIZE: { cols: number; rows: number } = { cols: 80, rows: 24 };

/** Close code for a client frame dockd cannot accept (RFC 6455 "unsupported data"). */
const CLOSE_UNSUPPORTED = 1003;

/** Options for {@linkcode attachSession}. */
export interface AttachOptions {
  /** The daemon's private tmux socket (`tmux -S`). */
  socket: string;
  /** Session name; matched exactly, never as a prefix. */
  session: string;
  /** Initial width, 1..1000. */
  cols: number;
  /** Initial height, 1..1000. */
  rows: number;
  /** tmux binary. @default {"tmux"} */
  tmux?: string;
  /** Pause the PTY once this many bytes wait unsent on the WebSocket. @default {4 MiB} */
  highWaterBytes?: number;
  /** Resume the PTY once the backlog drains to this many bytes. @default {1 MiB} */
  lowWaterBytes?: number;
  /** Told when backpressure pauses (`true`) or resumes (`false`) the PTY: for metrics and tests. */
  onFlow?: (paused: boolean) => void;
  /**
   * Closes the socket (1008, with the abort reason's message) and hangs up the tmux client when
   * aborted: a paired laptop's revocation.
   */
  signal?: AbortSignal;
  /** Called once the socket and the tmux client are both done. */
  onEnd?: () => void;
  /**
   * Told each time the person submits something typed (Enter after other keys): their input starts a
   * turn a tool may not report. Never given the keys.
   */
  onSubmit?: () => void;
  /** Told when the person types Esc or Ctrl-C: a running agent may have stopped without saying so. */
  onInterrupt?: () => void;
}

/** Reads and validates the `cols`/`rows` query parameters of an attach URL (defaults 80×24). */
export function attachSize(url: URL): { cols: number; rows: number } {
  return {
    cols: sizeParam(url, "cols", ATTACH_DEFAULT_SIZE.cols),
    rows: sizeParam(url, "rows", ATTACH_DEFAULT_SIZE.rows),
  };
}

/** Upgrades `request` to a WebSocket joined to a new `tmux attach-session` client on `options.session`. */
export function attachSession(request: Request, options: AttachOptions): Response {
  checkSize("cols", options.cols);
  checkSize("rows", options.rows);
  const { socket, response } = acceptWebSocket(request, "attach");
  if (options.onSubmit || options.onInterrupt) watchTyping(socket, options);
  const command = attachCommand(options);
  const terminal = ptyEnd("the tmux client", {
    launch: async () => {
      try {
        return await launchPty(command.cmd, command.args, {
          cols: options.cols,
          rows: options.rows,
          env: command.env,
        });
      } catch (error) {
        throw new Error(`Cannot attach: ${(error as Error).message}`);
      }
    },
    control,
    holdInput: true,
    exited,
  });
  pump(webSocketEnd(socket, "the client"), terminal, {
    highWaterBytes: options.highWaterBytes,
    lowWaterBytes: options.lowWaterBytes,
    onFlow: options.onFlow,
    signal: options.signal,
  }).then(options.onEnd);
  return response;
}

/**
 * Calls `onSubmit` for each Enter typed after other keys (an Enter on an empty line submits nothing)
 * and `onInterrupt` for Esc or Ctrl-C (`readTyped`).
 */
function watchTyping(socket: WebSocket, on: Pick<AttachOptions, "onSubmit" | "onInterrupt">): void {
  let typed = false;
  socket.addEventListener("message", (event) => {
    if (!(event.data instanceof ArrayBuffer)) return; // text frames are control messages
    const keys = readTyped(new Uint8Array(event.data), typed);
    typed = keys.typed;
    for (let i = 0; i < keys.submits; i++) on.onSubmit?.();
    if (keys.interrupt) on.onInterrupt?.();
  });
}

function sizeParam(url: URL, field: "cols" | "rows", fallback: number): number {
  const raw = url.searchParams.get(field);
  if (raw === null) return fallback;
  const value = /^[0-9]{1,4}$/.test(raw) ? Number(raw) : NaN;
  checkSize(field, value, raw);
  return value;
}

function checkSize(field: string, value: unknown, shown: unknown = value): void {
  if (!validSize(value)) {
    throw badField(
      field,
      `must be an integer from 1 to ${ATTACH_MAX_SIZE}, current value is ${JSON.stringify(shown)}`,
    );
  }
}

function validSize(value: unknown): value is number {
  return Number.isInteger(value) && (value as number) >= 1 && (value as number) <= ATTACH_MAX_SIZE;
}

/** A client text frame, parsed: a resize, a control type this version ignores, or why it was refused. */
type Control =
  | { kind: "resize"; cols: number; rows: number }
  | { kind: "ignored" }
  | { kind: "invalid"; reason: string };

function parseControl(text: string): Control {
  let message: unknown;
  try {
    message = JSON.parse(text);
  } catch {
    return { kind: "invalid", reason: "text frames must be JSON control messages" };
  }
  if (typeof message !== "object" || message === null || Array.isArray(message)) {
    return { kind: "invalid", reason: "a control message must be a JSON object" };
  }
  const { type, cols, rows } = message as Record<string, unknown>;
  if (typeof type !== "string") return { kind: "invalid", reason: "a control message needs a 'type'" };
  // Unknown types are skipped, not fatal, so a newer app can talk to an older dockd.
  if (type !== "resize") return { kind: "ignored" };
  for (const [field, value] of [["cols", cols], ["rows", rows]] as const) {
    if (!validSize(value)) {
      return {
        kind: "invalid",
        reason: `resize: '${field}' must be an integer from 1 to ${ATTACH_MAX_SIZE}`,
      };
    }
  }
  return { kind: "resize", cols: cols as number, rows: rows as number };
}

/** A text frame: a resize goes to the PTY, an unknown control type is skipped, anything else refused. */
function control(text: string, pty: Pty): void {
  const parsed = parseControl(text);
  if (parsed.kind === "invalid") throw new RefusedMessage(CLOSE_UNSUPPORTED, parsed.reason);
  if (parsed.kind !== "resize") return;
  try {
    pty.resize(parsed.cols, parsed.rows);
  } catch {
    // The tmux client exited a moment ago; its exit closes the socket next.
  }
}

/** The tmux client ended (session killed, server gone, detached by someone else, or never attached). */
function exited(exitCode: number, tail: Uint8Array): Close {
  const why = lastLine(tail);
  return { code: 1000, reason: `tmux attach exited with code ${exitCode}${why ? `: ${why}` : ""}` };
}

/** The last line tmux printed before exiting (such as "[exited]"), without escape sequences. */
function lastLine(tail: Uint8Array): string {
  const text = new TextDecoder().decode(tail)
    // deno-lint-ignore no-control-regex
    .replace(/\x1b\[[0-?]*[ -/]*[@-~]|\x1b[\]P^_][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[ -~]/g, "");
  // deno-lint-ignore no-control-regex
  const lines = text.split(/[\r\n]+/).map((line) => line.replace(/[\x00-\x1f\x7f]/g, "").trim());
  return lines.filter((line) => line !== "").at(-1) ?? "";
}
