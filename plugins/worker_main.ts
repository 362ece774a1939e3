/// <reference no-default-lib="true" />
/// <reference lib="deno.worker" />
/**
 * The bootstrap of every plugin worker: it imports the author's module under the worker's own narrowed
 * permissions, gives its handlers a `ctx` that talks to dock only through messages, and routes the
 * host's calls to `fetch`, `event`, `gate` and `step`. It runs inside the sandbox, so nothing here is trusted by
 * the host: the host and the parent check every answer and every request it sends.
 *
 * @module
 */
import type {
  CallKind,
  ContextOp,
  EventsOutput,
  FetchInput,
  FromLane,
  FromWorker,
  LaneTicket,
  LogLevel,
  ToLane,
  ToWorker,
  WorkerContext,
} from "./protocol.ts";

interface Handlers {
  fetch?: (request: Request, ctx: unknown) => Response | Promise<Response>;
  event?: (event: unknown, ctx: unknown) => unknown;
  gate?: (request: unknown, ctx: unknown) => unknown;
  step?: (vars: unknown, ctx: unknown) => unknown;
}

/** Posts to the host; a fetch answer's body is handed over (transferred), not copied (up to 8 MiB). */
const post = (message: FromWorker, transfer: Transferable[] = []) => self.postMessage(message, transfer);
let handlers: Handlers = {};
let nextRequest = 1;
const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();

function request(op: ContextOp, args: unknown[]): Promise<unknown> {
  // What crosses to dock is JSON: a cycle or a BigInt is refused here, to the caller (the host refuses
  // it too, for a module that posts its own messages).
  try {
    JSON.stringify(args);
  } catch (error) {
    return Promise.reject(
      new TypeError(`ctx.${op}: its arguments are not JSON (${(error as Error).message})`),
    );
  }
  const id = nextRequest++;
  return new Promise((resolve, reject) => {
    waiting.set(id, { resolve, reject });
    post({ t: "request", id, op, args });
  });
}

function text(values: unknown[]): string {
  return values.map((v) => typeof v === "string" ? v : safeJson(v)).join(" ");
}

function safeJson(value: unknown): string {
  try {
    return value instanceof Error
      ? `${value.name}: ${value.message}`
      : JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}

function log(level: LogLevel, values: unknown[]): void {
  post({ t: "log", level, text: text(values).slice(0, 8192) });
}

// The module's console goes to its plugin's log, not to the host's stdout (shared by every plugin).
for (
  const [name, level] of [["log", "info"], ["info", "info"], ["debug", "debug"], ["warn", "warn"], [
    "error",
    "error",
  ]] as const
) {
  (console as unknown as Record<string, unknown>)[name] = (...values: unknown[]) => log(level, values);
}

// Its stdout and stderr too: written directly, they would land unattributed in the daemon's log.
const decoder = new TextDecoder();
for (const [stream, level] of [[Deno.stdout, "info"], [Deno.stderr, "warn"]] as const) {
  const write = (bytes: Uint8Array) => {
    log(level, [decoder.decode(bytes).replace(/\n$/, "")]);
    return bytes.length;
  };
  Object.defineProperties(stream, {
    write: { value: (bytes: Uint8Array) => Promise.resolve(write(bytes)) },
    writeSync: { value: write },
    writable: { value: new WritableStream<Uint8Array>({ write: (bytes) => void write(bytes) }) },
  });
}

/** An error answered by dock's API to `ctx.api`: its status and code as the API gave them. */
class ApiError extends Error {
  status: number;
  code: string;
  constructor(status: number, code: string, message: string) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
  }
}

const calls = {
  /** Calls dock's API (the box's or the laptop's), within the scopes the plugin was granted. */
  async api(method: string, path: string, body?: unknown): Promise<unknown> {
    const answer = await request("api", [method, path, body]) as { status: number; body: unknown };
    if (answer.status >= 400) {
      const error = (answer.body as { error?: { code?: string; message?: string } })?.error;
      throw new ApiError(answer.status, error?.code ?? "error", error?.message ?? `status ${answer.status}`);
    }
    return answer.body;
  },
  /** Announces an event; it carries `origin: plugin:<id>`. */
  async emit(type: string, data?: Record<string, unknown>): Promise<void> {
    await request("emit", [type, data ?? {}]);
  },
  log: (...values: unknown[]) => log("info", values),
  kv: Object.freeze({
    get: (key: string) => request("kv.get", [key]),
    set: async (key: string, value: unknown) => void await request("kv.set", [key, value]),
    delete: async (key: string) => void await request("kv.delete", [key]),
    list: (prefix?: string) => request("kv.list", [prefix ?? ""]) as Promise<string[]>,
  }),
};

/** The handlers' `ctx`: set at `init` with the plugin's settings, secrets and data folder, then frozen. */
let ctx: Readonly<typeof calls & WorkerContext> = Object.freeze({
  ...calls,
  config: Object.freeze({}),
  secrets: Object.freeze({}),
  dataDir: "",
});

async function call(kind: CallKind, input: unknown): Promise<unknown> {
  if (kind === "events") {
    // A batch runs at once, as separate calls would; each event's failure is its own.
    const events = input as unknown[];
    const settled = await Promise.allSettled(events.map((event) => handlers.event!(event, ctx)));
    const answer: EventsOutput = { errors: [] };
    settled.forEach((outcome, index) => {
      if (outcome.status === "rejected") answer.errors.push([index, safeJson(outcome.reason).slice(0, 2000)]);
    });
    return answer;
  }
  const handler = handlers[kind];
  if (typeof handler !== "function") throw new Error(`the module has no ${kind} handler`);
  if (kind === "fetch") {
    const { method, url, headers, body } = input as Omit<FetchInput, "body"> & {
      body?: Uint8Array<ArrayBuffer>;
    };
    const hasBody = body !== undefined && method !== "GET" && method !== "HEAD";
    // A GET's init names its headers only: a `method` and a `body: null` cost the constructor twice as
    // much (5.8 µs against 2.8, measured), and it was a third of a warm call's time in here.
    const init: RequestInit = hasBody
      ? { method, headers, body }
      : method === "GET"
      ? { headers }
      : { method, headers };
    const response = await handlers.fetch!(new Request(url, init), ctx);
    if (!(response instanceof Response)) throw new Error("fetch must return a Response");
    // By `forEach`, the pairs the iterator gives without its iterator objects (0.14 µs against 0.79).
    const answerHeaders: [string, string][] = [];
    response.headers.forEach((value, name) => answerHeaders.push([name, value]));
    return {
      status: response.status,
      headers: answerHeaders,
      body: new Uint8Array(await response.arrayBuffer()),
    };
  }
  const value = await (handler as (input: unknown, ctx: unknown) => unknown)(input, ctx);
  if (kind === "gate") {
    if (value === undefined || value === null) return { allow: true };
    const answer = value as { allow?: unknown; reason?: unknown };
    return {
      allow: answer.allow !== false,
      ...(typeof answer.reason === "string" ? { reason: answer.reason.slice(0, 1000) } : {}),
    };
  }
  if (kind === "step") {
    // What crosses back is JSON: a value that is not (a function, a cycle) fails the step here.
    return value === undefined ? null : JSON.parse(JSON.stringify(value));
  }
  return null;
}

/**
 * Opens this worker's lane (plugins/lanes.ts) once its module has loaded, and answers the calls the parent
 * sends there, in the host's shape (a fetch body in base64, both ways). A lane that cannot open or
 * breaks is given up: the parent sends through the host then.
 */
async function openLane(ticket: LaneTicket): Promise<void> {
  let conn: Deno.TcpConn;
  try {
    conn = await Deno.connect({ hostname: "127.0.0.1", port: ticket.port });
    conn.setNoDelay(true);
  } catch {
    return;
  }
  const encoder = new TextEncoder();
  let writing = Promise.resolve();
  const send = (message: FromLane) => {
    let bytes: Uint8Array;
    try {
      bytes = encoder.encode(JSON.stringify(message) + "\n");
    } catch (error) {
      if (message.t !== "result") return;
      bytes = encoder.encode(
        JSON.stringify({
          t: "result",
          id: message.id,
          ok: false,
          error: `its answer cannot be sent (${error})`,
        }) +
          "\n",
      );
    }
    writing = writing.then(async () => {
      for (let written = 0; written < bytes.length;) written += await conn.write(bytes.subarray(written));
    }).catch(() => {});
  };
  const run = async (message: ToLane) => {
    try {
      let input = message.input;
      // A fetch's body crosses in base64: decoded here, the rest of its input as it came.
      const request = message.kind === "fetch" ? input as FetchInput : undefined;
      if (request?.body !== undefined) input = { ...request, body: fromBase64(request.body) };
      const value = await call(message.kind, input);
      if (message.kind === "fetch") {
        const { status, headers, body } = value as {
          status: number;
          headers: [string, string][];
          body: Uint8Array;
        };
        send({ t: "result", id: message.id, ok: true, value: { status, headers, body: toBase64(body) } });
      } else send({ t: "result", id: message.id, ok: true, value });
    } catch (error) {
      send({ t: "result", id: message.id, ok: false, error: safeJson(error).slice(0, 2000) });
    }
  };
  send({ t: "lane", token: ticket.token });
  const decoder = new TextDecoder();
  const buffer = new Uint8Array(64 * 1024);
  let pending = "";
  try {
    while (true) {
      const n = await conn.read(buffer);
      if (n === null) break;
      pending += decoder.decode(buffer.subarray(0, n), { stream: true });
      let newline = pending.indexOf("\n");
      while (newline >= 0) {
        const message = JSON.parse(pending.slice(0, newline)) as ToLane;
        pending = pending.slice(newline + 1);
        newline = pending.indexOf("\n");
        if (message.t === "call") run(message);
      }
    }
  } catch {
    // the parent closed it, or this worker is ending
  }
  try {
    conn.close();
  } catch {
    // already closed
  }
}

/**
 * Base64 of bytes and back, by V8's own codec: protocol.ts's, which this bootstrap imports types of only
 * (a worker's static imports are read with the host's permission, which names this file alone).
 */
const toBase64 = (bytes: Uint8Array) => (bytes as Uint8Array & { toBase64(): string }).toBase64();
const fromBase64 = (text: string) =>
  (Uint8Array as unknown as { fromBase64(text: string): Uint8Array<ArrayBuffer> }).fromBase64(text);

self.onmessage = async (e: MessageEvent<ToWorker>) => {
  const message = e.data;
  switch (message.t) {
    case "ping":
      post({ t: "pong" });
      return;
    case "init":
      if (message.context) {
        ctx = Object.freeze({
          ...calls,
          config: Object.freeze({ ...message.context.config }),
          secrets: Object.freeze({ ...message.context.secrets }),
          dataDir: message.context.dataDir,
        });
      }
      try {
        const module = await import(message.module);
        handlers = (module.default ?? {}) as Handlers;
        const kinds = (["fetch", "event", "gate", "step"] as const).filter((k) =>
          typeof handlers[k] === "function"
        );
        post({ t: "ready", handlers: kinds });
      } catch (error) {
        post({ t: "load_error", error: safeJson(error) });
        return;
      }
      if (message.lane) openLane(message.lane);
      return;
    case "reply": {
      const pending = waiting.get(message.id);
      waiting.delete(message.id);
      if (!pending) return;
      if (message.ok) pending.resolve(message.value);
      else pending.reject(new Error(message.error ?? "refused"));
      return;
    }
    case "call":
      try {
        const value = await call(message.kind, message.input);
        const body = message.kind === "fetch" ? (value as { body: Uint8Array<ArrayBuffer> }).body : undefined;
        post({ t: "result", id: message.id, ok: true, value }, body ? [body.buffer] : []);
      } catch (error) {
        post({ t: "result", id: message.id, ok: false, error: safeJson(error).slice(0, 2000) });
      }
      return;
  }
};
