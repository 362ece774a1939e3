/**
 * The plugin host's protocol, versioned and typed in one place: what the daemon or the laptop agent (the
 * parent) says to its plugin-host process, what the host says back, and what the host and each worker
 * say to each other. The parent and the host exchange one JSON object per line over a unix socket (not
 * stdin/stdout: a worker can read and write its process's stdio, so a plugin could read other plugins'
 * calls or forge answers there); the host and its workers use `postMessage`.
 *
 * A loaded worker also opens its own lane to the parent (one JSON object per line over loopback TCP,
 * proved by a token): its warm calls and their answers go there, past the host's main thread,
 * a hop and two thread wake-ups less (plugins/lanes.ts). Everything else (starts, stops, cancels, `ctx`
 * requests, logs) stays on the host's socket.
 *
 * Everything here is types, constants and a base64 codec, so the host can import it without loading
 * anything else of dock, and the worker bootstrap its types (it may read no other file: worker_main.ts).
 *
 * @module
 */

/** Bumped on any change a host of another version would misread; the host says its version first. */
export const PROTOCOL_VERSION = 3;

/** The longest line either side sends or accepts (a fetch body of 8 MiB is ~11 MiB in base64). */
export const MAX_FRAME_BYTES = 16 * 1024 * 1024;

/** The largest request or response body a plugin's `fetch` handler is given or may answer. */
export const MAX_FETCH_BODY = 8 * 1024 * 1024;

/**
 * What one worker is granted: Deno permission lists, each an allow-list (empty: nothing). `run`,
 * `ffi`, `sys` and `import` do not appear: they are never granted.
 */
export interface WorkerGrant {
  read: string[];
  write: string[];
  /** Hosts, `host` or `host:port`. */
  net: string[];
  /** Variable names. */
  env: string[];
}

/** A worker as the parent names it: one worker per `key`, running `module` under `grant`. */
export interface WorkerSpec {
  key: string;
  /** Absolute path of the module. */
  module: string;
  grant: WorkerGrant;
  /** Who it is in logs and events (`plugin:<id>`, `hook:<file>`). */
  label: string;
  /** A plugin's `ctx.config`, `ctx.secrets` and `ctx.dataDir` (its workers restart when they change). */
  context?: WorkerContext;
}

/** What a plugin's `ctx` holds besides its calls: its settings, its resolved secrets, its data folder. */
export interface WorkerContext {
  config: Record<string, string | number | boolean>;
  secrets: Record<string, string>;
  dataDir: string;
}

/**
 * What a worker is asked to do: a module's `event`, `gate` or `fetch` handler; `events` is `event` for a
 * batch of events at once (one message for many: a busy bus costs a frame per batch, not per event),
 * answered with {@linkcode EventsOutput}.
 */
export type CallKind = "event" | "events" | "gate" | "fetch" | "step";

/** The handler a call kind runs (`step`: a flow's `module` step, given the run's variables). */
export function handlerOf(kind: CallKind): "event" | "gate" | "fetch" | "step" {
  return kind === "events" ? "event" : kind;
}

/** What a batch of events answered: the events (by index) whose handler threw, and why. */
export interface EventsOutput {
  errors: [index: number, error: string][];
}

/** A request for a `fetch` handler, as it crosses the socket (the body in base64). */
export interface FetchInput {
  method: string;
  url: string;
  headers: [string, string][];
  body?: string;
}

/** A `fetch` handler's answer, as it crosses the socket (the body in base64). */
export interface FetchOutput {
  status: number;
  headers: [string, string][];
  body: string;
}

/** A gate handler's answer: `allow: false` refuses the action with `reason`. */
export interface GateOutput {
  allow: boolean;
  reason?: string;
}

/** What a module may ask of dock through its `ctx`. */
export type ContextOp = "api" | "emit" | "kv.get" | "kv.set" | "kv.delete" | "kv.list";

/** Log levels a worker's `console` and `ctx.log` map to. */
export type LogLevel = "debug" | "info" | "warn" | "error";

/**
 * What a worker needs to open its lane: the parent's loopback port and a token that names the worker (its
 * key and epoch in one host) to the parent. Only workers are granted that port.
 */
export interface LaneTicket {
  port: number;
  token: string;
}

/** The net permission of the lanes' port, as a host and each of its workers are granted it. */
export function laneHost(port: number): string {
  return `127.0.0.1:${port}`;
}

/** Parent → worker, on its lane: a call, as the host would have passed it on (a fetch body in base64). */
export type ToLane = { t: "call"; id: number; kind: CallKind; input: unknown };

/** Worker → parent, on its lane: its ticket's token first, then its answers (a fetch body in base64). */
export type FromLane =
  | { t: "lane"; token: string }
  | { t: "result"; id: number; ok: boolean; value?: unknown; error?: string };

/**
 * Parent → host. A worker's `epoch` says which start of the worker for its key a call is for: the parent
 * bumps it at each `stop`, so a `stopped` of a worker it already stopped is told from one of the worker
 * that now runs (read as the new one's, a warm worker was forgotten and served its old module after its
 * file changed).
 */
export type ToHost =
  /**
   * Run a handler; the worker is started first when it is not running (a cold start), or runs an older
   * epoch. `worker` comes with the first call of an epoch only (the host keeps it until `stop`): a warm
   * call carries no grant, settings or secrets. `lane` comes with `worker`: the ticket of its lane.
   */
  | {
    t: "call";
    id: number;
    key: string;
    epoch: number;
    worker?: WorkerSpec;
    lane?: LaneTicket;
    kind: CallKind;
    input: unknown;
  }
  /**
   * A call is past its deadline: stop its worker, and say whether it was stuck in synchronous code. A
   * call sent on the worker's lane (`epoch` set) is not one the host knows: its worker of that epoch is
   * stopped.
   */
  | { t: "cancel"; id: number; key: string; epoch?: number }
  /** Stop an idle worker (idle timeout, plugin disabled or changed), and forget its spec. */
  | { t: "stop"; key: string }
  /** The answer to a worker's `request`. */
  | { t: "reply"; id: number; key: string; ok: boolean; value?: unknown; error?: string };

/** Host → parent. */
export type FromHost =
  /** Sent once on connecting. */
  | { t: "hello"; v: number; pid: number }
  /** A call ended. `cold_ms` is set when the call had to start its worker (how long that took). */
  | { t: "result"; id: number; ok: boolean; value?: unknown; error?: string; cold_ms?: number }
  /** A worker asks something of dock (its `ctx`). */
  | { t: "request"; id: number; key: string; op: ContextOp; args: unknown[] }
  | { t: "log"; key: string; level: LogLevel; text: string }
  /**
   * A worker ended: stopped on request, crashed, or cancelled. `stuck` says `terminate()` could not stop
   * it (it did not answer while running synchronous code), so only ending the process stops it.
   */
  | { t: "stopped"; key: string; epoch: number; error?: string; stuck?: boolean };

/** Host → worker. */
export type ToWorker =
  | { t: "init"; module: string; label: string; context?: WorkerContext; lane?: LaneTicket }
  | { t: "call"; id: number; kind: CallKind; input: unknown }
  | { t: "reply"; id: number; ok: boolean; value?: unknown; error?: string }
  | { t: "ping" };

/** Worker → host. */
export type FromWorker =
  | { t: "ready"; handlers: CallKind[] }
  | { t: "load_error"; error: string }
  | { t: "result"; id: number; ok: boolean; value?: unknown; error?: string }
  | { t: "request"; id: number; op: ContextOp; args: unknown[] }
  | { t: "log"; level: LogLevel; text: string }
  | { t: "pong" };

/**
 * Base64 of bytes, by V8's own `Uint8Array.prototype.toBase64` (Deno 2.9): the chunked
 * `String.fromCharCode(...bytes)` before it took 94–460 ms for 1 MiB (seconds for an 8 MiB body, on the
 * host's one thread), the native one 2–12 ms; 11 bytes 2.6–5.6 µs → 0.2–1.7 µs.
 */
export function toBase64(bytes: Uint8Array): string {
  return (bytes as Uint8Array & { toBase64(): string }).toBase64();
}

/** Bytes of base64 text, by V8's own `Uint8Array.fromBase64` (1 MiB: 9–30 ms by `atob` and a loop, 0.3–1.2 native). */
export function fromBase64(text: string): Uint8Array<ArrayBuffer> {
  return (Uint8Array as unknown as { fromBase64(text: string): Uint8Array<ArrayBuffer> }).fromBase64(text);
}
