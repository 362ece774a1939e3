/**
 * One at a time per key, within one process: work for a key starts once the work before it for that key
 * is over (done or failed). What the laptop agent uses where two requests at once would write the same
 * files: two builds of one target's package into one folder, two `dock add ssh` installing on one machine.
 *
 * @module
 */

/** Turns per key: {@linkcode Turns.take} waits for the key's turn. */
export class Turns {
  /** Per key, the end of the last turn taken (a turn waits for the one before it). */
  #last = new Map<string, Promise<void>>();

  /** Whether a turn for `key` is taken (running, or waiting for one that runs). */
  busy(key: string): boolean {
    return this.#last.has(key);
  }

  /** Waits for `key`'s turn; resolves with the function that ends it (calling it again does nothing). */
  async take(key: string): Promise<() => void> {
    const before = this.#last.get(key);
    const { promise: over, resolve: end } = Promise.withResolvers<void>();
    this.#last.set(key, over);
    over.then(() => {
      if (this.#last.get(key) === over) this.#last.delete(key);
    });
    await before;
    return end;
  }

  /** Runs `work` in `key`'s turn. */
  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const end = await this.take(key);
    try {
      return await work();
    } finally {
      end();
    }
  }
}
