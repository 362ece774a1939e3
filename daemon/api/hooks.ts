/**
 * Routes of the box's hooks file (`GET hooks`, `PUT hooks`). Replacing it passes the
 * `before:config.change` gates first: whoever may edit hooks may remove a gate.
 *
 * @module
 */
import { z } from "zod";
import type { Box } from "../box.ts";
import { hooksBody } from "../../core/hooks.ts";
import { body, json, requestOrigin, RouteTable } from "../../core/http.ts";

/** The hooks routes. */
export function hooksRoutes(box: Box): RouteTable {
  return new RouteTable("hooks")
    .add("GET", "/hooks", () => json(box.hooks.state()))
    .add("PUT", "/hooks", async (c) => {
      const file = hooksBody(await body(c, z.unknown()));
      const origin = requestOrigin(c);
      await box.hooks.gate("config.change", { file: "hooks.json", value: file }, { origin });
      return json(await box.hooks.write(file, origin));
    });
}
