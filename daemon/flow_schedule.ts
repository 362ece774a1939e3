/**
 * Schedule triggers of flows (spec 2.5 `trigger.schedule`, 3.6): five cron fields or an `@` name, read by
 * croner in the box's local time, with day-of-month and day-of-week OR-ed when both are restricted.
 *
 * - **When.** At each minute boundary of the {@linkcode Clock} (so tests move time by hand), every flow in
 *   force whose schedule matches that minute fires. A minute that passed while the daemon was down is
 *   not replayed: only the minute the daemon is in fires, and at start only when it began less than
 *   {@linkcode START_GRACE_MS} ago (a restart at the boundary still fires it). The last minute fired per
 *   flow and place is kept in the store, so a restart never fires the same minute twice.
 * - **Where (3.6).** A location's flow runs once in its main checkout; with `each_worktree`, once per
 *   worktree (main checkout included); `where.branch` (a trailing `*` for a prefix) keeps only checkouts on
 *   a matching branch. A box flow with `where.location` runs so in each matching location; without it,
 *   once in the box user's home folder.
 * - **How.** Each run is started through {@linkcode Flows.startTriggered} with a `schedule.fired` event
 *   carrying `schedule` and `time` (the minute, ISO 8601), under the engine's usual rules.
 *
 * @module
 */
import { Cron } from "croner";
import type { FlowConfig, Worktree } from "../client/wire.ts";
import { DockError } from "../client/errors.ts";
import type { Clock } from "../core/clock.ts";
import { errorText, type Log } from "../core/log.ts";
import type { Store } from "../core/store.ts";
import { whereMatches } from "./flow_steps.ts";
import type { Flows } from "./flows.ts";
import type { EffectiveFlow } from "./flow_sources.ts";
import type { Locations } from "./locations.ts";
import type { Worktrees } from "./worktrees.ts";

const MINUTE_MS = 60_000;

/** How long after a minute began a starting daemon still fires it (a restart at the boundary). */
export const START_GRACE_MS = 5_000;

const SCHEMA = `
CREATE TABLE IF NOT EXISTS flow_schedule_fired (
  key TEXT PRIMARY KEY,
  minute INTEGER NOT NULL
);
`;

/** Where one scheduled run happens: a checkout of a location, or (neither) the box user's home. */
export interface SchedulePlace {
  location?: string;
  worktree?: string;
}

/**
 * A schedule as croner reads it: exactly five fields (`mode: "5-part"`), day fields OR-ed like every
 * cron (`domAndDow: false`), in the process's local time zone. A pattern it refuses is a 400
 * `invalid_schedule`; `core/config.ts` refuses such files earlier, this is the runner's own check.
 */
export function compileSchedule(expression: string): Cron {
  try {
    return new Cron(expression.trim(), { mode: "5-part", domAndDow: false });
  } catch (error) {
    throw new DockError(
      "invalid_schedule",
      `schedule "${expression}": ${error instanceof Error ? error.message : String(error)}`,
      { status: 400, cause: error },
    );
  }
}

/** The start of the minute holding `ms`. */
export function minuteOf(ms: number): number {
  return Math.floor(ms / MINUTE_MS) * MINUTE_MS;
}

/** Whether `cron` fires in the minute starting at `minute` (ms since the epoch). */
export function firesAt(cron: Cron, minute: number): boolean {
  return cron.match(new Date(minuteOf(minute)));
}

/**
 * Where a scheduled flow runs (spec 3.6), given the box's locations and worktrees. `where.agent` has no
 * meaning for a schedule and is not looked at.
 */
export function schedulePlaces(
  flow: Pick<EffectiveFlow, "flow" | "scope">,
  locations: readonly string[],
  worktrees: readonly Pick<Worktree, "location" | "name" | "branch" | "main">[],
): SchedulePlace[] {
  const trigger = flow.flow.trigger;
  const where = (trigger.where ?? {}) as Record<string, unknown>;
  let names: string[];
  if (flow.scope.startsWith("repo:")) {
    names = [flow.scope.slice("repo:".length)];
  } else if (typeof where.location === "string" && where.location !== "") {
    names = [...locations];
  } else {
    return [{}];
  }
  const filter = { location: where.location, branch: where.branch };
  const places: SchedulePlace[] = [];
  for (const location of names) {
    for (const worktree of worktrees) {
      if (worktree.location !== location || !(trigger.each_worktree === true || worktree.main)) continue;
      if (!whereMatches(filter, { location, branch: worktree.branch })) continue;
      places.push({ location, worktree: worktree.name });
    }
  }
  return places;
}

/** The store key of a flow's place, for the last minute fired there. */
function placeKey(flow: Pick<EffectiveFlow, "flow" | "scope">, place: SchedulePlace): string {
  return `${flow.scope}\0${flow.flow.id}\0${place.location ?? "~"}/${place.worktree ?? ""}`;
}

/** What the scheduler needs from the rest of the daemon. */
export interface SchedulesOptions {
  flows: Pick<Flows, "effective" | "startTriggered" | "explainInactive">;
  locations: Pick<Locations, "list">;
  worktrees: Pick<Worktrees, "list">;
  store: Store;
  /** Tells the minutes and wakes at each. */
  clock: Clock;
  /** Told of a minute that could not be looked at and of a run that could not start. */
  log: Log;
}

/** Fires the box's scheduled flows at their minutes. */
export class Schedules {
  #o: SchedulesOptions;
  #clock: Clock;
  #compiled = new Map<string, Cron | string>();
  /** The last minute looked at: a minute fires at most once per process, and never one before start. */
  #last = Number.NEGATIVE_INFINITY;
  #cancel?: () => void;
  #ticks: Promise<void> = Promise.resolve();
  #closed = false;

  constructor(options: SchedulesOptions) {
    this.#o = options;
    this.#clock = options.clock;
    options.store.db.exec(SCHEMA);
    options.flows.explainInactive((flow, scope) => this.#inactive(flow, scope));
  }

  /** Arms the timer for the next minute; fires the current one if it began under the grace ago. */
  start(): void {
    const now = this.#clock.now();
    const minute = minuteOf(now);
    this.#last = now - minute < START_GRACE_MS ? minute - MINUTE_MS : minute;
    this.#wake();
  }

  /** Stops firing; runs already started go on under the engine. */
  close(): void {
    this.#closed = true;
    this.#cancel?.();
  }

  /** Resolves when the minutes reached so far have been looked at and their runs started (tests). */
  async settled(): Promise<void> {
    let ticks: Promise<void>;
    do {
      ticks = this.#ticks;
      await ticks;
    } while (ticks !== this.#ticks);
  }

  #wake(): void {
    if (this.#closed) return;
    const now = this.#clock.now();
    const minute = minuteOf(now);
    if (minute > this.#last) {
      this.#last = minute;
      this.#ticks = this.#ticks.then(() => this.#fire(minute)).catch((error) => {
        this.#o.log.error(`schedules: ${errorText(error)}`);
      });
    }
    // A timer that wakes a little early finds the same minute and sleeps the remainder.
    this.#cancel = this.#clock.after(minute + MINUTE_MS - now, () => this.#wake());
  }

  async #fire(minute: number): Promise<void> {
    const flows = await this.#o.flows.effective();
    if (this.#closed) return;
    const locations = this.#o.locations.list().map((l) => l.name);
    const worktrees = this.#o.worktrees.list();
    const time = new Date(minute).toISOString();
    // Only a minute within the start grace could ever be claimed again; older records guard nothing.
    this.#o.store.run("DELETE FROM flow_schedule_fired WHERE minute < ?", minute - 3_600_000);
    for (const flow of flows) {
      const schedule = flow.flow.trigger.schedule;
      if (typeof schedule !== "string") continue;
      const cron = this.#cron(schedule);
      if (typeof cron === "string" || !firesAt(cron, minute)) continue;
      for (const place of schedulePlaces(flow, locations, worktrees)) {
        if (!this.#claim(placeKey(flow, place), minute)) continue;
        this.#o.flows.startTriggered({
          flow,
          event: { type: "schedule.fired", data: { schedule, time } },
          place,
        }).catch((error) => this.#o.log.error(`schedules: ${flow.flow.id}: ${errorText(error)}`));
      }
    }
  }

  /** Records `minute` as fired at `key`; false when it (or a later one) already was, before a restart. */
  #claim(key: string, minute: number): boolean {
    return this.#o.store.run(
      "INSERT INTO flow_schedule_fired (key, minute) VALUES (?, ?) " +
        "ON CONFLICT (key) DO UPDATE SET minute = excluded.minute WHERE excluded.minute > minute",
      key,
      minute,
    ).changes === 1;
  }

  /** The compiled schedule, or why croner refuses it (kept: a file's schedule is read every minute). */
  #cron(expression: string): Cron | string {
    let compiled = this.#compiled.get(expression);
    if (compiled === undefined) {
      try {
        compiled = compileSchedule(expression);
      } catch (error) {
        compiled = error instanceof Error ? error.message : String(error);
      }
      if (this.#compiled.size >= 1000) this.#compiled.clear(); // edits come and go; stay bounded
      this.#compiled.set(expression, compiled);
    }
    return compiled;
  }

  /** Why a scheduled flow in force cannot run: croner refuses its schedule, or no checkout is covered. */
  #inactive(flow: FlowConfig, scope: string): string | undefined {
    const schedule = flow.trigger.schedule;
    if (typeof schedule !== "string") return undefined;
    const cron = this.#cron(schedule);
    if (typeof cron === "string") return cron;
    const locations = this.#o.locations.list().map((l) => l.name);
    if (schedulePlaces({ flow, scope }, locations, this.#o.worktrees.list()).length === 0) {
      return "no checkout on the box matches its where (location, branch)";
    }
    return undefined;
  }
}
