/**
 * What every route table of the box API shares: the table itself (routes are data, gates too: a route
 * declares the `before:` gates it runs, and {@linkcode mount} runs them, so a route cannot forget its
 * gate and a test can list every gated route; a duplicate registration throws), request parsing that
 * names the offending field, the one place errors become JSON answers, and the streaming answer forms
 * (NDJSON, SSE).
 *
 * @module
 */
import type { Context, Hono } from "hono";
import { z } from "zod";
import { DockError } from "../client/errors.ts";
import { concatBytes } from "./bytes.ts";
import type { GateAction, GateContext } from "./hooks.ts";
import { checkSchema } from "./user_files.ts";
import { errorText, type Log } from "./log.ts";

/** HTTP methods the API routes. */
export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

/** A route handler. */
export type Handler = (c: Context) => Response | Promise<Response>;

/** What a `before:` gate is shown of one request: the target on its stdin, and where the action happens. */
export interface GateRequest {
  /** What the action acts on (identifiers; for `session.send` the text too). */
  target: Record<string, unknown>;
  /** The location it targets (its config's gates run too), as `LOC` or `LOC/WT`. */
  location?: string;
  /** The worktree it targets (gates run in it). */
  worktree?: string;
}

/** One gate of a route: the action it guards, and what the gate is shown of a request. */
export interface RouteGate<I> {
  action: GateAction;
  /** The request as the gate sees it; null when this request does not take the gate (no first prompt). */
  describe(input: I, c: Context): GateRequest | null;
}

/**
 * A route declared whole. `input` reads the request (body, parameters, the records it names) once, so a
 * malformed body (400) or an unknown target (404) answers before any gate runs; the gates and then the
 * handler get what it returns. The gates run where the table is mounted (see {@linkcode mount}), so a
 * handler never runs ungated and the table lists every gated route.
 */
export interface Route<I> {
  method: Method;
  path: string;
  input(c: Context): I | Promise<I>;
  /** Gates, run in order before the handler; the first refusal answers. @default {[]} */
  gates?: RouteGate<I>[];
  handler(c: Context, input: I): Response | Promise<Response>;
}

/** A route as its table holds it. */
export interface TableRoute {
  readonly method: Method;
  readonly path: string;
  readonly gates: readonly RouteGate<unknown>[];
  input(c: Context): unknown;
  handler(c: Context, input: unknown): Response | Promise<Response>;
}

/** Runs the `before:<action>` gates of a request; resolves when all allow, throws (403) when one refuses. */
export type GateRunner = (
  action: GateAction,
  target: Record<string, unknown>,
  context: GateContext,
) => Promise<void>;

/** One resource's routes: `METHOD path → handler`, with the gates that guard it. */
export class RouteTable {
  readonly resource: string;
  readonly routes: TableRoute[] = [];

  constructor(resource: string) {
    this.resource = resource;
  }

  /** Adds an ungated route that reads its own request; the same method and path twice is a programming error. */
  add(method: Method, path: string, handler: Handler): this {
    return this.route({ method, path, input: () => undefined, handler: (c) => handler(c) });
  }

  /** Adds a route declared whole, with its input step and its gates. */
  route<I>(route: Route<I>): this {
    if (this.routes.some((r) => r.method === route.method && r.path === route.path)) {
      throw new Error(`${this.resource}: duplicate route ${route.method} ${route.path}`);
    }
    this.routes.push({ ...route, gates: route.gates ?? [] } as TableRoute);
    return this;
  }
}

/** Options of {@linkcode mount}. */
export interface MountOptions {
  /** Runs the routes' gates; mounting a gated route without it throws. */
  gate?: GateRunner;
}

/**
 * Mounts route tables under `prefix`; a method+path registered by two tables throws. Each route runs
 * input → gates → handler: this is the one place a gate is checked.
 */
export function mount(app: Hono, prefix: string, tables: RouteTable[], options: MountOptions = {}): void {
  const seen = new Map<string, string>();
  for (const table of tables) {
    for (const route of table.routes) {
      const key = `${route.method} ${route.path}`;
      if (seen.has(key)) throw new Error(`${key} registered by both ${seen.get(key)} and ${table.resource}`);
      seen.set(key, table.resource);
      app.on(route.method, prefix + route.path, gated(route, options.gate, key));
    }
  }
  // A known path with another method answers 405, not 404.
  const paths = new Map<string, Method[]>();
  for (const key of seen.keys()) {
    const [method, path] = key.split(" ") as [Method, string];
    paths.set(path, [...(paths.get(path) ?? []), method]);
  }
  for (const [path, methods] of paths) {
    app.all(prefix + path, (c) => {
      throw new DockError(
        "method_not_allowed",
        `${c.req.method} is not allowed here; use ${methods.join(", ")}`,
        {
          status: 405,
        },
      );
    });
  }
}

function gated(route: TableRoute, gate: GateRunner | undefined, key: string): Handler {
  if (route.gates.length === 0) {
    // Its handler runs as soon as its input is read: at once when reading awaits nothing (every `add`).
    return (c) => {
      const input = route.input(c);
      return input instanceof Promise
        ? input.then((read) => route.handler(c, read))
        : route.handler(c, input);
    };
  }
  if (!gate) {
    throw new Error(`${key} is gated (${route.gates.map((g) => g.action)}) but no gate runner was given`);
  }
  return async (c) => {
    const input = await route.input(c);
    for (const routeGate of route.gates) {
      const request = routeGate.describe(input, c);
      if (!request) continue;
      await gate(routeGate.action, request.target, {
        origin: requestOrigin(c),
        location: request.location,
        worktree: request.worktree,
      });
    }
    return route.handler(c, input);
  };
}

/** The JSON error answer of a refusal: nothing unexpected, so nothing to log. */
export function errorResponse(error: DockError): Response;
/**
 * Turns any thrown error into the JSON error answer; unexpected errors are 500 and logged to `log`
 * (the process's own: a server passes its log, there is no fallback to stderr).
 */
export function errorResponse(error: unknown, log: Log): Response;
export function errorResponse(error: unknown, log?: Log): Response {
  if (error instanceof DockError) {
    const body = error.toBody();
    // A message quotes what was sent ("got …"): bounded, so a 5 MB bad value is not echoed back whole.
    body.error.message = boundedMessage(body.error.message);
    return json(body, error.status);
  }
  log!.error(
    `unexpected error: ${error instanceof Error ? (error.stack ?? errorText(error)) : errorText(error)}`,
  );
  return json(
    { error: { code: "internal", message: boundedMessage((error as Error)?.message ?? String(error)) } },
    500,
  );
}

/** The longest error message an answer carries. */
export const MAX_ERROR_MESSAGE = 1000;

function boundedMessage(message: string): string {
  return message.length <= MAX_ERROR_MESSAGE ? message : `${message.slice(0, MAX_ERROR_MESSAGE - 1)}…`;
}

/**
 * The schema a body is held to: an object schema that would drop unknown fields is made strict, so no
 * route can forget it (a misspelt field silently ignored is a setting silently not applied). Nested
 * objects are the schema's own business: `client/schemas.ts` writes every one strict.
 */
function strictBody(schema: z.ZodType): z.ZodType {
  const known = STRICT.get(schema);
  if (known) return known;
  let strict = schema;
  if (schema instanceof z.ZodOptional) {
    const inner = strictBody(schema.unwrap() as z.ZodType);
    if (inner !== schema.unwrap()) strict = inner.optional();
  } else if (schema instanceof z.ZodObject && schema._zod.def.catchall === undefined) {
    strict = schema.strict();
  }
  STRICT.set(schema, strict);
  return strict;
}

const STRICT = new WeakMap<z.ZodType, z.ZodType>();

const MAX_BODY = 8 * 1024 * 1024;

/** A stream read whole as it arrives, throwing `tooLarge()` as soon as it passes `limit` bytes. */
export async function readLimited(
  stream: ReadableStream<Uint8Array> | null,
  limit: number,
  tooLarge: () => Error,
): Promise<Uint8Array<ArrayBuffer>> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  if (stream) {
    // A reader read to its end and not released: `for await` releases it at the end, and the release
    // builds a TypeError (with its stack) for the reader's closed promise: ~10 µs of a small body.
    const reader = stream.getReader();
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      size += read.value.length;
      if (size > limit) {
        reader.cancel().catch(() => {}); // the rest is not wanted (as `for await`'s early exit did)
        throw tooLarge();
      }
      chunks.push(read.value);
    }
  }
  return concatBytes(chunks);
}

/**
 * Reads and validates a JSON body; a missing, malformed or wrong-typed body is a 400 naming the field,
 * an unknown field a 400 naming it and the closest known one. The body is read as it arrives and
 * refused (413) past `limit` bytes, never buffered beyond it.
 */
export async function body<T extends z.ZodType>(
  c: Context,
  schema: T,
  options: {
    limit?: number;
    /**
     * A hand-written check of the hot shapes that answers before the schema: the value as the schema
     * would give it, or undefined to let the schema decide (and word any refusal). It must accept
     * nothing the schema refuses (a test beside it says so).
     */
    fast?: (value: unknown) => z.infer<T> | undefined;
  } = {},
): Promise<z.infer<T>> {
  const limit = options.limit ?? MAX_BODY;
  const tooLarge = () =>
    new DockError("too_large", `the body must be at most ${limit} bytes`, { status: 413 });
  const declared = c.req.header("content-length");
  if (Number(declared ?? 0) > limit) throw tooLarge();
  // A body of a declared length cannot run past it (the HTTP server stops there), so it is read
  // whole at once: reading it chunk by chunk through the stream took ~10% of a small POST's time.
  const bytes = declared !== undefined
    ? new Uint8Array(await c.req.raw.arrayBuffer())
    : await readLimited(c.req.raw.body, limit, tooLarge);
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    // Decoding leniently would store U+FFFD in place of what was sent.
    throw new DockError("invalid_utf8", "the body is not valid UTF-8", { status: 400 });
  }
  let value: unknown = undefined;
  if (text.trim()) {
    checkDepth(text);
    try {
      value = JSON.parse(text);
    } catch (cause) {
      throw new DockError("invalid_json", `the body is not valid JSON: ${(cause as Error).message}`, {
        status: 400,
        cause,
      });
    }
    checkStrings(value, "");
    const quick = options.fast?.(value);
    if (quick !== undefined) return quick;
  }
  const checked = checkSchema(strictBody(schema), value);
  if (checked.ok) return checked.data as z.infer<T>;
  // The first problem in document order: a caller fixes one field at a time.
  const { field, message } = checked.problems[0];
  throw new DockError("invalid_request", `${field || "body"}: ${message}`, {
    status: 400,
    detail: { field: field || "body" },
  });
}

/** How deep a body may nest arrays and objects (a config or a request needs a handful). */
export const MAX_DEPTH = 64;

/** Refuses JSON nested past {@linkcode MAX_DEPTH}, before parsing it (10,000 levels once gave a 500). */
function checkDepth(text: string): void {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const char = text.charCodeAt(i);
    if (inString) {
      if (char === 92) i++; // a backslash escapes the next character
      else if (char === 34) inString = false;
    } else if (char === 34) inString = true;
    else if (char === 123 || char === 91) {
      if (++depth > MAX_DEPTH) {
        throw new DockError("too_deep", `the body nests deeper than ${MAX_DEPTH} levels`, { status: 400 });
      }
    } else if (char === 125 || char === 93) depth--;
  }
}

/**
 * Refuses a NUL or a lone surrogate (`"\ud800"`, which no file, process or git takes) in any key or string
 * of a body, naming the field: values reach processes, file names and git, where a NUL once gave a 500
 * on every later exec.
 */
export function checkStrings(value: unknown, path: string): void {
  const bad = (text: string) => text.includes("\0") || !text.isWellFormed();
  if (typeof value === "string") {
    if (bad(value)) throw notClean(path || "body");
  } else if (Array.isArray(value)) {
    value.forEach((item, index) => checkStrings(item, `${path}[${index}]`));
  } else if (value !== null && typeof value === "object") {
    for (const [key, item] of Object.entries(value)) {
      const field = path ? `${path}.${key}` : key;
      if (bad(key)) throw notClean(field);
      checkStrings(item, field);
    }
  }
}

function notClean(field: string): DockError {
  return new DockError(
    "invalid_request",
    `${field}: must not contain a NUL or an unpaired surrogate`,
    { status: 400, detail: { field } },
  );
}

/** A query parameter that will reach a file name or a process: at most `max` characters, no NUL. */
export function textQuery(c: Context, name: string, max = 4096): string | undefined {
  const raw = c.req.query(name);
  if (raw === undefined) return undefined;
  if (raw.length > max) {
    throw new DockError("invalid_request", `${name}: must be at most ${max} characters, got ${raw.length}`, {
      status: 400,
      detail: { field: name },
    });
  }
  if (raw.includes("\0") || !raw.isWellFormed()) throw notClean(name);
  return raw;
}

/** Reads an optional integer query parameter within bounds. */
export function intQuery(
  c: Context,
  name: string,
  options: { min: number; max: number; fallback: number },
): number {
  const raw = c.req.query(name);
  if (raw === undefined || raw === "") return options.fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < options.min || value > options.max) {
    throw new DockError(
      "invalid_request",
      `${name}: must be an integer from ${options.min} to ${options.max}, got ${JSON.stringify(raw)}`,
      { status: 400, detail: { field: name } },
    );
  }
  return value;
}

/** True when a flag query parameter (`?force=1`, `?force=true`) is set. */
export function flagQuery(c: Context, name: string): boolean {
  const raw = c.req.query(name);
  return raw !== undefined && raw !== "0" && raw !== "false";
}

/** The tool a request comes from (`X-Dock-Origin`), recorded as the origin of the events it causes. */
export function requestOrigin(c: Context): string {
  const origin = c.req.header("x-dock-origin");
  return origin && /^[A-Za-z0-9:._-]{1,64}$/.test(origin) ? origin : "api";
}

/**
 * An NDJSON answer once `lines` gave its first: what fails before that (an unknown name) is the answer's
 * own error status, not a stream cut short.
 */
export async function ndjsonChecked(lines: AsyncGenerator<unknown>): Promise<Response> {
  const first = await lines.next();
  return ndjson((async function* () {
    if (!first.done) yield first.value;
    yield* lines;
  })());
}

/** An NDJSON answer fed by an async generator; the stream ends when it returns or the client leaves. */
export function ndjson(lines: AsyncIterable<unknown>): Response {
  const encoder = new TextEncoder();
  const iterator = lines[Symbol.asyncIterator]();
  const stream = new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const next = await iterator.next();
        if (next.done) controller.close();
        else controller.enqueue(encoder.encode(JSON.stringify(next.value) + "\n"));
      } catch (error) {
        const message = error instanceof DockError
          ? error.message
          : String((error as Error)?.message ?? error);
        controller.enqueue(encoder.encode(JSON.stringify({ error: message, done: true }) + "\n"));
        controller.close();
      }
    },
    async cancel() {
      await iterator.return?.(undefined);
    },
  });
  return new Response(stream, {
    headers: { "content-type": "application/x-ndjson", "cache-control": "no-cache" },
  });
}

/** A plain JSON answer. */
export function json(value: unknown, status = 200): Response {
  const text = JSON.stringify(value ?? null);
  const headers: Record<string, string> = { "content-type": "application/json" };
  // Deno compresses a compressible answer the client accepts compressed (br first). For a small one that
  // costs ~0.25 ms of CPU for a few bytes saved: most of a GET's time on the box's socket. no-transform is
  // how Deno is told not to.
  if (text.length < SMALL_ANSWER) headers["cache-control"] = "no-transform";
  return new Response(text, { status, headers });
}

/** Answers shorter than this are sent as they are (see {@linkcode json}). */
const SMALL_ANSWER = 16 * 1024;

/** A path parameter of the route (always present when the route matched). */
export function param(c: Context, name: string): string {
  const value = c.req.param(name);
  if (value === undefined) throw new Error(`route has no parameter :${name}`);
  return value;
}
