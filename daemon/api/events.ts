/**
 * Routes of the event bus: `GET events` (server-sent events, resumable with `Last-Event-ID`) and
 * `POST events` (announce).
 *
 * @module
 */
import type { AgentStates } from "../agent_state.ts";
import { BOX_EVENT, isAgentReport } from "../../client/schemas.ts";
import type { EventBus } from "../../core/events.ts";
import { resumeFrom, sse } from "../../core/sse.ts";
import { handChecked } from "./event_body.ts";
import { body, json, requestOrigin, RouteTable } from "../../core/http.ts";

/** What the event routes use of the box. */
export interface EventRoutesBackend {
  bus: Pick<EventBus, "announce" | "lastId" | "subscribe" | "sinceRaw">;
  /** Where `agent.*` reports go: they set a session's state before they are announced. */
  agentStates: Pick<AgentStates, "ingest">;
}

/** The event routes. */
export function eventRoutes(box: EventRoutesBackend): RouteTable {
  return new RouteTable("events")
    .add("GET", "/events", (c) => sse(box.bus, resumeFrom(c, box.bus), c.req.raw.signal))
    .add("POST", "/events", async (c) => {
      // A plain announce and an agent report are checked by hand (event_body.ts); the schema decides the rest.
      const announce = await body(c, BOX_EVENT, { fast: handChecked });
      if (isAgentReport(announce)) {
        const event = box.agentStates.ingest(announce);
        return json(event ?? { duplicate: true }, event ? 201 : 200);
      }
      const origin = announce.origin ?? requestOrigin(c);
      // Journaled with the others of this turn, in one transaction (EventBus.announce).
      return json(await box.bus.announce({ type: announce.type, origin, data: announce.data }), 201);
    });
}
