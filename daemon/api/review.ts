/**
 * `GET review[?all=1][&location=L]` and `POST preview { location, worktree, port?, path? }`
 * (`daemon/review.ts`).
 *
 * @module
 */
import { PREVIEW_REQUEST } from "../../client/schemas.ts";
import { body, flagQuery, json, requestOrigin, RouteTable, textQuery } from "../../core/http.ts";
import type { Review } from "../review.ts";

/** What the review routes use of the box. */
export interface ReviewRoutesBackend {
  review: Pick<Review, "list" | "preview">;
}

/** The review routes. */
export function reviewRoutes(box: ReviewRoutesBackend): RouteTable {
  return new RouteTable("review")
    .add(
      "GET",
      "/review",
      async (c) =>
        json(await box.review.list({ all: flagQuery(c, "all"), location: textQuery(c, "location", 64) })),
    )
    .add(
      "POST",
      "/preview",
      async (c) => json(box.review.preview(await body(c, PREVIEW_REQUEST), requestOrigin(c))),
    );
}
