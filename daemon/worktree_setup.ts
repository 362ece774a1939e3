/**
 * A worktree's setup and archive scripts (spec 3.3, 8): run through a login shell in the worktree with
 * its environment, their output kept in `<logs>/<location>/<worktree>/<kind>.log`. Setup runs in the
 * background after a create; its state follows `setup_state.ts`'s lifecycle and is announced
 * (`worktree.setup.started`, `.finished`, `.failed`); once it succeeded (or at once when there is none)
 * the ready steps run (services' autostart). `worktrees.ts` owns the records and calls in here.
 *
 * @module
 */
import { dirname, join } from "../core/posix_path.ts";
import type { SetupState, StreamLine, Worktree } from "../client/wire.ts";
import type { EventBus } from "../core/events.ts";
import { type Clock, sleep } from "../core/clock.ts";
import { errorText, type Log } from "../core/log.ts";
import type { BoxPaths } from "../core/paths.ts";
import { shell } from "../core/runner.ts";
import type { Store } from "../core/store.ts";
import { setupState as nextSetup } from "./setup_state.ts";

/** Setup scripts may run this long (spec 8), then they are killed. */
export const SETUP_TIMEOUT_MS = 30 * 60_000;

/** How often a followed setup log is read again while setup runs (a file has no event to wait on). */
const FOLLOW_MS = 100;

/** Something to do once a worktree's setup succeeded, or at once when it has none (autostart). */
export type ReadyStep = (worktree: Worktree) => void | Promise<void>;

/** What {@linkcode WorktreeSetups} needs of the worktrees module. */
export interface WorktreeSetupsOptions {
  store: Store;
  bus: EventBus;
  paths: Pick<BoxPaths, "logs">;
  /** The worktree's environment, as its scripts get it. */
  environment: (worktree: Worktree) => Promise<{ env: Record<string, string> }>;
  /** The worktree as recorded now; undefined once it is gone. */
  current: (location: string, name: string) => Worktree | undefined;
  /** Run, in order, when a worktree is ready. */
  readySteps: ReadyStep[];
  /** Dates setup's start and end; paces a followed log. */
  clock: Clock;
  /** Told of a ready step that failed (nobody else hears it). */
  log: Log;
}

/** Runs worktrees' setup and archive scripts. */
export class WorktreeSetups {
  #o: WorktreeSetupsOptions;
  #running = new Map<string, Promise<void>>();

  constructor(options: WorktreeSetupsOptions) {
    this.#o = options;
  }

  /** Starts `script` as the worktree's setup in the background. */
  start(worktree: Worktree, script: string): void {
    const key = `${worktree.location}/${worktree.name}`;
    const job = (async () => {
      this.#set(worktree, { state: this.#next("pending", "start"), started: this.#now() });
      this.#o.bus.publish({
        type: "worktree.setup.started",
        origin: "dockd",
        data: { location: worktree.location, worktree: worktree.name },
      });
      let code = -1;
      let timedOut = false;
      let error: string | undefined;
      try {
        const result = await this.script(worktree, "setup", script, SETUP_TIMEOUT_MS);
        code = result.code;
        timedOut = result.timedOut;
      } catch (cause) {
        error = (cause as Error).message;
      }
      const ok = code === 0;
      this.#set(worktree, {
        state: this.#next("running", ok ? "succeed" : "fail"),
        exit: code,
        finished: this.#now(),
        error: error ?? (timedOut ? "setup timed out after 30m and was killed" : undefined),
      });
      this.#o.bus.publish({
        type: ok ? "worktree.setup.finished" : "worktree.setup.failed",
        origin: "dockd",
        data: { location: worktree.location, worktree: worktree.name, exit_code: code, timed_out: timedOut },
      });
      const now = ok ? this.#o.current(worktree.location, worktree.name) : undefined;
      if (now) this.ready(now);
    })().finally(() => this.#running.delete(key));
    this.#running.set(key, job);
  }

  /** Runs the ready steps for a worktree; a failing one is logged, the others still run. */
  ready(worktree: Worktree): void {
    for (const step of this.#o.readySteps) {
      // Through then(): a step that throws at once is logged like one that rejects, and the next still runs.
      Promise.resolve().then(() => step(worktree)).catch((error) =>
        this.#o.log.error(`after setup of ${worktree.name}: ${errorText(error)}`)
      );
    }
  }

  /** The next setup state; a change the lifecycle does not name is logged and thrown. */
  #next(from: Parameters<typeof nextSetup>[0], event: Parameters<typeof nextSetup>[1]): SetupState {
    return nextSetup(from, event, this.#o.log);
  }

  /** Marks setups that a previous daemon left running as failed: nobody is waiting for them now. */
  recoverInterrupted(): void {
    this.#o.store.run(
      `UPDATE worktrees SET setup_state = ?, setup_error = 'interrupted by a daemon restart',
       setup_finished = ? WHERE setup_state IN ('pending', 'running')`,
      this.#next("running", "interrupt"),
      this.#now(),
    );
  }

  /** Resolves when every setup started so far has finished (tests, shutdown). */
  async settled(): Promise<void> {
    await Promise.all(this.#running.values());
  }

  /** Setup output, as lines; with `follow`, goes on until setup ends. */
  async *log(worktree: Worktree, options: { follow?: boolean; signal?: AbortSignal } = {}) {
    const { location, name } = worktree;
    const file = this.#logFile(worktree, "setup");
    let offset = 0;
    let partial = "";
    const decoder = new TextDecoder();
    while (!options.signal?.aborted) {
      const state = this.#o.current(location, name)?.setup.state;
      const chunk = await readFrom(file, offset);
      offset += chunk.length;
      const text = partial + decoder.decode(chunk, { stream: true });
      const lines = text.split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) yield { line } satisfies StreamLine;
      const running = state === "pending" || state === "running";
      if (chunk.length === 0 && (!options.follow || !running)) {
        if (partial) yield { line: partial };
        const exitCode = this.#o.current(location, name)?.setup.exit_code;
        yield { done: true, exit_code: exitCode } satisfies StreamLine;
        return;
      }
      if (chunk.length === 0) await sleep(this.#o.clock, FOLLOW_MS, options.signal).catch(() => {});
    }
  }

  /** Runs a setup or archive script in the worktree through a login shell, its output logged. */
  async script(worktree: Worktree, kind: "setup" | "archive", script: string, timeoutMs = SETUP_TIMEOUT_MS) {
    const file = this.#logFile(worktree, kind);
    await Deno.mkdir(dirname(file), { recursive: true });
    const log = await Deno.open(file, { write: true, create: true, truncate: true });
    try {
      const { env } = await this.#o.environment(worktree);
      return await shell(script, {
        cwd: worktree.path,
        env,
        clearEnv: true,
        timeoutMs,
        maxOutput: 64 * 1024,
        onOutput: (chunk) => log.writeSync(chunk),
      });
    } finally {
      log.close();
    }
  }

  #set(
    worktree: Worktree,
    update: { state: SetupState; started?: string; finished?: string; exit?: number; error?: string },
  ): void {
    this.#o.store.run(
      `UPDATE worktrees SET setup_state = ?, setup_started = coalesce(?, setup_started), setup_finished = ?,
       setup_exit = ?, setup_error = ? WHERE location = ? AND name = ?`,
      update.state,
      update.started ?? null,
      update.finished ?? null,
      update.exit ?? null,
      update.error ?? null,
      worktree.location,
      worktree.name,
    );
  }

  #logFile(worktree: Worktree, kind: "setup" | "archive"): string {
    return join(this.#o.paths.logs, worktree.location, worktree.name, `${kind}.log`);
  }

  #now(): string {
    return new Date(this.#o.clock.now()).toISOString();
  }
}

async function readFrom(path: string, offset: number): Promise<Uint8Array> {
  let file: Deno.FsFile;
  try {
    file = await Deno.open(path, { read: true });
  } catch {
    return new Uint8Array();
  }
  try {
    await file.seek(offset, Deno.SeekMode.Start);
    const buffer = new Uint8Array(64 * 1024);
    const read = await file.read(buffer);
    return read ? buffer.subarray(0, read) : new Uint8Array();
  } finally {
    file.close();
  }
}
