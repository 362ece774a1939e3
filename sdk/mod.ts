/**
 * `@dock/plugin`: what a dock plugin is written against. A plugin module's default export is an object
 * of handlers, as `deno serve` expects, extended with `event` and `gate`:
 *
 * ```ts
 * import { definePlugin } from "@dock/plugin";
 *
 * export default definePlugin({
 *   async event(event, ctx) {
 *     if (event.type === "agent.waiting") await ctx.emit("my.seen", { session: event.data.session ?? null });
 *   },
 *   gate(request) {
 *     if (request.action === "exec" && String(request.target.command).includes("rm -rf")) {
 *       return { allow: false, reason: "not here" };
 *     }
 *   },
 *   async fetch(_request, ctx) {
 *     return Response.json(await ctx.api("GET", "sessions")); // typed: Session[]
 *   },
 * });
 * ```
 *
 * The import resolves in the author's editor through the plugin folder's `deno.json` (`dock plugin new`
 * writes it) and, where the plugin runs, through the plugin host, which maps `@dock/plugin` to the SDK
 * of the dock that runs it and lets every worker read it. This module imports nothing outside its
 * folder, so it is the same file on the laptop, on a box, on JSR and on npm.
 *
 * @module
 */
import type { CustomEvent, DockEvent, GateRequest, LaptopAnswer } from "./generated.ts";
import type { BoxAnswer } from "./generated.ts";

export * from "./generated.ts";

/** A gate's answer: `allow: false` refuses the action (403 `gate_refused` with `reason`). */
export interface GateResult {
  allow: boolean;
  reason?: string;
}

/** A plugin's key-value store (a small JSON file in its data folder, at most 1 MiB). */
export interface PluginKv {
  get<T = unknown>(key: string): Promise<T | null>;
  set(key: string, value: unknown): Promise<void>;
  delete(key: string): Promise<void>;
  list(prefix?: string): Promise<string[]>;
}

/** The HTTP methods of dock's API. */
export type ApiMethod = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

/**
 * What `ctx.api(method, path)` answers: the box's record for a box route, the laptop's for a laptop route,
 * `unknown` for a route whose answer has no wire type (cast it).
 */
export type ApiAnswer<M extends string, P extends string> = unknown extends BoxAnswer<M, P>
  ? LaptopAnswer<M, P>
  : BoxAnswer<M, P>;

/** An error `ctx.api` rejects with: the status and code dock's API answered. */
export interface ApiError extends Error {
  status: number;
  code: string;
}

/** What a handler gets besides its input: dock, reached only through messages and the plugin's scopes. */
export interface PluginContext {
  /**
   * Calls the box's API (a plugin on a box) or the laptop's (a plugin on the laptop), `path` relative to
   * `/v1/` (`sessions`, `locations/web/worktrees`; on the laptop a box's is `boxes/{box}/api/sessions`).
   * Resolves with the JSON answer, typed by the route (`BOX_ROUTES`, `LAPTOP_ROUTES` list them with their
   * scopes); rejects with an {@linkcode ApiError}. A call outside the plugin's granted scopes is refused.
   */
  api<M extends ApiMethod, P extends string>(method: M, path: P, body?: unknown): Promise<ApiAnswer<M, P>>;
  /** Announces an event of the plugin's own type (scope `events:emit`); it carries `origin: plugin:<id>`. */
  emit(type: string, data?: Record<string, unknown>): Promise<void>;
  /** A line in the plugin's log (`dock plugin logs ID`); `console.*` goes there too. */
  log(...values: unknown[]): void;
  /** The plugin's store. */
  kv: PluginKv;
  /** The plugin's settings (its manifest's `config` schema, set with `dock plugin config`). */
  readonly config: Readonly<Record<string, string | number | boolean>>;
  /** The plugin's secrets, resolved from their references: never log or return them. */
  readonly secrets: Readonly<Record<string, string>>;
  /** The plugin's data folder (what `permissions.read`/`write` name paths inside of). */
  readonly dataDir: string;
}

/** An event a plugin's hooks can match: one of dock's (narrowed by `type`) or a plugin's own. */
export type PluginEvent = DockEvent | CustomEvent;

/** A plugin module's default export. */
export interface DockPlugin {
  /** Serves `/v1/plugins/{id}/fn/*`; `request.url`'s path is what follows `/fn`. */
  fetch?(request: Request, ctx: PluginContext): Response | Promise<Response>;
  /** Receives the events the manifest's hooks match. */
  event?(event: DockEvent, ctx: PluginContext): void | Promise<void>;
  /** Answers the `before:` gates the manifest's hooks name (boxes only); no answer allows. */
  gate?(request: GateRequest, ctx: PluginContext): GateResult | void | Promise<GateResult | void>;
  /** A flow's `module` step: given the run's variables, answers JSON the flow can use. */
  step?(vars: Record<string, unknown>, ctx: PluginContext): unknown;
}

/** Returns `plugin` as it is: the typed way to write a module's default export (usable at run time). */
export function definePlugin<T extends DockPlugin>(plugin: T): T {
  return plugin;
}

/** This SDK's version (the `version` of its deno.json and package.json). */
export const SDK_VERSION = "0.1.0";
