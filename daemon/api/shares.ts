/**
 * `GET shares`, `POST shares { location, worktree, port? }`, `DELETE shares/{id}` (`daemon/shares.ts`).
 * Opening one puts a worktree on the public internet: it passes the `before:share.open` gates.
 *
 * @module
 */
import { SHARE_REQUEST } from "../../client/schemas.ts";
import { body, json, param, requestOrigin, RouteTable } from "../../core/http.ts";
import type { Shares } from "../shares.ts";
import type { Worktrees } from "../worktrees.ts";

/** What the share routes use of the box. */
export interface ShareRoutesBackend {
  shares: Pick<Shares, "list" | "open" | "remove">;
  worktrees: Pick<Worktrees, "get">;
}

/** The share routes. */
export function shareRoutes(box: ShareRoutesBackend): RouteTable {
  return new RouteTable("shares")
    .add("GET", "/shares", () => json(box.shares.list()))
    .route({
      method: "POST",
      path: "/shares",
      input: async (c) => {
        const request = await body(c, SHARE_REQUEST);
        box.worktrees.get(request.location, request.worktree); // 404 before the gate runs
        return request;
      },
      gates: [{
        action: "share.open",
        describe: (request) => ({
          target: { location: request.location, worktree: request.worktree, port: request.port },
          location: request.location,
        }),
      }],
      handler: async (c, request) => json(await box.shares.open(request, requestOrigin(c)), 201),
    })
    .add(
      "DELETE",
      "/shares/:id",
      async (c) => json(await box.shares.remove(param(c, "id"), requestOrigin(c))),
    );
}
