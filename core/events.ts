/**
 * The box's event bus. Every event is written to a bounded journal in the store before subscribers
 * see it, so a client resuming with `Last-Event-ID` misses nothing the journal still holds, across
 * daemon restarts too. Subscribers are called synchronously and must not block.
 *
 * @module
 */
import type { DockEvent, EventAnnounce } from "../client/wire.ts";
import { z } from "zod";
import type { Store } from "./store.ts";

const EVENT_TYPE = /^[a-z][a-z0-9_-]*(\.[a-z0-9_-]+)*$/;

/** The body of `POST events` on the laptop (spec 2.4 "Event announce"). */
export const EVENT_ANNOUNCE = z.object({
  type: z.string().max(100).regex(EVENT_TYPE, "must be dotted lower-case words such as build.finished"),
  origin: z.string().max(64).optional(),
  data: z.record(z.string(), z.unknown()).optional(),
});

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

/** A listener of published events. */
export type EventListener = (event: DockEvent) => void;

/** Options of {@linkcode EventBus}. */
export interface EventBusOptions {
  /** Events kept in the journal. @default {10000} */
  journalSize?: number;
  /** Clock, for tests. @default {() => new Date()} */
  now?: () => Date;
}

/** Publishes events to the journal and to live subscribers. */
export class EventBus {
  #store: Store;
  #listeners = new Set<EventListener>();
  #journalSize: number;
  #now: () => Date;
  #sincePrune = 0;

  constructor(store: Store, options: EventBusOptions = {}) {
    this.#store = store;
    store.db.exec(JOURNAL_SCHEMA);
    store.addColumn("events", "box TEXT");
    this.#journalSize = options.journalSize ?? 10_000;
    this.#now = options.now ?? (() => new Date());
  }

  /** Journals and delivers an event; returns it with its id and time. */
  publish(announce: EventAnnounce): DockEvent {
    const event = this.#journal(announce);
    this.#deliver(event);
    return event;
  }

  /**
   * Journals several events in one transaction, together with `alongside` (the caller's own writes that
   * must commit with them, or not at all), then delivers them in order. One commit per event is what
   * limits how many events a second the journal takes.
   */
  publishAll(announces: readonly EventAnnounce[], alongside?: () => void): DockEvent[] {
    const events = this.#store.transaction(() => {
      const journaled = announces.map((announce) => this.#journal(announce));
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
  since(id: number, limit = this.#journalSize): DockEvent[] {
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

  /** The id of the newest journaled event (0 when none). */
  lastId(): number {
    return this.#store.get<{ id: number | null }>("SELECT max(id) AS id FROM events")?.id ?? 0;
  }

  #journal(announce: EventAnnounce): DockEvent {
    const time = announce.time ?? this.#now().toISOString();
    const data = announce.data ?? {};
    const { lastInsertRowid } = this.#store.run(
      "INSERT INTO events (type, time, origin, data, box) VALUES (?, ?, ?, ?, ?)",
      announce.type,
      time,
      announce.origin ?? null,
      JSON.stringify(data),
      announce.box ?? null,
    );
    const event: DockEvent = { id: lastInsertRowid, type: announce.type, time, data };
    if (announce.box) event.box = announce.box;
    if (announce.origin) event.origin = announce.origin;
    if (++this.#sincePrune >= 500) this.#prune();
    return event;
  }

  #deliver(event: DockEvent): void {
    for (const listener of this.#listeners) {
      try {
        listener(event);
      } catch (error) {
        console.error(`event listener failed on ${event.type}:`, error);
      }
    }
  }

  #prune(): void {
    this.#sincePrune = 0;
    this.#store.run("DELETE FROM events WHERE id <= ?", this.lastId() - this.#journalSize);
  }
}
