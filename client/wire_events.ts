/**
 * Wire types of events: the envelope every journal and stream carries, what announces one, the
 * agent-state reports `dock hook` posts and the agent states they lead to (spec 2.1, 3.2).
 * Types and constant lists only, like every `wire_*.ts` module (`wire.ts` re-exports them all).
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

/** An agent's state (spec 3.2). */
export type AgentState = "idle" | "running" | "waiting" | "finished";
