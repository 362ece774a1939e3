/**
 * Where the offline prompt queue keeps its items: the `queue` table of the agent's SQLite database
 * (WAL). Every change is one committed statement (or one transaction), so a kill -9 of the agent at any
 * moment loses nothing. agent/queue.ts decides what changes; this module only reads and writes rows.
 *
 * @module
 */
import { notFound } from "../client/errors.ts";
import type { QueueCreate, QueueItem, QueueState } from "../client/wire.ts";
import type { Store } from "../core/store.ts";
import { DELIVERED_KEPT, queueSendKey, type Slot } from "./queue_plan.ts";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS queue (
  id TEXT PRIMARY KEY,
  seq INTEGER NOT NULL UNIQUE,
  box TEXT NOT NULL,
  session TEXT NOT NULL,
  text TEXT NOT NULL,
  enter INTEGER NOT NULL,
  wait INTEGER NOT NULL,
  state TEXT NOT NULL,
  error TEXT,
  created TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  last_attempt TEXT,
  nonce TEXT NOT NULL,
  generation INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS queue_state ON queue(state, seq);
`;

/** One item as stored (its text included: never put in an event or a log line). */
export interface QueueRow {
  id: string;
  seq: number;
  box: string;
  session: string;
  text: string;
  enter: number;
  wait: number;
  state: QueueState;
  error: string | null;
  created: string;
  attempts: number;
  last_attempt: string | null;
  nonce: string;
  generation: number;
}

/** A state change's side effects on the row. */
export interface RowChange {
  /** The failure's message (kept only when the new state is `failed`). */
  error?: string;
  /** Counts an attempt, dated `at`. */
  attempt?: boolean;
  /** A new send key (the generation grows). */
  newKey?: boolean;
}

/** The queue's rows in the agent's store. */
export class QueueRows {
  #store: Store;

  constructor(store: Store) {
    this.#store = store;
    this.#store.db.exec(SCHEMA);
  }

  /** Every row, oldest first. */
  all(): QueueRow[] {
    return this.#store.all<QueueRow>("SELECT * FROM queue ORDER BY seq");
  }

  /** The slots of the items not yet delivered, oldest first (what the plan reads: no text). */
  pending(): Slot[] {
    return this.#store.all<QueueRow>(
      "SELECT id, box, session, state, wait, seq FROM queue WHERE state != 'delivered' ORDER BY seq",
    ).map(toSlot);
  }

  /** One row, or `undefined`. */
  find(id: string): QueueRow | undefined {
    return this.#store.get<QueueRow>("SELECT * FROM queue WHERE id = ?", id);
  }

  /** One row; 404 when unknown. */
  row(id: string): QueueRow {
    const row = this.find(id);
    if (!row) throw notFound("queue item", id);
    return row;
  }

  /** Inserts a new item, `queued`, at the end of the line. */
  insert(id: string, request: QueueCreate, created: string, nonce: string): void {
    this.#store.transaction(() => {
      this.#store.run(
        `INSERT INTO queue (id, seq, box, session, text, enter, wait, state, created, nonce)
         VALUES (?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?)`,
        id,
        this.#nextSeq(),
        request.box,
        request.session,
        request.text,
        request.enter === false ? 0 : 1,
        request.wait === false ? 0 : 1,
        created,
        nonce,
      );
    });
  }

  /** Sets a row's state (and what goes with the change); `at` dates an attempt. */
  setState(id: string, to: QueueState, change: RowChange, at: string): void {
    this.#store.run(
      `UPDATE queue SET state = ?, error = ?, attempts = attempts + ?, last_attempt = coalesce(?, last_attempt),
       generation = generation + ? WHERE id = ?`,
      to,
      to === "failed" ? change.error ?? "failed" : null,
      change.attempt ? 1 : 0,
      change.attempt ? at : null,
      change.newKey ? 1 : 0,
      id,
    );
  }

  /** Changes a row's content: `queued` again, at the end of the line, with a new send key, no error. */
  edit(id: string, next: { box: string; session: string; text: string }): void {
    this.#store.transaction(() => {
      this.#store.run(
        `UPDATE queue SET box = ?, session = ?, text = ?, state = 'queued', error = NULL, seq = ?,
         generation = generation + 1 WHERE id = ?`,
        next.box,
        next.session,
        next.text,
        this.#nextSeq(),
        id,
      );
    });
  }

  /** Deletes a row. */
  delete(id: string): void {
    this.#store.run("DELETE FROM queue WHERE id = ?", id);
  }

  /** True when an earlier item of the row's lane failed (the row is held behind it). */
  blocked(row: QueueRow): boolean {
    return row.state !== "delivered" && row.state !== "sending" &&
      this.#store.get(
          "SELECT 1 FROM queue WHERE box = ? AND session = ? AND state = 'failed' AND seq < ? LIMIT 1",
          row.box,
          row.session,
          row.seq,
        ) !== undefined;
  }

  /** Drops delivered items delivered before `cutoff` (ISO) and beyond the newest {@linkcode DELIVERED_KEPT}. */
  prune(cutoff: string): void {
    this.#store.run(
      `DELETE FROM queue WHERE state = 'delivered' AND (last_attempt < ? OR id IN (
         SELECT id FROM queue WHERE state = 'delivered' ORDER BY last_attempt DESC, seq DESC LIMIT -1 OFFSET ?))`,
      cutoff,
      DELIVERED_KEPT,
    );
  }

  #nextSeq(): number {
    // A counter in meta, not max(seq) + 1: a number once given is never given again, even after the
    // newest item was removed or pruned.
    const row = this.#store.get<{ value: string }>(
      `INSERT INTO meta (key, value) VALUES ('queue_seq', coalesce((SELECT max(seq) FROM queue), 0) + 1)
       ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1 RETURNING value`,
    );
    return Number(row!.value);
  }
}

/** The idempotency key of an item's current content: a new one after every edit or retry. */
export function sendKey(row: QueueRow): string {
  return queueSendKey(row.nonce, row.generation);
}

/** What the plan needs of a row. */
export function toSlot(row: QueueRow): Slot {
  return {
    id: row.id,
    box: row.box,
    session: row.session,
    state: row.state,
    wait: row.wait === 1,
    seq: row.seq,
  };
}

/** The item the API answers for a row. */
export function toItem(row: QueueRow, blocked: boolean): QueueItem {
  const item: QueueItem = {
    id: row.id,
    box: row.box,
    session: row.session,
    text: row.text,
    enter: row.enter === 1,
    wait: row.wait === 1,
    state: row.state,
    created: row.created,
    attempts: row.attempts,
    blocked,
    seq: row.seq,
  };
  if (row.state === "failed" && row.error) item.error = row.error;
  if (row.last_attempt) item.last_attempt = row.last_attempt;
  return item;
}
