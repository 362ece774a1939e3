/**
 * Wire types: the records the box API and the laptop agent exchange (spec section 2). The daemon, the
 * agent, the CLI and `mod.ts` all import these, so a field is named once. The request bodies' rules
 * are zod schemas tied to these types in `schemas.ts`; this module imports nothing and holds only
 * types and constant lists, so whoever imports it (every `dock` command; `dock hook` on each agent
 * turn, by `import type`) loads nothing more.
 *
 * @module
 */

/** Event envelope (spec 2.1). `id` is the journal position, used for `Last-Event-ID`. */
export interface DockEvent {
  id?: number;
  type: string;
  time: string;
  box?: string;
  origin?: string;
  data?: Record<string, unknown>;
}

/** Body of `POST events` on a box. */
export interface EventAnnounce {
  type: string;
  origin?: string;
  data?: Record<string, unknown>;
  /** The box an event came from (set by the laptop agent's merge). */
  box?: string;
  /** When it happened, when not now (an event relayed from a box keeps the box's time). */
  time?: string;
}

/** The agent-state event types `dock hook` reports (spec 3.2). */
export type AgentReportType = "agent.started" | "agent.ready" | "agent.waiting" | "agent.finished";

/**
 * An agent's state report: what `dock hook` posts to its box's `POST events` (or spools when the
 * daemon does not answer). Identifiers and the directory only: never a prompt or a message.
 */
export interface AgentReport {
  type: AgentReportType;
  /** The agent tool (as `data.agent`): the origin of the event it becomes. */
  origin: string;
  data: {
    /** The directory the agent works in (its worktree). */
    path: string;
    /** The tool's name, lower-case: claude, cursor, codex, gemini or opencode. */
    agent: string;
    /** The tool's own session (conversation, thread) id, when it sends one. */
    session_id: string | null;
    /** The tool's hook event that made this report (`Notification`, `Stop`…): a session's history names it. */
    hook?: string;
    /** Why an `agent.waiting` waits, from the payload's type (never its text). */
    reason?: WaitingReason;
  };
  /** The reporting process's `DOCK_SESSION`: the dock session the agent runs in. Used to match, not kept. */
  session?: string;
  /** When the hook ran (RFC 3339): a spooled report arrives late, and an older report than the last is dropped. */
  time?: string;
}

/**
 * Why an agent waits: `permission` (to run a tool), `question` (it asked the person something), `input`
 * (its turn was interrupted, or it waits for the next prompt without having finished one).
 */
export type WaitingReason = "permission" | "question" | "input";

/** One change of a session's agent state, and what caused it. */
export interface StateChange {
  state: AgentState;
  reason: WaitingReason | null;
  /** `hook:<event>` (the tool's hook), `input` (a prompt sent or typed), `interrupt` (Esc or Ctrl-C and
   * the pane settling), `exit` (its program ended), `restart` (found ended when the daemon started). */
  cause: string;
  time: string;
}

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

/** `POST exec`. */
export interface ExecRequest {
  location: string;
  command: string;
  /** Duration string (`30s`, `10m`) or seconds. Default 10m, at most 1h. */
  timeout?: string | number;
}

/** Answer of `POST exec`. */
export interface ExecResult {
  exit_code: number;
  output: string;
  truncated?: boolean;
  timed_out?: boolean;
}

/** One NDJSON line of streamed command output (spec 2.4). */
export interface StreamLine {
  line?: string;
  done?: boolean;
  error?: string;
  exit_code?: number;
}

/** The answer of `POST upgrade` (202): the builds before and after, and who starts the new daemon. */
export interface UpgradeStarted {
  from: string;
  to: string;
  /** `self`: the old daemon starts the new one; `manager`: systemd or launchd does, once it exits. */
  mode: "self" | "manager";
  /**
   * The id of the `box.upgrading` event this upgrade announced: its outcome, `box.upgraded` or
   * `box.upgrade.failed`, follows it in the box's journal (`GET events` with `Last-Event-ID`).
   */
  after: number;
}

/** `GET info`. */
export interface BoxInfo {
  name: string;
  os: string;
  arch: string;
  build: string;
  user?: string;
  home?: string;
  tools: string[];
  agents: AgentPreset[];
}

/** One `GET doctor` check. */
export interface Check {
  name: string;
  ok: boolean;
  detail: string;
}

/** `GET stats`. */
export interface Stats {
  memory: { total: number; available: number; used_percent: number };
  disks: { path: string; total: number; free: number }[];
  load: number[];
  uptime: number;
  locations: number;
  worktrees: number;
  agents: number;
}

/** An entry of `GET fs`. */
export interface FsEntry {
  name: string;
  path: string;
  dir: boolean;
  git: boolean;
}

/** `GET fs`. */
export interface FsListing {
  path: string;
  parent: string | null;
  entries: FsEntry[];
}

/** Git status of a worktree (`GET worktrees`). */
export interface WorktreeStatus {
  location: string;
  name: string;
  path: string;
  branch: string | null;
  head: string | null;
  upstream: string | null;
  ahead: number;
  behind: number;
  staged: number;
  modified: number;
  untracked: number;
  conflicted: number;
  dirty: boolean;
}

/** Body of `POST units`: a box-level long-running process that belongs to no worktree. */
export interface UnitCreate {
  /** `[a-z0-9][a-z0-9-]*`, at most 64. */
  name: string;
  /** Run through a login shell in the home folder. */
  run: string;
  /** Its environment, beside the daemon's and `env.json`; values may be secret references. */
  env?: Record<string, string>;
  /** Started again when the daemon starts (after a reboot). @default {false} */
  autostart?: boolean;
}

/** A unit (`GET units`): its definition and how it runs. */
export interface Unit {
  name: string;
  run: string;
  env: Record<string, string>;
  autostart: boolean;
  state: ServiceState;
  pid: number | null;
  restarts: number;
  started: string | null;
  exit_code: number | null;
  error: string | null;
  created: string;
}

/** Body of `POST shares`: a public URL for a worktree's port (default its first). */
export interface ShareRequest {
  location: string;
  worktree: string;
  port?: number;
}

/** A public share of a worktree's port (`GET shares`). */
export interface Share {
  id: string;
  location: string;
  worktree: string;
  port: number;
  /** The tunnel CLI it goes through: `cloudflared` or `tailscale`. */
  tool: string;
  /** The public URL, once the tunnel printed it. */
  url: string | null;
  created: string;
}

/** Body of `POST secrets/report`: whose environment (`LOCATION` or `LOCATION/WORKTREE`). */
export interface SecretReportRequest {
  location: string;
}

/** The answer of `POST secrets/report`: each secret of the environment, resolved or why not. No values. */
export interface SecretReport {
  location: string;
  worktree: string;
  secrets: { variable: string; scheme: string; ok: boolean; error?: string; length?: number }[];
}

/** Why a worktree has work to review. */
export type ReviewReason = "commits" | "changes" | "finished";

/** `GET review`: a worktree with work for a person to look at. */
export interface ReviewItem {
  location: string;
  worktree: string;
  path: string;
  branch: string | null;
  base: string;
  /** Commits on it that its base has not (null when the base is unknown there). */
  ahead: number | null;
  dirty: boolean;
  changes: { staged: number; modified: number; untracked: number; conflicted: number };
  /** Its agents' sessions; `unseen` when one finished after anyone last attached to it. */
  sessions: { name: string; agent: string | null; agent_state: AgentState; unseen: boolean }[];
  reasons: ReviewReason[];
  /** True while one of its agents is still running (listed with `?all=1` only). */
  working: boolean;
}

/** Body of `POST preview`: show a worktree's dev server to the person. */
export interface PreviewRequest {
  location: string;
  worktree: string;
  /** Default: the worktree's first port (`DOCK_PORT`). */
  port?: number;
  /** The page to open, below `/`. */
  path?: string;
}

/** The answer of `POST preview` and the data of `preview.open`. */
export interface PreviewOpen {
  location: string;
  worktree: string;
  port: number;
  path: string;
  /** The private URL: `http://<worktree>.<location>.<box>.localhost:1377/<path>`. */
  url: string;
}

/** One changed file of `GET …/worktrees/{wt}/diff`. */
export interface DiffFile {
  path: string;
  /** The path before a rename. */
  old_path?: string;
  status: "added" | "modified" | "deleted" | "renamed";
  additions: number;
  deletions: number;
  binary: boolean;
}

/** One file's patch in a page of `GET …/worktrees/{wt}/diff`. */
export interface DiffPatch {
  path: string;
  /** git's unified diff of this file (`diff --git …` first), cut at a line when `truncated`. */
  patch: string;
  truncated: boolean;
}

/**
 * `GET …/worktrees/{wt}/diff[?offset=N][&max_bytes=B][&path=P]`: the worktree (committed and not) against
 * the point where it left its base, one page of patches at a time.
 */
export interface WorktreeDiff {
  location: string;
  worktree: string;
  /** The base branch, and the commit the diff starts from (its merge base with HEAD); HEAD when unknown. */
  base: string;
  from: string | null;
  /** Every changed file, in git's order (untracked files are in `untracked`). */
  files: DiffFile[];
  additions: number;
  deletions: number;
  /** The index in `files` of the first patch of this page. */
  offset: number;
  patches: DiffPatch[];
  /** Where the next page starts, or null on the last one. */
  next_offset: number | null;
  untracked: string[];
}

/** `GET …/worktrees/{wt}/commits`: what the worktree has that its base and its upstream have not. */
export interface WorktreeCommits {
  location: string;
  worktree: string;
  branch: string | null;
  base: string;
  /** Commits of HEAD its base has not (newest first, at most 200); null when the base is unknown. */
  ahead: Commit[] | null;
  behind: number | null;
  /** The upstream branch (`origin/topic`), or null when none is set. */
  upstream: string | null;
  ahead_upstream: Commit[] | null;
  behind_upstream: number | null;
}

/** `GET …/worktrees/{wt}/untracked`. */
export interface WorktreeUntracked {
  files: string[];
  /** True when there were more than the files listed. */
  truncated: boolean;
}

/** Answer of `POST …/worktrees/{wt}/push`. */
export interface PushResult {
  ok: boolean;
  remote: string;
  branch: string;
  output: string;
}

/** Body of `POST …/worktrees/{wt}/pr`: a pull request made with the box's `gh`. */
export interface PrCreate {
  title?: string;
  body?: string;
  draft?: boolean;
}

/** A worktree's pull request (`GET …/worktrees/{wt}/pr`, `POST …/worktrees/{wt}/pr`). */
export interface PullRequest {
  url: string;
  number: number | null;
  state: string | null;
  title: string | null;
}

/** A commit of `GET …/worktrees/{wt}/log`. */
export interface Commit {
  hash: string;
  author: string;
  email: string;
  time: string;
  subject: string;
}

/** `POST …/worktrees/{wt}/sync`. */
export interface SyncRequest {
  mode?: "rebase" | "merge";
}

/** Answer of a sync. */
export interface SyncResult {
  ok: boolean;
  mode: "rebase" | "merge";
  onto: string;
  output: string;
}

/** `env.json` on the box (spec 2.9). */
export interface EnvFile {
  env: Record<string, string>;
}

/** Body of `POST secrets/test`. */
export interface SecretTest {
  /** A secret reference (`env://NAME` or a vault reference); never a value. */
  ref: string;
}

/** Answer of `POST secrets/test`. */
export interface SecretTestResult {
  ok: boolean;
  length?: number;
  error?: string;
}

/** Lifecycle of a service. `failed` is final until someone starts it again. */
export type ServiceState = "stopped" | "running" | "stopping" | "crashed" | "failed";

/** A service of a worktree (`GET …/worktrees/{wt}/services`). */
export interface WorktreeService {
  name: string;
  location: string;
  worktree: string;
  /** Its command, from the effective config (null when no longer configured). */
  run: string | null;
  autostart: boolean;
  state: ServiceState;
  /** The process group leader while it runs. */
  pid: number | null;
  /** Automatic restarts since it was last started by hand. */
  restarts: number;
  started: string | null;
  exit_code: number | null;
  error: string | null;
  /** TCP ports its processes listen on. */
  ports: number[];
  /** False when the service is no longer in the effective config (it may still be running). */
  configured: boolean;
}

/** A listening TCP port on the box and whom it belongs to (`GET ports`). */
export interface Port {
  port: number;
  address: string;
  family: 4 | 6;
  pid: number | null;
  command: string | null;
  location: string | null;
  worktree: string | null;
  service: string | null;
  /** How it was attributed: inside the worktree's port block, or by the listener's working directory. */
  via: "block" | "cwd" | null;
}

/** A worktree's listening ports (`GET services`). */
export interface WorktreePorts {
  location: string;
  worktree: string;
  path: string;
  ports: Port[];
}

/** The resource guard, `~/.dock/guard.json` (`GET/PUT guard`). */
export interface GuardFile {
  enabled: boolean;
  memory_percent: number;
  /** How long memory must stay above the threshold before the guard acts (a duration, `30s`). */
  sustain: string;
  stop_services: boolean;
  pause_agents: boolean;
}

/** Body of `PUT guard`: a field left out takes its default. */
export type GuardPut = Partial<GuardFile>;

/** An agent's state (spec 3.2). */
export type AgentState = "idle" | "running" | "waiting" | "finished";

/** A terminal session on a box (spec 2.3, plus where it runs). */
export interface Session {
  name: string;
  /** Agent preset id, when it runs an agent (or an agent tool reported in it). */
  agent: string | null;
  agent_state: AgentState;
  /** When the agent state was last reported. */
  state_time: string | null;
  /** Why it waits, while `agent_state` is `waiting` (null when the tool did not say). */
  reason: WaitingReason | null;
  /** The last changes of its state, oldest first (at most 50; `GET sessions/{name}` only). */
  history?: StateChange[];
  exited: boolean;
  exit_code: number | null;
  location: string;
  worktree: string;
  path: string;
  command: string;
  created: string;
  from_session?: string | null;
}

/** Body of `POST sessions`. */
export interface SessionCreate {
  name?: string;
  location: string;
  command?: string;
  agent?: string;
  prompt?: string;
  open?: boolean;
  cols?: number;
  rows?: number;
}

/** Body of `POST sessions/{name}/send`. */
export interface SessionSend {
  text: string;
  enter?: boolean;
  /**
   * Idempotency key (printable ASCII, at most 200): the box records it before typing and answers a
   * repeat with the first outcome instead of typing again. Kept at least 7 days.
   */
  key?: string;
  /**
   * `permission`: refused with 409 `permission_prompt` when the agent waits on a permission prompt,
   * checked by the box in the same step as the typing (a prompt typed there would answer it).
   */
  unless_waiting?: "permission";
}

/**
 * A named key of `POST sessions/{name}/keys`, typed as tmux's key of that name (every other entry is
 * one character, typed literally).
 */
export type KeyName =
  | "Enter"
  | "Escape"
  | "Tab"
  | "Up"
  | "Down"
  | "Left"
  | "Right"
  | "C-c"
  | "C-d"
  | "Space"
  | "BSpace";

/** The named keys `POST sessions/{name}/keys` types (tmux's names for them). */
export const KEY_NAMES: readonly KeyName[] = [
  "Enter",
  "Escape",
  "Tab",
  "Up",
  "Down",
  "Left",
  "Right",
  "C-c",
  "C-d",
  "Space",
  "BSpace",
];

/** Body of `POST sessions/{name}/keys`: keystrokes, never a paste. */
export interface SessionKeys {
  /** 1 to 64 entries, each one character (no control characters) or a {@linkcode KeyName}. */
  keys: string[];
  /** Idempotency key, as `send`'s: the keys are typed at most once per key. */
  key?: string;
}

/** Answer of `POST sessions/{name}/keys` and `POST sessions/{name}/answer`. */
export interface KeysResult {
  /** The session after the keys were typed. */
  session: Session;
  /** How many keys were typed. */
  typed: number;
  /** When tmux had them (RFC 3339). */
  at: string;
}

/** How a permission prompt is answered (`POST sessions/{name}/answer`). */
export type PermissionAnswer = "yes" | "no" | "always";

/** Body of `POST sessions/{name}/answer`. */
export interface SessionAnswer {
  answer: PermissionAnswer;
  /** Idempotency key, as `send`'s. */
  key?: string;
}

/** Answer of `POST sessions/{name}/answer`: the keys the session's tool takes for that answer. */
export interface AnswerResult extends KeysResult {
  answer: PermissionAnswer;
  keys: string[];
}

/** Answer of `GET sessions/{name}/wait`. */
export interface WaitResult {
  state: AgentState;
  timed_out: boolean;
  exited: boolean;
}

/** `GET sessions/{name}/screen`. */
export interface Screen {
  screen: string;
}

/** Body of `POST tasks`. */
export interface TaskRequest {
  location: string;
  name: string;
  branch?: string;
  base?: string;
  agent?: string;
  command?: string;
  prompt?: string;
  from_session?: string;
}

/** Answer of `POST tasks`. */
export interface TaskResult {
  worktree: Worktree;
  session: Session;
}

/** The agent tools dock integrates with (`integrations install`). */
export type IntegrationTool = "claude" | "cursor" | "codex" | "gemini";

/** Every integration tool, in the order `all` installs them. */
export const INTEGRATION_TOOLS: readonly IntegrationTool[] = ["claude", "cursor", "codex", "gemini"];

/** Agent tools that take skills. */
export type SkillAgent = "claude" | "codex";

/** Where skills go: the user's own folder or a repository. */
export type SkillTarget = "user" | "project";

/** State of one installed copy of a skill (spec 1, Skills rule 2). */
export type SkillState =
  | "installed"
  | "outdated"
  | "missing"
  /** A `SKILL.md` of that name that is not dock's: install and uninstall leave it alone. */
  | "foreign";

/** One skill for one agent at one target (`GET skills`). */
export interface SkillCopy {
  skill: string;
  agent: SkillAgent;
  target: SkillTarget;
  /** The skill's folder. */
  path: string;
  state: SkillState;
  /** The installed copy's version, when it has one. */
  version: number | null;
  /** The version dock carries. */
  latest: number;
  /** Project target through the API: the location (`LOC` or `LOC/WT`) whose repository holds it. */
  location?: string;
}

/** What an install did to one file or folder. */
export interface FileChange {
  path: string;
  action: "created" | "updated" | "unchanged" | "removed";
}

/** What an install or uninstall did to one skill folder. */
export interface SkillChange {
  skill: string;
  agent: SkillAgent;
  target: SkillTarget;
  /** The skill's folder. */
  path: string;
  action: "created" | "updated" | "unchanged" | "removed" | "skipped" | "missing";
  /** With `skipped`: why. */
  reason?: string;
}

/** Answer of `POST skills/install` and `POST skills/uninstall`. */
export interface SkillsResult {
  changes: SkillChange[];
  /** Other files touched (the repository's `.git/info/exclude`). */
  files: FileChange[];
  notes: string[];
}

/**
 * Body of `POST skills/install` and `POST skills/uninstall`. `skills` defaults to every skill, `agent`
 * to `all`, `target` to `project` when `location` is given and `user` otherwise.
 */
export interface SkillsRequest {
  skills?: string[];
  agent?: SkillAgent | "all";
  target?: SkillTarget;
  /** `LOC` or `LOC/WT`: the repository of the project target. */
  location?: string;
  /**
   * Project target: the copies are for git. Install keeps the folders out of `.git/info/exclude` so they
   * can be committed; uninstall (which always leaves its removal visible to git) accepts it alike.
   */
  commit?: boolean;
}

/** Data of the `skills.installed` and `skills.removed` events: identifiers and paths only. */
export interface SkillsEventData {
  /** The skill ids the request named (every skill when it named none). */
  skills: string[];
  agent: SkillAgent | "all";
  target: SkillTarget;
  location?: string;
  /** The skill folders written or removed. */
  changed: { skill: string; agent: SkillAgent; path: string; action: SkillChange["action"] }[];
  /** Other files written (`.git/info/exclude`). */
  files: string[];
}

/**
 * State of an offline queue item (spec 3.1): `queued` (waiting for the box), `waiting` (the box is
 * back; waiting for the agent's turn to end), `sending`, `failed` (with `error`), `delivered`.
 */
export type QueueState = "queued" | "waiting" | "sending" | "failed" | "delivered";

/** An offline prompt queue entry (spec 2.2). */
export interface QueueItem {
  id: string;
  box: string;
  session: string;
  text: string;
  /** Press Enter after typing. */
  enter: boolean;
  /** Hold the prompt while the agent is mid-turn. */
  wait: boolean;
  state: QueueState;
  /** Why it failed; present with `failed`. */
  error?: string;
  created: string;
  /** Sends tried so far. */
  attempts?: number;
  last_attempt?: string;
  /** True while held behind an earlier failed prompt to the same session. */
  blocked?: boolean;
  /** Queue order; the list is oldest first. */
  seq: number;
}

/** Body of `POST /v1/queue`: the same `id` again returns the existing item. */
export interface QueueCreate {
  id?: string;
  box: string;
  session: string;
  text: string;
  /** @default {true} */
  wait?: boolean;
  /** @default {true} */
  enter?: boolean;
}

/** Body of `PATCH /v1/queue/{id}`: a change puts the item back in line. */
export interface QueueEdit {
  box?: string;
  session?: string;
  text?: string;
}

/**
 * Body of `POST /v1/broadcast`: one prompt to several sessions, `{{variables}}` (`session`, `worktree`,
 * `location`, `box`, `branch`) filled per session. Targets are `to` (`BOX/SESSION`), or every session
 * of the laptop's view that `where` matches.
 */
export interface BroadcastRequest {
  /** The broadcast's id: the same id again never types a prompt twice. @default {a new one} */
  id?: string;
  text: string;
  to?: string[];
  where?: BroadcastWhere;
  /** @default {true} */
  enter?: boolean;
  /** Put a prompt the box cannot take now (offline, a permission prompt) in the offline queue. @default {true} */
  queue?: boolean;
  /** Resolve the targets and fill the text, send nothing. @default {false} */
  dry_run?: boolean;
}

/** The filter of a broadcast over the laptop's view of sessions (all fields must match). */
export interface BroadcastWhere {
  state?: AgentState;
  box?: string;
  location?: string;
  agent?: string;
}

/** What a broadcast did for one session. */
export interface BroadcastTarget {
  box: string;
  session: string;
  /**
   * `sent`: typed now (or by an earlier try of the same id); `queued`: in the offline queue
   * (`queue_id`), typed once the box can take it; `skipped`: left alone (`reason`); `failed`: `error`.
   * `planned`: a dry run's target.
   */
  outcome: "sent" | "queued" | "skipped" | "failed" | "planned";
  /** Why it was queued, skipped or failed: `box_offline`, `waiting_permission`, `unconfirmed`, or an error code. */
  reason?: string;
  error?: string;
  queue_id?: string;
  /** The prompt as filled for this session (dry runs only). */
  text?: string;
}

/** Answer of `POST /v1/broadcast`. */
export interface BroadcastResult {
  id: string;
  targets: BroadcastTarget[];
}

/** Body of `POST /v1/boxes/add-local`. */
export interface BoxAddLocal {
  /** @default {"local"} */
  name?: string;
}

/** Body of `POST /v1/forwards`: the laptop's `local` port carried to `remote` on the box. */
export interface ForwardCreate {
  box: string;
  local: number;
  remote: number;
}

/** A private-URL route (`POST /v1/routes`): requests whose host matches `pattern` go to `box`'s `port`. */
export interface ProxyRoute {
  pattern: string;
  box: string;
  port: number;
}

/** A JSON value: an app settings document (`PUT /v1/app/{key}`) is any of these. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/** Body of `POST /v1/boxes/pair` on the laptop. */
export interface PairRequest {
  /** The link `dockd pair` printed. */
  link: string;
  /** The name for the box on this laptop. @default {the box's own name} */
  name?: string;
  /**
   * A network of the laptop's (`tailscale`) to dial the box through: the link's host is looked up among
   * its machines (by name, DNS name or address) and the box dialled at that machine's network address.
   */
  network?: string;
}

/** Body of `POST pair/code` on a box (its socket only). */
export interface PairCodeRequest {
  /** The address the laptop dials. @default {the box's first non-loopback address} */
  host?: string;
}

/** Answer of `POST pair/code`: a one-time pairing link. */
export interface PairCode {
  /** `dock://HOST:PORT?code=…&fp=…`. */
  link: string;
  /** When the code expires (RFC 3339). */
  expires: string;
}

/** Body of `POST pair` on a box's TLS listener: a laptop trades a one-time code for a credential. */
export interface PairRedeem {
  code: string;
  /** How the box will list the laptop. */
  name: string;
}

/** Answer of `POST pair`. */
export interface PairRedeemed {
  /** The laptop's id on the box (what `dockd laptops` lists and `dockd revoke` takes). */
  id: string;
  /** `<id>.<secret>`: the laptop's bearer token for this box. */
  credential: string;
  /** The box's own name. */
  box: string;
}

/** A laptop paired with a box (`GET laptops`, `DELETE laptops/{id}`, `DELETE pair`). */
export interface Laptop {
  id: string;
  name: string;
  /** When it paired (RFC 3339). */
  created: string;
  /** When it last authenticated (RFC 3339; refreshed at most once a minute). */
  last_seen: string;
}

/** Body of `PUT phone`: the phone companion on or off, and where it listens. */
export interface PhoneSettings {
  enabled: boolean;
  /** `HOST:PORT` (`[::]:1380` for IPv6). @default {the current one; at first `0.0.0.0:1380`} */
  listen?: string;
}

/**
 * A phone paired with a box: the same record as a laptop's (`GET phone`, `dockd phone devices`). It never
 * carries its credential, which exists only in the phone's cookie and, hashed, on the box.
 */
export type PhoneDevice = Laptop;

/** Answer of `GET phone` and `PUT phone`. */
export interface PhoneState {
  enabled: boolean;
  /** Where it listens when on (`HOST:PORT`). */
  listen: string;
  /** The address a phone opens while it listens (`https://HOST:PORT/`), else null. */
  url: string | null;
  /** Why it does not listen although enabled (a taken port, no openssl). */
  error?: string;
  devices: PhoneDevice[];
}

/** Answer of `POST phone/code`: a one-time link that pairs a phone (ten minutes, once). */
export interface PhonePairCode {
  /** `https://HOST:PORT/pair#CODE`: the code rides in the fragment, which no request carries. */
  link: string;
  /** When the code expires (RFC 3339). */
  expires: string;
  /** SHA-256 of the box CA the listener's certificate chains to (hex), to compare with the phone's view. */
  fingerprint: string;
}

/** Body of `POST phone/pair` on the phone listener: the phone trades a one-time code for its cookie. */
export interface PhoneRedeem {
  code: string;
  /** How the box lists the phone. @default {"phone"} */
  name?: string;
}

/** Answer of `POST phone/pair`: the credential itself travels only in the `Set-Cookie` header. */
export interface PhoneRedeemed {
  id: string;
  /** The box's own name. */
  box: string;
}
