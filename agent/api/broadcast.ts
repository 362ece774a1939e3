/**
 * Route of broadcast (spec 6, issue 30 item 3): `POST /v1/broadcast` types one prompt, its
 * `{{variables}}` filled per session, into several sessions and answers what happened to each
 * (`sent`, `queued`, `skipped`, `failed`). The broadcast itself is `agent/broadcast.ts`.
 *
 * @module
 */
import { BROADCAST } from "../../client/schemas_laptop.ts";
import { body, json, requestOrigin, RouteTable } from "../../core/http.ts";
import type { Broadcaster } from "../broadcast.ts";

/** The broadcast route. */
export function broadcastRoutes(broadcaster: Pick<Broadcaster, "run">): RouteTable {
  return new RouteTable("broadcast").add(
    "POST",
    "/broadcast",
    async (c) => json(await broadcaster.run(await body(c, BROADCAST), requestOrigin(c))),
  );
}
