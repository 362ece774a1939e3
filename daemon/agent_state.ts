/**
 * Agent state from the agent tools' own hooks (spec 3.2): `dock hook` reports `agent.*` (through
 * `POST events`, or the spool while the daemon is down), each report is matched to its session by
 * `DOCK_SESSION`, else by the working directory, and sets that session's state unless the state held
 * is newer (a late spooled report, an overtaken hook). Every report is announced on the event bus,
 * with the dock session it was matched to.
 *
 * The state is kept in the `sessions` table, whose rows the sessions module owns; this module writes
 * only `agent_state`, `state_time` and a missing `agent`.
 *
 * Time comes from the daemon's clock. A report's own `time` orders it against the state held (an
 * overtaken hook, a late spooled report), but never later than the daemon's now; and a state dated
 * after now (the clock stepped back since) gives way to any report. One report dated in the year 9999,
 * or a box clock that stepped back, once froze a session for good, every later report looking older.
 *
 * @module
 */
import type { AgentReport, AgentReportType, AgentState, DockEvent } from "../client/wire.ts";
import type { EventBus } from "../core/events.ts";
import type { Store } from "../core/store.ts";

const STATE_OF: Record<AgentReportType, AgentState> = {
  "agent.ready": "idle",
  "agent.started": "running",
  "agent.waiting": "waiting",
  "agent.finished": "finished",
};

/** Reports remembered to drop a second delivery of the same one. */
const SEEN_KEPT = 2000;

/** What a report is matched against: a live session's row. */
interface SessionRow {
  name: string;
  path: string;
  agent: string | null;
  created: string;
}

/** Dependencies of {@linkcode AgentStates}. */
export interface AgentStatesOptions {
  store: Store;
  bus: Pick<EventBus, "publish">;
  /** The daemon's clock, for tests. @default {() => Date.now()} */
  now?: () => number;
}

/** Ingests agent reports into the sessions' state. */
export class AgentStates {
  #o: AgentStatesOptions;
  #seen = new Set<string>();
  #listeners = new Set<() => void>();

  constructor(options: AgentStatesOptions) {
    this.#o = options;
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
    if (session && state) {
      const own = report.time ? Date.parse(report.time) : NaN;
      const time = Number.isNaN(own) ? undefined : new Date(own).toISOString();
      this.set(session.name, state, time, report.origin);
    }
    // The dock session the report was matched to (an identifier, like the tool's own `session_id`):
    // the app, the queue and hooks (`DOCK_SESSION`) learn whose turn it was without asking again.
    const announced = session && state ? { ...data, session: session.name } : data;
    return this.#o.bus.publish({ type: report.type, origin: report.origin, data: announced });
  }

  /**
   * Sets a session's state as of `time` (default, and at the latest, the daemon's now), unless the state
   * held is newer; `agent` names the agent of a session started as a plain command.
   */
  set(name: string, state: AgentState, time?: string, agent?: string): void {
    // Times are stored in one form (ISO, UTC), so the database compares them: a report older than the
    // state held changes nothing, in the same statement. A held state dated after now is from before
    // the clock stepped back: any report replaces it.
    const now = new Date(this.#o.now?.() ?? Date.now()).toISOString();
    const at = time === undefined || new Date(time).toISOString() > now ? now : new Date(time).toISOString();
    const { changes } = this.#o.store.run(
      `UPDATE sessions SET agent_state = ?, state_time = ?, agent = coalesce(agent, ?)
       WHERE name = ? AND (state_time IS NULL OR state_time <= ? OR state_time > ?)`,
      state,
      at,
      agent ?? null,
      name,
      at,
      now,
    );
    if (changes) { for (const listener of [...this.#listeners]) listener(); }
  }

  #match(session: string | undefined, path: string | undefined): SessionRow | null {
    if (session) {
      const row = this.#o.store.get<SessionRow>("SELECT * FROM sessions WHERE name = ?", session);
      if (row) return row;
    }
    if (!path) return null;
    // Else the newest live session whose worktree holds the reported directory (deepest first).
    const candidates = this.#o.store.all<SessionRow>("SELECT * FROM sessions WHERE exited = 0")
      .filter((row) => path === row.path || path.startsWith(row.path + "/"))
      .sort((a, b) =>
        b.path.length - a.path.length || Number(!!b.agent) - Number(!!a.agent) ||
        b.created.localeCompare(a.created)
      );
    return candidates[0] ?? null;
  }
}
