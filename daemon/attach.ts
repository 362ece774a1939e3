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
 * @module
 */
import { type IPty, spawn } from "@lydell/node-pty";
import { badField, DockError } from "../client/errors.ts";

/** Largest accepted terminal width or height. */
export const ATTACH_MAX_SIZE = 1000;
/** Size used when the attach URL names none. */
export const ATTACH_DEFAULT_SIZE: { cols: number; rows: number } = { cols: 80, rows: 24 };

/** Close code for a client frame dockd cannot accept (RFC 6455 "unsupported data"). */
const CLOSE_UNSUPPORTED = 1003;
/** Close code when the tmux client cannot be started. */
const CLOSE_INTERNAL = 1011;
/** A WebSocket close reason is limited to 123 bytes of UTF-8. */
const REASON_MAX_BYTES = 123;
/** Bytes of recent output kept to explain why the tmux client ended. */
const TAIL_BYTES = 256;

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
  /** Milliseconds between backlog checks while paused. @default {5} */
  drainPollMs?: number;
  /** Told when backpressure pauses (`true`) or resumes (`false`) the PTY: for metrics and tests. */
  onFlow?: (paused: boolean) => void;
}

/** Reads and validates the `cols`/`rows` query parameters of an attach URL (defaults 80×24). */
export function attachSize(url: URL): { cols: number; rows: number } {
  return {
    cols: sizeParam(url, "cols", ATTACH_DEFAULT_SIZE.cols),
    rows: sizeParam(url, "rows", ATTACH_DEFAULT_SIZE.rows),
  };
}

/** Upgrades `request` to a WebSocket bridged to a new `tmux attach-session` client on `options.session`. */
export function attachSession(request: Request, options: AttachOptions): Response {
  checkSize("cols", options.cols);
  checkSize("rows", options.rows);
  if (request.headers.get("upgrade")?.toLowerCase() !== "websocket") {
    throw new DockError("invalid_request", "Cannot attach: the request is not a WebSocket upgrade", {
      status: 400,
    });
  }
  const { socket, response } = Deno.upgradeWebSocket(request);
  socket.binaryType = "arraybuffer";
  new Bridge(socket, options);
  return response;
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

/** Where a bridge is; it only ever moves forward. */
type BridgeState = "connecting" | "attached" | "closing" | "done";

/** One WebSocket ↔ one PTY running `tmux attach-session`. */
class Bridge {
  #socket: WebSocket;
  #options: AttachOptions;
  #state: BridgeState = "connecting";
  #pty?: IPty;
  #paused = false;
  #drainTimer?: ReturnType<typeof setInterval>;
  #tail = new Uint8Array(0);
  /**
   * Keystrokes that arrived before tmux drew anything. Until its first output the tmux client may not
   * have put the PTY in raw mode yet, and the line discipline would echo them as garbage.
   */
  #early?: Uint8Array[] = [];

  constructor(socket: WebSocket, options: AttachOptions) {
    this.#socket = socket;
    this.#options = options;
    // The PTY starts only once the socket is open, so no output is produced with nowhere to go.
    socket.onopen = () => this.#start();
    socket.onmessage = (event) => this.#receive(event.data);
    socket.onclose = () => this.#detach();
    socket.onerror = () => this.#detach();
  }

  #start(): void {
    if (this.#state !== "connecting") return;
    const { socket, session, cols, rows, tmux = "tmux" } = this.#options;
    try {
      // `-u`: the app always renders UTF-8, whatever locale dockd inherited. `=name`: exact match,
      // so attaching to "a" never lands in "ab" when "a" is gone.
      this.#pty = spawn(tmux, ["-u", "-S", socket, "attach-session", "-t", `=${session}`], {
        name: "xterm-256color",
        cols,
        rows,
        cwd: "/",
        env: clientEnv(),
        // Raw Buffers: decoding here would mangle a multibyte character split across two reads.
        encoding: null,
      });
    } catch (error) {
      this.#close(CLOSE_INTERNAL, `Cannot attach: ${(error as Error).message}`);
      return;
    }
    this.#state = "attached";
    const pty = this.#pty;
    pty.onData((chunk) => this.#send(chunk as unknown as Uint8Array));
    pty.onExit(({ exitCode }) => this.#ended(exitCode));
  }

  #send(chunk: Uint8Array): void {
    if (this.#early) {
      const early = this.#early;
      this.#early = undefined;
      for (const keys of early) this.#write(keys);
    }
    this.#keepTail(chunk);
    if (this.#socket.readyState !== WebSocket.OPEN) return;
    this.#socket.send(chunk);
    const high = this.#options.highWaterBytes ?? 4 * 1024 * 1024;
    if (!this.#paused && this.#socket.bufferedAmount > high) this.#pause();
  }

  #pause(): void {
    // A slow reader must not make dockd hold a session's entire output: stop reading the PTY, so
    // the tmux client blocks, and tmux itself throttles and later redraws.
    this.#paused = true;
    this.#pty?.pause();
    this.#options.onFlow?.(true);
    const low = this.#options.lowWaterBytes ?? 1024 * 1024;
    // WebSocket has no drain event, so the backlog is polled.
    this.#drainTimer = setInterval(() => {
      if (this.#socket.readyState === WebSocket.OPEN && this.#socket.bufferedAmount > low) return;
      this.#resume();
    }, this.#options.drainPollMs ?? 5);
  }

  #resume(): void {
    clearInterval(this.#drainTimer);
    this.#drainTimer = undefined;
    if (!this.#paused) return;
    this.#paused = false;
    this.#pty?.resume();
    this.#options.onFlow?.(false);
  }

  #receive(data: unknown): void {
    if (this.#state !== "attached") return;
    if (data instanceof ArrayBuffer) {
      const keys = new Uint8Array(data);
      if (this.#early) this.#early.push(keys);
      else this.#write(keys);
      return;
    }
    const control = parseControl(String(data));
    if (control.kind === "resize") {
      try {
        this.#pty?.resize(control.cols, control.rows);
      } catch {
        // The tmux client exited a moment ago; its exit closes the socket next.
      }
    } else if (control.kind === "invalid") {
      // Closing from our side still ends in onclose → #detach, which hangs the client up.
      this.#state = "closing";
      this.#close(CLOSE_UNSUPPORTED, control.reason);
    }
  }

  #write(keys: Uint8Array): void {
    // node-pty's write hands the bytes to a stream, which takes a Uint8Array despite the typing.
    this.#pty?.write(keys as unknown as string);
  }

  /** The socket went away: hang up this tmux client only, which detaches it; the session runs on. */
  #detach(): void {
    if (this.#state === "done") return;
    const pty = this.#pty;
    this.#state = "done";
    this.#resume();
    // SIGHUP, as when a terminal window closes: tmux treats it as a detach.
    if (pty) {
      try {
        pty.kill();
      } catch {
        // Already gone: its exit raced the socket's close.
      }
    }
  }

  /** The tmux client ended (session killed, server gone, detached by someone else, or never attached). */
  #ended(exitCode: number): void {
    this.#resume();
    if (this.#state === "done") return;
    this.#state = "done";
    const why = lastLine(this.#tail);
    this.#close(1000, `tmux attach exited with code ${exitCode}${why ? `: ${why}` : ""}`);
  }

  #close(code: number, reason: string): void {
    if (this.#socket.readyState === WebSocket.OPEN || this.#socket.readyState === WebSocket.CONNECTING) {
      this.#socket.close(code, fitReason(reason));
    }
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

/** The tmux client's environment: dockd's own, made safe for a nested, UTF-8, xterm-256color client. */
function clientEnv(): Record<string, string> {
  const env = Deno.env.toObject();
  // tmux refuses to attach from inside tmux ("sessions should be nested with care") when $TMUX is set.
  delete env.TMUX;
  delete env.TMUX_PANE;
  const utf8 = /utf-?8/i;
  if (env.LC_ALL !== undefined && !utf8.test(env.LC_ALL)) delete env.LC_ALL;
  const locale = env.LANG && utf8.test(env.LANG) ? env.LANG : "C.UTF-8";
  return { ...env, TERM: "xterm-256color", LANG: locale, LC_CTYPE: locale };
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

function fitReason(reason: string): string {
  const encoder = new TextEncoder();
  let fitted = reason;
  while (encoder.encode(fitted).length > REASON_MAX_BYTES) fitted = fitted.slice(0, -1);
  return fitted;
}
