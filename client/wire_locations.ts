/**
 * Wire types of locations and their worktrees, and of the config that shapes them: a location's
 * layers, its services, agent presets, hooks, flows and kits (spec 2.5, 2.7, 2.9).
 * Types and constant lists only, like every `wire_*.ts` module (`wire.ts` re-exports them all).
 *
 * @module
 */

/** Setup of a worktree: forward-only `pending → running → succeeded | failed`. */
export type SetupState = "none" | "pending" | "running" | "succeeded" | "failed";

/** How a worktree came to be known to dock. */
export type WorktreeOrigin = "dock" | "detected" | "main";

/** A git worktree of a location, with its port block. */
export interface Worktree {
  name: string;
  location: string;
  path: string;
  branch: string | null;
  /** What it was branched from (sync rebases or merges onto it); null when unknown. */
  base?: string | null;
  /** True for the location's main checkout. */
  main: boolean;
  origin: WorktreeOrigin;
  /** Its port block: `DOCK_PORT`, `DOCK_PORT_1`, … in order. */
  ports: number[];
  setup: { state: SetupState; exit_code?: number; started?: string; finished?: string; error?: string };
  paused?: boolean;
  created: string;
}

/** A registered repository. */
export interface Location {
  name: string;
  path: string;
  default_branch: string | null;
  created: string;
  worktrees: Worktree[];
}

/** Body of `POST locations`. */
export interface LocationCreate {
  name: string;
  path: string;
}

/** Body of `POST locations/clone`. */
export interface LocationClone {
  url: string;
  name?: string;
  /** Folder to clone into; default `~/work/<name>`. */
  path?: string;
}

/** Body of `POST locations/new`. */
export interface LocationNew {
  name: string;
  path?: string;
}

/** Body of `POST locations/{name}/worktrees`. */
export interface WorktreeCreate {
  name: string;
  branch?: string;
  base?: string;
  pr?: number;
  ref?: string;
}

/** Body of `PUT locations/{name}/config`: the box's own layer (null or absent removes it). */
export interface LocationConfigPut {
  local?: DockConfig | null;
}

/** A branch of a repository. */
export interface Branch {
  name: string;
  remote: boolean;
  head: string;
  current: boolean;
  worktree?: string;
}

/** `PUT locations/{name}/scripts`. */
export interface LocationScripts {
  setup?: string | null;
  archive?: string | null;
}

/** A service entry of a config (spec 2.5). */
export interface ServiceConfig {
  name: string;
  run: string;
  autostart?: boolean;
}

/** An agent preset entry of a config (spec 2.5). */
export interface AgentPreset {
  id: string;
  name?: string;
  command: string;
  prompt_flag?: string;
}

/** A hook (spec 2.5), also the shape of `~/.dock/hooks.json` entries. */
export interface HookConfig {
  on: string;
  /** A shell command; a hook has either `run` or `module`. */
  run?: string;
  /** A module run in a sandboxed worker, relative to the file that names the hook. */
  module?: string;
  timeout?: string;
  tool?: string;
}

/** A hooks file as `GET hooks` and `GET /v1/hooks` report it (spec 2.9, 4.1). */
export interface HooksState {
  /** The file's path. */
  path: string;
  hooks: HookConfig[];
  /** Why the file does not load; the last good hooks stay in force meanwhile. */
  error?: string;
  /** Hook runs since the process started: running now, waiting for a slot, started, failed, dropped. */
  runs?: { running: number; queued: number; started: number; failed: number; dropped: number };
}

/** A hooks file (`~/.dock/hooks.json`, box and laptop alike), also the body of `PUT hooks`. */
export interface HooksFile {
  hooks: HookConfig[];
}

/** A flow (spec 2.5); validated here, run by the flows module. */
export interface FlowConfig {
  id: string;
  name: string;
  enabled?: boolean;
  trigger: Record<string, unknown>;
  steps: Record<string, unknown>[];
  max_runs_per_hour?: number;
}

/** The box's flows file (`~/.dock/flows.json`), also the body of `PUT flows`. */
export interface FlowsFile {
  flows: FlowConfig[];
}

/** Where a flow is written: the box's flows file, or a layer of a location's config. */
export type FlowSource = "box" | "repo" | "kit" | "local";

/** One flow as `GET flows` lists it. */
export interface FlowInfo extends FlowConfig {
  /** `box` (any project, from `flows.json`) or `repo:<location>`. */
  scope: string;
  source: FlowSource;
  /** Replaced by id in a later layer: it never runs. */
  overridden: boolean;
  /** Why an enabled flow in force cannot run on this box (a schedule it cannot keep, no forge tool). */
  inactive_reason?: string;
}

/** `GET flows`: every flow on the box, and why the flows file does not load (the last good flows stay). */
export interface FlowsState {
  /** The box's flows file. */
  path: string;
  flows: FlowInfo[];
  error?: string;
}

/** A flow run's state; `skipped` runs never started (already running there, or over the hourly budget). */
export type FlowRunStatus = "running" | "succeeded" | "failed" | "skipped" | "interrupted";

/** One step of a flow run. */
export interface FlowStepRun {
  /** Its id, or its number (1, 2, …) when unnamed. */
  id: string;
  kind: string;
  status: "succeeded" | "failed" | "skipped";
  exit_code?: number;
  /** The last 4,000 characters of its output. */
  output?: string;
  error?: string;
}

/** One run of a flow (`GET flows/runs`, `POST flows/{id}/test`). */
export interface FlowRun {
  id: number;
  flow: string;
  scope: string;
  /** What started it: an event type, or `test`. */
  trigger: string;
  status: FlowRunStatus;
  /** Why it was skipped or failed. */
  reason?: string;
  location?: string;
  worktree?: string;
  start: string;
  end?: string;
  steps: FlowStepRun[];
}

/** Body of `POST flows/{id}/test`. */
export interface FlowTestRequest {
  /** `box`, or `repo:<location>`. */
  scope?: string;
  /** The triggering event's data; `path` picks the worktree. */
  data?: Record<string, unknown>;
}

/** `.dock/config.json`, a kit's config, or the box's own layer (spec 2.5). */
export interface DockConfig {
  setup?: string;
  archive?: string;
  ports?: number;
  env?: Record<string, string>;
  services?: ServiceConfig[];
  agents?: AgentPreset[];
  hooks?: HookConfig[];
  flows?: FlowConfig[];
}

/** `GET locations/{name}/config`. A layer that failed to load carries `error`. */
export interface LocationConfig {
  repo: DockConfig | null;
  kit?: DockConfig | null;
  local: DockConfig | null;
  effective: DockConfig;
  errors?: ConfigProblem[];
}

/** A kit manifest (`kit.json`, spec 2.7): the body of `PUT locations/{name}/kit`. */
export interface Kit {
  id: string;
  name?: string;
  description?: string;
  version?: string;
  match?: { slug?: string };
  requires?: { tool: string; hint?: string }[];
  config?: DockConfig;
  /** Path inside the kit → file content. */
  files?: Record<string, string>;
}

/** A kit applied to a location of a box (`GET kits`, `PUT locations/{name}/kit`). */
export interface InstalledKit {
  location: string;
  id: string;
  name: string;
  version: string | null;
  /** Its files' folder on the box: `DOCK_KIT_DIR` in the location's worktrees. */
  dir: string;
  /** Its files, by path inside `dir`. */
  files: string[];
  /** When it was applied. */
  applied: string;
  /** What it `requires` that the box lacks (a warning, not a refusal). */
  missing: { tool: string; hint?: string }[];
}

/** `GET kits`: the kits applied on the box, and each location's `origin` slug (`owner/repo`). */
export interface KitsOnBox {
  installed: InstalledKit[];
  locations: { location: string; slug: string | null; kit: string | null }[];
  /** With `?tools=`: those of the tools the box does not have (not on the daemon's PATH). */
  absent?: string[];
}

/** A config error: the file and the field path it concerns. */
export interface ConfigProblem {
  file: string;
  field: string;
  message: string;
}
