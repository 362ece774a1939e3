/**
 * Agent state from the agent tools' own hooks (spec 3.2): `dock hook` reports `agent.*` (through
 * `POST events`, or the spool while the daemon is down), each report is matched to its session by
 * `DOCK_SESSION`, else by the working directory, and sets that session's state unless the state held
 * is newer (a late spooled report, an overtaken hook). Every report is announced on the event bus,
 * with the dock session it was matched to.
 *
 * The state is kept in the `sessions` table, whose rows the sessions module owns; this module writes
 * only `agent_state`, `state_time`, `reason` and a missing `agent`. Each change is also kept in
 * `session_states` with its cause (the last {@linkcode HISTORY_KEPT} per session), so that a wrong state
 * can be explained: `hook:<event>`, `input`, `interrupt`, `exit`, `restart`.
 *
 * Time comes from the daemon's clock. A report's own `time` orders it against the state held (an
 * overtaken hook, a late spooled report), but never later than the daemon's now; and a state dated
 * after now (the clock stepped back since) gives way to any report. One report dated in the year 9999,
 * or a box clock that stepped back, once froze a session for good, every later report looking older.
 *
 * @module
 */
import type {
  AgentReport,
  AgentReportType,
  AgentState,
  DockEvent,
  StateChange,
  WaitingReason,
} from "../client/wire.ts";
import type { Clock } from "../core/clock.ts";
import type { EventBus } from "../core/events.ts";
import type { Store } from "../core/store.ts";
import { PATH_HOLDS } from "./schema.ts";

const STATE_OF: Record<AgentReportType, AgentState> = {
  "agent.ready": "idle",
  "agent.started": "running",
  "agent.waiting": "waiting",
  "agent.finished": "finished",
};

/** Reports remembered to drop a second delivery of the same one. */
const SEEN_KEPT = 2000;

/** Changes of state kept per session. */
export const HISTORY_KEPT = 50;

/** What {@linkcode AgentStates.set} is told besides the state. */
export interface StateSetting {
  /** What caused it (see the module's doc). */
  cause: string;
  /** When it happened (default, and at the latest, the daemon's now). */
  time?: string;
  /** Names the agent of a session started as a plain command. */
  agent?: string;
  /** Why it waits, for `waiting`. */
  reason?: WaitingReason;
}

/** What a report is matched against: a live session's row. */
interface SessionRow {
  name: string;
  path: string;
  agent: string | null;
  created: string;
  agent_state: AgentState;
  reason: string | null;
}

/** Dependencies of {@linkcode AgentStates}. */
export interface AgentStatesOptions {
  store: Store;
  bus: Pick<EventBus, "publish">;
  /** The daemon's clock: a state is dated at the latest by its now. */
  clock: Pick<Clock, "now">;
}

/**
 * Codex 0.169 runs its `notify` program (`agent-turn-complete`) when its approval prompt comes up, not
 * only when the turn ends (measured on the real tool): taken as `finished`, it hid the prompt, and an
 * answer was refused. A session waits on a permission prompt only by a lifecycle hook
 * (`PermissionRequest`), so its `Stop` hook runs too and ends the turn: the notify changes nothing then.
 */
function notifyOverPrompt(report: AgentReport, session: SessionRow): boolean {
  return report.type === "agent.finished" && report.data?.hook === "notify" &&
    session.agent_state === "waiting" && session.reason === "permission";
}

/** Ingests agent reports into the sessions' state. */
export class AgentStates {
  #o: AgentStatesOptions;
  #seen = new Set<string>();
  #listeners = new Set<() => void>();

  constructor(options: AgentStatesOptions) {
    this.#o = options;
    options.store.addColumn("sessions", "reason TEXT"); // a box made before reasons were kept
  }

  /** Calls `listener` whenever a session's state changes; returns the unsubscribe. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Applies an `agent.*` report to the session it belongs to, then announces it. */
  ingest(report: AgentReport): DockEvent | null {
    const state = STATE_OF[report.type];
    const data = report.data ?? {};
    // A hook that gave up on a slow daemon also spooled what the daemon did receive: drop the copy.
    const key = JSON.stringify([report.type, report.origin, report.time, report.session, data.session_id]);
    if (report.time && this.#seen.has(key)) return null;
    this.#seen.add(key);
    if (this.#seen.size > SEEN_KEPT) this.#seen.delete(this.#seen.values().next().value!);
    const session = state
      ? this.#match(report.session, typeof data.path === "string" ? data.path : undefined)
      : null;
    if (session && state && !notifyOverPrompt(report, session)) {
      const own = report.time ? Date.parse(report.time) : NaN;
      const time = Number.isNaN(own) ? undefined : new Date(own).toISOString();
      this.set(session.name, state, {
        time,
        agent: report.origin,
        cause: `hook:${data.hook ?? report.type}`,
        reason: data.reason,
      });
    }
    // The dock session the report was matched to (an identifier, like the tool's own `session_id`):
    // the app, the queue and hooks (`DOCK_SESSION`) learn whose turn it was without asking again.
    const announced = session && state ? { ...data, session: session.name } : data;
    return this.#o.bus.publish({ type: report.type, origin: report.origin, data: announced });
  }

  /**
   * Sets a session's state as of `setting.time` (default, and at the latest, the daemon's now), unless
   * the state held is newer; a change is kept in the session's history with its cause. True when set.
   */
  set(name: string, state: AgentState, setting: StateSetting): boolean {
    // Times are stored in one form (ISO, UTC), so the database compares them: a report older than the
    // state held changes nothing, in the same statement. A held state dated after now is from before
    // the clock stepped back: any report replaces it.
    const now = new Date(this.#o.clock.now()).toISOString();
    const time = setting.time;
    const at = time === undefined || new Date(time).toISOString() > now ? now : new Date(time).toISOString();
    const reason = state === "waiting" ? setting.reason ?? null : null;
    const changed = this.#o.store.transaction(() => {
      const before = this.#o.store.get<{ agent_state: AgentState; reason: string | null }>(
        "SELECT agent_state, reason FROM sessions WHERE name = ?",
        name,
      );
      const { changes } = this.#o.store.run(
        `UPDATE sessions SET agent_state = ?, state_time = ?, reason = ?, agent = coalesce(agent, ?)
         WHERE name = ? AND (state_time IS NULL OR state_time <= ? OR state_time > ?)`,
        state,
        at,
        reason,
        setting.agent ?? null,
        name,
        at,
        now,
      );
      if (changes && (before?.agent_state !== state || before?.reason !== reason)) {
        this.#record(name, { state, reason, cause: setting.cause, time: at });
      }
      return changes > 0;
    });
    if (changed) { for (const listener of [...this.#listeners]) listener(); }
    return changed;
  }

  /**
   * Ends the turn of a session whose program ended (`running` or `waiting` becomes `finished`), as
   * `cause` (`exit`, or `restart` when found ended as the daemon started). No tool reports that.
   */
  endTurn(name: string, cause: "exit" | "restart"): void {
    const row = this.#o.store.get<{ agent_state: AgentState }>(
      "SELECT agent_state FROM sessions WHERE name = ?",
      name,
    );
    if (row && (row.agent_state === "running" || row.agent_state === "waiting")) {
      this.set(name, "finished", { cause });
    }
  }

  /** The session's last changes of state, oldest first. */
  history(name: string): StateChange[] {
    return this.#o.store.all<StateChange>(
      `SELECT state, reason, cause, time FROM
         (SELECT * FROM session_states WHERE session = ? ORDER BY seq DESC LIMIT ?)
       ORDER BY seq`,
      name,
      HISTORY_KEPT,
    ).map(({ state, reason, cause, time }) => ({ state, reason, cause, time }));
  }

  /** Forgets a removed session's history. */
  forget(name: string): void {
    this.#o.store.run("DELETE FROM session_states WHERE session = ?", name);
  }

  #record(name: string, change: StateChange): void {
    this.#o.store.run(
      "INSERT INTO session_states (session, state, reason, cause, time) VALUES (?, ?, ?, ?, ?)",
      name,
      change.state,
      change.reason,
      change.cause,
      change.time,
    );
    this.#o.store.run(
      `DELETE FROM session_states WHERE session = ? AND seq <=
         (SELECT seq FROM session_states WHERE session = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)`,
      name,
      name,
      HISTORY_KEPT,
    );
  }

  #match(session: string | undefined, path: string | undefined): SessionRow | null {
    let named: SessionRow | null = null;
    if (session) {
      named = this.#o.store.get<SessionRow>("SELECT * FROM sessions WHERE name = ?", session) ?? null;
      // A tool that runs its hooks from one process shared by its sessions (Codex 0.169's background
      // server) hands every hook the DOCK_SESSION of the session that started that process: a report of
      // a directory the named session's worktree does not hold goes by its directory instead.
      if (named && (!path || path === named.path || path.startsWith(`${named.path}/`))) return named;
    }
    if (!path) return named;
    // Else the live session whose worktree holds the reported directory: the deepest, one running an
    // agent before a plain shell, the newest. One row, on every hook report that names no session.
    // None (a path spelled through a symlink): the named session still.
    return this.#o.store.get<SessionRow>(
      `SELECT * FROM sessions WHERE exited = 0 AND ${PATH_HOLDS}
       ORDER BY length(path) DESC, coalesce(agent, '') != '' DESC, created DESC LIMIT 1`,
      path,
    ) ?? named;
  }
}
