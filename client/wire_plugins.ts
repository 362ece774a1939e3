/**
 * Wire types of plugins: what `GET plugins` lists, the permissions a plugin asks for and is granted,
 * and the bodies of the routes that enable, configure, link and test one.
 * Types and constant lists only, like every `wire_*.ts` module (`wire.ts` re-exports them all).
 *
 * @module
 */
import type { DockEvent } from "./wire_events.ts";
import type { HookConfig } from "./wire_locations.ts";

/** What a plugin asks for in its manifest and, once enabled, is granted (see plugins/manifest.ts). */
export interface PluginPermissions {
  /** Paths inside its data folder it may read (its own folder it always may). */
  read?: string[];
  /** Paths inside its data folder it may write. */
  write?: string[];
  /** Hosts (`host` or `host:port`) it may reach. */
  net?: string[];
  /** Environment variables it may read. */
  env?: string[];
  /** What it may do through `ctx.api` and `ctx.emit` (`sessions:read`, `events:emit`, …). */
  scopes?: string[];
  /**
   * The shell commands its hooks run outside the sandbox, as the machine's user (`runs_as`): the exact
   * `hooks[].run` strings of its manifest, listed by dock (a manifest does not write this list).
   */
  commands?: string[];
}

/** What a plugin scope can lead to (plugins/scopes.ts): reading, changing dock's state, or running commands. */
export type ScopeClass = "read" | "write" | "runs commands";

/**
 * Body of `POST plugins/{id}/ui-api`: a call a plugin's `ui` panel asks the app to make for it, as its
 * `ctx.api` would (`path` relative to `/v1/`; the plugin's scopes decide).
 */
export interface PanelApiRequest {
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  path: string;
  body?: unknown;
}

/** The answer of `POST plugins/{id}/ui-api`: the call's own status and body. */
export interface PanelApiResult {
  status: number;
  body: unknown;
}

/** `GET /v1/plugins/{id}/config`: its settings' schema and stored values (a secret as its reference, never its value). */
export interface PluginConfig {
  id: string;
  /** The manifest's `config` JSON Schema (none: the plugin has no settings). */
  schema?: Record<string, unknown>;
  /** What is stored; a secret setting holds a reference such as `env://NAME`. */
  values: Record<string, string | number | boolean>;
  /** What `ctx.config` gets: the plain settings with defaults filled in. */
  effective: Record<string, string | number | boolean>;
}

/** Body of `PUT /v1/plugins/{id}/config`: every value (replacing what was stored). */
export interface PluginConfigRequest {
  values: Record<string, string | number | boolean>;
}

/** One file of a plugin as `PUT /v1/plugins/{id}/files` takes it: its path in the folder, its bytes in base64. */
export interface PluginFile {
  path: string;
  data: string;
  executable?: boolean;
}

/** Body of `PUT /v1/plugins/{id}/files`: every file of the plugin (the folder is replaced by them). */
export interface PluginFilesRequest {
  files: PluginFile[];
}

/** Body of the laptop's `POST /v1/plugins/{id}/fn-link`: which copy (`laptop` or a box) and which path. */
export interface PluginFnLinkRequest {
  where?: string;
  path?: string;
}

/** A short-lived signed link to a plugin's `fn` page (GET only, once, for at most 60 s). */
export interface PluginFnLink {
  /** `/app/fn/<where>/<id>/<path>?exp=…&sig=…`, on the agent's origin. */
  url: string;
  expires: string;
}

/** Body of `POST /v1/plugins/{id}/test-event`: one event for that plugin's hooks only (never the bus). */
export interface PluginTestEvent {
  type: string;
  data?: Record<string, unknown>;
}

/** What a test event did: the modules it reached, and each one's error. */
export interface PluginTestEventResult {
  id: string;
  event: DockEvent;
  delivered: { module: string; error?: string }[];
}

/** Where a plugin stands: not enabled (or not runnable), enabled with no worker, starting, running, failed. */
export type PluginState = "off" | "idle" | "starting" | "running" | "failed";

/** A plugin as `GET /v1/plugins` and a box's `GET plugins` list it. */
export interface PluginInfo {
  id: string;
  name?: string;
  version?: string;
  description?: string;
  /** `laptop`, or the box's name. */
  where: string;
  /** Its folder. */
  path: string;
  enabled: boolean;
  state: PluginState;
  /** Why it is off or failed: its manifest's error (file and field), a grant it outgrew, its last failure. */
  error?: string;
  /** What its manifest asks for. */
  permissions?: PluginPermissions;
  /** What enabling granted (absent while off). */
  granted?: PluginPermissions;
  /** What each scope it asks for can lead to (shown with the consent). */
  scope_classes?: Record<string, ScopeClass>;
  /** The user its `permissions.commands` run as: the daemon's on a box, the agent's on the laptop. */
  runs_as?: string;
  main?: string;
  hooks?: HookConfig[];
  themes?: string[];
  ui?: string[];
  /** Since the process started. `failures` counts errors and timeouts; `refused`, calls outside its scopes. */
  counters: {
    calls: number;
    failures: number;
    timeouts: number;
    restarts: number;
    cold_starts: number;
    refused: number;
    dropped: number;
  };
  /** Its newest log lines (`GET plugins/{id}` only). */
  log?: string[];
}

/** The body of `POST plugins/{id}/enable`: the permissions being granted, as the plugin asks for them. */
export interface PluginEnableRequest {
  permissions: PluginPermissions;
}
