/**
 * What every route table of the box API shares: the table itself (routes are data; a duplicate
 * registration throws), request parsing that names the offending field, the one place errors become
 * JSON answers, and the streaming answer forms (NDJSON, SSE).
 *
 * @module
 */
import type { Context, Hono } from "hono";
import { z } from "zod";
import { DockError } from "../client/errors.ts";

/** HTTP methods the API routes. */
export type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

/** A route handler. */
export type Handler = (c: Context) => Response | Promise<Response>;

/** One resource's routes: `METHOD path → handler`. */
export class RouteTable {
  readonly resource: string;
  readonly routes: { method: Method; path: string; handler: Handler }[] = [];

  constructor(resource: string) {
    this.resource = resource;
  }

  /** Adds a route; the same method and path twice is a programming error. */
  add(method: Method, path: string, handler: Handler): this {
    if (this.routes.some((r) => r.method === method && r.path === path)) {
      throw new Error(`${this.resource}: duplicate route ${method} ${path}`);
    }
    this.routes.push({ method, path, handler });
    return this;
  }
}

/** Mounts route tables under `prefix`; a method+path registered by two tables throws. */
export function mount(app: Hono, prefix: string, tables: RouteTable[]): void {
  const seen = new Map<string, string>();
  for (const table of tables) {
    for (const route of table.routes) {
      const key = `${route.method} ${route.path}`;
      if (seen.has(key)) throw new Error(`${key} registered by both ${seen.get(key)} and ${table.resource}`);
      seen.set(key, table.resource);
      app.on(route.method, prefix + route.path, route.handler);
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

/** Turns any thrown error into the JSON error answer; unexpected errors are 500 and logged. */
export function errorResponse(error: unknown): Response {
  if (error instanceof DockError) return Response.json(error.toBody(), { status: error.status });
  console.error("unexpected error:", error);
  return Response.json({ error: { code: "internal", message: (error as Error)?.message ?? String(error) } }, {
    status: 500,
  });
}

/** Formats a zod issue path as `services[2].name`. */
export function fieldPath(path: readonly PropertyKey[]): string {
  return path.reduce<string>(
    (text, key) =>
      typeof key === "number" ? `${text}[${key}]` : text ? `${text}.${String(key)}` : String(key),
    "",
  );
}

/** The first issue of a zod error as a DockError naming the field. */
export function zodError(error: z.ZodError, prefix = ""): DockError {
  const issue = error.issues[0];
  // A strict schema reports an unknown key at its parent; the key itself is the field to name.
  const path = issue.code === "unrecognized_keys" ? [...issue.path, issue.keys[0]] : issue.path;
  const field = fieldPath([...(prefix ? [prefix] : []), ...path]) || "body";
  const message = issue.code === "unrecognized_keys" ? "unknown field" : issue.message;
  return new DockError("invalid_request", `${field}: ${message}`, { status: 400, detail: { field } });
}

const MAX_BODY = 8 * 1024 * 1024;

/**
 * Reads and validates a JSON body; a missing, malformed or wrong-typed body is a 400 naming the field.
 * The body is read as it arrives and refused (413) past `limit` bytes, never buffered beyond it.
 */
export async function body<T extends z.ZodType>(
  c: Context,
  schema: T,
  options: { limit?: number } = {},
): Promise<z.infer<T>> {
  const limit = options.limit ?? MAX_BODY;
  const tooLarge = () =>
    new DockError("too_large", `the body must be at most ${limit} bytes`, { status: 413 });
  if (Number(c.req.header("content-length") ?? 0) > limit) throw tooLarge();
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of c.req.raw.body ?? []) {
    size += chunk.length;
    if (size > limit) throw tooLarge();
    chunks.push(chunk);
  }
  const bytes = new Uint8Array(size);
  let offset = 0;
  for (const chunk of chunks) {
    bytes.set(chunk, offset);
    offset += chunk.length;
  }
  const text = new TextDecoder().decode(bytes);
  let value: unknown = undefined;
  if (text.trim()) {
    try {
      value = JSON.parse(text);
    } catch (cause) {
      throw new DockError("invalid_json", `the body is not valid JSON: ${(cause as Error).message}`, {
        status: 400,
        cause,
      });
    }
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw zodError(parsed.error);
  return parsed.data;
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
  return Response.json(value ?? null, { status });
}

/** A path parameter of the route (always present when the route matched). */
export function param(c: Context, name: string): string {
  const value = c.req.param(name);
  if (value === undefined) throw new Error(`route has no parameter :${name}`);
  return value;
}
