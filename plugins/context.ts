/**
 * What a worker's `ctx` does: `ctx.api` (dock's own API, within the plugin's scopes, bounded), `ctx.emit`
 * (an event with `origin: plugin:<id>`, rate-limited), `ctx.kv` (its store) — and the same `ctx.api` for
 * its `ui` panel. Everything a worker asks arrives here, is checked, and is refused (logged and counted)
 * when it is not allowed.
 *
 * @module
 */
import type { PanelApiRequest, PanelApiResult } from "../client/wire.ts";
import { DockError } from "../client/errors.ts";
import type { EventBus } from "../core/events.ts";
import { readLimited } from "../core/http.ts";
import { type ContextOp, MAX_FETCH_BODY, type WorkerSpec } from "./protocol.ts";
import type { Plugin } from "./plugin_state.ts";
import type { PluginRegistry } from "./registry.ts";
import { type ApiSide, requiredScope } from "./scopes.ts";

/** `ctx.api` calls one plugin may have waiting for an answer. */
export const API_IN_FLIGHT = 16;
/**
 * `ctx.api` calls one plugin may make at once, and then per second: 3,000 calls at once from one plugin
 * slowed every other client of the daemon to 2.5 s an answer.
 */
export const API_BURST = 200;
export const API_PER_SECOND = 100;
/** Events a module may announce at once, and then per second. */
export const EMIT_BURST = 1000;
export const EMIT_PER_SECOND = 200;

/**
 * The event families dock itself announces (`<family>.<what>`): no module may announce one, so nothing a
 * plugin says can pass for the system's word (an `agent.finished` that starts a flow, a `plugin.enabled`).
 * Every type the code publishes is in one of them (`context_test.ts` reads the sources to check), as are
 * the families of SPEC.md's event table.
 */
export const SYSTEM_EVENT_FAMILIES: ReadonlySet<string> = new Set([
  "agent",
  "app",
  "box",
  "config",
  "dock",
  "flow",
  "forge",
  "forward",
  "gate",
  "guard",
  "hook",
  "hooks",
  "kit",
  "laptop",
  "location",
  "phone",
  "plugin",
  "preview",
  "queue",
  "schedule",
  "secret",
  "service",
  "session",
  "share",
  "skills",
  "task",
  "unit",
  "worktree",
]);

/** A token bucket: `burst` at once, then `perSecond`; `refusing` is set while a flood lasts. */
interface Bucket {
  tokens: number;
  at: number;
  refusing: boolean;
}

/**
 * Takes a token from `buckets[key]` (made full when new): false when there is none. A flood is over once
 * the bucket has filled up again (the caller kept below the rate for a while).
 */
function take(buckets: Map<string, Bucket>, key: string, burst: number, perSecond: number): boolean {
  const now = performance.now();
  const bucket = buckets.get(key) ?? { tokens: burst, at: now, refusing: false };
  bucket.tokens = Math.min(burst, bucket.tokens + ((now - bucket.at) / 1000) * perSecond);
  bucket.at = now;
  buckets.set(key, bucket);
  if (bucket.tokens < 1) return false;
  if (bucket.tokens >= burst - 1) bucket.refusing = false;
  bucket.tokens--;
  return true;
}

/**
 * Refuses once a flood is on (a bucket is empty): said once per flood, counted every time (a refusal log
 * line per call would be its own flood, and push what else was refused out of the bounded log).
 */
function refuseFlood(bucket: Bucket | undefined, loud: () => never, quiet: () => never): never {
  if (bucket && !bucket.refusing) {
    bucket.refusing = true;
    loud();
  }
  return quiet();
}

/** Options of {@linkcode PluginContext}. */
export interface ContextOptions {
  registry: PluginRegistry;
  bus: EventBus;
  /** Which API `ctx.api` reaches. */
  side: ApiSide;
}

/** Answers what workers (and `ui` panels) ask of dock. */
export class PluginContext {
  #o: ContextOptions;
  #api?: (request: Request) => Promise<Response>;
  #emitBuckets = new Map<string, Bucket>();
  #apiBuckets = new Map<string, Bucket>();

  constructor(options: ContextOptions) {
    this.#o = options;
  }

  /** Where `ctx.api` calls go: the process's own API app (set once it is built). */
  connectApi(api: (request: Request) => Promise<Response>): void {
    this.#api = api;
  }

  /** A worker's request (`op` with `args`); a throw refuses it with the message. */
  async answer(spec: WorkerSpec, op: ContextOp, args: unknown[]): Promise<unknown> {
    const plugin = this.#o.registry.pluginOf(spec);
    if (!plugin) {
      // A hook file's module: it may announce events (as its file's shell hooks may), nothing more.
      if (op !== "emit") throw new Error(`ctx.${op} is for plugins; a hook file's module may emit and log`);
      return this.#emit(spec.label, args, (message) => {
        throw new Error(message);
      });
    }
    const grant = this.#o.registry.granted(plugin);
    const refuse = (message: string): never => {
      plugin.counters.refused++;
      plugin.log.write("warn", `refused: ${message}`);
      throw new Error(message);
    };
    switch (op) {
      case "api": {
        // A worker can ask faster than the API answers: bounded, so it cannot pile work on the daemon.
        if (plugin.apiInFlight >= API_IN_FLIGHT) refuse(`ctx.api: more than ${API_IN_FLIGHT} calls at once`);
        if (!take(this.#apiBuckets, plugin.id, API_BURST, API_PER_SECOND)) {
          refuseFlood(
            this.#apiBuckets.get(plugin.id),
            () =>
              refuse(`ctx.api: more than ${API_PER_SECOND} calls a second (further ones refused quietly)`),
            () => {
              plugin.counters.refused++;
              throw new Error(`ctx.api: more than ${API_PER_SECOND} calls a second`);
            },
          );
        }
        plugin.apiInFlight++;
        try {
          return await this.#apiCall(plugin, grant.scopes, args, refuse);
        } finally {
          plugin.apiInFlight--;
        }
      }
      case "emit":
        if (!grant.scopes.includes("events:emit")) {
          refuse("ctx.emit needs the scope events:emit, not granted");
        }
        return this.#emit(`plugin:${plugin.id}`, args, refuse, () => {
          plugin.counters.refused++;
          throw new Error(`ctx.emit: more than ${EMIT_PER_SECOND} events a second`);
        });
      case "kv.get":
        return await plugin.kv.get(args[0]);
      case "kv.set":
        if (plugin.overQuota) refuse("ctx.kv.set: its data folder is over its quota");
        return await plugin.kv.set(args[0], args[1]);
      case "kv.delete":
        return await plugin.kv.delete(args[0]);
      case "kv.list":
        return await plugin.kv.list(args[0]);
      default:
        return refuse(`unknown request ${String(op).slice(0, 40)}`);
    }
  }

  /**
   * A call a plugin's `ui` panel asks the app to make (`POST plugins/{id}/ui-api`): the panel runs in a
   * sandboxed frame with no token and no network, so what it may reach is exactly what the plugin's own
   * `ctx.api` may, by the same scopes, counted the same way when refused (403).
   */
  async panelApi(id: string, request: PanelApiRequest): Promise<PanelApiResult> {
    const plugin = this.#o.registry.get(id);
    if (!plugin.manifest?.ui?.length) {
      throw new DockError("no_panel", `plugin '${id}' offers no ui panel`, { status: 404 });
    }
    const off = this.#o.registry.offReason(plugin);
    if (off !== null) throw new DockError("plugin_off", `plugin '${id}' is off: ${off}`, { status: 409 });
    const grant = this.#o.registry.granted(plugin);
    const refuse = (message: string): never => {
      plugin.counters.refused++;
      plugin.log.write("warn", `refused (ui panel): ${message}`);
      throw new DockError("refused", message.replace(/^ctx\.api: /, ""), { status: 403 });
    };
    if (plugin.apiInFlight >= API_IN_FLIGHT) refuse(`more than ${API_IN_FLIGHT} calls at once`);
    // The same rate as its ctx.api, shared with it: a panel is the plugin's code too.
    if (!take(this.#apiBuckets, plugin.id, API_BURST, API_PER_SECOND)) {
      plugin.counters.refused++;
      throw new DockError("rate_limited", `more than ${API_PER_SECOND} calls a second`, { status: 429 });
    }
    plugin.apiInFlight++;
    try {
      return await this.#apiCall(plugin, grant.scopes, [request.method, request.path, request.body], refuse);
    } finally {
      plugin.apiInFlight--;
    }
  }

  /**
   * Announces what a module asked to, as `origin`: a valid event type outside the system's families
   * ({@linkcode SYSTEM_EVENT_FAMILIES}), object data, and at most {@linkcode EMIT_BURST} at once then
   * {@linkcode EMIT_PER_SECOND} a second per origin (a loop that emits must not flood the journal every
   * client reads).
   */
  #emit(
    origin: string,
    args: unknown[],
    refuse: (message: string) => never,
    quiet: () => never = () => refuse("ctx.emit: too many events"),
  ): { id?: number } {
    const [type, data] = args;
    if (typeof type !== "string" || type.length > 200 || !/^[a-z0-9_-]+(\.[a-z0-9_-]+)*$/.test(type)) {
      refuse(`ctx.emit: ${JSON.stringify(type)?.slice(0, 80)} is not an event type a module may announce`);
    }
    const family = (type as string).split(".")[0];
    if (SYSTEM_EVENT_FAMILIES.has(family)) {
      refuse(`ctx.emit: ${family}.* events are dock's own; a module announces its own types (myplugin.done)`);
    }
    if (data !== undefined && (typeof data !== "object" || data === null || Array.isArray(data))) {
      refuse("ctx.emit: data must be an object");
    }
    if (!take(this.#emitBuckets, origin, EMIT_BURST, EMIT_PER_SECOND)) {
      refuseFlood(
        this.#emitBuckets.get(origin),
        () => refuse(`ctx.emit: more than ${EMIT_PER_SECOND} events a second (further ones refused quietly)`),
        quiet,
      );
    }
    const event = this.#o.bus.publish({
      type: type as string,
      origin,
      data: data as Record<string, unknown>,
    });
    return { id: event.id };
  }

  async #apiCall(
    plugin: Plugin,
    scopes: string[],
    args: unknown[],
    refuse: (message: string) => never,
  ): Promise<{ status: number; body: unknown }> {
    const [method, path, body] = args;
    if (
      typeof method !== "string" || !["GET", "POST", "PUT", "PATCH", "DELETE"].includes(method.toUpperCase())
    ) {
      refuse("ctx.api: the method must be GET, POST, PUT, PATCH or DELETE");
    }
    if (typeof path !== "string" || path.length > 2048 || path.includes("\0")) {
      refuse("ctx.api: the path must be a string");
    }
    const verb = (method as string).toUpperCase();
    // The URL is parsed first and the scope checked on what it resolves to (`a/%2e%2e/exec` is `exec`).
    const url = new URL(
      `/v1/${(path as string).replace(/^\/+/, "").replace(/^v1\//, "")}`,
      "http://127.0.0.1",
    );
    const route = url.pathname.slice("/v1/".length);
    const scope = url.pathname.startsWith("/v1/") ? requiredScope(this.#o.side, verb, route) : null;
    if (!scope) refuse(`ctx.api: ${verb} ${route} is not open to plugins`);
    if (!scopes.includes(scope!)) refuse(`ctx.api: ${verb} ${route} needs the scope ${scope}, not granted`);
    if (!this.#api) throw new Error("the API is not ready");
    const response = await this.#api(
      new Request(url, {
        method: verb,
        headers: { "content-type": "application/json", "x-dock-origin": `plugin:${plugin.id}` },
        body: body === undefined || verb === "GET" ? undefined : JSON.stringify(body),
      }),
    );
    if ((response.headers.get("content-type") ?? "").includes("text/event-stream")) {
      await response.body?.cancel();
      refuse(`ctx.api: ${verb} ${route} is a stream; plugins receive events through their hooks`);
    }
    const bytes = await readBounded(response);
    const text = new TextDecoder().decode(bytes);
    let parsed: unknown = text;
    try {
      parsed = text ? JSON.parse(text) : null;
    } catch {
      // not JSON: the text as it is
    }
    return { status: response.status, body: parsed };
  }
}

/** A body read whole, refused past {@linkcode MAX_FETCH_BODY}. */
export function readBounded(message: Request | Response): Promise<Uint8Array<ArrayBuffer>> {
  return readLimited(
    message.body,
    MAX_FETCH_BODY,
    () => new DockError("body_too_large", `the body is larger than ${MAX_FETCH_BODY} bytes`, { status: 413 }),
  );
}
