/**
 * The event bus of the box and of the laptop. Every event is written to a journal in the store before
 * subscribers see it, so a client resuming with `Last-Event-ID` misses nothing the journal still holds,
 * across restarts too. Subscribers are called synchronously and must not block.
 *
 * The journal is bounded in events and in bytes (the oldest go first), an event's `data` is bounded
 * (64 KiB), and the database gives freed pages back (`auto_vacuum = INCREMENTAL`): 5,000 announcements
 * of 100 KB once grew `dockd.db` to 1 GB for good.
 *
 * @module
 */
import { DockError } from "../client/errors.ts";
import type { DockEvent, EventAnnounce } from "../client/wire.ts";
import { positiveFromEnv } from "./knobs.ts";
import { errorText, type Log, STDERR_LOG } from "./log.ts";
import type { Store } from "./store.ts";
import { afterTurn } from "./turn.ts";

// The journal; `box` (added later) is set on events the laptop merged from a box.
const JOURNAL_SCHEMA = `
CREATE TABLE IF NOT EXISTS events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  type TEXT NOT NULL,
  time TEXT NOT NULL,
  origin TEXT,
  data TEXT
);
`;

/** The most an event's `data` may take, as JSON: larger announcements are refused (413). */
export const MAX_EVENT_DATA = 64 * 1024;
/** Events the journal keeps by default. */
export const JOURNAL_EVENTS = 10_000;
/** Bytes the journal keeps by default (the events' JSON; SQLite's own overhead comes on top). */
export const JOURNAL_BYTES = 32 * 1024 * 1024;
/**
 * Slack, so the journal is not pruned at every event: past its byte bound it is cut to 90% of it; past
 * its event bound by a tenth, back to the bound (it always holds at least `journalSize` when it can).
 */
const SLACK = 0.1;

/**
 * The journal's bounds from `DOCK_JOURNAL_EVENTS` and `DOCK_JOURNAL_BYTES` (unset: the defaults), for
 * the box's and the laptop's bus alike.
 */
export function journalBoundsFromEnv(
  env: { get(key: string): string | undefined } = Deno.env,
): Pick<EventBusOptions, "journalSize" | "journalBytes"> {
  return {
    journalSize: positiveFromEnv("DOCK_JOURNAL_EVENTS", env),
    journalBytes: positiveFromEnv("DOCK_JOURNAL_BYTES", env),
  };
}

/**
 * A journaled event as its stored parts, its data still the JSON bytes the journal holds: what a
 * replay sends on without parsing (see {@linkcode EventBus.sinceRaw}).
 */
export interface RawEvent {
  id: number;
  type: string;
  time: string;
  origin: string | null;
  box: string | null;
  /** The data's JSON as text, when it is small (below {@linkcode RAW_TEXT_BELOW} with its envelope). */
  text: string | null;
  /** The data's JSON as UTF-8 bytes, when it is large. Both null: the row has none. */
  data: Uint8Array | null;
}

/**
 * Events smaller than this (their JSON with type and origin) come from {@linkcode EventBus.sinceRaw}
 * as text, larger ones as bytes: a string is the cheaper of the two to make into a frame, but a large
 * one lives on the JavaScript heap.
 */
export const RAW_TEXT_BELOW = 16 * 1024;

/**
 * Bytes of announced events ({@linkcode EventBus.announce}) held for one transaction: full, the batch
 * is journaled at once instead of at the end of the turn.
 */
export const ANNOUNCE_BATCH_BYTES = 256 * 1024;

/** An announced event waiting for its batch's transaction. */
interface Pending {
  announce: EventAnnounce;
  json: string;
  size: number;
  resolve(event: DockEvent): void;
  reject(error: unknown): void;
}

/** An event to journal, with its data's JSON when the caller has it already (the merge measures it). */
export type JournalAnnounce = EventAnnounce & { json?: string };

/** A listener of published events. */
export type EventListener = (event: DockEvent) => void;

/** Options of {@linkcode EventBus}. */
export interface EventBusOptions {
  /** Events kept in the journal. @default {JOURNAL_EVENTS} */
  journalSize?: number;
  /** Bytes of event JSON kept in the journal. @default {JOURNAL_BYTES} */
  journalBytes?: number;
  /** Clock, for tests. @default {() => new Date()} */
  now?: () => Date;
  /** Told of a subscriber that threw (the others still get the event). @default {STDERR_LOG} */
  log?: Log;
}

/** Publishes events to the journal and to live subscribers. */
export class EventBus {
  #store: Store;
  #listeners = new Set<EventListener>();
  #journalSize: number;
  #journalBytes: number;
  #now: () => Date;
  /** What the journal holds now, kept here so a publish never has to count it. */
  #count = 0;
  #bytes = 0;
  /** Announced events not journaled yet, and their bytes. */
  #pending: Pending[] = [];
  #pendingBytes = 0;
  /** Cancels the end-of-turn flush, while one is due. */
  #cancelFlush: (() => void) | undefined;
  #log: Log;

  constructor(store: Store, options: EventBusOptions = {}) {
    this.#store = store;
    store.db.exec(JOURNAL_SCHEMA);
    store.addColumn("events", "box TEXT");
    store.addColumn("events", "size INTEGER NOT NULL DEFAULT 0");
    // Rows journaled before sizes were kept count by their JSON.
    store.run("UPDATE events SET size = length(data) + length(type) WHERE size = 0");
    this.#journalSize = options.journalSize ?? JOURNAL_EVENTS;
    this.#journalBytes = options.journalBytes ?? JOURNAL_BYTES;
    this.#now = options.now ?? (() => new Date());
    this.#log = options.log ?? STDERR_LOG;
    const held = store.get<{ count: number; bytes: number }>(
      "SELECT count(*) AS count, coalesce(sum(size), 0) AS bytes FROM events",
    );
    this.#count = held?.count ?? 0;
    this.#bytes = held?.bytes ?? 0;
    this.#prune();
  }

  /**
   * Journals and delivers an event; returns it with its id and time. Data larger than
   * {@linkcode MAX_EVENT_DATA} is refused with a 413 naming the limit.
   */
  publish(announce: EventAnnounce): DockEvent {
    this.#flushBefore();
    const event = this.#journal(announce, "refuse");
    this.#deliver(event);
    return event;
  }

  /**
   * Journals an event with the others announced in the same turn of the event loop, in one transaction
   * (at most {@linkcode ANNOUNCE_BATCH_BYTES} a batch), then delivers them in order; resolves with it.
   * Data larger than {@linkcode MAX_EVENT_DATA} is refused at once (413). A commit per event was a
   * fifth of what `dockd` spent taking 1,000 `POST events` a second.
   */
  announce(announce: EventAnnounce): Promise<DockEvent> {
    const json = this.#measure(announce.data ?? {}, "refuse").json;
    const size = json.length + announce.type.length + (announce.origin?.length ?? 0);
    const { promise, resolve, reject } = Promise.withResolvers<DockEvent>();
    this.#pending.push({ announce, json, size, resolve, reject });
    this.#pendingBytes += size;
    if (this.#pendingBytes >= ANNOUNCE_BATCH_BYTES) this.#flushBefore();
    if (this.#pending.length) this.#cancelFlush ??= afterTurn(() => this.flush());
    return promise;
  }

  /** Journals and delivers what {@linkcode announce} holds now (nothing: nothing happens). */
  flush(): void {
    this.#cancelFlush?.();
    this.#cancelFlush = undefined;
    if (this.#pending.length === 0) return;
    const batch = this.#pending;
    this.#pending = [];
    this.#pendingBytes = 0;
    let events: DockEvent[];
    try {
      events = this.#store.transaction(() =>
        batch.map(({ announce, json, size }) => this.#insert(announce, announce.data ?? {}, json, size))
      );
    } catch (error) {
      // Nothing of the batch was kept (one transaction): each announcer hears why.
      for (const pending of batch) pending.reject(error);
      return;
    }
    for (const event of events) this.#deliver(event);
    for (const [i, pending] of batch.entries()) pending.resolve(events[i]);
  }

  /**
   * Announced before: journaled before, so ids keep the order events came in. Not inside a caller's
   * transaction: announced events would commit (or roll back) with writes not theirs, after their
   * announcers heard they were kept; they keep their turn's batch and come after this one.
   */
  #flushBefore(): void {
    if (this.#pending.length && !this.#store.db.isTransaction) this.flush();
  }

  /** What the journal holds: events and bytes of their JSON. */
  journal(): { events: number; bytes: number } {
    return { events: this.#count, bytes: this.#bytes };
  }

  /**
   * Journals several events in one transaction, together with `alongside` (the caller's own writes that
   * must commit with them, or not at all), then delivers them in order. One commit per event is what
   * limits how many events a second the journal takes.
   */
  publishAll(announces: readonly JournalAnnounce[], alongside?: () => void): DockEvent[] {
    this.#flushBefore();
    const events = this.#store.transaction(() => {
      // Copies of another journal's events (the laptop's merge) are never refused: an oversized one
      // keeps its envelope, so a follower cannot get stuck on it.
      const journaled = announces.map((announce) => this.#journal(announce, "truncate"));
      alongside?.();
      return journaled;
    });
    for (const event of events) this.#deliver(event);
    return events;
  }

  /** Adds a listener; returns the function that removes it. */
  subscribe(listener: EventListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Journaled events after `id`, oldest first. */
  since(id: number, limit = this.#maxEvents()): DockEvent[] {
    return this.#store
      .all<
        { id: number; type: string; time: string; origin: string | null; data: string; box: string | null }
      >(
        "SELECT id, type, time, origin, data, box FROM events WHERE id > ? ORDER BY id LIMIT ?",
        id,
        limit,
      )
      .map((row) => {
        const event: DockEvent = { id: row.id, type: row.type, time: row.time, data: JSON.parse(row.data) };
        if (row.box) event.box = row.box;
        if (row.origin) event.origin = row.origin;
        return event;
      });
  }

  /**
   * Journaled events after `id`, oldest first, as stored: the data is read as bytes and never parsed,
   * so a replay of large events keeps them off the JavaScript heap (64 KiB strings parsed, encoded
   * again and held across awaits grew V8's young generation to its 64 MiB maximum, for good).
   */
  sinceRaw(id: number, limit: number): RawEvent[] {
    return this.#store.all<RawEvent>(
      `SELECT id, type, time, origin, box, CASE WHEN size < ?1 THEN data END AS text,
       CASE WHEN size >= ?1 THEN CAST(data AS BLOB) END AS data FROM events WHERE id > ?2 ORDER BY id LIMIT ?3`,
      RAW_TEXT_BELOW,
      id,
      limit,
    );
  }

  /**
   * The id of the newest event ever journaled (0 when none): the table's AUTOINCREMENT sequence, so a
   * journal trimmed to nothing still knows the ids it gave (`max(id)` would be 0, and a client resuming
   * from an id it was given would look ahead of it).
   */
  lastId(): number {
    return this.#store.get<{ id: number | null }>(
      `SELECT max(coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0),
              coalesce((SELECT max(id) FROM events), 0)) AS id`,
    )?.id ?? 0;
  }

  #journal(announce: JournalAnnounce, oversized: "refuse" | "truncate"): DockEvent {
    const { data, json } = this.#measure(announce.data ?? {}, oversized, announce.json);
    const size = json.length + announce.type.length + (announce.origin?.length ?? 0);
    return this.#insert(announce, data, json, size);
  }

  /** An event's data and its JSON, within {@linkcode MAX_EVENT_DATA}: refused (413) or truncated. */
  #measure(
    data: Record<string, unknown>,
    oversized: "refuse" | "truncate",
    known?: string,
  ): { data: Record<string, unknown>; json: string } {
    const json = known ?? JSON.stringify(data);
    // A character is at most three bytes of UTF-8: most events need no encoding to be measured.
    const bytes = json.length * 3 > MAX_EVENT_DATA ? new TextEncoder().encode(json).length : json.length;
    if (bytes <= MAX_EVENT_DATA) return { data, json };
    if (oversized === "refuse") {
      throw new DockError(
        "event_too_large",
        `data: an event's data must be at most ${MAX_EVENT_DATA} bytes as JSON, got ${bytes}`,
        { status: 413 },
      );
    }
    const truncated = { truncated: true, bytes };
    return { data: truncated, json: JSON.stringify(truncated) };
  }

  #insert(announce: EventAnnounce, data: Record<string, unknown>, json: string, size: number): DockEvent {
    const time = announce.time ?? this.#now().toISOString();
    const { lastInsertRowid } = this.#store.run(
      "INSERT INTO events (type, time, origin, data, box, size) VALUES (?, ?, ?, ?, ?, ?)",
      announce.type,
      time,
      announce.origin ?? null,
      json,
      announce.box ?? null,
      size,
    );
    const event: DockEvent = { id: lastInsertRowid, type: announce.type, time, data };
    if (announce.box) event.box = announce.box;
    if (announce.origin) event.origin = announce.origin;
    this.#count++;
    this.#bytes += size;
    if (this.#count > this.#maxEvents() || this.#bytes > this.#journalBytes) this.#prune();
    return event;
  }

  #deliver(event: DockEvent): void {
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch (error) {
        this.#log.error(`event listener failed on ${event.type}: ${errorText(error)}`);
      }
    }
  }

  #maxEvents(): number {
    return this.#journalSize + Math.max(1, Math.floor(this.#journalSize * SLACK));
  }

  /** Drops the oldest events until the journal is back within its bounds (see {@linkcode SLACK}). */
  #prune(): void {
    if (this.#count <= this.#maxEvents() && this.#bytes <= this.#journalBytes) return;
    const keepEvents = this.#journalSize;
    const keepBytes = Math.floor(this.#journalBytes * (1 - SLACK));
    let cutoff = 0;
    let events = this.#count;
    let bytes = this.#bytes;
    // Read the oldest ids and sizes a page at a time: never the whole journal in memory.
    while (events > keepEvents || bytes > keepBytes) {
      const page = this.#store.all<{ id: number; size: number }>(
        "SELECT id, size FROM events WHERE id > ? ORDER BY id LIMIT 500",
        cutoff,
      );
      if (page.length === 0) break;
      for (const row of page) {
        if (events <= keepEvents && bytes <= keepBytes) break;
        cutoff = row.id;
        events--;
        bytes -= row.size;
      }
    }
    this.#store.run("DELETE FROM events WHERE id <= ?", cutoff);
    this.#count = events;
    this.#bytes = bytes;
    this.#store.releaseFreePages();
  }
}
