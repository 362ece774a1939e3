/**
 * `dock attach BOX/SESSION` (issue 30 item 4): the session's terminal in this one, through the agent's
 * attach WebSocket (spec 4.3), the one the app uses. Raw mode, the window's size sent on start and on
 * every SIGWINCH, and a detach key printed on start.
 *
 * The detach key is Ctrl+] (0x1d), as telnet's: tmux's prefix is Ctrl+B (the box's tmux keeps it, and
 * a person attached to a session may use it), Ctrl+C, Ctrl+D, Esc and Ctrl+Z mean something to the
 * agents, and none of Claude Code, Codex or Gemini CLI binds Ctrl+]. Detaching leaves the session
 * running, and exits 0.
 *
 * When the session's program ends, the command ends too, with the program's exit code (1 when the box
 * could not learn it). tmux keeps a dead pane on screen (`remain-on-exit`), so the end is not the
 * socket's: the box's `wait` is asked, with an `after` no report can pass, which leaves only the
 * program's exit to answer it (it answers at once when the program has already ended).
 *
 * @module
 */
import type { Command } from "./commander.ts";
import { DockError, type ErrorStatus } from "../client/errors.ts";
import type { BoxClient } from "../client/box.ts";
import { ensureToken } from "../agent/token.ts";
import { clientPaths } from "../core/paths.ts";
import { type ConnWebSocket, WebSocketHandshakeError } from "../core/websocket.ts";
import { openWebSocket } from "../core/ws_client.ts";
import { agentClient, agentPort } from "./agent.ts";
import { guarded } from "./output.ts";

/** The detach key: Ctrl+] (see the module's comment for why this one). */
export const DETACH_KEY = 0x1d;
/** How the detach key is named on start. */
export const DETACH_NAME = "Ctrl+]";

/**
 * What the terminal is put back to after the box's tmux client was hung up (it never got to undo its
 * own modes): the main screen, the cursor shown, plain attributes, no mouse reports, no bracketed
 * paste, no focus reports.
 */
const TERMINAL_RESET =
  "\x1b[?1049l\x1b[?25h\x1b[0m\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1006l\x1b[?2004l\x1b[?1004l\r\n";

/** An `after` later than any report: only the program's exit answers a wait with it. */
const NEVER = "9999-12-31T00:00:00Z";

/** Adds `attach` to `dock`. */
export function attachCommands(program: Command): void {
  program.command("attach").description(`attach this terminal to a session (detach: ${DETACH_NAME})`)
    .argument("<target>", "BOX/SESSION")
    .action((spec: string) =>
      guarded(async () => {
        const code = await attach(spec);
        Deno.exit(code);
      }, "dock")
    );
}

/** Where the bytes typed before the detach key end, or -1 when `chunk` holds no detach key. */
export function detachAt(chunk: Uint8Array): number {
  return chunk.indexOf(DETACH_KEY);
}

/** Attaches this terminal to `spec` until a detach or the program's end; returns the exit code. */
async function attach(spec: string): Promise<number> {
  const slash = spec.indexOf("/");
  const [boxName, name] = [spec.slice(0, slash), spec.slice(slash + 1)];
  if (slash < 1 || !name || name.includes("/")) {
    throw new DockError("usage", `expected BOX/SESSION, got '${spec}'`, { status: 400 });
  }
  if (!Deno.stdin.isTerminal() || !Deno.stdout.isTerminal()) {
    throw new DockError("usage", "dock attach needs a terminal (its input and output)", { status: 400 });
  }
  const agent = await agentClient({ oneShotReads: false });
  const box = agent.box(boxName);
  // Also starts the agent when it is not running, and says so when the session is unknown.
  const before = await box.session(name);
  if (before.exited) {
    console.error(`${spec}: its program has ended (exit code ${before.exit_code ?? "unknown"})`);
    return exitCodeOf(before.exit_code);
  }
  const size = Deno.consoleSize();
  const socket = await open(boxName, name, size);
  console.error(`attached to ${spec}; detach: ${DETACH_NAME}`);

  const done = Promise.withResolvers<{ code: number; message: string }>();
  const ended = programEnd(box, name, spec).then(
    (result) => done.resolve(result),
    (error) => done.resolve({ code: 1, message: `${spec}: ${(error as Error).message}` }),
  );
  void ended;
  const onResize = () => {
    try {
      const { columns, rows } = Deno.consoleSize();
      socket.sendText(JSON.stringify({ type: "resize", cols: columns, rows })).catch(() => {});
    } catch { /* no terminal any more */ }
  };
  Deno.addSignalListener("SIGWINCH", onResize);
  Deno.stdin.setRaw(true);
  try {
    pipeOut(socket).then(async () => {
      // The box ended the socket: the session was removed, or its tmux went away.
      const now = await box.session(name).catch(() => null);
      done.resolve(
        now?.exited ? { code: exitCodeOf(now.exit_code), message: exitMessage(spec, now.exit_code) } : {
          code: 1,
          message: `${spec}: the terminal was closed (${socket.closeReason || "no reason given"})`,
        },
      );
    });
    pipeIn(socket).then((detached) => {
      if (detached) done.resolve({ code: 0, message: `detached from ${spec}; it keeps running` });
    });
    const outcome = await done.promise;
    await socket.close(1000).catch(() => {});
    await writeAll(new TextEncoder().encode(TERMINAL_RESET));
    Deno.stdin.setRaw(false);
    console.error(outcome.message);
    return outcome.code;
  } finally {
    Deno.removeSignalListener("SIGWINCH", onResize);
    try {
      Deno.stdin.setRaw(false);
    } catch { /* no terminal any more */ }
    agent.close();
  }
}

/** Opens the agent's attach WebSocket; a refusal becomes the agent's (or the box's) own error. */
async function open(
  box: string,
  name: string,
  size: { columns: number; rows: number },
): Promise<ConnWebSocket> {
  const port = agentPort();
  const token = await ensureToken(clientPaths().token);
  const enc = encodeURIComponent;
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    return await openWebSocket(conn, {
      path: `/v1/boxes/${enc(box)}/sessions/${enc(name)}/attach?cols=${size.columns}&rows=${size.rows}`,
      host: `127.0.0.1:${port}`,
      // A header, not `?token=`: a CLI can send one, and a URL's query is what logs keep.
      headers: { authorization: `Bearer ${token}`, "x-dock-origin": "cli" },
    });
  } catch (error) {
    if (!(error instanceof WebSocketHandshakeError)) throw error;
    let message = error.message;
    try {
      message = JSON.parse(new TextDecoder().decode(error.body)).error.message ?? message;
    } catch { /* not the JSON error body */ }
    throw new DockError("attach_refused", message, {
      status: (error.status >= 400 && error.status < 600 ? error.status : 502) as ErrorStatus,
    });
  }
}

/** Terminal output from the socket to stdout, until the socket ends. */
async function pipeOut(socket: ConnWebSocket): Promise<void> {
  while (true) {
    const message = await socket.next().catch(() => null);
    if (message === null) return;
    if (message.binary) await writeAll(message.data);
  }
}

/** Keystrokes from stdin to the socket; true when the detach key was typed, false at the end of input. */
async function pipeIn(socket: ConnWebSocket): Promise<boolean> {
  const buffer = new Uint8Array(16 * 1024);
  while (true) {
    const n = await Deno.stdin.read(buffer);
    if (n === null) return false;
    const chunk = buffer.slice(0, n);
    const at = detachAt(chunk);
    if (at >= 0) {
      if (at > 0) await socket.sendBinary(chunk.subarray(0, at)).catch(() => {});
      return true;
    }
    await socket.sendBinary(chunk).catch(() => {});
  }
}

/** Resolves when the session's program has ended, with its exit code. */
async function programEnd(
  box: BoxClient,
  name: string,
  spec: string,
): Promise<{ code: number; message: string }> {
  while (true) {
    const result = await box.wait(name, { after: NEVER, timeout: "1h" });
    if (!result.exited) continue; // an hour went by
    const session = await box.session(name);
    return { code: exitCodeOf(session.exit_code), message: exitMessage(spec, session.exit_code) };
  }
}

function exitCodeOf(code: number | null): number {
  return code === null ? 1 : code;
}

function exitMessage(spec: string, code: number | null): string {
  return `${spec}: the program ended with exit code ${code ?? "unknown"}`;
}

async function writeAll(data: Uint8Array): Promise<void> {
  for (let written = 0; written < data.length;) written += await Deno.stdout.write(data.subarray(written));
}
