/**
 * Route tables served in memory for their tests (`app.request`, no socket, no process): a table is
 * mounted as its API mounts it (`core/http.ts` `mount`, the JSON error answer), behind an optional front
 * (the agent's gate), and each of its handlers is wrapped so a test can check that every route answered
 * a success at least once and that a refused request never reached a handler.
 *
 * @module
 */
import { Hono, type MiddlewareHandler } from "hono";
import { DockError } from "../client/errors.ts";
import { errorResponse, type GateRunner, mount, type RouteTable } from "../core/http.ts";
import { gate } from "../agent/api/gate.ts";
import { assert, assertEquals } from "./assert.ts";
import { STDERR_LOG } from "../core/log.ts";

/** The agent's port and token in these tests: what the gate in front of its tables checks. */
export const AGENT_PORT = 1378;
/** The token the agent's gate accepts in these tests. */
export const AGENT_TOKEN = "t".repeat(43);

/** Options of {@linkcode TableApp}. */
export interface TableAppOptions {
  /** Runs the tables' `before:` gates (a gated route needs it). */
  gate?: GateRunner;
  /** Middleware in front of every route (the agent's gate). */
  front?: MiddlewareHandler;
  /** Host header of every request. @default {"127.0.0.1:1378"} */
  host?: string;
  /** Bearer token sent unless a request says `token: null`. @default {none} */
  token?: string;
}

/** One request of {@linkcode TableApp.call}. */
export interface TableCall {
  /** JSON body (serialised here). */
  json?: unknown;
  /** A raw body, sent as it is. */
  body?: BodyInit;
  headers?: Record<string, string>;
  /** The bearer token; null sends none. @default {the app's token} */
  token?: string | null;
  /** The hono env a listener gives the app (the TLS listener's caller address). */
  env?: Record<string, unknown>;
}

/** An answer: its status, its body as JSON (or text), its text, and the response itself. */
export interface TableAnswer {
  status: number;
  text: string;
  // deno-lint-ignore no-explicit-any
  body: any;
  response: Response;
}

/** Route tables in a hono app in memory, with what each route answered. */
export class TableApp {
  readonly app = new Hono();
  /** `METHOD path` of each route, in the order the tables list them. */
  readonly routes: string[] = [];
  #succeeded = new Set<string>();
  #entered = 0;
  #options: TableAppOptions;

  constructor(tables: RouteTable[], options: TableAppOptions = {}) {
    this.#options = options;
    this.app.onError((error) => errorResponse(error, STDERR_LOG));
    this.app.notFound((c) =>
      errorResponse(new DockError("not_found", `no such endpoint: ${c.req.path}`, { status: 404 }))
    );
    if (options.front) this.app.use("*", options.front);
    mount(this.app, "/v1", tables.map((table) => this.#watched(table)), { gate: options.gate });
  }

  /** How many requests reached a handler (past the front and the gates). */
  get entered(): number {
    return this.#entered;
  }

  /** Sends one request to `/v1` + `path`. */
  async call(method: string, path: string, request: TableCall = {}): Promise<TableAnswer> {
    const headers = new Headers(request.headers);
    headers.set("host", this.#options.host ?? `127.0.0.1:${AGENT_PORT}`);
    const token = request.token === undefined ? this.#options.token : request.token;
    if (token) headers.set("authorization", `Bearer ${token}`);
    let body = request.body;
    if (request.json !== undefined) {
      body = JSON.stringify(request.json);
      if (!headers.has("content-type")) headers.set("content-type", "application/json");
    }
    const response = await this.app.request(`http://${headers.get("host")}/v1${path}`, {
      method,
      headers,
      body,
    }, request.env);
    const text = await response.text();
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // NDJSON, SSE or a file: the test reads the text.
    }
    return { status: response.status, text, body: parsed, response };
  }

  /** Sends a request and asserts it was refused with `status` and `code` before any handler ran. */
  async refused(method: string, path: string, status: number, code: string, request: TableCall = {}) {
    const before = this.#entered;
    const answer = await this.call(method, path, request);
    assertEquals([answer.status, answer.body?.error?.code], [status, code], `${method} ${path}`);
    return { answer, entered: this.#entered - before };
  }

  /**
   * Asserts a body with one unknown field is refused (400 `code`, the message naming the field) before
   * the backend is asked anything (the test's fake records that).
   */
  async refusesUnknownField(
    method: string,
    path: string,
    json: Record<string, unknown>,
    code = "invalid_request",
  ): Promise<void> {
    const { answer } = await this.refused(method, path, 400, code, { json: { ...json, colour: "red" } });
    assert(String(answer.body.error.message).includes("colour"), answer.body.error.message);
  }

  /** Asserts every route of the tables (but `except`: routes that only refuse) answered a 2xx in this test. */
  assertEveryRouteSucceeded(except: string[] = []): void {
    const missed = this.routes.filter((route) => !this.#succeeded.has(route) && !except.includes(route));
    assertEquals(missed, [], "routes never answered 2xx");
  }

  /**
   * Asserts every route refuses a request without the token (401) and one with a wrong token, and
   * that no handler ran.
   */
  async assertEveryRouteNeedsToken(): Promise<void> {
    const before = this.#entered;
    for (const route of this.routes) {
      const [method, path] = route.split(" ");
      const concrete = path.replaceAll(/:(\w+)/g, "$1-x").replace(/\*$/, "a");
      for (const token of [null, "wrong"]) {
        const answer = await this.call(method, concrete, { token, json: method === "GET" ? undefined : {} });
        assertEquals([answer.status, answer.body?.error?.code], [401, "unauthorized"], `${route} ${token}`);
      }
    }
    assertEquals(this.#entered, before, "a request without the token reached a handler");
  }

  #watched(table: RouteTable): RouteTable {
    const copy = new (table.constructor as typeof RouteTable)(table.resource);
    for (const route of table.routes) {
      const key = `${route.method} ${route.path}`;
      this.routes.push(key);
      copy.route({
        method: route.method,
        path: route.path,
        gates: [...route.gates],
        input: (c) => route.input(c),
        handler: async (c, input) => {
          this.#entered++;
          const answer = await route.handler(c, input);
          if (answer.status >= 200 && answer.status < 300 || answer.status === 101) this.#succeeded.add(key);
          return answer;
        },
      });
    }
    return copy;
  }
}

/** The agent's tables behind its gate (port {@linkcode AGENT_PORT}, token {@linkcode AGENT_TOKEN}). */
export function agentTables(tables: RouteTable[], options: { websockets?: RegExp[] } = {}): TableApp {
  return new TableApp(tables, {
    front: gate({ port: AGENT_PORT, token: () => AGENT_TOKEN, websockets: options.websockets }),
    token: AGENT_TOKEN,
  });
}

/** Options of {@linkcode boxTables}. */
export interface BoxTablesOptions {
  /** Whether the `before:` gate refuses this action on this target (403 `gate_refused`). */
  refuse?: (action: string, target: Record<string, unknown>) => boolean;
}

/**
 * The box's tables as its socket serves them (no token: the socket's mode is its authentication), with
 * a gate runner that records each gate as `action location target-json` and refuses what `refuse` says.
 */
export function boxTables(
  tables: RouteTable[],
  options: BoxTablesOptions = {},
): { app: TableApp; gates: string[] } {
  const gates: string[] = [];
  const app = new TableApp(tables, {
    host: "box",
    gate: (action, target, context) => {
      gates.push(`${action} ${context.location ?? "-"} ${JSON.stringify(target)}`);
      if (options.refuse?.(action, target)) {
        return Promise.reject(
          new DockError("gate_refused", `refused by a before:${action} hook`, { status: 403 }),
        );
      }
      return Promise.resolve();
    },
  });
  return { app, gates };
}
