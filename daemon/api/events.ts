/**
 * Routes of the event bus: `GET events` (server-sent events, resumable with `Last-Event-ID`) and
 * `POST events` (announce).
 *
 * @module
 */
import type { Context } from "hono";
import { z } from "zod";
import { DockError } from "../../client/errors.ts";
import type { DockEvent } from "../../client/wire.ts";
import type { Box } from "../box.ts";
import type { EventBus } from "../events.ts";
import { body, json, requestOrigin, RouteTable } from "./http.ts";

const EVENT_TYPE = /^[a-z][a-z0-9_-]*(\.[a-z0-9_-]+)*$/;

/** The body of `POST events` on the laptop (spec 2.4 "Event announce"). */
export const EVENT_ANNOUNCE = z.object({
  type: z.string().max(100).regex(EVENT_TYPE, "must be dotted lower-case words such as build.finished"),
  origin: z.string().max(64).optional(),
  data: z.record(z.string(), z.unknown()).optional(),
});

// On a box, `dock hook` adds what matches its report to a session.
const ANNOUNCE = EVENT_ANNOUNCE.extend({
  /** The reporting process's DOCK_SESSION (from `dock hook`); used to match, not kept in the event. */
  session: z.string().max(64).optional(),
  /** When it happened, for reports that arrive late (RFC 3339). */
  time: z.string().max(40).optional(),
});

/** How often an idle stream sends a comment, so proxies and clients see it is alive. */
const KEEPALIVE_MS = 15_000;

/** The event routes. */
export function eventRoutes(box: Box): RouteTable {
  return new RouteTable("events")
    .add("GET", "/events", (c) => sse(box.bus, resumeFrom(c), c.req.raw.signal))
    .add("POST", "/events", async (c) => {
      const announce = await body(c, ANNOUNCE);
      const origin = announce.origin ?? requestOrigin(c);
      if (announce.type.startsWith("agent.")) {
        const event = box.sessions.ingest({ ...announce, origin });
        return json(event ?? { duplicate: true }, event ? 201 : 200);
      }
      return json(box.bus.publish({ type: announce.type, origin, data: announce.data }), 201);
    });
}

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
