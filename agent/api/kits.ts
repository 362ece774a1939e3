/**
 * The kits library routes (spec 4.1; `agent/kits.ts`): the library, one kit with the locations it
 * matches, where kits run (older versions flagged), add, preview, apply, update, remove, save, delete.
 *
 * @module
 */
import { KIT_ADD, KIT_PREVIEW, KIT_SAVE, KIT_TARGET } from "../../client/schemas_laptop.ts";
import { body, json, param, RouteTable } from "../../core/http.ts";
import type { KitLibrary } from "../kits.ts";

/** The kits routes of the agent's API. */
export function kitRoutes(library: KitLibrary): RouteTable {
  return new RouteTable("kits")
    .add("GET", "/kits", async () => json(await library.list()))
    .add("GET", "/kits/installed", async () => json(await library.installed()))
    .add("POST", "/kits/add", async (c) => json(await library.add(await body(c, KIT_ADD)), 201))
    .add("POST", "/kits/preview", async (c) => json(await library.preview(await body(c, KIT_PREVIEW))))
    .add("POST", "/kits/remove", async (c) => json(await library.remove(await body(c, KIT_TARGET))))
    .add("POST", "/kits/save", async (c) => json(await library.save(await body(c, KIT_SAVE)), 201))
    .add("GET", "/kits/:id", async (c) => json(await library.show(param(c, "id"))))
    .add("DELETE", "/kits/:id", async (c) => json(await library.delete(param(c, "id"))))
    .add(
      "POST",
      "/kits/:id/apply",
      async (c) => json(await library.apply({ id: param(c, "id"), ...await body(c, KIT_TARGET) })),
    )
    .add("POST", "/kits/:id/update", async (c) => json(await library.update(param(c, "id"))));
}
