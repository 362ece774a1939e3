/**
 * Lanes: each loaded worker's own connection to the parent (the daemon or the laptop agent), over which
 * its warm calls go and come back. Through the host, a call crosses the host's main thread both ways: a
 * hop, a parse and two thread wake-ups each way, ~0.2 ms of a warm `fetch` on this 2-core machine
 * (measured with a bare three-process model: +0.50 ms over a bare server through the host, +0.33 on a
 * worker's own connection). The host still starts, stops and cancels workers and carries their `ctx`
 * requests and logs.
 *
 * A lane is loopback TCP, not a unix socket: Deno grants a unix socket by its exact path, and a worker
 * that may use a socket's path may also unlink it and listen in its place (and so hear the lanes of the
 * workers that start after it); a port this process holds cannot be taken over. Any local process can
 * dial the port, so a lane proves itself first with a token that only its worker was given
 * (through the host, in its `init`), within {@linkcode LANE_HELLO_MS}, and at most
 * {@linkcode MAX_LANES} connections are open at once. What a lane says is a worker's, and so a plugin's:
 * its owner checks every answer against the calls it sent on that lane.
 *
 * @module
 */
import type { Clock } from "../core/clock.ts";
import type { Log } from "../core/log.ts";
import { acceptLoop, type ListenStats } from "../core/listen.ts";
import { FrameConnection } from "./frames.ts";
import {
  type CallKind,
  type FromLane,
  type LaneTicket,
  MAX_FETCH_BODY,
  MAX_FRAME_BYTES,
  type ToLane,
} from "./protocol.ts";

/** How long a connection has to present its token. */
export const LANE_HELLO_MS = 5000;
/** The longest hello a lane may send (a token is 48 characters). */
export const LANE_HELLO_BYTES = 256;
/** Lanes open at once (every warm worker has one); a connection past them is closed at once. */
export const MAX_LANES = 512;

/** One worker's open lane. */
export interface Lane {
  /** Sends a call (dropped once the lane is closed: the call then waits for its worker's end). */
  send(message: ToLane): void;
  /** What the worker says after its token, until it closes. */
  messages(): AsyncGenerator<FromLane>;
  close(): void;
  readonly closed: boolean;
}

/** The parent's lane listener: hands each lane that proves itself to its ticket's owner. */
export class Lanes {
  #clock: Clock;
  #log: Log;
  #listener: Deno.TcpListener | null = null;
  #tickets = new Map<string, (lane: Lane) => void>();
  #max: number;
  #stopped = false;
  readonly stats: ListenStats = { open: 0, accepted: 0, refused: 0, timedOut: 0, acceptErrors: 0 };

  /** `max`: connections open at once (tests lower it). @default {MAX_LANES} */
  constructor(options: { clock: Clock; log: Log; max?: number }) {
    this.#clock = options.clock;
    this.#log = options.log;
    this.#max = options.max ?? MAX_LANES;
  }

  /** The loopback port lanes dial (listening from the first call on). */
  port(): number {
    if (!this.#listener) {
      this.#listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
      acceptLoop(this.#listener, "plugin lanes", (conn) => this.#admit(conn), {
        stats: this.stats,
        log: (line) => this.#log.warn(line),
        stopped: () => this.#stopped,
      });
    }
    return (this.#listener.addr as Deno.NetAddr).port;
  }

  /**
   * A ticket for the lane of one worker: `onOpen` gets each lane that presents it, until the returned
   * `revoke` forgets it (the worker's epoch ended). A worker the host starts again in the same epoch (after
   * a crash or a cancel) presents it again; the new lane takes the old one's place.
   */
  ticket(onOpen: (lane: Lane) => void): { ticket: LaneTicket; revoke: () => void } {
    const token = crypto.getRandomValues(new Uint8Array(24)).toHex();
    this.#tickets.set(token, onOpen);
    return { ticket: { port: this.port(), token }, revoke: () => this.#tickets.delete(token) };
  }

  /** Stops listening; open lanes are their owners' to close. */
  close(): void {
    this.#stopped = true;
    this.#tickets.clear();
    try {
      this.#listener?.close();
    } catch {
      // already closed
    }
  }

  async #admit(conn: Deno.Conn): Promise<void> {
    if (this.stats.open >= this.#max) {
      this.stats.refused++;
      conn.close();
      return;
    }
    this.stats.open++;
    this.stats.accepted++;
    (conn as Deno.TcpConn).setNoDelay(true);
    const frames = new FrameConnection<FromLane, ToLane>(conn);
    // Until it proves itself, a connection may hold no more than a hello's bytes (at most MAX_LANES of
    // them, each for LANE_HELLO_MS): not a frame of 16 MiB each.
    frames.maxFrameBytes = LANE_HELLO_BYTES;
    const messages = frames.messages();
    const cancelHello = this.#clock.after(LANE_HELLO_MS, () => {
      this.stats.timedOut++;
      frames.close();
    });
    try {
      const first = await messages.next();
      cancelHello();
      const hello = first.value as FromLane | undefined;
      const onOpen = hello?.t === "lane" && typeof hello.token === "string"
        ? this.#tickets.get(hello.token)
        : undefined;
      if (!onOpen) return frames.close();
      frames.maxFrameBytes = MAX_FRAME_BYTES;
      onOpen({
        send: (message) => void frames.send(message),
        messages: () => messages,
        close: () => frames.close(),
        get closed() {
          return frames.closed;
        },
      });
      await frames.done;
    } finally {
      cancelHello();
      frames.close();
      this.stats.open--;
    }
  }
}

/** A worker's answer read from its lane. */
export type LaneResult = Extract<FromLane, { t: "result" }>;

/**
 * The lanes of one host's workers, by worker key, as the module host keeps them per generation: the
 * ticket each worker of an epoch is given, the lane it opened, and what it answered there (handed to
 * `onAnswer`). A lane is used only while its worker's epoch is the current one (`epochOf`).
 */
export class HostLanes {
  #lanes: Lanes;
  #open = new Map<string, { epoch: number; lane: Lane }>();
  #tickets = new Map<string, () => void>();
  #closed = false;
  #onAnswer: (lane: Lane, message: LaneResult) => void;
  #epochOf: (key: string) => number;

  constructor(
    lanes: Lanes,
    onAnswer: (lane: Lane, message: LaneResult) => void,
    epochOf: (key: string) => number,
  ) {
    this.#lanes = lanes;
    this.#onAnswer = onAnswer;
    this.#epochOf = epochOf;
  }

  /** Lanes open. */
  get size(): number {
    return this.#open.size;
  }

  /** The ticket of `key`'s worker of `epoch` (an older one is revoked). */
  ticket(key: string, epoch: number): LaneTicket {
    this.#tickets.get(key)?.();
    const { ticket, revoke } = this.#lanes.ticket((lane) => this.#opened(key, epoch, lane));
    this.#tickets.set(key, revoke);
    return ticket;
  }

  /** The lane to send a call of `key`'s worker of `epoch` on, when one is open. */
  lane(key: string, epoch: number): Lane | undefined {
    const open = this.#open.get(key);
    return open && open.epoch === epoch && !open.lane.closed ? open.lane : undefined;
  }

  /**
   * `key`'s epoch ended (its worker is being stopped): no call takes its lane now, and its ticket opens
   * none. Calls in flight on it still come back on it.
   */
  forget(key: string): void {
    this.#open.delete(key);
    this.#tickets.get(key)?.();
    this.#tickets.delete(key);
  }

  /** `key`'s worker of `epoch` ended: its lane is closed. */
  ended(key: string, epoch: number): void {
    const open = this.#open.get(key);
    if (open?.epoch !== epoch) return;
    this.#open.delete(key);
    open.lane.close();
  }

  /** The host is gone: every lane is closed and every ticket revoked. */
  close(): void {
    this.#closed = true;
    for (const { lane } of this.#open.values()) lane.close();
    this.#open.clear();
    for (const revoke of this.#tickets.values()) revoke();
    this.#tickets.clear();
  }

  async #opened(key: string, epoch: number, lane: Lane): Promise<void> {
    if (this.#closed || epoch !== this.#epochOf(key)) return lane.close();
    this.#open.get(key)?.lane.close();
    this.#open.set(key, { epoch, lane });
    for await (const message of lane.messages()) {
      if (message?.t === "result" && typeof message.id === "number") this.#onAnswer(lane, message);
    }
    if (this.#open.get(key)?.lane === lane) this.#open.delete(key);
  }
}

/** Base64 characters of a fetch answer's body at most: {@linkcode MAX_FETCH_BODY} bytes encoded. */
const MAX_FETCH_BASE64 = Math.ceil(MAX_FETCH_BODY / 3) * 4;

/**
 * An answer read from a lane, as the host would have passed it on: a `fetch` answer whose body is not
 * base64 text within {@linkcode MAX_FETCH_BODY} bytes fails (the host checks the same of its workers'),
 * an error is cut to 2,000 characters.
 */
export function laneAnswer(
  kind: CallKind,
  message: { ok: boolean; value?: unknown; error?: string },
): { ok: boolean; value?: unknown; error?: string } {
  if (message.ok !== true) return { ok: false, error: String(message.error).slice(0, 2000) };
  if (kind !== "fetch") return { ok: true, value: message.value };
  const body = (message.value as { body?: unknown } | null)?.body;
  if (typeof body !== "string") return { ok: false, error: "fetch answered no body" };
  if (body.length > MAX_FETCH_BASE64) {
    const bytes = Math.floor(body.length / 4) * 3;
    return { ok: false, error: `fetch answered ~${bytes} bytes; the limit is ${MAX_FETCH_BODY}` };
  }
  return { ok: true, value: message.value };
}
