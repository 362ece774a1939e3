/**
 * Work taken off an event bus's publishing path: items are queued as they come (the bus only pushes)
 * and handed to an async handler one at a time, in order. Bounded: past `backlog` waiting, the oldest is
 * dropped, counted, and said once. The hooks and the flows engine follow the box's bus through it.
 *
 * @module
 */
import { errorText, type Log } from "../core/log.ts";

/** Options of {@linkcode SerialQueue}. */
export interface SerialQueueOptions<T> {
  /** Handles one item; a throw is logged and the next item goes on. */
  handle(item: T): Promise<void>;
  /** Items waiting before the oldest are dropped. */
  backlog: number;
  /** Who is queueing, for the log (`hooks`, `flows`). */
  name: string;
  /** What names an item in the log. */
  describe?(item: T): string;
  /** Told of a dropped backlog and of an item the handler threw on. */
  log: Log;
}

/** A bounded queue drained by one async handler at a time. */
export class SerialQueue<T> {
  #o: SerialQueueOptions<T>;
  #items: T[] = [];
  #running = false;
  #dropped = 0;

  constructor(options: SerialQueueOptions<T>) {
    this.#o = options;
  }

  /** Queues an item; returns at once (the handler runs later). */
  push(item: T): void {
    this.#items.push(item);
    if (this.#items.length > this.#o.backlog) {
      // Only when handling cannot keep up (a config read stuck on a slow disk): memory stays bounded.
      this.#items.shift();
      if (this.#dropped++ === 0) {
        this.#o.log.warn(`${this.#o.name}: more than ${this.#o.backlog} events waiting; dropping the oldest`);
      }
    }
    if (!this.#running) this.#drain();
  }

  /** Items waiting (not the one being handled). */
  get waiting(): number {
    return this.#items.length;
  }

  /** Items dropped since the start. */
  get dropped(): number {
    return this.#dropped;
  }

  async #drain(): Promise<void> {
    this.#running = true;
    let item = this.#items.shift()!;
    // Taken now, handled once the publisher's delivery is over: a handler that publishes before its
    // first await would otherwise reach the bus's later listeners ahead of the event being delivered
    // (an SSE stream then drops that event as older than what it already sent).
    await Promise.resolve();
    try {
      for (;;) {
        try {
          await this.#o.handle(item);
        } catch (error) {
          const what = this.#o.describe?.(item) ?? "an item";
          this.#o.log.error(`${this.#o.name}: cannot handle ${what}: ${errorText(error)}`);
        }
        if (!this.#items.length) break;
        item = this.#items.shift()!;
      }
    } finally {
      this.#running = false;
    }
  }
}
