/**
 * Routes of flows (spec 4.2): `GET flows` (every flow with its scope, source and `overridden`), `PUT
 * flows` (replaces the box's own `flows.json`; passes the `before:config.change` gates, then announces
 * `config.changed`), `GET flows/runs?flow&limit` (newest first, default 50, at most 200) and `POST
 * flows/{id}/test` (runs the flow for real and answers the finished run).
 *
 * @module
 */
import { DockError } from "../../client/errors.ts";
import { FLOW_TEST, FLOWS_PUT } from "../../client/schemas.ts";
import type { EventBus } from "../../core/events.ts";
import { body, json, param, requestOrigin, RouteTable } from "../../core/http.ts";
import { type Flows, flowsBody } from "../flows.ts";

/** What the flows routes use of the box. */
export interface FlowsRoutesBackend {
  flows: Pick<Flows, "list" | "write" | "runs" | "test">;
  bus: Pick<EventBus, "publish">;
}

/** The flows routes. */
export function flowRoutes(box: FlowsRoutesBackend): RouteTable {
  return new RouteTable("flows")
    .add("GET", "/flows", async () => json(await box.flows.list()))
    .route({
      method: "PUT",
      path: "/flows",
      input: async (c) => flowsBody(await body(c, FLOWS_PUT)),
      gates: [{
        action: "config.change",
        describe: (file) => ({ target: { file: "flows.json", value: file } }),
      }],
      handler: async (c, file) => {
        const state = await box.flows.write(file);
        box.bus.publish({ type: "config.changed", origin: requestOrigin(c), data: { file: "flows.json" } });
        return json(state);
      },
    })
    .add("GET", "/flows/runs", (c) => {
      const limitText = c.req.query("limit");
      const limit = limitText === undefined || limitText === "" ? 50 : Number(limitText);
      if (!Number.isInteger(limit) || limit < 1 || limit > 200) {
        throw new DockError(
          "invalid_request",
          `limit: must be a whole number from 1 to 200, got ${limitText}`,
          {
            status: 400,
            detail: { field: "limit" },
          },
        );
      }
      return json(box.flows.runs({ flow: c.req.query("flow") || undefined, limit }));
    })
    .route({
      method: "POST",
      path: "/flows/:id/test",
      input: async (c) => await body(c, FLOW_TEST),
      handler: async (c, request) => json(await box.flows.test(param(c, "id"), request)),
    });
}
