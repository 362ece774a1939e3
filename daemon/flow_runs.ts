/**
 * Flow run records (spec 3.4): the store's `flow_runs` table, the last {@linkcode RUNS_KEPT} of them.
 * The engine (`flows.ts`) decides every status (`flow_run_status.ts`); this module only writes and reads.
 *
 * @module
 */
import type { FlowRun, FlowRunStatus, FlowStepRun } from "../client/wire.ts";
import type { Store } from "../core/store.ts";

/** Runs kept per box. */
export const RUNS_KEPT = 200;

/** A run as the engine records it when it starts (or is skipped). */
export interface RunStart {
  flow: string;
  scope: string;
  trigger: string;
  status: FlowRunStatus;
  location: string | null;
  worktree: string | null;
  start: string;
  reason?: string;
  end?: string;
}

interface RunRow {
  id: number;
  flow: string;
  scope: string;
  trigger: string;
  status: string;
  reason: string | null;
  location: string | null;
  worktree: string | null;
  start: string;
  end: string | null;
  steps: string;
}

/** The box's flow runs, newest last in the table. */
export class FlowRuns {
  #store: Store;

  constructor(store: Store) {
    this.#store = store;
  }

  /** Records a run (dropping the oldest beyond {@linkcode RUNS_KEPT}) and answers it. */
  record(row: RunStart): FlowRun {
    const { lastInsertRowid } = this.#store.run(
      "INSERT INTO flow_runs (flow, scope, trigger, status, reason, location, worktree, start, end) " +
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
      row.flow,
      row.scope,
      row.trigger,
      row.status,
      row.reason ?? null,
      row.location,
      row.worktree,
      row.start,
      row.end ?? null,
    );
    this.#store.run(
      "DELETE FROM flow_runs WHERE id <= (SELECT id FROM flow_runs ORDER BY id DESC LIMIT 1 OFFSET ?)",
      RUNS_KEPT,
    );
    return this.run(lastInsertRowid)!;
  }

  /** Stores the steps a running run has done so far. */
  steps(id: number, steps: FlowStepRun[]): void {
    this.#store.run("UPDATE flow_runs SET steps = ? WHERE id = ?", JSON.stringify(steps), id);
  }

  /** Ends a run that is still `running` (one close() interrupted meanwhile keeps its end). */
  finish(
    id: number,
    end: { status: FlowRunStatus; reason?: string; end: string; steps: FlowStepRun[] },
  ): void {
    this.#store.run(
      "UPDATE flow_runs SET status = ?, reason = ?, end = ?, steps = ? WHERE id = ? AND status = 'running'",
      end.status,
      end.reason ?? null,
      end.end,
      JSON.stringify(end.steps),
      id,
    );
  }

  /** Ends every run still `running` as `status` (a daemon stop cut them off). */
  interruptRunning(status: FlowRunStatus, end: string): void {
    this.#store.run(
      "UPDATE flow_runs SET status = ?, end = ?, reason = 'the daemon stopped during the run' " +
        "WHERE status = 'running'",
      status,
      end,
    );
  }

  /** How many runs of a flow in a scope started after `since` (skipped ones not counted). */
  startedSince(flow: string, scope: string, since: string): number {
    return this.#store.get<{ n: number }>(
      "SELECT count(*) AS n FROM flow_runs WHERE flow = ? AND scope = ? AND start > ? AND status != 'skipped'",
      flow,
      scope,
      since,
    )?.n ?? 0;
  }

  /** One run by id. */
  run(id: number): FlowRun | undefined {
    const row = this.#store.get<RunRow>("SELECT * FROM flow_runs WHERE id = ?", id);
    return row && toRun(row);
  }

  /** `GET flows/runs`: newest first. */
  runs(options: { flow?: string; limit: number }): FlowRun[] {
    const rows = options.flow
      ? this.#store.all<RunRow>(
        "SELECT * FROM flow_runs WHERE flow = ? ORDER BY id DESC LIMIT ?",
        options.flow,
        options.limit,
      )
      : this.#store.all<RunRow>("SELECT * FROM flow_runs ORDER BY id DESC LIMIT ?", options.limit);
    return rows.map(toRun);
  }
}

function toRun(row: RunRow): FlowRun {
  const run: FlowRun = {
    id: row.id,
    flow: row.flow,
    scope: row.scope,
    trigger: row.trigger,
    status: row.status as FlowRunStatus,
    start: row.start,
    steps: JSON.parse(row.steps) as FlowStepRun[],
  };
  if (row.reason) run.reason = row.reason;
  if (row.location) run.location = row.location;
  if (row.worktree) run.worktree = row.worktree;
  if (row.end) run.end = row.end;
  return run;
}
