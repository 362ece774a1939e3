/**
 * The hooks file (`hooks.json`, the box's or the laptop's), kept current without a restart and
 * announced as `hooks.changed` when edited by hand; the engine that runs its hooks is `hooks.ts`.
 *
 * @module
 */
import type { HookConfig, HooksState } from "../client/wire.ts";
import { type Clock, every } from "./clock.ts";
import { HOOKS_FILE, type HooksFile } from "./config.ts";
import type { EventBus } from "./events.ts";
import { FileSignature } from "./files.ts";
import type { Log } from "./log.ts";
import { OncePerBatch } from "./turn.ts";
import { readUserFileSync, writeUserFile } from "./user_files.ts";

/** Options of {@linkcode HooksFileWatcher}. */
export interface HooksFileOptions {
  /** Checks of the file (before a use) at most this often, ms. @default {0} */
  checkMs?: number;
  /** Where an edit by hand and a write are announced (`hooks.changed`). */
  bus?: EventBus;
  /** What the watch and the checks run on. */
  clock: Clock;
  /** Told of a file that stops parsing. */
  log: Log;
}

/**
 * A `hooks.json` kept current without a restart: its mtime, size and inode are checked before each use
 * (a stat costs microseconds; at most every `checkMs`), and a changed file is read again. A file that
 * stops parsing keeps the last good hooks (a typo must not silently drop a gate) and reports the error.
 */
export class HooksFileWatcher {
  readonly path: string;
  #hooks: HookConfig[] = [];
  #error: string | undefined;
  #file: FileSignature;
  #checked = 0;
  #checkMs: number;
  /** The file is checked once for a batch of events the bus delivers together. */
  #batch = new OncePerBatch();
  #unannounced = false;
  #bus?: EventBus;
  #clock: Clock;
  #log: Log;
  #stopWatch = () => {};

  constructor(path: string, options: HooksFileOptions) {
    this.path = path;
    this.#file = new FileSignature(path);
    this.#checkMs = options.checkMs ?? 0;
    this.#bus = options.bus;
    this.#clock = options.clock;
    this.#log = options.log;
    this.refresh();
    this.#unannounced = false;
  }

  /** Checks the file every `everyMs` and announces an edit made by other means as `hooks.changed`. */
  watch(everyMs = 1000): void {
    this.#stopWatch();
    this.#stopWatch = every(this.#clock, everyMs, () => {
      if (this.takeChange()) {
        this.#bus?.publish({ type: "hooks.changed", origin: "file", data: { path: this.path } });
      }
    });
  }

  /** Stops watching. */
  close(): void {
    this.#stopWatch();
  }

  /** True once after the file changed on disk by other means than {@linkcode write} (to announce it). */
  takeChange(): boolean {
    this.refresh();
    const changed = this.#unannounced;
    this.#unannounced = false;
    return changed;
  }

  /**
   * The current hooks (re-read first when the file changed since the last check). Checked once per
   * batch (`OncePerBatch`): a stat per event was 7% of the agent's busy samples at 5 boxes × 1,000
   * events/s (`bench/events.ts`, `--cpu-prof`).
   */
  current(): HookConfig[] {
    this.#batch.run(() => {
      if (this.#clock.now() - this.#checked >= this.#checkMs) this.refresh();
    });
    return this.#hooks;
  }

  /** The file's state as `GET hooks` reports it. */
  state(): HooksState {
    this.refresh();
    const state: HooksState = { path: this.path, hooks: this.#hooks };
    if (this.#error) state.error = this.#error;
    return state;
  }

  /** Checks the file now; true when its hooks (or its error) changed. */
  refresh(): boolean {
    this.#checked = this.#clock.now();
    const now = this.#file.changed();
    if (!now) return false;
    this.#unannounced = true;
    if (now === "missing") {
      this.#hooks = [];
      this.#error = undefined;
      return true;
    }
    try {
      const file = readUserFileSync(this.path, HOOKS_FILE, { missing: "absent", code: "invalid_hooks" });
      this.#hooks = file?.hooks ?? [];
      this.#error = undefined;
    } catch (error) {
      this.#error = error instanceof Error ? error.message : String(error);
      this.#log.warn(`hooks: ${this.#error} (the last good hooks stay in force)`);
    }
    return true;
  }

  /**
   * Writes the file (a validated `PUT hooks` body, see {@linkcode hooksBody}) and announces
   * `hooks.changed` with the writer's origin; returns the new state.
   */
  async write(file: HooksFile, origin = "api"): Promise<HooksState> {
    await writeUserFile(this.path, file, { mode: 0o644 });
    this.refresh();
    this.#unannounced = false; // announced here, with the writer's origin, not by the watch
    this.#bus?.publish({ type: "hooks.changed", origin, data: { path: this.path } });
    return this.state();
  }
}
