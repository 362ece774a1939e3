/**
 * `GET review[?all=1][&location=L]`, `POST preview { location, worktree, port?, path? }`, and one
 * worktree's review under `locations/{name}/worktrees/{wt}/`: `GET diff[?offset=N][&max_bytes=B][&path=P]`,
 * `GET commits`, `GET untracked`, `POST push`, `GET pr`, `POST pr { title?, body?, draft? }`
 * (`daemon/review.ts`). Sync and archive (remove) are the worktree routes' own.
 *
 * @module
 */
import { PR_CREATE, PREVIEW_REQUEST, PUSH_REQUEST } from "../../client/schemas.ts";
import {
  body,
  flagQuery,
  intQuery,
  json,
  param,
  requestOrigin,
  RouteTable,
  textQuery,
} from "../../core/http.ts";
import { DIFF_PAGE_BYTES, DIFF_PAGE_MAX_BYTES, type Review } from "../review.ts";

/** What the review routes use of the box. */
export interface ReviewRoutesBackend {
  review: Pick<Review, "list" | "preview" | "diff" | "commits" | "untracked" | "push" | "createPr" | "pr">;
}

/** The review routes. */
export function reviewRoutes(box: ReviewRoutesBackend): RouteTable {
  const wt = "/locations/:name/worktrees/:wt";
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
    )
    .add("GET", `${wt}/diff`, async (c) =>
      json(
        await box.review.diff(param(c, "name"), param(c, "wt"), {
          offset: intQuery(c, "offset", { min: 0, max: 1_000_000, fallback: 0 }),
          maxBytes: intQuery(c, "max_bytes", {
            min: 1024,
            max: DIFF_PAGE_MAX_BYTES,
            fallback: DIFF_PAGE_BYTES,
          }),
          path: textQuery(c, "path", 4096),
        }),
      ))
    .add(
      "GET",
      `${wt}/commits`,
      async (c) => json(await box.review.commits(param(c, "name"), param(c, "wt"))),
    )
    .add(
      "GET",
      `${wt}/untracked`,
      async (c) => json(await box.review.untracked(param(c, "name"), param(c, "wt"))),
    )
    .add("POST", `${wt}/push`, async (c) => {
      await body(c, PUSH_REQUEST);
      return json(await box.review.push(param(c, "name"), param(c, "wt")));
    })
    .add("GET", `${wt}/pr`, async (c) => json(await box.review.pr(param(c, "name"), param(c, "wt"))))
    .add("POST", `${wt}/pr`, async (c) => {
      const request = await body(c, PR_CREATE);
      return json(await box.review.createPr(param(c, "name"), param(c, "wt"), request ?? {}), 201);
    });
}
