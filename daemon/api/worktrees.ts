/**
 * Routes of worktrees: create and remove, setup log, git status, log and sync.
 *
 * @module
 */
import { SYNC_REQUEST, WORKTREE_CREATE } from "../../client/schemas.ts";
import type { EventBus } from "../../core/events.ts";
import type { Locations } from "../locations.ts";
import type { Worktrees } from "../worktrees.ts";
import * as git from "../git.ts";
import {
  body,
  flagQuery,
  intQuery,
  json,
  ndjson,
  param,
  requestOrigin,
  RouteTable,
} from "../../core/http.ts";

/** What the worktree routes use of the box. */
export interface WorktreeRoutesBackend {
  bus: Pick<EventBus, "publish">;
  locations: Pick<Locations, "get">;
  worktrees: Pick<Worktrees, "list" | "get" | "create" | "remove" | "setupLog">;
}

/** The worktree routes. */
export function worktreeRoutes(box: WorktreeRoutesBackend): RouteTable {
  const wt = "/locations/:name/worktrees/:wt";
  return new RouteTable("worktrees")
    .add("GET", "/worktrees", async (c) => {
      const location = c.req.query("location");
      if (location) box.locations.get(location);
      const worktrees = box.worktrees.list(location || undefined);
      return json(
        await Promise.all(worktrees.map((w) =>
          git.worktreeStatus(w.path).then((s) => ({
            location: w.location,
            name: w.name,
            ...s,
          }))
        )),
      );
    })
    .add("GET", "/locations/:name/worktrees", (c) => {
      box.locations.get(param(c, "name"));
      return json(box.worktrees.list(param(c, "name")));
    })
    .route({
      method: "POST",
      path: "/locations/:name/worktrees",
      input: async (c) => {
        const request = await body(c, WORKTREE_CREATE);
        box.locations.get(param(c, "name")); // 404 before the gate runs
        return request;
      },
      gates: [{
        action: "worktree.create",
        describe: (request, c) => ({ target: { ...request }, location: param(c, "name") }),
      }],
      handler: async (c, request) =>
        json(await box.worktrees.create(param(c, "name"), request, requestOrigin(c)), 201),
    })
    .add("GET", wt, (c) => json(box.worktrees.get(param(c, "name"), param(c, "wt"))))
    .route({
      method: "DELETE",
      path: wt,
      input: (c) => ({
        force: flagQuery(c, "force"),
        worktree: box.worktrees.get(param(c, "name"), param(c, "wt")), // 404 before the gate runs
      }),
      gates: [{
        action: "worktree.remove",
        describe: ({ worktree, force }) => ({
          target: { worktree: worktree.name, path: worktree.path, force },
          location: worktree.location,
          worktree: worktree.name,
        }),
      }],
      handler: async (c, { force }) =>
        json(await box.worktrees.remove(param(c, "name"), param(c, "wt"), { force }, requestOrigin(c))),
    })
    .add("GET", `${wt}/setup/log`, (c) => {
      const follow = flagQuery(c, "follow");
      box.worktrees.get(param(c, "name"), param(c, "wt"));
      return ndjson(box.worktrees.setupLog(param(c, "name"), param(c, "wt"), {
        follow,
        signal: c.req.raw.signal,
      }));
    })
    .add("GET", `${wt}/log`, async (c) => {
      const limit = intQuery(c, "limit", { min: 1, max: 1000, fallback: 50 });
      const worktree = box.worktrees.get(param(c, "name"), param(c, "wt"));
      return json(await git.log(worktree.path, limit));
    })
    .add("POST", `${wt}/sync`, async (c) => {
      const request = await body(c, SYNC_REQUEST);
      const worktree = box.worktrees.get(param(c, "name"), param(c, "wt"));
      const location = box.locations.get(worktree.location);
      const base = worktree.base ?? await git.defaultBranch(location.path);
      const result = await git.sync(worktree.path, base, request?.mode ?? "rebase");
      box.bus.publish({
        type: "worktree.synced",
        origin: requestOrigin(c),
        data: { location: worktree.location, worktree: worktree.name, mode: result.mode, ok: result.ok },
      });
      return json(result);
    });
}
