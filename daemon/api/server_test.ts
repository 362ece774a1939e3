import { assertEquals } from "../../tests/assert.ts";
import { boxPaths } from "../../core/paths.ts";
import { Box } from "../box.ts";
import { boxRoutes } from "./server.ts";

/**
 * Every route of the box API that acts (any method but GET), with the `before:` gates it runs. A new
 * acting route fails this test until it is listed here: with its gate, or as `[]` when nothing a person
 * would gate happens (README "Hooks and gates" lists the gated requests).
 */
const ACTING: Record<string, string[]> = {
  "POST /exec": ["exec"],
  "PUT /hooks": ["config.change"],
  "PUT /flows": ["config.change"],
  // A test run is the flow's own: what its run steps ask of the API passes that request's gates.
  "POST /flows/:id/test": [],
  "PUT /env": ["config.change"],
  "PUT /guard": ["config.change"],
  "PUT /locations/:name/scripts": ["config.change"],
  "PUT /locations/:name/config": ["config.change"],
  "PUT /locations/:name/kit": ["config.change"],
  // An announcement for the person's app: it starts nothing.
  "POST /preview": [],
  // A worktree on the public internet: its own gate. Ending one is never refused.
  "POST /shares": ["share.open"],
  "DELETE /shares/:id": [],
  // A unit runs a command: the exec gates. Starting, stopping or removing one it defined is not gated.
  "POST /units": ["exec"],
  "DELETE /units/:name": [],
  "POST /units/:name/start": [],
  "POST /units/:name/stop": [],
  "POST /units/:name/restart": [],
  "DELETE /locations/:name/kit": ["config.change"],
  "POST /sessions": ["session.create", "session.send"],
  "POST /sessions/:name/send": ["session.send"],
  "POST /sessions/:name/keys": ["session.send"],
  "POST /sessions/:name/answer": ["session.send"],
  "POST /tasks": ["worktree.create", "session.create", "session.send"],
  "POST /skills/install": ["skills.install"],
  "POST /skills/uninstall": ["skills.uninstall"],
  "POST /locations/:name/worktrees": ["worktree.create"],
  "DELETE /locations/:name/worktrees/:wt": ["worktree.remove"],
  "POST /locations": [],
  "POST /locations/clone": [],
  "POST /locations/new": [],
  "DELETE /locations/:name": [],
  "POST /locations/:name/worktrees/:wt/sync": [],
  "POST /locations/:name/worktrees/:wt/push": [],
  "POST /locations/:name/worktrees/:wt/pr": [],
  "POST /locations/:name/worktrees/:wt/services/:service/start": [],
  "POST /locations/:name/worktrees/:wt/services/:service/stop": [],
  "POST /locations/:name/worktrees/:wt/services/:service/restart": [],
  "POST /locations/:name/worktrees/:wt/pause": [],
  "POST /locations/:name/worktrees/:wt/resume": [],
  "DELETE /sessions/:name": [],
  "POST /events": [],
  "POST /secrets/test": [],
  // Socket only (403 over TLS and through the relay); it reads, and says no value.
  "POST /secrets/report": [],
  "POST /secrets/environment": [],
  "POST /upgrade": [],
  "POST /stop": [],
  "POST /pair/code": [],
  "DELETE /laptops/:id": [],
  "POST /pair": [],
  "DELETE /pair": [],
  // The phone companion: its listener opens nothing a laptop could not already reach (README).
  "PUT /phone": [],
  "POST /phone/code": [],
  "DELETE /phone/devices/:id": [],
  // Turning a plugin on grants it permissions: whoever may change config may refuse that.
  "POST /plugins/:id/enable": ["config.change"],
  "POST /plugins/:id/disable": ["config.change"],
  // Installing, removing and configuring a plugin change what runs on the box, as enabling does.
  "PUT /plugins/:id/files": ["config.change"],
  "DELETE /plugins/:id": ["config.change"],
  "PUT /plugins/:id/config": ["config.change"],
  // One test event to one plugin: it reaches no bus, no hook and no flow.
  "POST /plugins/:id/test-event": [],
  // A ui panel's call runs as the plugin, through the API: the route it reaches runs its own gates.
  "POST /plugins/:id/ui-api": [],
  // A plugin's own HTTP function: what it does is the plugin's (its grant and scopes bound it).
  ...Object.fromEntries(
    ["POST", "PUT", "PATCH", "DELETE"].flatMap((method) => [
      [`${method} /plugins/:id/fn`, []],
      [`${method} /plugins/:id/fn/*`, []],
    ]),
  ),
};

async function withBox(fn: (box: Box) => Promise<void> | void): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "dock-routes-" });
  const env = new Map([["HOME", dir], ["DOCK_HOME", `${dir}/dock`], ["DOCK_STATE_DIR", `${dir}/state`]]);
  const box = new Box(boxPaths({ get: (key) => env.get(key) }));
  try {
    await fn(box);
  } finally {
    await box.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("box routes: every acting route on either listener, with exactly the gates it runs", async () => {
  await withBox((box) => {
    const acting: Record<string, string[]> = {};
    const gatedReads: string[] = [];
    for (const listener of ["socket", "tls"] as const) {
      for (const table of boxRoutes(box, { listener })) {
        for (const route of table.routes) {
          const actions = route.gates.map((gate) => gate.action);
          if (route.method === "GET") {
            if (actions.length) gatedReads.push(`${route.method} ${route.path}`);
            continue;
          }
          acting[`${route.method} ${route.path}`] = actions;
        }
      }
    }
    assertEquals(acting, ACTING);
    assertEquals(gatedReads, []);
  });
});
