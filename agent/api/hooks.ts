/**
 * Routes of the laptop's hooks file: `GET /v1/hooks` → `{ path, hooks }`, `PUT /v1/hooks` `{ hooks }`
 * (announces `hooks.changed`).
 *
 * @module
 */
import { HOOKS_PUT } from "../../client/schemas.ts";
import { body, json, requestOrigin, RouteTable } from "../../core/http.ts";
import { hooksBody } from "../../core/hooks.ts";
import type { LaptopHooks } from "../hooks.ts";

/** What the laptop hooks routes use of the agent. */
export interface HooksRoutesBackend {
  hooks: Pick<LaptopHooks, "state" | "write">;
}

/** The laptop hooks routes. */
export function hooksRoutes(agent: HooksRoutesBackend): RouteTable {
  return new RouteTable("hooks")
    .add("GET", "/hooks", () => json(agent.hooks.state()))
    .add("PUT", "/hooks", async (c) => {
      const file = hooksBody(await body(c, HOOKS_PUT));
      return json(await agent.hooks.write(file, requestOrigin(c)));
    });
}
