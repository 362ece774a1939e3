/**
 * What the supervisor (`supervisor.ts`) supervises: a child's row, its scope, the tunables, its lifecycle
 * table, and the files of its output (the log it appends to, rotated by size, and the exit code its
 * wrapper writes beside it).
 *
 * @module
 */
import type { ServiceState, StreamLine } from "../client/wire.ts";
import { type Clock, sleep } from "../core/clock.ts";
import { concatBytes } from "../core/bytes.ts";
import { readRange, readTail, statOrNull } from "../core/files.ts";
import type { TransitionTable } from "../core/transition.ts";

/** What changes a supervised child's state. */
export type SupervisedEvent = "launch" | "stop" | "done" | "crash" | "fail" | "exit";

/**
 * A supervised child's lifecycle, written once. `launch` starts it (by hand, by its restart, or again
 * after it failed; from `stopping` when a stop was cut off by a daemon killed mid-way); `stop` begins
 * stopping it from any state and `done` ends that; `crash` is an end the backoff restarts, `fail` one it
 * gives up on (too many quick crashes, or a restart that could not launch), `exit` an end under the
 * `never` policy.
 */
export const SUPERVISED_LIFECYCLE: TransitionTable<ServiceState, SupervisedEvent> = {
  stopped: { launch: "running", stop: "stopping" },
  running: { launch: "running", stop: "stopping", crash: "crashed", fail: "failed", exit: "stopped" },
  stopping: { launch: "running", stop: "stopping", done: "stopped" },
  crashed: { launch: "running", stop: "stopping", fail: "failed" },
  failed: { launch: "running", stop: "stopping" },
};

/** One supervised child's row (the columns of `SUPERVISED_COLUMNS` in schema.ts). */
export interface SupervisedRow {
  location: string;
  worktree: string;
  name: string;
  desired: "running" | "stopped";
  state: ServiceState;
  pid: number | null;
  pid_start: number | null;
  restarts: number;
  crashes: number;
  started: string | null;
  exit_code: number | null;
  error: string | null;
  /** The folder of its cgroup while it runs in one. */
  cgroup: string | null;
}

/** What is supervised and where it runs: a worktree's services, the box's units, shares' tunnels. */
export interface SupervisedScope {
  /** The table of its rows (`SUPERVISED_COLUMNS`, keyed by location, worktree and name). */
  table: "services" | "units" | "tunnels";
  /** Names its events (`service.started`, `unit.started`, …) and its errors. */
  noun: "service" | "unit" | "tunnel";
  /** The event data naming one. */
  describe(location: string, worktree: string, name: string): Record<string, unknown>;
  /** Where one runs (404 when its place is gone); a paused place starts nothing. */
  place(location: string, worktree: string): { path: string; paused?: boolean };
  /** Its environment; `mark` is what its processes carry (`DOCK_SERVICE`). */
  environment(
    location: string,
    worktree: string,
    name: string,
    mark: string,
  ): Promise<Record<string, string>>;
  /** Its command line (404 for a name there is none of). */
  command(location: string, worktree: string, name: string): Promise<string>;
  logFile(location: string, worktree: string, name: string): string;
  /** An end on its own: restarted with backoff, or (`never`) left stopped and `ended` told. @default {"backoff"} */
  restart?: "backoff" | "never";
  /** Told (after the supervisor is done with it) of an end under the `never` policy. */
  ended?(location: string, worktree: string, name: string, whileDown: boolean): Promise<void>;
  /** Whether `<noun>.started|stopped|crashed|failed` are published. @default {true} */
  events?: boolean;
}

/** Tunables of {@linkcode Supervisor}; tests shorten them. */
export interface SupervisorTunables {
  /** First restart delay; doubles per quick crash. @default {1000} */
  backoffMs?: number;
  /** Longest restart delay. @default {30000} */
  maxBackoffMs?: number;
  /** A run at least this long resets the crash count. @default {10000} */
  stableMs?: number;
  /** Quick crashes in a row before it is marked failed. @default {5} */
  maxCrashes?: number;
  /** Grace period between SIGTERM and SIGKILL. @default {5000} */
  stopTimeoutMs?: number;
  /** A log larger than this is rotated to `<name>.log.1`. @default {1 MiB} */
  logBytes?: number;
  /** How often adopted children are checked. @default {500} */
  pollMs?: number;
}

/** One state change of a supervised child. */
export interface SupervisedChange {
  /** `location/worktree/name`. */
  key: string;
  from: ServiceState;
  event: SupervisedEvent;
  to: ServiceState;
}

/** Where the wrapper writes the exit code: beside the log, `.exit` for `.log`. */
export function exitFileOf(log: string): string {
  return `${log.slice(0, -4)}.exit`;
}

/** Copies a log larger than `maxBytes` to `<log>.1` and empties it. */
export async function rotateLog(file: string, maxBytes: number): Promise<void> {
  const info = await statOrNull(file);
  if (!info || info.size <= maxBytes) return;
  // Copy then truncate: the wrapper appends (O_APPEND), so its next write lands at the new end.
  await Deno.copyFile(file, `${file}.1`);
  await Deno.truncate(file, 0);
}

/**
 * A log's newest `tail` lines (the rotated file's end first), then (with `follow`) what is written next,
 * looked for every 150 ms on `clock` (a file has no event to wait on).
 */
export async function* followLog(
  file: string,
  options: { tail?: number; follow?: boolean; signal?: AbortSignal; clock: Clock },
): AsyncGenerator<StreamLine> {
  const old = await readTail(`${file}.1`, 256 * 1024);
  const current = await Deno.readFile(file).catch(() => new Uint8Array());
  const text = new TextDecoder().decode(concatBytes([old, current]));
  const lines = text.split("\n");
  const partial = lines.pop() ?? "";
  for (const line of lines.slice(-(options.tail ?? 200))) yield { line };
  if (!options.follow) {
    if (partial) yield { line: partial };
    return;
  }
  let offset = current.length - new TextEncoder().encode(partial).length;
  let pending = "";
  const decoder = new TextDecoder();
  while (!options.signal?.aborted) {
    const info = await statOrNull(file);
    const size = info?.size ?? 0;
    if (size < offset) offset = 0; // rotated or truncated: read the new file from its start
    if (size > offset) {
      const chunk = await readRange(file, offset, size - offset);
      offset += chunk.length;
      const parts = (pending + decoder.decode(chunk, { stream: true })).split("\n");
      pending = parts.pop() ?? "";
      for (const line of parts) yield { line };
    } else await sleep(options.clock, 150, options.signal).catch(() => {});
  }
}
