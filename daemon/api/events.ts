/**
 * Routes of the event bus: `GET events` (server-sent events, resumable with `Last-Event-ID`) and
 * `POST events` (announce).
 *
 * @module
 */
import type { Box } from "../box.ts";
import { BOX_EVENT, isAgentReport } from "../../client/schemas.ts";
import { resumeFrom, sse } from "../../core/sse.ts";
import { body, json, requestOrigin, RouteTable } from "../../core/http.ts";

/** The event routes. */
export function eventRoutes(box: Box): RouteTable {
  return new RouteTable("events")
    .add("GET", "/events", (c) => sse(box.bus, resumeFrom(c), c.req.raw.signal))
    .add("POST", "/events", async (c) => {
      const announce = await body(c, BOX_EVENT);
      if (isAgentReport(announce)) {
        const event = box.sessions.ingest(announce);
        return json(event ?? { duplicate: true }, event ? 201 : 200);
      }
      const origin = announce.origin ?? requestOrigin(c);
      return json(box.bus.publish({ type: announce.type, origin, data: announce.data }), 201);
    });
}
