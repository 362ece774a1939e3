/**
 * The plugin routes, the same on a box (`/v1/plugins…` of its API) and on the laptop (`/v1/plugins…`,
 * spec 4.1): the list, one plugin with its log, enable (the body confirms the permissions granted) and
 * disable, a plugin's `fetch` function under `fn/`, the files its manifest offers to the app, and the
 * calls its `ui` panel asks the app to make (`ui-api`, with the plugin's scopes).
 *
 * @module
 */
import type { Context } from "hono";
import type { PluginInfo } from "../client/wire.ts";
import { PANEL_API_REQUEST, PLUGIN_ENABLE } from "../client/schemas.ts";
import { body, intQuery, json, type Method, param, requestOrigin, RouteTable } from "../core/http.ts";
import type { Plugins } from "./plugins.ts";

/** Options of {@linkcode pluginRoutes}. */
export interface PluginRoutesOptions {
  /** What `GET plugins` lists (the laptop adds every online box's). @default {the process's own} */
  list?: () => Promise<PluginInfo[]>;
  /** Whether enabling passes the `before:config.change` gates (the box's API runs gates). */
  gated?: boolean;
}

const FN_METHODS: Method[] = ["GET", "POST", "PUT", "PATCH", "DELETE"];

/** The plugin routes of one process. */
export function pluginRoutes(plugins: Plugins, options: PluginRoutesOptions = {}): RouteTable {
  const table = new RouteTable("plugins")
    .add("GET", "/plugins", async () => json(options.list ? await options.list() : plugins.list()))
    .add(
      "GET",
      "/plugins/:id",
      (c) => json(plugins.get(param(c, "id"), intQuery(c, "log", { min: 0, max: 500, fallback: 100 }))),
    )
    .route({
      method: "POST",
      path: "/plugins/:id/enable",
      input: async (c) => ({ id: param(c, "id"), request: await body(c, PLUGIN_ENABLE) }),
      gates: options.gated
        ? [{
          action: "config.change",
          describe: ({ id, request }) => ({
            target: { plugin: id, enabled: true, permissions: request.permissions },
          }),
        }]
        : [],
      handler: async (c, { id, request }) =>
        json(await plugins.enable(id, request.permissions, requestOrigin(c))),
    })
    .route({
      method: "POST",
      path: "/plugins/:id/disable",
      input: (c) => ({ id: param(c, "id") }),
      gates: options.gated
        ? [{ action: "config.change", describe: ({ id }) => ({ target: { plugin: id, enabled: false } }) }]
        : [],
      handler: async (c, { id }) => json(await plugins.disable(id, requestOrigin(c))),
    });
  // A ui panel's call, made as the plugin: no gate of its own, the call it makes passes the API's.
  table.add(
    "POST",
    "/plugins/:id/ui-api",
    async (c) => json(await plugins.panelApi(param(c, "id"), await body(c, PANEL_API_REQUEST))),
  );
  for (const method of FN_METHODS) {
    table.add(method, "/plugins/:id/fn", (c) => plugins.fetch(param(c, "id"), "/", c.req.raw));
    table.add(method, "/plugins/:id/fn/*", (c) => plugins.fetch(param(c, "id"), fnPath(c), c.req.raw));
  }
  table.add("GET", "/plugins/:id/*", (c) => plugins.file(param(c, "id"), filePath(c)));
  return table;
}

/** What follows `/fn` in the request's path, as it came (still percent-encoded). */
function fnPath(c: Context): string {
  const path = new URL(c.req.url).pathname;
  const at = path.indexOf("/fn/");
  return path.slice(at + "/fn".length);
}

/** The file's path after the plugin's id, decoded. */
function filePath(c: Context): string {
  const path = new URL(c.req.url).pathname;
  const prefix = `/plugins/${encodeURIComponent(param(c, "id"))}/`;
  const at = path.indexOf(prefix);
  try {
    return decodeURIComponent(path.slice(at + prefix.length));
  } catch {
    return "\0"; // malformed escapes: refused as an invalid path
  }
}
