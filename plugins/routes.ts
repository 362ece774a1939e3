/**
 * The plugin routes, the same on a box (`/v1/plugins…` of its API) and on the laptop (`/v1/plugins…`,
 * spec 4.1): the list, one plugin with its log, enable (the body confirms the permissions granted; a bare
 * POST enables only a plugin that asks for nothing) and
 * disable, a plugin's `fetch` function under `fn/`, the files its manifest offers to the app, and the
 * calls its `ui` panel asks the app to make (`ui-api`, with the plugin's scopes).
 *
 * @module
 */
import type { Context } from "hono";
import type { PluginInfo } from "../client/wire.ts";
import {
  PANEL_API_REQUEST,
  PLUGIN_CONFIG,
  PLUGIN_ENABLE,
  PLUGIN_FILES,
  PLUGIN_TEST_EVENT,
} from "../client/schemas.ts";
import { INSTALL_MAX_BODY } from "./install.ts";
import { forwardPath, pathSegments, requestPath, wildcardSegments } from "../core/forward_path.ts";
import { body, intQuery, json, type Method, param, requestOrigin, RouteTable } from "../core/http.ts";
import { PLUGIN_ID } from "./manifest.ts";
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
            target: { plugin: id, enabled: true, permissions: request?.permissions },
          }),
        }]
        : [],
      handler: async (c, { id, request }) =>
        json(await plugins.enable(id, request?.permissions, requestOrigin(c))),
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
  // Installing writes code that runs once enabled (and shell hooks once granted): a config change.
  table.route({
    method: "PUT",
    path: "/plugins/:id/files",
    input: async (c) => ({
      id: param(c, "id"),
      request: await body(c, PLUGIN_FILES, { limit: INSTALL_MAX_BODY }),
    }),
    gates: options.gated
      ? [{ action: "config.change", describe: ({ id }) => ({ target: { plugin: id, install: true } }) }]
      : [],
    handler: async (c, { id, request }) => json(await plugins.install(id, request.files, requestOrigin(c))),
  }).route({
    method: "DELETE",
    path: "/plugins/:id",
    input: (c) => ({ id: param(c, "id") }),
    gates: options.gated
      ? [{ action: "config.change", describe: ({ id }) => ({ target: { plugin: id, removed: true } }) }]
      : [],
    handler: async (c, { id }) => json(await plugins.remove(id, requestOrigin(c))),
  });
  table.add("GET", "/plugins/:id/config", async (c) => json(await plugins.config(param(c, "id"))))
    .route({
      method: "PUT",
      path: "/plugins/:id/config",
      input: async (c) => ({ id: param(c, "id"), request: await body(c, PLUGIN_CONFIG) }),
      // Settings may name secrets and URLs a plugin reaches: a config change, gated like enabling.
      gates: options.gated
        ? [{ action: "config.change", describe: ({ id }) => ({ target: { plugin: id, config: true } }) }]
        : [],
      handler: async (c, { id, request }) =>
        json(await plugins.setConfig(id, request.values, requestOrigin(c))),
    })
    .add(
      "POST",
      "/plugins/:id/test-event",
      async (c) =>
        json(await plugins.testEvent(param(c, "id"), await body(c, PLUGIN_TEST_EVENT), requestOrigin(c))),
    );
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

/**
 * The plugin and the path its `fetch` sees for a `fn` call named by `request` (`{prefix}/plugins/{id}/fn`
 * and under it), found without the router; null for anything else, which the router then answers. Taken
 * only as the routes take it: a method they route (not `HEAD`, which the router turns into `GET`), a path
 * with no percent escape (the router decodes one before it matches), a valid plugin id, and a rest that
 * {@linkcode fnPath} would find the same (a rest it refuses is left to the route, which says why).
 *
 * Why: a daemon answers these before its router (`daemon/api/server.ts`), the hot path of a plugin's page.
 * Hono's dispatch and the route's parameters were ~30 µs of a warm call's ~0.45 ms on a 2-core box.
 */
export function fnTarget(request: Request, prefix: string): { id: string; subpath: string } | null {
  // Every request on the socket asks this first (a hook's POST too): most leave at this one search.
  const under = `${prefix}/plugins/`;
  if (!request.url.includes(under) || !FN_METHODS.includes(request.method as Method)) return null;
  const path = requestPath(request.url);
  if (!path.startsWith(under) || path.includes("%")) return null;
  const [id, fn, ...rest] = path.slice(under.length).split("/");
  if (fn !== "fn" || !PLUGIN_ID.test(id)) return null;
  try {
    return { id, subpath: forwardPath("/", pathSegments(rest.join("/"), FN_REST)) };
  } catch {
    return null;
  }
}

/** What follows `/fn`: it may end with `/`, or be nothing (`fn` itself). */
const FN_REST = { trailingSlash: true, empty: true };

/**
 * What follows `/fn` in the request's path, for the plugin's `fetch` to see: its segments as they came,
 * checked once (`core/forward_path.ts`), so the plugin is asked nothing but a path under its own `fn`.
 */
function fnPath(c: Context): string {
  return forwardPath("/", wildcardSegments(c, FN_REST));
}

/**
 * The file's path after the plugin's id, decoded and checked (`core/forward_path.ts`): a decoded `/`
 * splits no segment and no `..` climbs; the plugin host then serves only what the manifest lists.
 */
function filePath(c: Context): string {
  return wildcardSegments(c).join("/");
}
