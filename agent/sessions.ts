/**
 * Every box's sessions in one read (`GET /v1/sessions`): what the app's board loads instead of a list
 * per box through the relay (200 boxes: ~1.7 s of 200 relayed lists, 6 at a time, before the board could
 * draw). The agent keeps each box's last list and reads it again only when it may have changed: an event
 * of that box that changes sessions (the merge copies every box event onto the bus, and a subscriber is
 * told synchronously, before any client hears of it), the box coming online again, or the list growing
 * older than {@linkcode MAX_AGE_MS} (a safety net: an event stream can be down while the box answers).
 *
 * A list only older than {@linkcode MAX_AGE_MS} is answered as kept (marked `stale`) and read again
 * behind the answer: only a box never read, or one an event changed, is waited on.
 *
 * A list is kept as the JSON text the answer is built from (parsed once to check it is an array of
 * objects, then stringified again): 2,000 sessions cost one concatenation per read, not a stringify of
 * each, and a string holds a box's list in ~1 byte a character. Bounded: a box's list above
 * {@linkcode MAX_LIST_BYTES} is refused (its error shown, nothing kept), a read not done within
 * {@linkcode READ_MS} (its wait for a place included) gives up, and at most {@linkcode READS_AT_ONCE}
 * boxes are read at a time.
 *
 * @module
 */
import type { DockEvent } from "../client/wire.ts";
import type { KeptStatus } from "./box_status.ts";
import { type Clock, timeoutSignal } from "../core/clock.ts";
import { notFound } from "../client/errors.ts";

/** A box's list of sessions is refused above this (10 sessions are ~4 KB). */
export const MAX_LIST_BYTES = 1024 * 1024;
/** A box's list is read again when older than this, events or not. */
export const MAX_AGE_MS = 60_000;
/** A box that has not answered its list within this is shown with its last known one. */
export const READ_MS = 3000;
/**
 * Boxes read at once: 200 boxes' first reads (after the agent starts) then open at most 8 TLS
 * connections at a time rather than 200, each a handshake on the agent's one thread.
 */
export const READS_AT_ONCE = 8;

/** What the index needs of the boxes. */
export interface SessionIndexBoxes {
  /** Every box's connection as kept between changes (`Boxes.statusParts`), sorted by name. */
  status(): readonly KeptStatus[];
  /** One box's `GET sessions`, as the box's JSON text (at most `maxBytes`). */
  read(box: string, options: { signal: AbortSignal; maxBytes: number }): Promise<string>;
}

/** Options of {@linkcode SessionIndex}. */
export interface SessionIndexOptions {
  boxes: SessionIndexBoxes;
  /** Where box events arrive (the agent's bus); returns what stops it. */
  subscribe(listener: (event: DockEvent) => void): () => void;
  clock: Clock;
}

interface Entry {
  /** The box's sessions as JSON text, "[]" until first read. */
  json: string;
  /** When they were read (ms on the clock), 0 if never. */
  readAt: number;
  /** Bumped by every event that may change the list: a read started before it is not fresh. */
  generation: number;
  /** The generation the kept list was read at, -1 if never read. */
  readGeneration: number;
  error: string | null;
  /** The read under way, if any, and the generation it started at. */
  reading?: { generation: number; done: Promise<void> };
  /** The box's part of the answer as last written, and the status and staleness it was written with. */
  part?: { status: string; stale: boolean; text: string };
}

/** Events of a box that change its list of sessions (the app reloads it on the same). */
function changesSessions(type: string): boolean {
  return type.startsWith("session.") || type.startsWith("agent.") || type === "task.created";
}

/** Events of the agent about a box (`data.box`) after which its list is read again. */
const BOX_CHANGES = new Set(["box.online", "box.changed", "box.added"]);

/** The agent's copy of every box's sessions, read again only when stale. */
export class SessionIndex {
  #boxes: SessionIndexBoxes;
  #clock: Clock;
  #entries = new Map<string, Entry>();
  #unsubscribe: () => void;
  #running = 0;
  #queue: (() => void)[] = [];
  /** The last whole answer, and the parts it was joined from. */
  #answer?: { parts: string[]; text: string };

  constructor(options: SessionIndexOptions) {
    this.#boxes = options.boxes;
    this.#clock = options.clock;
    this.#unsubscribe = options.subscribe((event) => this.#heard(event));
  }

  /** Stops following events. */
  close(): void {
    this.#unsubscribe();
  }

  /**
   * Every box's sessions as a JSON array of `BoxSessions` (or only `box`'s: 404 when no box has that
   * name), each box's list read again first if it is stale and the box is online. Each box's part of the
   * answer is kept until its list, its status or its staleness changes, and the whole answer until one
   * part does: 200 boxes' 2,000 sessions are then no copy, stringify or join per read (~0.8 MB).
   */
  async json(box?: string): Promise<string> {
    const all = this.#boxes.status();
    // Forgotten boxes' lists go here, with no bookkeeping of their own.
    if (box === undefined && this.#entries.size > 0) {
      const known = new Set(all.map((status) => status.name));
      for (const name of this.#entries.keys()) if (!known.has(name)) this.#entries.delete(name);
    }
    const statuses = box === undefined ? all : all.filter((status) => status.name === box);
    if (statuses.length === 0 && box !== undefined) throw notFound("box", box);
    // Waited on: the boxes never read and those an event has changed since (none, most reads). A list
    // only older than MAX_AGE_MS is sent as kept and read again behind the answer: after a quiet minute
    // the board's load would otherwise wait on every box again (200 boxes, 8 at a time).
    const reads: Promise<void>[] = [];
    for (const status of statuses) {
      const entry = this.#entries.get(status.name);
      if (!status.online || (entry && this.#isFresh(entry))) continue;
      if (entry && entry.readGeneration === entry.generation) this.#fresh(status.name).catch(() => {});
      else reads.push(this.#fresh(status.name));
    }
    if (reads.length > 0) await Promise.all(reads);
    const parts = statuses.map((status) => this.#part(status));
    if (box !== undefined) return `[${parts.join(",")}]`;
    const last = this.#answer;
    if (last && last.parts.length === parts.length && last.parts.every((part, i) => part === parts[i])) {
      return last.text;
    }
    this.#answer = { parts, text: `[${parts.join(",")}]` };
    return this.#answer.text;
  }

  /** A box's `BoxSessions` as JSON, the one kept while its list, status and staleness stay the same. */
  #part(status: KeptStatus): string {
    const entry = this.#entries.get(status.name);
    const stale = !status.online || !entry || !this.#isFresh(entry);
    const kept = entry?.part;
    if (kept && kept.status === status.json && kept.stale === stale) return kept.text;
    const read = entry?.readAt ? new Date(entry.readAt).toISOString() : null;
    const text = `{"box":${status.json},"sessions":${entry?.json ?? "[]"},"read":${
      JSON.stringify(read)
    },"stale":${stale},"error":${JSON.stringify(entry?.error ?? null)}}`;
    if (entry) entry.part = { status: status.json, stale, text };
    return text;
  }

  #heard(event: DockEvent): void {
    const name = event.box ?? (BOX_CHANGES.has(event.type) ? event.data?.box : undefined);
    if (typeof name !== "string") return;
    if (event.box !== undefined && !changesSessions(event.type)) return;
    const entry = this.#entries.get(name);
    if (entry) entry.generation++;
    // A box that came online is read ahead: the board's next load finds its list kept.
    if (event.type === "box.online") this.#fresh(name).catch(() => {});
  }

  #isFresh(entry: Entry): boolean {
    return entry.readGeneration === entry.generation && this.#clock.now() - entry.readAt < MAX_AGE_MS;
  }

  /** Reads the box's list unless the kept one is fresh (joining a read under way that would be). */
  async #fresh(name: string): Promise<void> {
    let entry = this.#entries.get(name);
    if (!entry) {
      entry = { json: "[]", readAt: 0, generation: 0, readGeneration: -1, error: null };
      this.#entries.set(name, entry);
    }
    // A read started before the latest change may have read the list before it: one more after it,
    // at most twice (a box announcing changes without end is shown as last read).
    for (let tries = 0; tries < 2 && !this.#isFresh(entry); tries++) {
      if (entry.reading && entry.reading.generation !== entry.generation) await entry.reading.done;
      await this.#start(name, entry).done;
      if (entry.error) return;
    }
  }

  #start(name: string, entry: Entry): { generation: number; done: Promise<void> } {
    if (entry.reading && entry.reading.generation === entry.generation) return entry.reading;
    const generation = entry.generation;
    const reading = { generation, done: this.#read(name, entry, generation) };
    entry.reading = reading;
    reading.done.finally(() => {
      if (entry.reading === reading) entry.reading = undefined;
    });
    return reading;
  }

  async #read(name: string, entry: Entry, generation: number): Promise<void> {
    // The deadline counts the wait for a place too: boxes that hang hold the whole answer READ_MS at most.
    const deadline = timeoutSignal(this.#clock, READ_MS);
    await this.#slot();
    try {
      const text = await this.#boxes.read(name, { signal: deadline.signal, maxBytes: MAX_LIST_BYTES });
      entry.json = checkedList(text);
      entry.readAt = this.#clock.now();
      entry.readGeneration = generation;
      entry.error = null;
    } catch (error) {
      entry.error = (error as Error).message.split("\n")[0].slice(0, 300);
    } finally {
      entry.part = undefined;
      deadline.cancel();
      this.#release();
    }
  }

  /** Takes one of the {@linkcode READS_AT_ONCE} places, waiting for one to be handed over when full. */
  async #slot(): Promise<void> {
    if (this.#running < READS_AT_ONCE) {
      this.#running++;
      return;
    }
    await new Promise<void>((resolve) => this.#queue.push(resolve));
  }

  /** Hands the place to the next read waiting, or frees it. */
  #release(): void {
    const next = this.#queue.shift();
    if (next) next();
    else this.#running--;
  }
}

/** A box's `GET sessions` text as JSON again, after checking it is an array of objects with a name. */
function checkedList(text: string): string {
  const list: unknown = JSON.parse(text);
  if (
    !Array.isArray(list) ||
    !list.every((s) => s !== null && typeof s === "object" && typeof s.name === "string")
  ) {
    throw new Error("the box's list of sessions is not a list of sessions");
  }
  return JSON.stringify(list);
}
