/**
 * The resource guard (`~/.dock/guard.json`, `GET/PUT guard`): when the box's memory stays above a
 * threshold for a while, it stops the hungriest services and, if allowed, pauses agent sessions, then
 * announces `guard.acted`.
 *
 * Three parts, from pure to effectful: the settings (the file, read like every user file),
 * {@linkcode GuardEpisode} (the pure decision of *when* to act, fed observations and timestamps), and
 * {@linkcode Guard} (the monitor). The monitor reaches the system, the services, the sessions and the event bus only through
 * {@linkcode GuardActions} and reads time through an injected clock: its behaviour is about memory
 * pressure and durations, neither of which a test can produce for real, so every side effect is passed
 * in and tests drive it with fakes and a fake clock instead of sleeping or filling memory.
 *
 * @module
 */
import type { GuardFile } from "../client/wire.ts";
import { GUARD_PUT } from "../client/schemas.ts";
import { parseDuration } from "../client/duration.ts";
import { readUserFile, validateUserFile, writeUserFile } from "../core/user_files.ts";
import { type Clock, every } from "../core/clock.ts";
import type { Log } from "../core/log.ts";

/** The guard file's settings (the wire type of `GET/PUT guard`). */
export type GuardSettings = GuardFile;

/** Settings used when `guard.json` is missing or leaves a field out. */
export const DEFAULT_GUARD: Readonly<GuardSettings> = Object.freeze({
  enabled: false,
  memory_percent: 90,
  sustain: "30s",
  stop_services: true,
  pause_agents: false,
});

// The rules are those of the `PUT guard` body (one schema for the file and the API); the file adds the
// defaults of the fields it leaves out.
const GUARD_FILE = GUARD_PUT.transform((given): GuardSettings => {
  const settings = { ...DEFAULT_GUARD };
  for (const [field, value] of Object.entries(given)) {
    if (value !== undefined) Object.assign(settings, { [field]: value });
  }
  return settings;
});

/** Validates guard settings from `file` (a path, or `body` for a request); missing fields take defaults. */
export function validateGuard(value: unknown, file: string, status: 400 | 422): GuardSettings {
  return validateUserFile(value, file, GUARD_FILE, { code: "invalid_guard", status });
}

/** Reads `guard.json`: defaults when missing; a 422 naming the file and field when it is not valid. */
export function readGuardFile(path: string): Promise<GuardSettings> {
  return readUserFile(path, GUARD_FILE, { missing: "default", code: "invalid_guard" });
}

/** Writes `guard.json` atomically (pretty JSON, mode 0600), with the fields in their usual order. */
export async function writeGuardFile(path: string, settings: GuardSettings): Promise<void> {
  const fields = Object.keys(DEFAULT_GUARD) as (keyof GuardSettings)[];
  const ordered = Object.fromEntries(fields.map((field) => [field, settings[field]]));
  await writeUserFile(path, ordered, { mode: 0o600 });
}

/** What one observation asks for: act now, or nothing. */
export type GuardVerdict = "act" | null;

/**
 * Decides when to act, from observations alone (no clock, no I/O). An episode starts when memory goes
 * above the threshold and ends when it goes back to or below it; the guard acts once per episode, when
 * memory has stayed above for `sustain`.
 */
export class GuardEpisode {
  #enabled = false;
  #threshold = 0;
  #sustainMs = 0;
  // When the current stretch above the threshold began; null when memory is at or below it.
  #aboveSince: number | null = null;
  #acted = false;

  constructor(settings: GuardSettings) {
    this.update(settings);
  }

  /** Applies new settings; an ongoing episode carries on unless the guard was turned off. */
  update(settings: GuardSettings): void {
    this.#enabled = settings.enabled;
    this.#threshold = settings.memory_percent;
    this.#sustainMs = parseDuration(settings.sustain, "sustain");
    if (!this.#enabled) this.#reset();
  }

  /** Records one observation of used memory (percent) at `nowMs`; "act" at most once per episode. */
  observe(percent: number, nowMs: number): GuardVerdict {
    if (!this.#enabled) return null;
    // A reading that failed says nothing either way, so it neither ends nor extends the episode.
    if (!Number.isFinite(percent)) return null;
    if (percent <= this.#threshold) {
      this.#reset();
      return null;
    }
    this.#aboveSince ??= nowMs;
    if (this.#acted || nowMs - this.#aboveSince < this.#sustainMs) return null;
    this.#acted = true;
    return "act";
  }

  #reset(): void {
    this.#aboveSince = null;
    this.#acted = false;
  }
}

/** A running service the guard may stop, with the RSS (bytes) of its process group. */
export interface GuardService {
  location: string;
  worktree: string;
  name: string;
  rss: number;
}

/** An agent session the guard may pause, with its RSS (bytes). */
export interface GuardAgent {
  session: string;
  location?: string;
  worktree?: string;
  rss: number;
}

/** Everything the guard reads from or does to the box, injected so tests can fake it. */
export interface GuardActions {
  /** Used memory in percent of the total. */
  memoryPercent(): number | Promise<number>;
  /** Running services with their process-group RSS. */
  services(): Promise<GuardService[]>;
  /** Stops one service. */
  stopService(service: GuardService): Promise<void>;
  /** Agent sessions that could be paused, with their RSS. */
  agents(): Promise<GuardAgent[]>;
  /** Pauses one agent session. */
  pauseAgent(agent: GuardAgent): Promise<void>;
  /** Publishes `guard.acted` with `data`. */
  announce(data: Record<string, unknown>): void;
  /** Total memory in bytes. */
  totalMemory(): number;
}

/** Options of {@linkcode Guard}. */
export interface GuardOptions {
  actions: GuardActions;
  /** Current settings, read on every tick so edits to `guard.json` apply without a restart. */
  settings: () => GuardSettings | Promise<GuardSettings>;
  /** Times each observation and paces them. */
  clock: Clock;
  /** Time between observations. @default {1000} */
  intervalMs?: number;
  /** Where failures are reported. */
  log: Log;
}

/** The data of a `guard.acted` event. */
export interface GuardActed {
  memory_percent: number;
  threshold: number;
  sustain: string;
  stopped: { location: string; worktree: string; service: string; rss: number }[];
  paused: { session: string; rss: number }[];
  errors?: { target: string; error: string }[];
}

/** Watches memory once per interval and acts through {@linkcode GuardActions} when an episode says so. */
export class Guard {
  #actions: GuardActions;
  #settings: () => GuardSettings | Promise<GuardSettings>;
  #clock: Clock;
  #intervalMs: number;
  #log: Log;
  #episode?: GuardEpisode;
  /** The tick in progress, if any. */
  #busy?: Promise<void>;
  #cancel?: () => void;
  // The last failure logged, so a broken guard.json is reported once rather than every second.
  #lastFailure?: string;

  constructor(options: GuardOptions) {
    this.#actions = options.actions;
    this.#settings = options.settings;
    this.#clock = options.clock;
    this.#intervalMs = options.intervalMs ?? 1000;
    this.#log = options.log;
  }

  /** Takes one observation and acts when the episode says so; never throws, skips if one is running. */
  tick(): Promise<void> {
    // Stopping services can take longer than an interval; a second tick meanwhile would act twice.
    if (this.#busy) return Promise.resolve();
    const busy = this.#observe().finally(() => this.#busy = undefined);
    this.#busy = busy;
    return busy;
  }

  /** Resolves when the observation in progress (if any) has ended. */
  async settled(): Promise<void> {
    await this.#busy;
  }

  async #observe(): Promise<void> {
    try {
      const settings = await this.#settings();
      if (this.#episode) this.#episode.update(settings);
      else this.#episode = new GuardEpisode(settings);
      if (!settings.enabled) return;
      const percent = await this.#actions.memoryPercent();
      const verdict = this.#episode.observe(percent, this.#clock.now());
      this.#lastFailure = undefined;
      if (verdict === "act") await this.#act(settings, percent);
    } catch (error) {
      this.#fail(`guard: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  /** Starts observing every interval (idempotent). */
  start(): void {
    this.#cancel ??= every(this.#clock, this.#intervalMs, () => void this.tick());
  }

  /** Stops observing. */
  stop(): void {
    this.#cancel?.();
    this.#cancel = undefined;
  }

  async #act(settings: GuardSettings, percent: number): Promise<void> {
    const data: GuardActed = {
      memory_percent: Math.round(percent * 10) / 10,
      threshold: settings.memory_percent,
      sustain: settings.sustain,
      stopped: [],
      paused: [],
    };
    const errors: { target: string; error: string }[] = [];
    // Bytes above the threshold, estimated from the observation; each stop subtracts what it freed
    // instead of re-reading memory, which lags behind a process exiting.
    let excess = 0;
    try {
      excess = (percent - settings.memory_percent) * this.#actions.totalMemory() / 100;
    } catch (error) {
      errors.push({ target: "memory", error: message(error) });
    }
    if (settings.stop_services) {
      const services = await this.#list("services", () => this.#actions.services(), errors);
      for (const service of byRssDescending(services)) {
        if (excess <= 0 && data.stopped.length > 0) break;
        const target = `service ${service.location}/${service.worktree}/${service.name}`;
        try {
          await this.#actions.stopService(service);
          data.stopped.push({
            location: service.location,
            worktree: service.worktree,
            service: service.name,
            rss: service.rss,
          });
          excess -= service.rss;
        } catch (error) {
          errors.push({ target, error: message(error) });
        }
      }
    }
    if (settings.pause_agents) {
      const agents = await this.#list("agents", () => this.#actions.agents(), errors);
      for (const agent of byRssDescending(agents)) {
        // "At least one" counts services too: pausing is for what stopping services left over.
        if (excess <= 0 && data.stopped.length + data.paused.length > 0) break;
        try {
          await this.#actions.pauseAgent(agent);
          data.paused.push({ session: agent.session, rss: agent.rss });
          excess -= agent.rss;
        } catch (error) {
          errors.push({ target: `session ${agent.session}`, error: message(error) });
        }
      }
    }
    if (errors.length) {
      data.errors = errors;
      for (const { target, error } of errors) this.#log.error(`guard: ${target}: ${error}`);
    }
    try {
      this.#actions.announce(data as unknown as Record<string, unknown>);
    } catch (error) {
      this.#log.error(`guard: announcing guard.acted failed: ${message(error)}`);
    }
  }

  async #list<T>(
    target: string,
    list: () => Promise<T[]>,
    errors: { target: string; error: string }[],
  ): Promise<T[]> {
    try {
      return await list();
    } catch (error) {
      errors.push({ target, error: message(error) });
      return [];
    }
  }

  #fail(text: string): void {
    if (text === this.#lastFailure) return;
    this.#lastFailure = text;
    this.#log.error(text);
  }
}

function byRssDescending<T extends { rss: number }>(items: T[]): T[] {
  return [...items].sort((a, b) => b.rss - a.rss);
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
