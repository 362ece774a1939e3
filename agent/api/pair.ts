/**
 * `POST /v1/boxes/pair` `{ link, name? }`: pairs this laptop with the box a `dockd pair` link names
 * (see `agent/pairing.ts` for how the box's CA is pinned) and registers it; answers the box's status.
 *
 * @module
 */
import { PAIR_REQUEST } from "../../client/schemas.ts";
import { body, json, requestOrigin, RouteTable } from "../../core/http.ts";
import type { ClientPaths } from "../../core/paths.ts";
import type { Boxes } from "../boxes.ts";
import { pairBox } from "../pairing.ts";

/** What the pairing route uses of the agent. */
export interface PairRoutesBackend {
  paths: Pick<ClientPaths, "client">;
  boxes: Boxes;
}

/** The pairing route of the agent's API. */
export function pairRoutes(agent: PairRoutesBackend): RouteTable {
  return new RouteTable("pair").add("POST", "/boxes/pair", async (c) => {
    const request = await body(c, PAIR_REQUEST);
    // The credential will sit in agent.db: keep its folder the user's alone, even if it was loosened.
    await Deno.chmod(agent.paths.client, 0o700);
    return json(await pairBox(agent.boxes, request, { origin: requestOrigin(c) }), 201);
  });
}
