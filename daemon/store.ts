/**
 * The box's state on disk: one SQLite database in WAL mode under `<state>/box/`. It survives kill -9
 * (every change is a committed transaction) and is the single source of truth for locations,
 * worktrees, port blocks, sessions, send idempotency keys and the event journal. The schema is
 * written once, here.
 *
 * @module
 */
import { DatabaseSync, type SQLInputValue, type StatementSync } from "node:sqlite";

const SCHEMA = `
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS locations (
  name TEXT PRIMARY KEY,
  path TEXT NOT NULL UNIQUE,
  local_config TEXT,
  created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS worktrees (
  location TEXT NOT NULL REFERENCES locations(name) ON DELETE CASCADE,
  name TEXT NOT NULL,
  path TEXT NOT NULL,
  branch TEXT,
  base TEXT,
  main INTEGER NOT NULL DEFAULT 0,
  origin TEXT NOT NULL,
  setup_state TEXT NOT NULL DEFAULT 'none',
  setup_exit INTEGER,
  setup_started TEXT,
  setup_finished TEXT,
  setup_error TEXT,
  paused INTEGER NOT NULL DEFAULT 0,
  created TEXT NOT NULL,
  PRIMARY KEY (location, name)
);
CREATE UNIQUE INDEX IF NOT EXISTS worktrees_path ON worktrees(path);
CREATE TABLE IF NOT EXISTS ports (
  port INTEGER PRIMARY KEY,
  location TEXT NOT NULL,
  worktree TEXT NOT NULL,
  idx INTEGER NOT NULL,
  FOREIGN KEY (location, worktree) REFERENCES worktrees(location, name) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS services (
  location TEXT NOT NULL,
  worktree TEXT NOT NULL,
  name TEXT NOT NULL,
  desired TEXT NOT NULL DEFAULT 'stopped',
  state TEXT NOT NULL DEFAULT 'stopped',
  pid INTEGER,
  pid_start INTEGER,
  restarts INTEGER NOT NULL DEFAULT 0,
  crashes INTEGER NOT NULL DEFAULT 0,
  started TEXT,
  exit_code INTEGER,
  error TEXT,
  PRIMARY KEY (location, worktree, name),
  FOREIGN KEY (location, worktree) REFERENCES worktrees(location, name) ON DELETE CASCADE
);
CREATE TABLE IF NOT EXISTS sessions (
  name TEXT PRIMARY KEY,
  location TEXT NOT NULL,
  worktree TEXT NOT NULL,
  path TEXT NOT NULL,
  command TEXT NOT NULL,
  agent TEXT,
  agent_state TEXT NOT NULL DEFAULT 'idle',
  state_time TEXT,
  exited INTEGER NOT NULL DEFAULT 0,
  exit_code INTEGER,
  created TEXT NOT NULL,
  from_session TEXT
);
-- Idempotency keys of POST sessions/{name}/send: recorded before the text is typed, so a repeat with
-- the same key replays the outcome instead of typing again (see Sessions.send).
CREATE TABLE IF NOT EXISTS send_keys (
  key TEXT PRIMARY KEY,
  session TEXT NOT NULL,
  state TEXT NOT NULL,
  outcome TEXT,
  created TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS send_keys_created ON send_keys(created);
CREATE TABLE IF NOT EXISTS events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  type TEXT NOT NULL,
  time TEXT NOT NULL,
  origin TEXT,
  data TEXT
);
`;

/** Prepared statements kept per database (see `Store.#prepare`). */
const MAX_STATEMENTS = 256;

/** A row as node:sqlite returns it. */
export type Row = Record<string, SQLInputValue>;

/** The box database. */
export class Store {
  readonly db: DatabaseSync;

  constructor(path: string) {
    // timeout: a second process (a CLI reading state, a test) must wait for the lock, not fail.
    this.db = new DatabaseSync(path, { timeout: 5000 });
    this.db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;");
    this.db.exec(SCHEMA);
    // Columns added after a table first shipped; adding one twice fails harmlessly.
    for (const column of ["ALTER TABLE events ADD COLUMN box TEXT"]) {
      try {
        this.db.exec(column);
      } catch {
        // already there
      }
    }
  }

  #depth = 0;

  /**
   * Runs `fn` in one transaction (BEGIN IMMEDIATE, so concurrent writers queue instead of failing).
   * Nested calls become savepoints, so a module can be transactional on its own and inside a caller's.
   */
  transaction<T>(fn: () => T): T {
    const savepoint = `sp${this.#depth}`;
    this.db.exec(this.#depth === 0 ? "BEGIN IMMEDIATE" : `SAVEPOINT ${savepoint}`);
    this.#depth++;
    try {
      const result = fn();
      this.#depth--;
      this.db.exec(this.#depth === 0 ? "COMMIT" : `RELEASE ${savepoint}`);
      return result;
    } catch (error) {
      this.#depth--;
      this.db.exec(this.#depth === 0 ? "ROLLBACK" : `ROLLBACK TO ${savepoint}; RELEASE ${savepoint}`);
      throw error;
    }
  }

  /** All rows of a query. */
  all<T = Row>(sql: string, ...params: SQLInputValue[]): T[] {
    return this.#prepare(sql).all(...params) as T[];
  }

  /** The first row of a query, or undefined. */
  get<T = Row>(sql: string, ...params: SQLInputValue[]): T | undefined {
    return this.#prepare(sql).get(...params) as T | undefined;
  }

  /** Runs a statement; returns the number of changed rows and the last row id. */
  run(sql: string, ...params: SQLInputValue[]): { changes: number; lastInsertRowid: number } {
    const result = this.#prepare(sql).run(...params);
    return { changes: Number(result.changes), lastInsertRowid: Number(result.lastInsertRowid) };
  }

  /** Closes the database. */
  close(): void {
    this.#statements.clear();
    this.db.close();
  }

  #statements = new Map<string, StatementSync>();

  /**
   * The prepared statement of `sql`, kept for the next call: preparing costs more than running the
   * small statements dock makes (measured: a fifth of the agent's time while it merged 1,500 events/s).
   * SQL is written as constants, so the cache stays small; it is emptied should code ever build
   * statements on the fly past the bound.
   */
  #prepare(sql: string): StatementSync {
    let statement = this.#statements.get(sql);
    if (!statement) {
      if (this.#statements.size >= MAX_STATEMENTS) this.#statements.clear();
      statement = this.db.prepare(sql);
      this.#statements.set(sql, statement);
    }
    return statement;
  }
}
