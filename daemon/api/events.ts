/**
 * Routes of the event bus: `GET events` (server-sent events, resumable with `Last-Event-ID`) and
 * `POST events` (announce).
 *
 * @module
 */
import { z } from "zod";
import type { Box } from "../box.ts";
import { EVENT_ANNOUNCE } from "../../core/events.ts";
import { resumeFrom, sse } from "../../core/sse.ts";
import { body, json, requestOrigin, RouteTable } from "../../core/http.ts";

// On a box, `dock hook` adds what matches its report to a session.
const ANNOUNCE = EVENT_ANNOUNCE.extend({
  /** The reporting process's DOCK_SESSION (from `dock hook`); used to match, not kept in the event. */
  session: z.string().max(64).optional(),
  /** When it happened, for reports that arrive late (RFC 3339). */
  time: z.string().max(40).optional(),
});

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
