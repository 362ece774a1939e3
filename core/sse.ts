/**
 * Server-sent events from an {@linkcode EventBus}: the journal after a client's last id, then live
 * events. Live events are batched per turn of the event loop ({@linkcode Fanout}): each frame is
 * encoded once, the batch is joined into chunks once, and every stream takes those same chunks in one
 * write per turn. The box's `GET events` and the laptop's `GET /v1/events` both answer with it.
 *
 * @module
 */
import type { Context } from "hono";
import { DockError } from "../client/errors.ts";
import type { DockEvent } from "../client/wire.ts";
import type { EventBus, RawEvent } from "./events.ts";
import { afterTurn } from "./turn.ts";

/** How often an idle stream sends a comment, so proxies and clients see it is alive. */
const KEEPALIVE_MS = 15_000;

const encoder = new TextEncoder();

/**
 * Bytes of a large frame sent as one chunk. The agent's listener (`Deno.serveHttp`) copies every chunk
 * it writes: in 64 KiB copies, ten clients resuming 5,000 × 64 KB events grew the agent by ~25 MiB
 * until it had been quiet a while (the allocator keeps freed blocks of that size); in 16 KiB ones, ~3.
 */
const PIECE = 16 * 1024;

/**
 * A journaled event's frame, assembled from its stored parts: the same bytes as {@linkcode frame} of
 * the parsed event (the journal holds the data as `JSON.stringify` wrote it, and the envelope's keys
 * go in the order the bus builds events: id, type, time, data, box, origin), without parsing the data.
 * Large data stays in the buffer the journal gave it in, never a string on the heap and not copied (a
 * copy into one buffer doubled what a replay allocates): the frame is the envelope's two halves around
 * views of it, {@linkcode PIECE} bytes each.
 */
export function rawFrame(event: RawEvent): Uint8Array[] {
  const head = `id: ${event.id}\ndata: {"id":${event.id},"type":${JSON.stringify(event.type)},"time":${
    JSON.stringify(event.time)
  },"data":`;
  const box = event.box ? `,"box":${JSON.stringify(event.box)}` : "";
  const origin = event.origin ? `,"origin":${JSON.stringify(event.origin)}` : "";
  const tail = `${box}${origin}}\n\n`;
  const data = event.data;
  if (!data) return [encoder.encode(`${head}${event.text ?? "null"}${tail}`)];
  const parts: Uint8Array[] = [encoder.encode(head)];
  for (let at = 0; at < data.byteLength; at += PIECE) parts.push(data.subarray(at, at + PIECE));
  parts.push(encoder.encode(tail));
  return parts;
}

/**
 * Frames assembled for replays lately, each filed under the id of the event before it, for every
 * stream of one bus: clients that resume together (ten from 0 after a restart) take the same bytes,
 * and only the first reads them from the journal. Ten copies of each 64 KiB event were most of what
 * dockd grew by while ten clients resumed (90 → 256 MiB with 5,000 × 64 KB events journaled; 158 MiB
 * with this and the rest of this module's replay path), and it stayed until the process had been
 * quiet a while: the allocator keeps what it handed out at the peak. A link from one event to the
 * next stays true: new events only ever come after the newest. Large events only (small ones cost
 * little to read again), bounded in bytes, the oldest filed first out.
 */
class ReplayFrames {
  #next = new Map<number, { id: number; parts: Uint8Array[]; bytes: number }>();
  #bytes = 0;

  /** The event after `id` and its frame, when filed. */
  after(id: number): { id: number; parts: Uint8Array[] } | undefined {
    return this.#next.get(id);
  }

  /** Files the frame of event `id`, which follows event `previous` in the journal. */
  add(previous: number, id: number, parts: Uint8Array[]): void {
    if (this.#next.has(previous)) return;
    const bytes = parts.reduce((sum, part) => sum + part.byteLength, 0);
    this.#next.set(previous, { id, parts, bytes });
    this.#bytes += bytes;
    if (this.#bytes <= REPLAY_FRAMES_BYTES) return;
    for (const [oldest, entry] of this.#next) {
      if (this.#bytes <= REPLAY_FRAMES_BYTES) break;
      this.#next.delete(oldest);
      this.#bytes -= entry.bytes;
    }
  }
}

/** Bytes of replay frames kept for streams resuming together. */
const REPLAY_FRAMES_BYTES = 4 * 1024 * 1024;
const replayFrames = new WeakMap<object, ReplayFrames>();

/** Options of {@linkcode sse}. */
export interface SseOptions {
  /**
   * Bytes a client may fall behind by (queued, not yet taken by its connection) before its stream is
   * ended: it resumes from its last event id and reads the rest from the journal, so a reader that
   * stops reading costs the server at most this much. @default {SSE_MAX_BEHIND}
   */
  maxBehind?: number;
  /**
   * Events read from the journal at a time while replaying, at most: fewer when events are large, so
   * a page holds about {@linkcode PAGE_BYTES}. @default {20}
   */
  page?: number;
}

/** Bytes a replay page aims at: 20 events of 64 KiB were 1.3 MB a page for each resuming client. */
const PAGE_BYTES = 256 * 1024;

/** How far a client may fall behind, by default. */
export const SSE_MAX_BEHIND = 4 * 1024 * 1024;
/** While replaying, a next page is read only while less than this is queued. */
const REPLAY_QUEUE = 512 * 1024;

/**
 * Bytes of live frames a fan-out holds before it writes them without waiting for the end of the turn:
 * a burst (the laptop's merge journals up to 500 events at once) goes out in chunks of this size.
 */
export const FANOUT_BATCH_BYTES = 256 * 1024;

/** One stream a {@linkcode Fanout} writes to. */
interface LiveStream {
  controller: ReadableStreamDefaultController<Uint8Array>;
  /** The id of the last event the stream sent; later ones only are written to it. */
  last: number;
  /** While replaying, the journal is its source: live batches pass it by. */
  replaying: boolean;
  /** How far behind it may fall, in bytes, before it is cut off. */
  maxBehind: number;
  stop(): void;
}

/** A chunk of a batch: whole small frames, or one {@linkcode PIECE} of a large one. */
interface Chunk {
  bytes: Uint8Array;
  /** The ids of the frames that start in this chunk, and where each starts. */
  ids: number[];
  starts: number[];
}

/**
 * The live side of every stream of one bus. Per event, one frame; per turn of the event loop, one
 * batch joined into chunks of at most {@linkcode PIECE} (a large frame cut into pieces), written to
 * every live stream in order: one write per stream for a turn of small events, where each event was a
 * write of its own to each stream (ten clients at 5,000 events/s: 50,000 writes a second). The batch
 * is bounded in bytes ({@linkcode FANOUT_BATCH_BYTES}): full, it is written at once. A stream gets
 * only the events after its own last id, so one that switched from replay to live mid-batch neither
 * misses one nor gets one twice.
 */
class Fanout {
  #streams = new Set<LiveStream>();
  #frames: Uint8Array[] = [];
  #ids: number[] = [];
  #bytes = 0;
  /** Cancels the end-of-turn flush, while one is due. */
  #cancelFlush: (() => void) | undefined;
  #unsubscribe: (() => void) | undefined;
  #bus: Pick<EventBus, "subscribe">;

  constructor(bus: Pick<EventBus, "subscribe">) {
    this.#bus = bus;
  }

  /** Adds a stream; returns the function that removes it. */
  add(stream: LiveStream): () => void {
    this.#streams.add(stream);
    this.#unsubscribe ??= this.#bus.subscribe((event) => this.#push(event));
    return () => {
      this.#streams.delete(stream);
      if (this.#streams.size > 0) return;
      this.#unsubscribe?.();
      this.#unsubscribe = undefined;
      this.#cancelFlush?.();
      this.#cancelFlush = undefined;
      this.#frames = [];
      this.#ids = [];
      this.#bytes = 0;
    };
  }

  #push(event: DockEvent): void {
    const bytes = encoder.encode(`id: ${event.id}\ndata: ${JSON.stringify(event)}\n\n`);
    this.#frames.push(bytes);
    this.#ids.push(event.id ?? 0);
    this.#bytes += bytes.byteLength;
    if (this.#bytes >= FANOUT_BATCH_BYTES) this.flush();
    else this.#cancelFlush ??= afterTurn(() => this.flush());
  }

  /** Writes what is batched to every live stream, in order. */
  flush(): void {
    this.#cancelFlush?.();
    this.#cancelFlush = undefined;
    if (this.#frames.length === 0) return;
    const chunks = joinFrames(this.#frames, this.#ids, this.#bytes);
    const newest = this.#ids[this.#ids.length - 1];
    this.#frames = [];
    this.#ids = [];
    this.#bytes = 0;
    for (const stream of this.#streams) {
      if (stream.replaying || stream.last >= newest) continue;
      try {
        writeAfter(stream.controller, chunks, stream.last);
        stream.last = newest;
        if ((stream.controller.desiredSize ?? 0) < 0) {
          // Behind by more than maxBehind: drop what is queued; the client resumes from its last id.
          stream.stop();
          stream.controller.error(
            new Error(
              `events: a client fell behind by more than ${stream.maxBehind} bytes; it resumes from its last event id`,
            ),
          );
        }
      } catch {
        stream.stop();
      }
    }
  }
}

/** Frames joined into chunks of at most {@linkcode PIECE} bytes; a larger frame cut into pieces. */
function joinFrames(frames: Uint8Array[], ids: number[], total: number): Chunk[] {
  if (frames.length === 1 && total <= PIECE) return [{ bytes: frames[0], ids, starts: [0] }];
  const chunks: Chunk[] = [];
  let k = 0;
  while (k < frames.length) {
    const first = frames[k];
    if (first.byteLength > PIECE) {
      for (let at = 0; at < first.byteLength; at += PIECE) {
        chunks.push({
          bytes: first.subarray(at, at + PIECE),
          ids: at ? [] : [ids[k]],
          starts: at ? [] : [0],
        });
      }
      k++;
      continue;
    }
    // Small frames, as many as fit in a piece, copied into one buffer.
    let end = k;
    let size = 0;
    while (end < frames.length && size + frames[end].byteLength <= PIECE) size += frames[end++].byteLength;
    const bytes = end - k === 1 ? first : new Uint8Array(size);
    const chunk: Chunk = { bytes, ids: [], starts: [] };
    let at = 0;
    for (; k < end; k++) {
      if (bytes !== first) bytes.set(frames[k], at);
      chunk.ids.push(ids[k]);
      chunk.starts.push(at);
      at += frames[k].byteLength;
    }
    chunks.push(chunk);
  }
  return chunks;
}

/** Enqueues the chunks' frames of events after `last` (the leading ones a stream already sent skipped). */
function writeAfter(
  controller: ReadableStreamDefaultController<Uint8Array>,
  chunks: Chunk[],
  last: number,
): void {
  let started = false;
  for (const chunk of chunks) {
    if (started) {
      controller.enqueue(chunk.bytes);
      continue;
    }
    const k = chunk.ids.findIndex((id) => id > last);
    if (k < 0) continue;
    started = true;
    controller.enqueue(chunk.starts[k] === 0 ? chunk.bytes : chunk.bytes.subarray(chunk.starts[k]));
  }
}

const fanouts = new WeakMap<object, Fanout>();

/**
 * A server-sent-events answer: the journal after `after` (when given), read a page at a time as the
 * client takes it (never the whole backlog in memory), then live events. A client more than
 * `maxBehind` bytes behind is cut off (see {@linkcode SseOptions.maxBehind}).
 */
export function sse(
  bus: Pick<EventBus, "lastId" | "subscribe" | "sinceRaw">,
  after: number | undefined,
  signal: AbortSignal,
  options: SseOptions = {},
): Response {
  const maxBehind = options.maxBehind ?? SSE_MAX_BEHIND;
  const page = options.page ?? 20;
  let shared = replayFrames.get(bus);
  if (!shared) replayFrames.set(bus, shared = new ReplayFrames());
  const cache = shared;
  // The next page's size, from the size of the events of the last one.
  let limit = page;
  let fanout = fanouts.get(bus);
  if (!fanout) fanouts.set(bus, fanout = new Fanout(bus));
  const live = fanout;
  let remove = () => {};
  let keepalive: ReturnType<typeof setInterval> | undefined;
  const stop = () => {
    remove();
    clearInterval(keepalive);
  };
  // While replaying, live events are left to the journal (the next page reads them); then the fan-out
  // writes the events after `last`.
  const state: Omit<LiveStream, "controller"> = {
    last: after ?? bus.lastId(),
    replaying: after !== undefined,
    maxBehind,
    stop,
  };
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      remove = live.add(Object.assign(state, { controller }));
      controller.enqueue(encoder.encode(": connected\n\n"));
      keepalive = setInterval(() => {
        try {
          controller.enqueue(encoder.encode(": keepalive\n\n"));
        } catch {
          stop();
        }
      }, KEEPALIVE_MS);
      signal.addEventListener("abort", () => {
        stop();
        try {
          controller.close();
        } catch { /* already closed */ }
      });
    },
    // Called whenever the client has taken what was queued: the next page of the journal, if replaying.
    pull(controller) {
      if (!state.replaying || maxBehind - (controller.desiredSize ?? 0) > REPLAY_QUEUE) return;
      // What another stream read lately is taken from it; the rest of the page from the journal.
      let count = 0;
      let bytes = 0;
      const send = (id: number, parts: Uint8Array[]) => {
        state.last = id;
        count++;
        for (const part of parts) {
          bytes += part.byteLength;
          controller.enqueue(part);
        }
      };
      for (let filed = cache.after(state.last); filed && count < limit; filed = cache.after(state.last)) {
        send(filed.id, filed.parts);
      }
      let end = false;
      if (count < limit) {
        const events = bus.sinceRaw(state.last, limit - count);
        for (const event of events) {
          const parts = rawFrame(event);
          if (event.data) cache.add(state.last, event.id, parts);
          send(event.id, parts);
        }
        end = count < limit;
      }
      // A short page is the end of the journal; what is published from now on arrives live (the
      // fan-out's batch may hold events this page read: it skips those, up to `last`).
      if (end) state.replaying = false;
      else limit = Math.max(1, Math.min(page, Math.floor(PAGE_BYTES / (bytes / count))));
    },
    cancel: stop,
  }, { highWaterMark: maxBehind, size: (chunk) => chunk.byteLength });
  return new Response(body, {
    headers: { "content-type": "text/event-stream", "cache-control": "no-cache", "x-accel-buffering": "no" },
  });
}

/**
 * Where a stream starts: after the `Last-Event-ID` header's id or `?after=`'s, given the journal's last
 * id; undefined for live events only.
 *
 * `?after=N` asks for the events after N: past the journal's last id it is a 400 naming that id, where it
 * used to answer 200 and stay silent until ids caught up (forever, after a database was made anew).
 * `Last-Event-ID` is a reconnecting client's last event: past the last id, the journal it came from is
 * gone (the database was reset, or the client followed another one), so every event this journal holds is
 * new to the client and the stream starts from its first. An EventSource or a reconnect loop cannot act on
 * a 400: it would retry the same id for good. An id below the oldest kept (a trimmed journal) starts at
 * the oldest kept.
 */
export function resumeFrom(c: Context, bus: Pick<EventBus, "lastId">): number | undefined {
  const header = c.req.header("last-event-id");
  const resuming = header !== undefined && header !== "";
  const field = resuming ? "Last-Event-ID" : "after";
  const raw = resuming ? header : c.req.query("after");
  if (raw === undefined || raw === "") return undefined;
  const after = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || !Number.isSafeInteger(after)) {
    const got = JSON.stringify(raw.slice(0, 40));
    throw new DockError("invalid_request", `${field}: must be an event id, got ${got}`, {
      detail: { field },
    });
  }
  const last = bus.lastId();
  if (after <= last) return after;
  if (resuming) return 0;
  throw new DockError(
    "after_last_event",
    `after: ${after} is beyond the journal: its last event id is ${last} (ask for after=${last} or less)`,
    { status: 400, detail: { field, last_id: last } },
  );
}
