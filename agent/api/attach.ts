/**
 * Route of the terminal relay on the agent's API: `GET /v1/boxes/{box}/sessions/{name}/attach`
 * (spec 4.1, 4.3). The gate in front has already checked the token (`?token=` on this upgrade).
 *
 * @module
 */
import { checkSegment } from "../../core/forward_path.ts";
import { param, RouteTable } from "../../core/http.ts";
import { attachRelay, type BoxTarget, boxTarget } from "../attach_relay.ts";
import type { Boxes } from "../boxes.ts";

/** Options of {@linkcode attachRoutes}. */
export interface AttachRouteOptions {
  /** How a box is reached. @default {the agent's box registry: {@linkcode boxTarget}} */
  target?: (box: string) => BoxTarget | Promise<BoxTarget>;
}

/** The path of the attach route under the API's root: a WebSocket, so the gate takes `?token=` on it. */
export const ATTACH_PATH = /^\/v1\/boxes\/[^/]+\/sessions\/[^/]+\/attach$/;

/** The attach relay's route, to mount under `/v1`. */
export function attachRoutes(boxes: Boxes, options: AttachRouteOptions = {}): RouteTable {
  const target = options.target ?? ((box: string) => boxTarget(boxes, box));
  return new RouteTable("attach").add("GET", "/boxes/:box/sessions/:name/attach", async (c) => {
    // The session's name goes into the box's path: checked like every forwarded segment.
    const box = checkSegment(param(c, "box"), "the box's name");
    const session = checkSegment(param(c, "name"), "the session's name");
    const url = new URL(c.req.url);
    return await attachRelay(c.req.raw, {
      box,
      target: await target(box),
      session,
      cols: url.searchParams.get("cols"),
      rows: url.searchParams.get("rows"),
    });
  });
}
