/**
 * `@dock/plugin/testing`: run a plugin's handlers in a plain `deno test`, without dock. A fake `ctx`
 * records what the handlers do (emits, log lines, API calls) and answers `ctx.api` from the routes a
 * test gives it, refusing, as dock does, a route outside the scopes the test grants; fixtures build
 * typed events and gate requests.
 *
 * ```ts
 * import assert from "node:assert/strict";
 * import { fakeContext, fakeEvent } from "@dock/plugin/testing";
 * import plugin from "./main.ts";
 *
 * Deno.test("counts finished turns", async () => {
 *   const ctx = fakeContext();
 *   await plugin.event!(fakeEvent("agent.finished", { session: "web-1" }), ctx);
 *   assert.equal(await ctx.kv.get("seen"), 1);
 * });
 * ```
 *
 * @module
 */
import {
  type ApiRoute,
  BOX_ROUTES,
  type DockEventData,
  type DockEventType,
  type EventOf,
  type GateAction,
  type GateRequestOf,
  type GateTargets,
  LAPTOP_ROUTES,
  type PluginScope,
  SYSTEM_EVENT_FAMILIES,
} from "./generated.ts";
import type { ApiError, ApiMethod, DockPlugin, PluginContext } from "./mod.ts";

/** One `ctx.api` call a handler made, and how it ended. */
export interface ApiCall {
  method: string;
  path: string;
  body?: unknown;
  /** The status answered (403 when refused by scope, 404 when no route was given for it). */
  status: number;
}

/** An answer a fake route gives: a value (status 200), or a `Response`-like `{ status, body }`. */
export type FakeAnswer = unknown | { status: number; body: unknown };

/** Options of {@linkcode fakeContext}. */
export interface FakeContextOptions {
  /** Answers of `ctx.api`, by `"METHOD path"` (`"GET sessions"`), a value or a function of the body. */
  api?: Record<string, FakeAnswer | ((body: unknown, path: string) => FakeAnswer | Promise<FakeAnswer>)>;
  /** The scopes granted: when given, a call to a route outside them is refused (403 `forbidden`) as dock does. */
  scopes?: PluginScope[];
  /** Where the plugin runs: which routes exist. @default {"box"} */
  where?: "box" | "laptop";
  /** `ctx.config`. */
  config?: Record<string, string | number | boolean>;
  /** `ctx.secrets`. */
  secrets?: Record<string, string>;
  /** The store's starting content. */
  kv?: Record<string, unknown>;
  /** `ctx.dataDir`. @default {"/tmp/dock-plugin-test"} */
  dataDir?: string;
}

/** A fake `ctx` with what the handlers did. */
export interface FakeContext extends PluginContext {
  /** `ctx.emit` calls, in order. */
  readonly emitted: { type: string; data: Record<string, unknown> }[];
  /** Log lines (`ctx.log`), each as dock writes it: the values joined by spaces. */
  readonly logs: string[];
  /** `ctx.api` calls, in order. */
  readonly calls: ApiCall[];
  /** The store, as it is now. */
  readonly store: Map<string, unknown>;
}

/** A `ctx` for a test: records emits, log lines and API calls, and answers from `options.api`. */
export function fakeContext(options: FakeContextOptions = {}): FakeContext {
  const emitted: FakeContext["emitted"] = [];
  const logs: string[] = [];
  const calls: ApiCall[] = [];
  const store = new Map<string, unknown>(Object.entries(options.kv ?? {}));
  const routes = (options.where ?? "box") === "box" ? BOX_ROUTES : LAPTOP_ROUTES;
  const ctx: FakeContext = {
    emitted,
    logs,
    calls,
    store,
    config: Object.freeze({ ...options.config }),
    secrets: Object.freeze({ ...options.secrets }),
    dataDir: options.dataDir ?? "/tmp/dock-plugin-test",
    // deno-lint-ignore no-explicit-any
    async api(method: ApiMethod, path: string, body?: unknown): Promise<any> {
      const call: ApiCall = { method, path, ...(body === undefined ? {} : { body }), status: 200 };
      calls.push(call);
      if (options.scopes) {
        const route = matchRoute(routes, method, path);
        if (!route || !options.scopes.includes(route.scope)) {
          call.status = 403;
          throw apiError(403, "forbidden", `${method} ${path} is not open to this plugin's scopes`);
        }
      }
      const given = options.api?.[`${method} ${path}`];
      if (given === undefined) {
        call.status = 404;
        throw apiError(404, "not_found", `no fake answer for ${method} ${path}`);
      }
      const answer = typeof given === "function" ? await given(body, path) : given;
      if (isStatusAnswer(answer)) {
        call.status = answer.status;
        if (answer.status >= 400) {
          const error = (answer.body as { error?: { code?: string; message?: string } })?.error;
          throw apiError(answer.status, error?.code ?? "error", error?.message ?? `status ${answer.status}`);
        }
        return structuredClone(answer.body);
      }
      return structuredClone(answer);
    },
    emit(type: string, data: Record<string, unknown> = {}): Promise<void> {
      if (SYSTEM_EVENT_FAMILIES.includes(type.split(".")[0])) {
        return Promise.reject(
          new Error(`'${type}' is one of dock's own event types: a plugin may not announce it`),
        );
      }
      JSON.stringify(data); // what crosses to dock is JSON: a cycle or a BigInt throws here, as it does there
      emitted.push({ type, data: structuredClone(data) });
      return Promise.resolve();
    },
    log(...values: unknown[]): void {
      logs.push(values.map((v) => typeof v === "string" ? v : JSON.stringify(v)).join(" "));
    },
    kv: {
      get: <T>(key: string) =>
        Promise.resolve((store.has(key) ? structuredClone(store.get(key)) : null) as T | null),
      set: (key: string, value: unknown) => Promise.resolve(void store.set(key, structuredClone(value))),
      delete: (key: string) => Promise.resolve(void store.delete(key)),
      list: (prefix = "") => Promise.resolve([...store.keys()].filter((k) => k.startsWith(prefix)).sort()),
    },
  };
  return ctx;
}

/** The route `method path` falls under, if any (`:param` matches one segment). */
export function matchRoute(routes: readonly ApiRoute[], method: string, path: string): ApiRoute | undefined {
  const parts = path.replace(/^\/+/, "").split("?")[0].split("/");
  return routes.find((route) => {
    if (route.method !== method) return false;
    const pattern = route.path.split("/");
    if (pattern.at(-1) === "*") return parts.length >= pattern.length - 1;
    return pattern.length === parts.length && pattern.every((p, i) => p.startsWith(":") || p === parts[i]);
  });
}

/** An event of `type` as dock delivers it (`time` now, `origin` `test` unless given). */
export function fakeEvent<T extends DockEventType>(
  type: T,
  data: DockEventData[T],
  envelope: { origin?: string; box?: string; time?: string; id?: number } = {},
): EventOf<T> {
  return {
    id: envelope.id ?? 1,
    type,
    time: envelope.time ?? new Date().toISOString(),
    origin: "test",
    ...envelope,
    data,
  };
}

/** A gate request for `action` as dock asks it (`origin` `api` unless given). */
export function fakeGate<A extends GateAction>(
  action: A,
  target: GateTargets[A],
  extra: { origin?: string; location?: string; worktree?: string; box?: string } = {},
): GateRequestOf<A> {
  return { action, target, origin: "api", time: new Date().toISOString(), ...extra };
}

/**
 * Calls a plugin's `fetch` as dock does for `/v1/plugins/{id}/fn{path}`: the URL's path is what follows
 * `/fn`, and the caller's `Authorization` and cookies are never passed on.
 */
export async function callFetch(
  plugin: DockPlugin,
  path: string,
  init: RequestInit = {},
  ctx: PluginContext = fakeContext(),
): Promise<Response> {
  if (!plugin.fetch) throw new Error("the plugin has no fetch handler");
  const headers = new Headers(init.headers);
  headers.delete("authorization");
  headers.delete("cookie");
  return await plugin.fetch(new Request(new URL(path, "http://plugin.local/"), { ...init, headers }), ctx);
}

function isStatusAnswer(value: unknown): value is { status: number; body: unknown } {
  return typeof value === "object" && value !== null &&
    typeof (value as { status?: unknown }).status === "number" &&
    "body" in value && Object.keys(value).length === 2;
}

function apiError(status: number, code: string, message: string): ApiError {
  return Object.assign(new Error(message), { name: "ApiError", status, code });
}
