/**
 * What a plugin author writes against: the shape of a plugin module and the `ctx` its handlers get.
 * A module is written the way `deno serve` expects, extended:
 *
 * ```ts
 * import type { DockPlugin } from "../dock/mod.ts"; // types only: erased when the module runs
 *
 * export default {
 *   async event(event, ctx) { if (event.type === "agent.waiting") await ctx.emit("my.seen", { at: event.time }); },
 *   gate(request) { return request.action === "exec" ? { allow: false, reason: "not here" } : { allow: true }; },
 *   fetch(request, ctx) { return Response.json({ ok: true }); },
 * } satisfies DockPlugin;
 * ```
 *
 * A module runs in a sandboxed worker that may read only its plugin's folder (and what its grant adds):
 * import dock's types with `import type`, which costs nothing at run time; a value imported from outside
 * the folder is refused like any other read.
 *
 * @module
 */
import type { DockEvent, PluginInfo, PluginPermissions } from "./wire.ts";

/** What a `before:` gate is asked: the action, what it acts on, and who asks. */
export interface GateRequest {
  action: string;
  target: Record<string, unknown>;
  origin: string;
  box?: string;
  time: string;
  location?: string;
  worktree?: string;
}

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

/** What a handler gets besides its input: dock, reached only through messages and the plugin's scopes. */
export interface PluginContext {
  /**
   * Calls the box's API (a box plugin) or the laptop's (a laptop plugin), `path` relative to `/v1/`;
   * resolves with the JSON answer, rejects with an error carrying `status` and `code`. A call outside
   * the plugin's granted scopes is refused and counted.
   */
  api<T = unknown>(method: string, path: string, body?: unknown): Promise<T>;
  /** Announces an event (scope `events:emit`); it carries `origin: plugin:<id>`. */
  emit(type: string, data?: Record<string, unknown>): Promise<void>;
  /** A line in the plugin's log (`dock plugin logs ID`); `console.*` goes there too. */
  log(...values: unknown[]): void;
  kv: PluginKv;
}

/** A plugin module's default export. */
export interface DockPlugin {
  /** Serves `/v1/plugins/{id}/fn/*`; `request.url`'s path is what follows `/fn`. */
  fetch?(request: Request, ctx: PluginContext): Response | Promise<Response>;
  /** Receives the events the manifest's hooks match. */
  event?(event: DockEvent, ctx: PluginContext): void | Promise<void>;
  /** Answers the `before:` gates the manifest's hooks name; no answer allows. */
  gate?(request: GateRequest, ctx: PluginContext): GateResult | void | Promise<GateResult | void>;
}

/** Returns `plugin` as it is: a typed way to write a module's default export. */
export function definePlugin<T extends DockPlugin>(plugin: T): T {
  return plugin;
}

/** What the consent shows beside the permissions (from `GET plugins/{id}`): what each scope can lead to and who runs the commands. */
export type ConsentContext = Pick<PluginInfo, "scope_classes" | "runs_as">;

/**
 * What a grant gives, one line a kind: shown when a plugin is enabled (CLI and app), and in the refusal
 * when it asks for more. A scope that can lead to commands says so; each shell command is quoted as JSON,
 * so what runs is exactly what is read (a trailing space or a newline shows).
 */
export function permissionLines(permissions: PluginPermissions, context: ConsentContext = {}): string[] {
  const lines: string[] = [];
  if (permissions.read?.length) lines.push(`read ${permissions.read.join(", ")} (its data folder)`);
  if (permissions.write?.length) lines.push(`write ${permissions.write.join(", ")} (its data folder)`);
  if (permissions.net?.length) lines.push(`network ${permissions.net.join(", ")}`);
  if (permissions.env?.length) lines.push(`environment ${permissions.env.join(", ")}`);
  if (permissions.scopes?.length) {
    const classes = context.scope_classes ?? {};
    lines.push(`API ${permissions.scopes.map((s) => classes[s] ? `${s} (${classes[s]})` : s).join(", ")}`);
  }
  if (permissions.commands?.length) {
    const who = context.runs_as ? `as ${context.runs_as}` : "as the user dock runs as";
    lines.push(
      `shell commands run outside the sandbox, ${who}: ${
        permissions.commands.map((c) => JSON.stringify(c)).join(", ")
      }`,
    );
  }
  return lines;
}

/** What a grant gives, in one line (see {@linkcode permissionLines}). */
export function describePermissions(permissions: PluginPermissions, context: ConsentContext = {}): string {
  const lines = permissionLines(permissions, context);
  return lines.length ? lines.join("; ") : "nothing beyond reading its own folder";
}
