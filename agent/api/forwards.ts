/**
 * The laptop's port forwards and proxy routes (spec 4.1, 2.7): `POST /v1/forwards` `{ box, local,
 * remote }`, `DELETE /v1/forwards/{id}`, `POST /v1/routes` `{ pattern, box, port }` and
 * `DELETE /v1/routes?pattern=`. The forwards are `agent/forwards.ts`, the proxy `agent/proxy.ts`.
 *
 * @module
 */
import { FORWARD_CREATE, PROXY_ROUTE } from "../../client/schemas_laptop.ts";
import { body, json, param, requestOrigin, RouteTable } from "../../core/http.ts";
import type { Forwards } from "../forwards.ts";
import type { Proxy } from "../proxy.ts";

/** What the forwards and proxy routes use of the agent. */
export interface ForwardRoutesBackend {
  forwards: Pick<Forwards, "create" | "remove">;
  proxy: Pick<Proxy, "addRoute" | "removeRoute">;
}

/** The forwards and proxy routes. */
export function forwardRoutes(agent: ForwardRoutesBackend): RouteTable {
  return new RouteTable("forwards")
    .add(
      "POST",
      "/forwards",
      async (c) => json(agent.forwards.create(await body(c, FORWARD_CREATE), requestOrigin(c)), 201),
    )
    .add("DELETE", "/forwards/:id", (c) => json(agent.forwards.remove(param(c, "id"), requestOrigin(c))))
    .add("POST", "/routes", async (c) => json(agent.proxy.addRoute(await body(c, PROXY_ROUTE)), 201))
    .add("DELETE", "/routes", (c) => json(agent.proxy.removeRoute(c.req.query("pattern") ?? "")));
}
