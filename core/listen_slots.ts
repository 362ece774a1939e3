/**
 * The connections a guarded listener (`listen.ts`) holds, counted in all and per peer address: what its
 * caps are checked against, and what a shutdown closes.
 *
 * @module
 */

/** One accepted connection from a stranger, however many sockets serve it. */
export interface Slot {
  peer: Deno.NetAddr;
  /** Closes every socket of the connection and gives its place back. */
  close(): void;
}

/** Something a slot closes with it. */
export interface Closable {
  close(): void;
}

/** Every open connection of one listener. */
export class Slots {
  #slots = new Set<Slot>();
  #perPeer = new Map<string, number>();
  /** The listener's counter of open connections, kept by the slots. */
  #counter: { open: number };

  constructor(counter: { open: number }) {
    this.#counter = counter;
  }

  /** Whether one more connection from `peer` would pass `maxConnections` in all or `maxPerPeer` from it. */
  full(peer: Deno.NetAddr, limits: { maxConnections: number; maxPerPeer: number }): boolean {
    return this.#counter.open >= limits.maxConnections ||
      (this.#perPeer.get(peer.hostname) ?? 0) >= limits.maxPerPeer;
  }

  /** Takes a place for a connection from `peer`, served by `sockets` (more may be pushed later). */
  take(peer: Deno.NetAddr, sockets: Closable[]): Slot {
    let done = false;
    const slot: Slot = {
      peer,
      close: () => {
        if (done) return;
        done = true;
        this.#slots.delete(slot);
        this.#counter.open--;
        const left = (this.#perPeer.get(peer.hostname) ?? 1) - 1;
        if (left > 0) this.#perPeer.set(peer.hostname, left);
        else this.#perPeer.delete(peer.hostname);
        for (const socket of sockets) {
          try {
            socket.close();
          } catch { /* already closed */ }
        }
      },
    };
    this.#slots.add(slot);
    this.#counter.open++;
    this.#perPeer.set(peer.hostname, (this.#perPeer.get(peer.hostname) ?? 0) + 1);
    return slot;
  }

  /** Whether `slot` is still open. */
  has(slot: Slot): boolean {
    return this.#slots.has(slot);
  }

  /** Closes every connection (the listener shuts down). */
  closeAll(): void {
    for (const slot of [...this.#slots]) slot.close();
  }
}
