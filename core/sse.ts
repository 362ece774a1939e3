/**
 * Server-sent events from an {@linkcode EventBus}: the journal after a client's last id, then live
 * events, each frame encoded once for every stream. The box's `GET events` and the laptop's
 * `GET /v1/events` both answer with it.
 *
 * @module
 */
import type { Context } from "hono";
import { DockError } from "../client/errors.ts";
import type { DockEvent } from "../client/wire.ts";
import type { EventBus } from "./events.ts";

/** How often an idle stream sends a comment, so proxies and clients see it is alive. */
const KEEPALIVE_MS = 15_000;

const encoder = new TextEncoder();
/**
 * Each live event's frame, encoded once for every stream that sends it: the bus hands all its listeners
 * the same event object, and ten clients used to mean ten JSON encodings of it. Streams only read the
 * bytes, so one copy serves them all.
 */
const frames = new WeakMap<DockEvent, Uint8Array>();

function frame(event: DockEvent): Uint8Array {
  let bytes = frames.get(event);
  if (!bytes) {
    bytes = encoder.encode(`id: ${event.id}\ndata: ${JSON.stringify(event)}\n\n`);
    frames.set(event, bytes);
  }
  return bytes;
}

/** Options of {@linkcode sse}. */
export interface SseOptions {
  /**
   * Bytes a client may fall behind by (queued, not yet taken by its connection) before its stream is
   * ended: it resumes from its last event id and reads the rest from the journal, so a reader that
   * stops reading costs the server at most this much. @default {SSE_MAX_BEHIND}
   */
  maxBehind?: number;
  /** Events read from the journal at a time while replaying (an event may be 64 KiB). @default {20} */
  page?: number;
}

/** How far a client may fall behind, by default. */
export const SSE_MAX_BEHIND = 4 * 1024 * 1024;
/** While replaying, a next page is read only while less than this is queued. */
const REPLAY_QUEUE = 512 * 1024;

/**
 * A server-sent-events answer: the journal after `after` (when given), read a page at a time as the
 * client takes it (never the whole backlog in memory), then live events. A client more than
 * `maxBehind` bytes behind is cut off (see {@linkcode SseOptions.maxBehind}).
 */
export function sse(
  bus: Pick<EventBus, "lastId" | "subscribe" | "since">,
  after: number | undefined,
  signal: AbortSignal,
  options: SseOptions = {},
): Response {
  const maxBehind = options.maxBehind ?? SSE_MAX_BEHIND;
  const page = options.page ?? 20;
  let last = after ?? bus.lastId();
  // While replaying, live events are left to the journal: the next page reads them.
  let replaying = after !== undefined;
  let unsubscribe = () => {};
  let keepalive: ReturnType<typeof setInterval> | undefined;
  const stop = () => {
    unsubscribe();
    clearInterval(keepalive);
  };
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      unsubscribe = bus.subscribe((event) => {
        if (replaying || (event.id ?? 0) <= last) return;
        last = event.id ?? last;
        try {
          controller.enqueue(frame(event));
          if ((controller.desiredSize ?? 0) < 0) {
            // Behind by more than maxBehind: drop what is queued; the client resumes from its last id.
            stop();
            controller.error(
              new Error(
                `events: a client fell behind by more than ${maxBehind} bytes; it resumes from its last event id`,
              ),
            );
          }
        } catch {
          stop();
        }
      });
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
      if (!replaying || maxBehind - (controller.desiredSize ?? 0) > REPLAY_QUEUE) return;
      const events = bus.since(last, page);
      for (const event of events) {
        last = event.id ?? last;
        controller.enqueue(frame(event));
      }
      // A short page is the end of the journal; what is published from now on arrives live (bus
      // delivery is synchronous, so nothing can slip in between this read and the switch).
      if (events.length < page) replaying = false;
    },
    cancel: stop,
  }, { highWaterMark: maxBehind, size: (chunk) => chunk.byteLength });
  return new Response(stream, {
    headers: { "content-type": "text/event-stream", "cache-control": "no-cache", "x-accel-buffering": "no" },
  });
}

/** Where a stream resumes: the `Last-Event-ID` header or `?after=`; undefined for live events only. */
export function resumeFrom(c: Context): number | undefined {
  const raw = c.req.header("last-event-id") ?? c.req.query("after");
  if (raw === undefined || raw === "") return undefined;
  const after = Number(raw);
  if (!Number.isInteger(after) || after < 0) {
    throw new DockError("invalid_request", `Last-Event-ID: must be an event id, got ${JSON.stringify(raw)}`);
  }
  return after;
}
