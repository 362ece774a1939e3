/**
 * The laptop's event routes (spec 4.1, 7): `GET /v1/events` follows the merged journal as SSE (resuming
 * after `Last-Event-ID`), `POST /v1/events` announces one event (origin: the caller's unless it names one).
 *
 * @module
 */
import { EVENT_ANNOUNCE } from "../../client/schemas.ts";
import type { EventBus } from "../../core/events.ts";
import { body, json, requestOrigin, RouteTable } from "../../core/http.ts";
import { resumeFrom, sse } from "../../core/sse.ts";

/** What the event routes use of the agent. */
export interface EventRoutesBackend {
  bus: Pick<EventBus, "lastId" | "subscribe" | "sinceRaw" | "publish">;
  /** Counts an app view following events (the agent leaves notifying to views); returns its close. */
  viewOpened(): () => void;
}

/** The event routes. */
export function eventRoutes(agent: EventRoutesBackend): RouteTable {
  return new RouteTable("events")
    .add("GET", "/events", (c) => {
      const signal = c.req.raw.signal;
      // An app view follows events: the agent leaves notifying to it until the last one closes.
      if (requestOrigin(c) === "app" && !signal.aborted) {
        signal.addEventListener("abort", agent.viewOpened(), { once: true });
      }
      return sse(agent.bus, resumeFrom(c, agent.bus), signal);
    })
    .add("POST", "/events", async (c) => {
      const announce = await body(c, EVENT_ANNOUNCE);
      return json(agent.bus.publish({ ...announce, origin: announce.origin ?? requestOrigin(c) }), 201);
    });
}
