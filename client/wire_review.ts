/**
 * Wire types of reviewing a worktree's work: the review list, previews, diffs, commits, pushes, pull
 * requests and syncs.
 * Types and constant lists only, like every `wire_*.ts` module (`wire.ts` re-exports them all).
 *
 * @module
 */
import type { AgentState } from "./wire_events.ts";

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
