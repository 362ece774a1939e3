/**
 * Exec: run a command to completion in a location's main checkout or a worktree, through a login
 * shell with the worktree environment (spec 4.2 `POST exec`, 8: default 10m, at most 1h, the last
 * 64 KB of output returned).
 *
 * @module
 */
import { parseDuration } from "../client/duration.ts";
import { DockError } from "../client/errors.ts";
import type { ExecResult, StreamLine } from "../client/wire.ts";
import { Channel } from "../core/channel.ts";
import { shell } from "../core/runner.ts";
import type { Worktrees } from "./worktrees.ts";

/** Exec's default timeout. */
export const EXEC_DEFAULT_MS = 10 * 60_000;
/** Exec's longest timeout. */
export const EXEC_MAX_MS = 60 * 60_000;
/** Output returned: the newest 64 KB. */
export const EXEC_OUTPUT_BYTES = 64 * 1024;

/** Exit code reported for a command killed at its timeout (as `timeout(1)` does). */
const TIMEOUT_EXIT = 124;

/** A validated exec request. */
export interface ExecJob {
  location: string;
  command: string;
  timeoutMs: number;
}

/** Checks the timeout against the limits; returns milliseconds. */
export function execTimeout(timeout: string | number | undefined): number {
  if (timeout === undefined) return EXEC_DEFAULT_MS;
  const ms = parseDuration(timeout, "timeout");
  if (ms < 1000 || ms > EXEC_MAX_MS) {
    throw new DockError("invalid_request", `timeout: must be from 1s to 1h, got ${JSON.stringify(timeout)}`, {
      status: 400,
      detail: { field: "timeout" },
    });
  }
  return ms;
}

/** Runs commands in worktrees. */
export class Exec {
  #worktrees: Pick<Worktrees, "target" | "environment">;

  constructor(worktrees: Pick<Worktrees, "target" | "environment">) {
    this.#worktrees = worktrees;
  }

  /** Runs to completion and returns the exit code and the newest output. */
  async run(
    job: ExecJob,
    options: { onOutput?: (chunk: Uint8Array) => void; signal?: AbortSignal; env?: Record<string, string> } =
      {},
  ): Promise<ExecResult> {
    const worktree = this.#worktrees.target(job.location);
    const env = { ...(await this.#worktrees.environment(worktree)).env, ...options.env };
    const result = await shell(job.command, {
      cwd: worktree.path,
      env,
      clearEnv: true,
      timeoutMs: job.timeoutMs,
      maxOutput: EXEC_OUTPUT_BYTES,
      onOutput: options.onOutput,
      // A caller that goes away (closed connection) takes its command with it.
      signal: options.signal,
    });
    const answer: ExecResult = {
      exit_code: result.timedOut ? TIMEOUT_EXIT : exitCode(result.code, result.signal),
      output: result.output,
    };
    if (result.truncated) answer.truncated = true;
    if (result.timedOut) answer.timed_out = true;
    return answer;
  }

  /** Runs and yields output lines as they come, then `{ done, exit_code }`. */
  async *stream(job: ExecJob, signal?: AbortSignal): AsyncGenerator<StreamLine> {
    const lines = new Channel<StreamLine>();
    const decoder = new TextDecoder();
    let partial = "";
    const onOutput = (chunk: Uint8Array) => {
      const parts = (partial + decoder.decode(chunk, { stream: true })).split("\n");
      partial = parts.pop() ?? "";
      for (const line of parts) lines.push({ line });
    };
    const finished = this.run(job, { onOutput, signal }).then(
      (result) => {
        if (partial) lines.push({ line: partial });
        lines.push({
          done: true,
          exit_code: result.exit_code,
          ...(result.timed_out ? { error: "timed out" } : {}),
        });
      },
      (error) => lines.push({ done: true, error: (error as Error).message }),
    ).finally(() => lines.close());
    yield* lines;
    await finished;
  }
}

function exitCode(code: number, signal: string | null): number {
  if (!signal) return code;
  const numbers: Record<string, number> = { SIGHUP: 1, SIGINT: 2, SIGQUIT: 3, SIGKILL: 9, SIGTERM: 15 };
  return 128 + (numbers[signal] ?? 0);
}
