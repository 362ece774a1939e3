/**
 * A process's state on disk: one SQLite database in WAL mode (the box's `dockd.db`, the laptop's
 * `agent.db`). It survives kill -9: every change is a committed transaction. Each owner brings its own
 * schema: the box's tables are in `daemon/schema.ts`, the event journal's in `core/events.ts`, and each
 * laptop module creates its own, so the laptop's database holds only laptop tables.
 *
 * @module
 */
import { DatabaseSync, type SQLInputValue, type StatementSync } from "node:sqlite";

/**
 * Bytes the write-ahead log is cut back to after a checkpoint. SQLite checkpoints at 1,000 pages (4 MB)
 * but never shrinks the log by itself: after a burst of large writes it kept its peak size for good.
 */
export const WAL_LIMIT = 4 * 1024 * 1024;

// Every owner's database has this small key-value table (counters that must never repeat).
const META = "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);";

/** Prepared statements kept per database (see `Store.#prepare`). */
const MAX_STATEMENTS = 256;

/** A row as node:sqlite returns it. */
export type Row = Record<string, SQLInputValue>;

/** Options of {@linkcode Store}. */
export interface StoreOptions {
  /** The owner's `CREATE … IF NOT EXISTS` statements, run at open. @default {""} */
  schema?: string;
}

/** One SQLite database. */
export class Store {
  readonly db: DatabaseSync;

  constructor(path: string, options: StoreOptions = {}) {
    // timeout: a second process (a CLI reading state, a test) must wait for the lock, not fail.
    this.db = new DatabaseSync(path, { timeout: 5000 });
    this.db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;");
    this.db.exec(`PRAGMA journal_size_limit = ${WAL_LIMIT}`);
    // Pages freed by deletes go back to the file system (releaseFreePages), so a pruned journal shrinks
    // the file. A database made before this setting is rebuilt once to take it.
    if (this.get<{ auto_vacuum: number }>("PRAGMA auto_vacuum")?.auto_vacuum !== 2) {
      this.db.exec("PRAGMA auto_vacuum = INCREMENTAL");
      if ((this.get<{ page_count: number }>("PRAGMA page_count")?.page_count ?? 0) > 0) {
        this.db.exec("VACUUM");
      }
    }
    this.db.exec(META);
    if (options.schema) this.db.exec(options.schema);
  }

  /** Adds a column a table gained after it first shipped (adding it twice is harmless). */
  addColumn(table: string, column: string): void {
    const columns = new Set(this.all<{ name: string }>(`PRAGMA table_info(${table})`).map((c) => c.name));
    if (!columns.has(column.split(" ")[0])) this.db.exec(`ALTER TABLE ${table} ADD COLUMN ${column}`);
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

  /** Gives the pages that deletes freed back to the file system (the file shrinks). */
  releaseFreePages(): void {
    this.db.exec("PRAGMA incremental_vacuum");
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
