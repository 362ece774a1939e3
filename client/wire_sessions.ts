/**
 * Wire types of terminal sessions and the agents in them (spec 2.3, 3.2): sessions, keys and answers,
 * tasks, integrations and skills.
 * Types and constant lists only, like every `wire_*.ts` module (`wire.ts` re-exports them all).
 *
 * @module
 */
import type { AgentState, StateChange, WaitingReason } from "./wire_events.ts";
import type { Worktree } from "./wire_locations.ts";

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
