/**
 * The plugin-host process: started by the daemon or the laptop agent (through the runner, with
 * `--no-prompt`, no remote or npm imports, and only the union of what its workers are granted), it
 * connects back over the unix socket named by its one argument and runs each plugin module in a Web
 * Worker narrowed to that module's own grant. It holds no state worth keeping: the parent kills and
 * restarts it whenever a worker cannot be stopped any other way.
 *
 * Deadlines are the parent's: on one, it asks the host to cancel the call, and the host says whether the
 * worker was stuck in synchronous code (it did not answer a ping), since `terminate()` cannot stop that
 * (TOOLCHAIN.md) and only ending this process does.
 *
 * @module
 */
import { pathToFileURL } from "node:url";
import { SYSTEM_CLOCK } from "../core/clock.ts";
import { FrameConnection } from "./frames.ts";
import { SDK_DIR } from "./sdk_map.ts";
import {
  type CallKind,
  type FetchInput,
  fromBase64,
  type FromHost,
  type FromWorker,
  handlerOf,
  laneHost,
  type LaneTicket,
  MAX_FETCH_BODY,
  PROTOCOL_VERSION,
  toBase64,
  type ToHost,
  type WorkerSpec,
} from "./protocol.ts";

/** How long a worker has to answer a ping before it is taken to be stuck in synchronous code. */
const PING_MS = 250;
/** The host process's clock: this file is its composition root. */
const CLOCK = SYSTEM_CLOCK;

const WORKER_MAIN = new URL("./worker_main.ts", import.meta.url);

interface Hosted {
  spec: WorkerSpec;
  /** The epoch it was started for (protocol.ts): a call of a newer one replaces it. */
  epoch: number;
  worker: Worker;
  /** Resolves once the module has loaded (rejects with its load error). */
  ready: Promise<CallKind[]>;
  /** Calls in flight on this worker, by id: their kind. */
  calls: Map<number, CallKind>;
  pong?: () => void;
  /** Its log budget this minute. */
  log: { minute: number; chars: number; dropped: number };
}

const socketPath = Deno.args[0];
if (!socketPath) throw new Error("usage: host_main.ts SOCKET");
const conn = await Deno.connect({ transport: "unix", path: socketPath });
const parent = new FrameConnection<ToHost, FromHost>(conn);
const workers = new Map<string, Hosted>();
/** The spec of each key (and its lane's ticket), as the first call of its epoch brought it; forgotten at `stop`. */
const specs = new Map<string, { epoch: number; spec: WorkerSpec; lane?: LaneTicket }>();
// The hello goes first: the parent sends no call before it.
parent.send({ t: "hello", v: PROTOCOL_VERSION, pid: Deno.pid });

/**
 * Sends a message to the parent. One a worker made unsendable (its `ctx` arguments hold a cycle or a
 * BigInt, or are over the frame limit) must not end this process, and every other plugin's calls with it
 * (measured: it did): its request is refused to the worker, its result fails, its log line is dropped.
 */
function send(message: FromHost): void {
  try {
    parent.send(message);
  } catch (error) {
    const why = `${(error as Error).message}`.slice(0, 200);
    if (message.t === "request") {
      workers.get(message.key)?.worker.postMessage({
        t: "reply",
        id: message.id,
        ok: false,
        error: `ctx.${String(message.op).slice(0, 20)}: its arguments cannot be sent (${why})`,
      });
    } else if (message.t === "result") {
      parent.send({ t: "result", id: message.id, ok: false, error: `its answer cannot be sent (${why})` });
    }
  }
}

function start(spec: WorkerSpec, epoch: number, lane?: LaneTicket): Hosted {
  const grant = spec.grant;
  const list = (values: string[]) => values.length ? values : false;
  const worker = new Worker(WORKER_MAIN, {
    type: "module",
    name: spec.label,
    deno: {
      permissions: {
        // The SDK too: a plugin's dynamic import of `@dock/plugin` is checked against this (sdk_map.ts).
        read: list([...grant.read, SDK_DIR]),
        write: list(grant.write),
        // Its lane's port too (plugins/lanes.ts): only its own token opens a lane there.
        net: list(lane ? [...grant.net, laneHost(lane.port)] : grant.net),
        env: list(grant.env),
        run: false,
        ffi: false,
        sys: false,
        import: false,
      },
    },
  });
  const { promise: ready, resolve, reject } = Promise.withResolvers<CallKind[]>();
  ready.catch(() => {});
  const hosted: Hosted = {
    spec,
    epoch,
    worker,
    ready,
    calls: new Map(),
    log: { minute: -1, chars: 0, dropped: 0 },
  };
  worker.onmessage = (e: MessageEvent<FromWorker>) => {
    // What a worker posts is the plugin's to shape (it can call `self.postMessage` itself): a message
    // that breaks its handling ends that worker, never this process.
    try {
      onWorkerMessage(hosted, e.data, resolve, reject);
    } catch (error) {
      end(
        hosted,
        `it sent a message the host cannot read: ${String((error as Error)?.message).slice(0, 200)}`,
      );
    }
  };
  worker.onerror = (e) => {
    // An error outside a handler (a rejection nobody awaited, a throw in a timer): the worker is ended,
    // since its module's state can no longer be trusted; the next call starts it afresh.
    e.preventDefault();
    reject(new Error(e.message));
    end(hosted, `uncaught: ${e.message}`);
  };
  worker.postMessage({
    t: "init",
    module: pathToFileURL(spec.module).href,
    label: spec.label,
    ...(spec.context ? { context: spec.context } : {}),
    ...(lane ? { lane } : {}),
  });
  return hosted;
}

function onWorkerMessage(
  hosted: Hosted,
  message: FromWorker,
  resolve: (kinds: CallKind[]) => void,
  reject: (error: Error) => void,
): void {
  if (workers.get(hosted.spec.key) !== hosted || typeof message !== "object" || message === null) return;
  switch (message.t) {
    case "ready":
      resolve(Array.isArray(message.handlers) ? message.handlers : []);
      return;
    case "load_error":
      reject(new Error(String(message.error)));
      return;
    case "pong":
      hosted.pong?.();
      return;
    case "log":
      if (!logBudget(hosted, String(message.text).length)) return;
      send({
        t: "log",
        key: hosted.spec.key,
        level: message.level,
        text: String(message.text).slice(0, 8192),
      });
      return;
    case "request":
      if (typeof message.id !== "number") return;
      send({ t: "request", id: message.id, key: hosted.spec.key, op: message.op, args: message.args });
      return;
    case "result": {
      // Only an answer to a call this worker has in flight, once.
      const kind = hosted.calls.get(message.id);
      if (kind === undefined) return;
      hosted.calls.delete(message.id);
      if (!message.ok) {
        sendResult(message.id, { ok: false, error: String(message.error).slice(0, 2000) });
        return;
      }
      try {
        sendResult(message.id, { ok: true, value: encodeValue(kind, message.value) });
      } catch (error) {
        sendResult(message.id, { ok: false, error: (error as Error).message });
      }
      return;
    }
  }
}

/** Characters of log one worker may send a minute; past them its lines are dropped, and that said once. */
const LOG_CHARS_PER_MINUTE = 256 * 1024;

/** Whether a worker's log line of `chars` fits its minute's budget (a loop that logs floods no one). */
function logBudget(hosted: Hosted, chars: number): boolean {
  const minute = Math.floor(performance.now() / 60_000);
  if (hosted.log.minute !== minute) hosted.log = { minute, chars: 0, dropped: 0 };
  hosted.log.chars += Math.min(chars, 8192);
  if (hosted.log.chars <= LOG_CHARS_PER_MINUTE) return true;
  if (hosted.log.dropped++ === 0) {
    send({
      t: "log",
      key: hosted.spec.key,
      level: "warn",
      text: `more than ${LOG_CHARS_PER_MINUTE} characters of output this minute: the rest is dropped`,
    });
  }
  return false;
}

/** A handler's answer as it crosses the socket: a fetch body in base64, checked for size. */
function encodeValue(kind: CallKind, value: unknown): unknown {
  if (kind !== "fetch") return value;
  const answer = value as { status: number; headers: [string, string][]; body: Uint8Array };
  if (!(answer.body instanceof Uint8Array)) throw new Error("fetch answered no body");
  if (answer.body.length > MAX_FETCH_BODY) {
    throw new Error(`fetch answered ${answer.body.length} bytes; the limit is ${MAX_FETCH_BODY}`);
  }
  return { status: answer.status, headers: answer.headers, body: toBase64(answer.body) };
}

/** Ends a worker: its calls in flight fail, and the parent hears why. */
function end(hosted: Hosted, error?: string, stuck?: boolean): void {
  if (workers.get(hosted.spec.key) !== hosted) return;
  workers.delete(hosted.spec.key);
  hosted.worker.terminate();
  for (const id of hosted.calls.keys()) {
    sendResult(id, { ok: false, error: error ?? "the worker was stopped" });
  }
  hosted.calls.clear();
  send({
    t: "stopped",
    key: hosted.spec.key,
    epoch: hosted.epoch,
    ...(error ? { error } : {}),
    ...(stuck ? { stuck } : {}),
  });
}

async function call(message: Extract<ToHost, { t: "call" }>): Promise<void> {
  const { id, key, epoch, kind, input } = message;
  if (message.worker) specs.set(key, { epoch, spec: message.worker, lane: message.lane });
  const known = specs.get(key);
  if (!known || known.spec.key !== key) {
    send({ t: "result", id, ok: false, error: "the plugin host was not told the worker's spec" });
    return;
  }
  const spec = known.spec;
  let hosted = workers.get(key);
  // A worker of an older epoch was stopped by the parent after it sent this call's: never served old.
  if (hosted && hosted.epoch < epoch) {
    end(hosted);
    hosted = undefined;
  }
  let started: number | undefined;
  if (!hosted) {
    started = performance.now();
    try {
      hosted = start(spec, epoch, known.lane);
    } catch (error) {
      // The constructor refuses a grant wider than this process has.
      send({ t: "result", id, ok: false, error: `cannot start: ${(error as Error).message}` });
      return;
    }
    workers.set(spec.key, hosted);
  }
  hosted.calls.set(id, kind);
  let kinds: CallKind[];
  try {
    kinds = await hosted.ready;
  } catch (error) {
    hosted.calls.delete(id);
    const message = `the module did not load: ${(error as Error).message}`;
    send({ t: "result", id, ok: false, error: message });
    end(hosted, message);
    return;
  }
  if (!hosted.calls.has(id)) return; // cancelled while it loaded
  if (!kinds.includes(handlerOf(kind))) {
    hosted.calls.delete(id);
    send({ t: "result", id, ok: false, error: `the module has no ${handlerOf(kind)} handler` });
    return;
  }
  if (started !== undefined) coldStarts.set(id, performance.now() - started);
  let payload = input;
  let body: Uint8Array<ArrayBuffer> | undefined;
  if (kind === "fetch") {
    const request = input as FetchInput;
    body = request.body === undefined ? undefined : fromBase64(request.body);
    payload = { ...request, body };
  }
  // A request's body is handed over to the worker (transferred), not copied.
  hosted.worker.postMessage({ t: "call", id, kind, input: payload }, body ? [body.buffer] : []);
}

/** Calls that started their worker, and how long the start took (sent with their result). */
const coldStarts = new Map<number, number>();

function sendResult(id: number, result: { ok: true; value: unknown } | { ok: false; error: string }): void {
  const coldMs = coldStarts.get(id);
  coldStarts.delete(id);
  send({ t: "result", id, ...result, ...(coldMs === undefined ? {} : { cold_ms: coldMs }) });
}

/** Stops the worker of a call past its deadline: one sent on its lane (`epoch`) is not in its calls. */
async function cancel(id: number, key: string, epoch?: number): Promise<void> {
  const hosted = workers.get(key);
  if (!hosted || (epoch === undefined ? !hosted.calls.has(id) : hosted.epoch !== epoch)) return;
  hosted.calls.delete(id);
  const answered = await new Promise<boolean>((resolve) => {
    const cancelPing = CLOCK.after(PING_MS, () => resolve(false));
    hosted.pong = () => {
      cancelPing();
      resolve(true);
    };
    hosted.worker.postMessage({ t: "ping" });
  });
  end(hosted, "stopped at its deadline", !answered);
}

for await (const message of parent.messages()) {
  switch (message.t) {
    case "call":
      // A bug here must fail the call, not the host (and every other plugin's calls with it).
      call(message).catch((error) =>
        sendResult(message.id, { ok: false, error: `the plugin host failed: ${(error as Error).message}` })
      );
      break;
    case "cancel":
      cancel(message.id, message.key, typeof message.epoch === "number" ? message.epoch : undefined);
      break;
    case "stop": {
      specs.delete(message.key);
      const hosted = workers.get(message.key);
      if (hosted) end(hosted);
      break;
    }
    case "reply": {
      const hosted = workers.get(message.key);
      hosted?.worker.postMessage({
        t: "reply",
        id: message.id,
        ok: message.ok,
        value: message.value,
        error: message.error,
      });
      break;
    }
  }
}
// The parent went away: nothing here outlives it.
Deno.exit(0);
