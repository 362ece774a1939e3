/**
 * Where library code reports what went wrong: a `Log` passed in (an option defaulting to
 * {@linkcode STDERR_LOG} at the composition root), never `console.*` directly, so tests can read what a
 * module logged and the CLI (the only place that prints) owns the terminal. `tests/imports_test.ts` allows
 * `console.*` only in `cli/` and here.
 *
 * A log line never carries prompt text or secret values: callers pass names, ids and error messages.
 *
 * @module
 */

/** Fields that go with a log line (names, ids, counts: never prompt text or secrets). */
export type LogFields = Record<string, string | number | boolean | undefined>;

/** A sink for the few things a daemon or agent reports on its own. */
export interface Log {
  /** Something failed and was not handed to a caller. */
  error(message: string, fields?: LogFields): void;
  /** Something was dropped, refused or degraded. */
  warn(message: string, fields?: LogFields): void;
  /** Something a person running the process wants to see (started, listening). */
  info(message: string, fields?: LogFields): void;
}

/** Renders `error` for a log line: its message (with its code when it is a DockError-like error). */
export function errorText(error: unknown): string {
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === "string" ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}

/** `message key=value …`: one line, values with spaces quoted. */
export function formatLine(message: string, fields?: LogFields): string {
  if (!fields) return message;
  const parts = Object.entries(fields)
    .filter(([, value]) => value !== undefined)
    .map(([key, value]) => {
      const text = String(value);
      return `${key}=${/[\s"=]/.test(text) ? JSON.stringify(text) : text}`;
    });
  return parts.length ? `${message} ${parts.join(" ")}` : message;
}

/** The log of a daemon or agent: one line per record on stderr. */
export const STDERR_LOG: Log = {
  error: (message, fields) => console.error(formatLine(message, fields)),
  warn: (message, fields) => console.error(formatLine(message, fields)),
  info: (message, fields) => console.error(formatLine(message, fields)),
};

/** One record a {@linkcode MemoryLog} kept. */
export interface LogRecord {
  level: "error" | "warn" | "info";
  message: string;
  fields?: LogFields;
}

/** A log that keeps its last `limit` records in memory: for tests, which assert on what was logged. */
export class MemoryLog implements Log {
  readonly records: LogRecord[] = [];
  #limit: number;

  constructor(limit = 1_000) {
    this.#limit = limit;
  }

  error(message: string, fields?: LogFields): void {
    this.#keep({ level: "error", message, fields });
  }

  warn(message: string, fields?: LogFields): void {
    this.#keep({ level: "warn", message, fields });
  }

  info(message: string, fields?: LogFields): void {
    this.#keep({ level: "info", message, fields });
  }

  #keep(record: LogRecord): void {
    this.records.push(record);
    if (this.records.length > this.#limit) this.records.shift();
  }
}
