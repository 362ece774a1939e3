/**
 * The agent's loopback API (spec 4.1): one hono app, the gate in front of every route, route tables
 * per resource. Served on `127.0.0.1:$DOCK_AGENT_PORT` (default 1378).
 *
 * @module
 */
import { timeoutSignal } from "../../core/clock.ts";
import { positiveFromEnv } from "../../core/knobs.ts";
import { Hono } from "hono";
import { DockError } from "../../client/errors.ts";
import { errorResponse, mount, param } from "../../core/http.ts";
import type { Agent } from "../agent.ts";
import { relay } from "../relay.ts";
import { checkSegment, wildcardSegments } from "../../core/forward_path.ts";
import { ATTACH_PATH, attachRoutes } from "./attach.ts";
import { boxesRoutes, forgetEverywhere } from "./boxes.ts";
import { eventRoutes } from "./events.ts";
import { forwardRoutes } from "./forwards.ts";
import { statusRoutes } from "./status.ts";
import { sessionsRoutes } from "./sessions.ts";
import { gate } from "./gate.ts";
import { hooksRoutes } from "./hooks.ts";
import { pairBackend, pairRoutes } from "./pair.ts";
import { queueRoutes } from "./queue.ts";
import { broadcastRoutes } from "./broadcast.ts";
import { Broadcaster } from "../broadcast.ts";
import { settingsRoutes } from "./settings.ts";
import { pluginRoutes } from "../../plugins/routes.ts";
import type { PluginInfo } from "../../client/wire.ts";
import { isAppPath, PANEL_PREFIX, serveApp } from "../../core/static.ts";
import { panelFile } from "./panels.ts";
import { upgradeSelf } from "../self_upgrade.ts";
import { BUILD } from "../../client/version.ts";
import { mcpRoutes } from "./mcp.ts";
import { kitRoutes } from "./kits.ts";
import { localToolRoutes } from "./local_tools.ts";
import { FN_LINK_PREFIX, fnLinkPage, fnLinkRoutes, FnLinks } from "../fn_links.ts";
import { APP_ASSETS } from "../../app/assets.generated.ts";

/** Builds the agent's API app for a listener on `port`. */
export function agentApp(agent: Agent, options: { port: number }): Hono {
  const app = new Hono();
  app.onError((error) => errorResponse(error, agent.log));
  app.notFound((c) =>
    errorResponse(
      new DockError("not_found", `no such endpoint: ${c.req.method} ${c.req.path}`, { status: 404 }),
    )
  );
  app.use(
    "*",
    gate({
      port: options.port,
      token: () => agent.token,
      websockets: [ATTACH_PATH],
      open: (method, path) => (method === "GET" || method === "HEAD") && isAppPath(path),
    }),
  );
  // Plugins' ui panels: static files too, sandboxed (panels.ts); before the app's own files.
  app.on(["GET", "HEAD"], `${PANEL_PREFIX}*`, (c) => panelFile(agent, c));
  // A plugin's fn page through a signed, short-lived link (fn_links.ts): open like the app's files.
  const fnLinks = new FnLinks({ clock: agent.clock });
  app.get(`${FN_LINK_PREFIX}*`, (c) => fnLinkPage(fnLinks, agent, c));
  // The view (issue 14): static files only; everything it shows comes from /v1 with the token.
  app.on(
    ["GET", "HEAD"],
    ["/app", "/app/*"],
    (c) =>
      // The page frames only this agent's own panel route (its origin as the browser named it).
      serveApp(APP_ASSETS, c.req.method, c.req.path, {
        config: { mode: "agent" },
        panels: new URL(c.req.url).origin,
        loopback: true,
      }) ??
        errorResponse(new DockError("not_found", `no such file: ${c.req.path}`, { status: 404 })),
  );
  // `AgentStatus` as JSON, the boxes' part joined from each box's kept JSON (agent/boxes.ts).
  const statusJson = () => {
    const rest = JSON.stringify({
      forwards: agent.forwards.list(),
      routes: agent.proxy.routes(),
      proxy: agent.proxyState,
      agent: agent.process,
    });
    return `{"build":${JSON.stringify(BUILD)},"boxes":${agent.boxes.statusJson()},${rest.slice(1)}`;
  };
  mount(app, "/v1", [
    statusRoutes({
      statusJson,
      refresh: () => agent.boxes.refresh(),
      upgrade: (body, origin) =>
        upgradeSelf(
          { paths: agent.paths, bus: agent.bus, stop: () => agent.stopRequested?.(), clock: agent.clock },
          body,
          origin,
        ),
    }),
    sessionsRoutes({ json: (box) => agent.sessions.json(box), lastEventId: () => agent.bus.lastId() }),
    eventRoutes({ bus: agent.bus, viewOpened: () => agent.notifier.viewOpened() }),
    boxesRoutes({
      boxes: agent.boxes,
      localSocket: agent.paths.localSocket,
      forget: (name, origin) => forgetEverywhere(agent, name, origin),
    }),
    forwardRoutes(agent),
    settingsRoutes(agent),
    hooksRoutes(agent),
    pairRoutes(pairBackend(agent)),
    attachRoutes(agent.boxes),
    queueRoutes(agent),
    broadcastRoutes(new Broadcaster({ store: agent.store, boxes: agent.boxes, queue: agent.queue })),
    pluginRoutes(agent.plugins, { list: () => allPlugins(agent) }),
    fnLinkRoutes(fnLinks, agent),
    mcpRoutes(agent, options),
    kitRoutes(agent.kits),
    localToolRoutes({
      boxes: agent.boxes,
      home: Deno.env.get("HOME") ?? "",
      // Boxes found on a network listen for laptops on 1379, and machines for SSH on 22, unless told otherwise.
      ports: {
        dockd: positiveFromEnv("DOCK_BOX_PORT"),
        ssh: positiveFromEnv("DOCK_SSH_PORT"),
      },
      proxyPort: () => agent.proxyState.port ?? 1377,
    }),
  ]);
  // What a laptop plugin asks through `ctx.api` goes through this app like any client's request: the
  // same gate, with the agent's own token; the plugin host checks its scopes first.
  agent.plugins.connectApi(async (request) => {
    const headers = new Headers(request.headers);
    headers.set("host", `127.0.0.1:${options.port}`);
    headers.set("authorization", `Bearer ${agent.token}`);
    return await app.fetch(new Request(request, { headers }));
  });
  // The relay takes every method and any path below the box's api/: its segments as they came, each
  // checked once (core/forward_path.ts), so the box is asked nothing outside its /v1/.
  app.all(
    "/v1/boxes/:box/api/*",
    (c) =>
      relay(
        agent.boxes,
        checkSegment(param(c, "box"), "the box's name"),
        wildcardSegments(c, { trailingSlash: true }),
        c.req.raw,
      ),
  );
  return app;
}

/** How long `GET /v1/plugins` waits for a box's list before leaving that box out. */
const BOX_PLUGINS_TIMEOUT_MS = 3000;

/** The laptop's plugins and every online box's, each box's named as the laptop names it. */
async function allPlugins(agent: Agent): Promise<PluginInfo[]> {
  const online = agent.boxes.list().map((b) => b.name).filter((name) => agent.boxes.online(name));
  const boxes = await Promise.all(online.map(async (name) => {
    // On the agent's clock: a test's fake clock can run a box's deadline out.
    const deadline = timeoutSignal(agent.clock, BOX_PLUGINS_TIMEOUT_MS);
    try {
      const list = await agent.boxes.client(name).plugins({ signal: deadline.signal });
      return list.map((plugin) => ({ ...plugin, where: name }));
    } catch {
      return []; // an older box, or one that stopped answering: listed by `dock status` instead
    } finally {
      deadline.cancel();
    }
  }));
  return [...agent.plugins.list(), ...boxes.flat()];
}
