/**
 * Wire types of a box's own resources: `exec`, `upgrade`, `info`, `doctor`, `stats`, `fs`, worktree
 * status, supervised processes (services, units), shares, ports, the resource guard, and secrets' reports
 * (never values).
 * Types and constant lists only, like every `wire_*.ts` module (`wire.ts` re-exports them all).
 *
 * @module
 */
import type { AgentPreset } from "./wire_locations.ts";

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
export interface Unit extends SupervisedProcess {
  name: string;
  run: string;
  env: Record<string, string>;
  autostart: boolean;
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

/**
 * The answer of `POST secrets/environment`: the layers a worktree's environment is built from, secret
 * references unresolved (`dockd secret exec` resolves them in its own process). No values.
 */
export interface WorktreeEnvironmentLayers {
  location: string;
  worktree: string;
  /** The `DOCK_*` variables (`DOCK_KIT_DIR` with a kit) and the compatibility names. */
  dock: Record<string, string>;
  /** The box's `env.json` (values may be secret references). */
  box: Record<string, string>;
  /** The effective config's `env` (may use `$NAME` or be secret references). */
  config: Record<string, string>;
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

/** Lifecycle of a supervised process (a service, a unit). `failed` is final until someone starts it again. */
export const SERVICE_STATES = ["stopped", "running", "stopping", "crashed", "failed"] as const;

/** A state of {@linkcode SERVICE_STATES}. */
export type ServiceState = typeof SERVICE_STATES[number];

/** How a supervised process (a service, a unit) runs: its state's fields, declared once. */
export interface SupervisedProcess {
  state: ServiceState;
  /** The process group leader while it runs. */
  pid: number | null;
  /** Automatic restarts since it was last started by hand. */
  restarts: number;
  started: string | null;
  exit_code: number | null;
  error: string | null;
}

/** A service of a worktree (`GET …/worktrees/{wt}/services`). */
export interface WorktreeService extends SupervisedProcess {
  name: string;
  location: string;
  worktree: string;
  /** Its command, from the effective config (null when no longer configured). */
  run: string | null;
  autostart: boolean;
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
