/**
 * The merged event stream: every online box's events, copied into the agent's own journal with
 * `box` set, beside the laptop's own events. Each box is followed from the last event id the agent
 * stored for it, so a reconnect (or an agent restart) misses nothing the box's journal still holds,
 * and laptop clients resume from the agent's journal with `Last-Event-ID`. A box paired again is the same
 * box to the merge (its CA's fingerprint): paired again in place it keeps its name and cursor; forgotten,
 * its cursor is kept under the fingerprint and taken up again when that CA is paired anew, so none of its
 * events is copied twice (re-adding a box once replayed its journal: every hook ran twice, issue 33).
 *
 * Events that arrive together are journaled together: one transaction holds a turn's batch of every
 * box and each box's cursor after it, so the two never disagree (a crash re-fetches the batch, it never
 * skips or repeats one). A commit per event capped the merge near 1,500 events a second on a small
 * machine. A commit per box and turn was still 37% of the agent's busy samples with 5 boxes at 1,000
 * events/s each (`bench/events.ts` on a shared machine, `--cpu-prof`: `BEGIN`/`COMMIT` and the inserts);
 * one per turn for all boxes halved the agent's system calls per event (strace: 3.2 → 1.5).
 *
 * @module
 */
import { DockError } from "../client/errors.ts";
import type { DockEvent } from "../client/wire.ts";
import { type Clock, sleep } from "../core/clock.ts";
import type { EventBus, JournalAnnounce } from "../core/events.ts";
import { errorText, type Log } from "../core/log.ts";
import type { Store } from "../core/store.ts";
import { afterTurn } from "../core/turn.ts";
import type { Boxes } from "./boxes.ts";

const SCHEMA = `CREATE TABLE IF NOT EXISTS box_cursors (box TEXT PRIMARY KEY, last_id INTEGER NOT NULL);`;
/**
 * The prefix of a forgotten TLS box's cursor, kept under its CA's fingerprint (not a box name: names
 * have no `:`): a box forgotten and paired again resumes from it, so no event of it arrives twice.
 */
const KEPT = "fp:";
/** The most events one transaction journals; more wait for the next. */
const MAX_BATCH = 500;
/**
 * The most bytes of event data (as JSON) one batch holds: full, it is journaled at once. Without it a
 * batch of 500 events of 64 KiB (a box's bound) would have been 32 MiB held at a time.
 */
export const MAX_BATCH_BYTES = 1024 * 1024;

/** A box's events of the turn's batch, and the follow they came on. */
interface Pending {
  events: { event: DockEvent; json: string }[];
  /** The box's follow: aborted once the box is removed. */
  signal: AbortSignal;
  /** The stream they came on: aborted when they could not be journaled, so it is followed again. */
  stream: AbortController;
}

/** Seams of {@linkcode EventMerge}. */
export interface EventMergeOptions {
  /** Paces the pause between a broken stream and the next. */
  clock: Clock;
  /**
   * Runs `fn` at the end of the current turn, where a partial batch is journaled; returns what cancels
   * it. @default {afterTurn} (core/turn.ts: a zero-delay timer waited ~2 ms for the timers' tick)
   */
  turn?: (fn: () => void) => () => void;
  /** Where a box's stream that could not be journaled is reported. */
  log: Log;
}

/** Follows every box's event stream into the agent's bus. */
export class EventMerge {
  #store: Store;
  #bus: EventBus;
  #boxes: Boxes;
  #clock: Clock;
  #turn: (fn: () => void) => () => void;
  #log: Log;
  #followers = new Map<string, AbortController>();
  #unsubscribe?: () => void;
  /** What arrived since the last turn of the event loop, per box: journaled in one go on the next. */
  #batch = new Map<string, Pending>();
  #batchEvents = 0;
  #batchBytes = 0;
  /** Cancels the end-of-turn flush, while one is due. */
  #cancelFlush: (() => void) | undefined;

  constructor(store: Store, bus: EventBus, boxes: Boxes, options: EventMergeOptions) {
    this.#store = store;
    this.#bus = bus;
    this.#boxes = boxes;
    this.#clock = options.clock;
    this.#turn = options.turn ?? afterTurn;
    this.#log = options.log;
    store.db.exec(SCHEMA);
  }

  /** Starts following every known box, and boxes added later. */
  start(): void {
    for (const box of this.#boxes.list()) this.#follow(box.name);
    this.#unsubscribe = this.#bus.subscribe((event) => {
      const box = typeof event.data?.box === "string" ? event.data.box : undefined;
      if (!box || event.box) return;
      const fp = typeof event.data?.fp === "string" ? event.data.fp : undefined;
      if (event.type === "box.added") {
        // The same box (its CA) paired again: followed from where it was left, not from its first event.
        if (fp) this.#move(`${KEPT}${fp}`, box);
        this.#follow(box);
      }
      if (event.type === "box.removed") {
        this.#followers.get(box)?.abort();
        this.#followers.delete(box);
        if (fp) this.#move(box, `${KEPT}${fp}`);
        else this.#store.run("DELETE FROM box_cursors WHERE box = ?", box);
      }
    });
  }

  /** Stops following. */
  close(): void {
    this.#unsubscribe?.();
    for (const controller of this.#followers.values()) controller.abort();
  }

  #follow(name: string): void {
    if (this.#followers.has(name)) return;
    const controller = new AbortController();
    this.#followers.set(name, controller);
    this.#loop(name, controller.signal).catch((error) =>
      this.#log.error(`events of ${name}: ${errorText(error)}`)
    );
  }

  async #loop(name: string, signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      if (!this.#boxes.online(name)) {
        await this.#whenOnline(name, signal);
        continue;
      }
      const stream = new AbortController();
      const stop = () => stream.abort();
      signal.addEventListener("abort", stop, { once: true });
      const unwatch = this.#boxes.watch(name, (online) => online || stream.abort());
      try {
        for await (
          const event of this.#boxes.client(name).events({ after: this.#cursor(name), signal: stream.signal })
        ) {
          this.#add(name, { signal, stream }, event);
        }
      } catch (error) {
        this.#flush();
        if (error instanceof DockError && error.code === "after_last_event" && !signal.aborted) {
          // The box's journal is behind the cursor: its database was made anew (ids start again from
          // 1), so all it holds is new here. Asking from the cursor again would be refused for good.
          this.#log.warn(
            `events of ${name}: ${error.message}; its journal was reset: copying it from the start`,
          );
          this.#store.run("UPDATE box_cursors SET last_id = 0 WHERE box = ?", name);
          continue;
        }
        // The stream broke: let the health check decide whether the box is still there.
        if (!signal.aborted) await this.#boxes.check(name);
      } finally {
        // Journaled before the next follow reads the cursor.
        this.#flush();
        unwatch();
        signal.removeEventListener("abort", stop);
      }
      if (!signal.aborted) await sleep(this.#clock, 250, signal).catch(() => {});
    }
  }

  /** Adds a box's event to the turn's batch; a full batch (in events or bytes) is journaled at once. */
  #add(name: string, follow: Omit<Pending, "events">, event: DockEvent): void {
    // Measured once here; the journal takes the same JSON.
    const json = JSON.stringify(event.data ?? {});
    let pending = this.#batch.get(name);
    // Events of an earlier stream of the box go first (its end flushes them; this is only a guard).
    if (pending && pending.stream !== follow.stream) this.#flush();
    pending = this.#batch.get(name);
    if (!pending) this.#batch.set(name, pending = { ...follow, events: [] });
    pending.events.push({ event, json });
    this.#batchEvents++;
    this.#batchBytes += json.length;
    if (this.#batchEvents >= MAX_BATCH || this.#batchBytes >= MAX_BATCH_BYTES) this.#flush();
    else this.#cancelFlush ??= this.#turn(() => this.#flush());
  }

  /** Journals the batch of every box in one transaction, with each box's cursor after its events. */
  #flush(): void {
    this.#cancelFlush?.();
    this.#cancelFlush = undefined;
    // A removed box (its signal) has had its cursor deleted: writing it back would skip its events
    // should a box of that name be added again. Not journaled here, not lost: the box still has them.
    const batch = [...this.#batch].filter(([, pending]) => !pending.signal.aborted);
    this.#batch.clear();
    this.#batchEvents = 0;
    this.#batchBytes = 0;
    if (batch.length === 0) return;
    try {
      this.#copy(batch);
    } catch (error) {
      // Nothing of the batch was kept (one transaction): each box is followed again from its cursor.
      for (const [name, pending] of batch) {
        this.#log.error(
          `events of ${name}: could not journal ${pending.events.length} event(s): ${errorText(error)}`,
        );
        pending.stream.abort();
      }
    }
  }

  #copy(batch: readonly [string, Pending][]): void {
    const announces: JournalAnnounce[] = [];
    const cursors: [string, number][] = [];
    for (const [box, { events }] of batch) {
      for (const { event, json } of events) {
        announces.push({
          type: event.type,
          origin: event.origin,
          data: event.data,
          time: event.time,
          box,
          json,
        });
      }
      const last = events.findLast(({ event }) => event.id !== undefined)?.event.id;
      if (last !== undefined) cursors.push([box, last]);
    }
    this.#bus.publishAll(announces, () => {
      for (const [box, last] of cursors) {
        this.#store.run(
          "INSERT INTO box_cursors (box, last_id) VALUES (?, ?) ON CONFLICT(box) DO UPDATE SET last_id = excluded.last_id",
          box,
          last,
        );
      }
    });
  }

  /** Moves the cursor kept as `from` to `to` (none kept: `to` starts from the box's first event). */
  #move(from: string, to: string): void {
    this.#store.transaction(() => {
      this.#store.run("DELETE FROM box_cursors WHERE box = ?", to);
      this.#store.run("UPDATE box_cursors SET box = ? WHERE box = ?", to, from);
    });
  }

  /** The last box event id copied (0: the box's whole journal on first contact). */
  #cursor(box: string): number {
    return this.#store.get<{ last_id: number }>("SELECT last_id FROM box_cursors WHERE box = ?", box)
      ?.last_id ?? 0;
  }

  #whenOnline(name: string, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      let unwatch = () => {};
      const done = () => {
        unwatch();
        signal.removeEventListener("abort", done);
        resolve();
      };
      try {
        unwatch = this.#boxes.watch(name, (online) => online && done());
      } catch {
        return resolve(); // the box was removed meanwhile
      }
      signal.addEventListener("abort", done, { once: true });
    });
  }
}
