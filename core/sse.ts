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

/** A server-sent-events answer: the journal after `after` (when given), then live events. */
export function sse(bus: EventBus, after: number | undefined, signal: AbortSignal): Response {
  let unsubscribe = () => {};
  let keepalive: ReturnType<typeof setInterval> | undefined;
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      // Subscribe before replaying so nothing published in between is missed; skip what replay sent.
      let last = after ?? bus.lastId();
      const pending: DockEvent[] = [];
      let replaying = true;
      const send = (event: DockEvent) => {
        if ((event.id ?? 0) <= last) return;
        last = event.id ?? last;
        try {
          controller.enqueue(frame(event));
        } catch {
          unsubscribe();
        }
      };
      unsubscribe = bus.subscribe((event) => replaying ? pending.push(event) : send(event));
      controller.enqueue(encoder.encode(": connected\n\n"));
      if (after !== undefined) { for (const event of bus.since(after)) send(event); }
      replaying = false;
      for (const event of pending) send(event);
      keepalive = setInterval(() => {
        try {
          controller.enqueue(encoder.encode(": keepalive\n\n"));
        } catch {
          clearInterval(keepalive);
        }
      }, KEEPALIVE_MS);
      signal.addEventListener("abort", () => {
        unsubscribe();
        clearInterval(keepalive);
        try {
          controller.close();
        } catch { /* already closed */ }
      });
    },
    cancel() {
      unsubscribe();
      clearInterval(keepalive);
    },
  });
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
