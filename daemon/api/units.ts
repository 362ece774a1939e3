/**
 * The box's units (`daemon/units.ts`): `GET units`, `POST units { name, run, env?, autostart? }` (it
 * runs a command: the `before:exec` gates), `GET units/{name}`, `DELETE units/{name}`, `POST
 * units/{name}/start|stop|restart`, `GET units/{name}/log[?tail&follow=1]` (NDJSON lines).
 *
 * @module
 */
import { UNIT_CREATE } from "../../client/schemas.ts";
import {
  body,
  flagQuery,
  intQuery,
  json,
  ndjsonChecked,
  param,
  requestOrigin,
  RouteTable,
} from "../../core/http.ts";
import type { Units } from "../units.ts";

/** What the unit routes use of the box. */
export interface UnitRoutesBackend {
  units: Pick<Units, "list" | "get" | "create" | "start" | "stop" | "restart" | "remove" | "log">;
}

/** The unit routes. */
export function unitRoutes(box: UnitRoutesBackend): RouteTable {
  const table = new RouteTable("units")
    .add("GET", "/units", () => json(box.units.list()))
    .route({
      method: "POST",
      path: "/units",
      input: (c) => body(c, UNIT_CREATE),
      gates: [{ action: "exec", describe: (unit) => ({ target: { unit: unit.name, command: unit.run } }) }],
      handler: async (c, unit) => json(await box.units.create(unit, requestOrigin(c)), 201),
    })
    .add("GET", "/units/:name", (c) => json(box.units.get(param(c, "name"))))
    .add(
      "DELETE",
      "/units/:name",
      async (c) => json(await box.units.remove(param(c, "name"), requestOrigin(c))),
    )
    .add("GET", "/units/:name/log", (c) => {
      const tail = intQuery(c, "tail", { min: 0, max: 100_000, fallback: 200 });
      const lines = box.units.log(param(c, "name"), {
        tail,
        follow: flagQuery(c, "follow"),
        signal: c.req.raw.signal,
      });
      return ndjsonChecked(lines);
    });
  for (const verb of ["start", "stop", "restart"] as const) {
    table.add(
      "POST",
      `/units/:name/${verb}`,
      async (c) => json(await box.units[verb](param(c, "name"), requestOrigin(c))),
    );
  }
  return table;
}
