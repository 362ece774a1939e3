/**
 * A small unbounded async channel: producers `push`, one consumer iterates. It bridges callback
 * output (a child's stdout, event listeners) to the async generators the API streams from.
 *
 * @module
 */

/** An async-iterable queue closed by its producer. */
export class Channel<T> implements AsyncIterable<T> {
  #items: T[] = [];
  #waiting: ((result: IteratorResult<T>) => void) | null = null;
  #closed = false;

  /** Adds an item (ignored once closed). */
  push(item: T): void {
    if (this.#closed) return;
    if (this.#waiting) {
      const resolve = this.#waiting;
      this.#waiting = null;
      resolve({ value: item, done: false });
    } else this.#items.push(item);
  }

  /** Ends the channel once the buffered items are read. */
  close(): void {
    this.#closed = true;
    if (this.#waiting && !this.#items.length) {
      const resolve = this.#waiting;
      this.#waiting = null;
      resolve({ value: undefined, done: true });
    }
  }

  /** Items buffered and not yet read. */
  get size(): number {
    return this.#items.length;
  }

  [Symbol.asyncIterator](): AsyncIterator<T> {
    return {
      next: () => {
        if (this.#items.length) return Promise.resolve({ value: this.#items.shift()!, done: false });
        if (this.#closed) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => this.#waiting = resolve);
      },
      return: () => {
        this.close();
        this.#items = [];
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }
}
