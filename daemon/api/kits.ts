/**
 * The box's kits (spec 4.2): `GET kits` (what each location runs, and each location's `origin` slug for
 * `match.slug`; with `?tools=a,b`, which of those tools the box lacks), `PUT locations/{name}/kit` (a `kit.json`, files inline) and `DELETE
 * locations/{name}/kit`. Both change a location's config, so both pass the `before:config.change` gates.
 *
 * @module
 */
import { z } from "zod";
import { body, json, param, requestOrigin, RouteTable, textQuery } from "../../core/http.ts";
import { checkKit, KIT_LIMITS, type Kits } from "../kits.ts";
import type { Locations } from "../locations.ts";

/** What the kit routes use of the box. */
export interface KitRoutesBackend {
  kits: Pick<Kits, "onBox" | "apply" | "remove">;
  locations: Pick<Locations, "get">;
}

/** The kit routes. */
export function kitRoutes(box: KitRoutesBackend): RouteTable {
  return new RouteTable("kits")
    .add("GET", "/kits", async (c) => {
      // `?tools=a,b`: which of these the box lacks, by the rule `missing` uses (a kit preview asks).
      const tools = textQuery(c, "tools", 4096)?.split(",").map((tool) => tool.trim()).filter(Boolean);
      return json(await box.kits.onBox(tools));
    })
    .route({
      method: "PUT",
      path: "/locations/:name/kit",
      input: async (c) => {
        // Read by the API's body rules (size, UTF-8, NUL, depth), then checked as a kit.json.
        const kit = checkKit(await body(c, z.unknown(), { limit: KIT_LIMITS.totalBytes + 1024 * 1024 }));
        box.locations.get(param(c, "name")); // 404 before the gate runs
        return kit;
      },
      gates: [{
        action: "config.change",
        describe: (kit, c) => ({
          target: { file: "kit", location: param(c, "name"), value: { id: kit.id, version: kit.version } },
          location: param(c, "name"),
        }),
      }],
      handler: async (c, kit) => json(await box.kits.apply(param(c, "name"), kit, requestOrigin(c))),
    })
    .route({
      method: "DELETE",
      path: "/locations/:name/kit",
      input: (c) => {
        box.locations.get(param(c, "name"));
        return Promise.resolve(null);
      },
      gates: [{
        action: "config.change",
        describe: (_, c) => ({
          target: { file: "kit", location: param(c, "name"), value: null },
          location: param(c, "name"),
        }),
      }],
      handler: async (c) => json(await box.kits.remove(param(c, "name"), requestOrigin(c))),
    });
}
