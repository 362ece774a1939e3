/**
 * `dock hook <TOOL> <EVENT> [PAYLOAD]`: run by an agent tool's own hook system on every agent turn.
 * It reads the tool's payload, keeps only identifiers and the directory (see `hook_map.ts`) and posts
 * an `agent.*` event to the box daemon's socket; when the daemon does not answer in time it leaves the
 * event in the spool (`daemon/spool.ts` replays it; `core/hook_paths.ts` owns both paths and the
 * spool's names).
 *
 * A hook must never fail, block or talk to the calling tool: Claude feeds SessionStart and
 * UserPromptSubmit stdout to the model and shows stderr to the user, and a non-zero exit can block a
 * turn. So this prints nothing (Cursor alone gets the `{}` it expects), swallows every error, caps how
 * long it waits for stdin and the daemon, and imports nothing but the pure mapper and its paths,
 * since it starts once per turn.
 *
 * @module
 */
// The report's type only: erased at run time, so the hook loads nothing but the mapper and its paths.
import type { AgentReport } from "../client/wire.ts";
import { hookPaths, spoolName, spoolTempName, stateDirFrom } from "../core/hook_paths.ts";
import { mapHook } from "./hook_map.ts";

/** Where `dock hook` reads its payload: `Deno.stdin`, or a fake in tests. */
export interface PayloadReader {
  read(buffer: Uint8Array): Promise<number | null>;
}

/** Options of {@linkcode runHook}, for tests. */
export interface HookOptions {
  /** Where the payload is read from. @default {Deno.stdin, unless it is a terminal} */
  stdin?: PayloadReader;
}

// A tool may keep stdin open after writing the payload; past this the hook goes on without the rest.
const STDIN_MS = 200;
const STDIN_BYTES = 1 << 20;
// The whole round trip to the daemon, connect included; a daemon slower than this gets the spool.
const POST_MS = 300;
const MAX_SALVAGED = 4096;

/**
 * Runs `dock hook`; never throws and resolves within about half a second. The caller must exit with
 * code 0 once it resolves: a read still pending on a stdin the tool never closed keeps the process
 * alive otherwise.
 */
export async function runHook(args: string[], options: HookOptions = {}): Promise<void> {
  try {
    const [tool = "", event = ""] = args;
    // Cursor reads stdout as JSON and `{}` means "no decision"; print it before anything can go wrong.
    if (tool.toLowerCase() === "cursor") writeStdout("{}\n");
    const payload = await readPayload(args, options);
    const mapped = mapHook(tool, event, payload, { cwd: cwd() });
    if (!mapped) return;
    const report: AgentReport = {
      type: mapped.type,
      origin: mapped.data.agent,
      data: mapped.data,
      session: env("DOCK_SESSION") || undefined,
      time: isoTime(Date.now()),
    };
    const body = JSON.stringify(report);
    const paths = hookPaths(stateDirFrom(env));
    if (await post(paths.socket, body, mapped.data.agent)) return;
    await spool(paths.spool, body);
  } catch {
    // Nothing to report to: the tool must not see an error from dock.
  }
}

// Codex's notify appends the payload as one extra argument (and gives no stdin); everything else
// pipes it on stdin.
async function readPayload(args: string[], options: HookOptions): Promise<unknown> {
  if (args.length > 2) return parse(args[args.length - 1]);
  let reader = options.stdin;
  if (!reader) {
    // Someone typing `dock hook claude stop` at a terminal has no payload to give.
    if (Deno.stdin.isTerminal()) return {};
    // Plain read() rather than Deno.stdin.readable: the streams machinery costs ~4 ms to load.
    reader = Deno.stdin;
  }
  return await readCapped(reader);
}

/** Reads the payload until a whole JSON object has come (or the cap, or the time); parses it once. */
async function readCapped(reader: PayloadReader): Promise<unknown> {
  // AbortSignal.timeout rather than setTimeout: Deno's setTimeout loads Node's timers (~5 ms).
  const signal = AbortSignal.timeout(STDIN_MS);
  const expired = new Promise<null>((resolve) => signal.addEventListener("abort", () => resolve(null)));
  const buffer = new Uint8Array(STDIN_BYTES);
  let size = 0;
  while (size < buffer.length) {
    const count = await Promise.race([reader.read(buffer.subarray(size)), expired]);
    if (count === null) break;
    size += count;
    // A tool that keeps stdin open has still sent a whole object: stop as soon as one parses.
    if (endsWithBrace(buffer.subarray(0, size))) {
      const whole = tryJson(decode(buffer, size));
      if (whole !== undefined) return whole;
    }
  }
  return parse(decode(buffer, size));
}

function endsWithBrace(chunk: Uint8Array): boolean {
  for (let i = chunk.length - 1; i >= 0; i--) {
    const byte = chunk[i];
    if (byte === 0x7d) return true;
    if (byte !== 0x0a && byte !== 0x0d && byte !== 0x20 && byte !== 0x09) return false;
  }
  return false;
}

// Text without TextDecoder and TextEncoder where it is ASCII (ids, paths, JSON): in a fresh process
// their first use cost ~0.3 ms and ~0.15 ms of a hook's ~2 ms of own work (measured, package build).

/** The bytes as text: ASCII read directly, anything else through TextDecoder. */
function decode(buffer: Uint8Array, size: number): string {
  const bytes = buffer.subarray(0, size);
  if (!bytes.every((byte) => byte < 0x80)) return new TextDecoder().decode(bytes);
  let text = "";
  // In slices: fromCharCode takes its bytes as arguments, and the stack bounds how many.
  for (let at = 0; at < bytes.length; at += 8192) {
    text += String.fromCharCode(...bytes.subarray(at, at + 8192));
  }
  return text;
}

/** The text as UTF-8: ASCII written directly, anything else through TextEncoder. */
function encode(text: string): Uint8Array {
  const bytes = new Uint8Array(text.length);
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code > 0x7f) return new TextEncoder().encode(text);
    bytes[i] = code;
  }
  return bytes;
}

/**
 * `Date.prototype.toISOString` of `ms` (a date from year 0 to 9999), without a Date: building one and
 * formatting it cost ~0.3 ms in a fresh process. Days to a civil date as in H. Hinnant's
 * `civil_from_days`.
 */
export function isoTime(ms: number): string {
  const days = Math.floor(ms / 86_400_000);
  const inDay = ms - days * 86_400_000;
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor(
    (doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365,
  );
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  const pad = (value: number, width: number) => String(value).padStart(width, "0");
  return `${pad(year, 4)}-${pad(month, 2)}-${pad(day, 2)}T${pad(Math.floor(inDay / 3_600_000), 2)}:` +
    `${pad(Math.floor(inDay / 60_000) % 60, 2)}:${pad(Math.floor(inDay / 1000) % 60, 2)}.${
      pad(inDay % 1000, 3)
    }Z`;
}

/** The parsed value, or undefined when `text` is not (yet) whole JSON. */
function tryJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}

// A payload cut at the size cap (a huge prompt) no longer parses, but the tools put their ids and
// cwd before the prompt, so the identifiers are fished out of the prefix; nothing else is.
function parse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    const found: Record<string, unknown> = {};
    for (const key of ["session_id", "conversation_id", "thread-id", "cwd", "type"]) {
      const match = text.match(new RegExp(`"${key}"\\s*:\\s*("(?:[^"\\\\]|\\\\.){0,${MAX_SALVAGED}}")`));
      if (!match) continue;
      try {
        found[key] = JSON.parse(match[1]);
      } catch {
        // A malformed string is no identifier.
      }
    }
    const roots = text.match(
      new RegExp(`"workspace_roots"\\s*:\\s*\\[\\s*("(?:[^"\\\\]|\\\\.){0,${MAX_SALVAGED}}")`),
    );
    if (roots) {
      try {
        found.workspace_roots = [JSON.parse(roots[1])];
      } catch {
        // As above.
      }
    }
    return found;
  }
}

// HTTP/1.1 by hand over the unix socket rather than fetch with Deno.createHttpClient: loading fetch
// costs ~12 ms of a hook's ~20 ms budget, and one POST with `connection: close` needs only a status
// line back. Any 2xx counts as delivered; everything else, timeouts included, goes to the spool.
async function post(socket: string, body: string, origin: string): Promise<boolean> {
  const signal = AbortSignal.timeout(POST_MS);
  const expired = new Promise<null>((resolve) => signal.addEventListener("abort", () => resolve(null)));
  let conn: Deno.Conn | null = null;
  try {
    const connecting = Deno.connect({ transport: "unix", path: socket });
    conn = await Promise.race([connecting, expired]);
    if (!conn) {
      connecting.then((late) => late.close(), () => {});
      return false;
    }
    const content = encode(body);
    const head = encode(
      "POST /v1/events HTTP/1.1\r\nhost: dockd\r\ncontent-type: application/json\r\n" +
        `content-length: ${content.length}\r\nx-dock-origin: ${origin}\r\nconnection: close\r\n\r\n`,
    );
    const request = new Uint8Array(head.length + content.length);
    request.set(head);
    request.set(content, head.length);
    if (await Promise.race([writeAll(conn, request), expired]) === null) return false;
    const response = new Uint8Array(256);
    let size = 0;
    while (size < response.length) {
      const count = await Promise.race([conn.read(response.subarray(size)), expired]);
      if (count === null) break;
      size += count;
      if (response.subarray(0, size).includes(0x0a)) break;
    }
    return isSuccess(response.subarray(0, size));
  } catch {
    return false;
  } finally {
    try {
      // Also ends a read still waiting on a daemon that never answered.
      conn?.close();
    } catch {
      // Already closed.
    }
  }
}

/** Whether a response starts `HTTP/1.0 2xx ` or `HTTP/1.1 2xx ` (read from the bytes: no decoder). */
function isSuccess(response: Uint8Array): boolean {
  const start = "HTTP/1.";
  for (let i = 0; i < start.length; i++) if (response[i] !== start.charCodeAt(i)) return false;
  const digit = (byte: number | undefined) => byte !== undefined && byte >= 0x30 && byte <= 0x39;
  return (response[7] === 0x30 || response[7] === 0x31) && response[8] === 0x20 && response[9] === 0x32 &&
    digit(response[10]) && digit(response[11]) && response[12] === 0x20;
}

async function writeAll(conn: Deno.Conn, bytes: Uint8Array): Promise<true> {
  let written = 0;
  while (written < bytes.length) written += await conn.write(bytes.subarray(written));
  return true;
}

// One file per event, named as core/hook_paths.ts says (sorting by arrival); the rename makes it
// appear whole, so a replay running meanwhile never reads half of it.
async function spool(dir: string, body: string): Promise<void> {
  await Deno.mkdir(dir, { recursive: true, mode: 0o700 });
  const tail = Math.random().toString(36).slice(2, 10);
  const name = spoolName({ now: Date.now(), pid: Deno.pid, tail });
  const temp = `${dir}/${spoolTempName(name)}`;
  // The sync form: the first async file write in a fresh process costs ~3 ms more (measured).
  Deno.writeTextFileSync(temp, body, { mode: 0o600 });
  await Deno.rename(temp, `${dir}/${name}`);
}

function env(key: string): string | undefined {
  try {
    return Deno.env.get(key);
  } catch {
    return undefined;
  }
}

function cwd(): string {
  try {
    return Deno.cwd();
  } catch {
    // The agent's directory was removed under it; "/" still names a directory.
    return "/";
  }
}

function writeStdout(text: string): void {
  try {
    const bytes = new TextEncoder().encode(text);
    let written = 0;
    while (written < bytes.length) written += Deno.stdout.writeSync(bytes.subarray(written));
  } catch {
    // A closed stdout is the tool's business.
  }
}
