/**
 * A plugin's log: what its module wrote (`console`, `ctx.log`), what dock refused it, and how its calls
 * failed. The newest lines are kept in memory for `GET plugins/{id}`; every line is appended to
 * `<state>/plugin-logs/<id>.log`, which is bounded: past its size it becomes `<id>.log.1` (one old file
 * kept), so a chatty plugin cannot fill the disk.
 *
 * @module
 */
import { errorText, type Log } from "../core/log.ts";
import { join } from "../core/posix_path.ts";

/** Lines kept in memory per plugin. */
export const LOG_LINES = 500;
/** Bytes of a log file before it is rotated. */
export const LOG_FILE_BYTES = 1024 * 1024;

/** One plugin's log. */
export class PluginLog {
  readonly path: string;
  #lines: string[] = [];
  #bytes = -1;
  #pending: string[] = [];
  #flushing = false;
  #closed = false;

  #log: Log;

  /** Plugin `id`'s log in `dir`; a write that fails is said to `log` (the process's own). */
  constructor(dir: string, id: string, log: Log) {
    this.path = join(dir, `${id}.log`);
    this.#log = log;
  }

  /** Adds a line (stamped with the time; cut to 2,000 characters). */
  write(level: string, text: string): void {
    const line = `${new Date().toISOString()} ${level} ${text.replaceAll("\n", " ").slice(0, 2000)}`;
    this.#lines.push(line);
    if (this.#lines.length > LOG_LINES) this.#lines.splice(0, this.#lines.length - LOG_LINES);
    if (this.#closed) return;
    this.#pending.push(line);
    if (!this.#flushing) this.#flush();
  }

  /** Stops writing to the file (what is still pending is dropped: its folder may be going away). */
  close(): void {
    this.#closed = true;
    this.#pending = [];
  }

  /** The newest `count` lines. */
  tail(count = 100): string[] {
    return this.#lines.slice(-Math.max(0, count));
  }

  async #flush(): Promise<void> {
    this.#flushing = true;
    try {
      while (this.#pending.length) {
        const text = this.#pending.splice(0).join("\n") + "\n";
        const bytes = new TextEncoder().encode(text);
        if (this.#bytes < 0) this.#bytes = (await Deno.stat(this.path).catch(() => null))?.size ?? 0;
        if (this.#bytes + bytes.length > LOG_FILE_BYTES) {
          await Deno.rename(this.path, `${this.path}.1`).catch(() => {});
          this.#bytes = 0;
        }
        await Deno.mkdir(join(this.path, ".."), { recursive: true, mode: 0o700 });
        await Deno.writeFile(this.path, bytes, { append: true, mode: 0o600 });
        this.#bytes += bytes.length;
      }
    } catch (error) {
      if (!this.#closed) this.#log.error(`plugin log ${this.path}: ${errorText(error)}`);
    } finally {
      this.#flushing = false;
    }
  }
}
