/**
 * Routes of the box's hooks file (`GET hooks`, `PUT hooks`). Replacing it passes the
 * `before:config.change` gates first: whoever may edit hooks may remove a gate.
 *
 * @module
 */
import { HOOKS_PUT } from "../../client/schemas.ts";
import type { Hooks } from "../hooks.ts";
import { hooksBody } from "../../core/hooks.ts";
import { body, json, requestOrigin, RouteTable } from "../../core/http.ts";

/** What the hooks routes use of the box. */
export interface HooksRoutesBackend {
  hooks: Pick<Hooks, "state" | "write">;
}

/** The hooks routes. */
export function hooksRoutes(box: HooksRoutesBackend): RouteTable {
  return new RouteTable("hooks")
    .add("GET", "/hooks", () => json(box.hooks.state()))
    .route({
      method: "PUT",
      path: "/hooks",
      input: async (c) => hooksBody(await body(c, HOOKS_PUT)),
      gates: [{
        action: "config.change",
        describe: (file) => ({ target: { file: "hooks.json", value: file } }),
      }],
      handler: async (c, file) => json(await box.hooks.write(file, requestOrigin(c))),
    });
}
