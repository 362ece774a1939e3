/**
 * Routes about the box itself: info, stats, doctor, folder listing, the box env file and secrets.
 *
 * @module
 */
import { ENV_PUT, GUARD_PUT, SECRET_TEST } from "../../client/schemas.ts";
import { readEnvFile, validateEnvFile, writeEnvFile } from "../env.ts";
import type { EventBus } from "../../core/events.ts";
import type { BoxPaths } from "../../core/paths.ts";
import type { Hooks } from "../hooks.ts";
import type { Locations } from "../locations.ts";
import type { SecretResolver } from "../secrets.ts";
import type { Sessions } from "../sessions.ts";
import type { BoxSettings } from "../settings.ts";
import type { Worktrees } from "../worktrees.ts";
import * as system from "../system.ts";
import { availableAgents } from "../agents.ts";
import { pathTools } from "../tools.ts";
import { isSecretReference } from "../secrets.ts";
import { readGuardFile, validateGuard, writeGuardFile } from "../guard.ts";
import { hooksCheck } from "../../core/hooks.ts";
import { cgroupCheck } from "../cgroups.ts";
import type { Services } from "../services.ts";
import type { Upgrades } from "../upgrade.ts";
import { DockError } from "../../client/errors.ts";
import { BUILD } from "../../client/version.ts";
import { body, json, requestOrigin, RouteTable, textQuery } from "../../core/http.ts";

/** What the system routes use of the box. */
export interface SystemRoutesBackend {
  settings: Pick<BoxSettings, "name">;
  paths: Pick<BoxPaths, "state" | "userHome" | "socket" | "envFile" | "guardFile">;
  bus: Pick<EventBus, "publish">;
  hooks: Pick<Hooks, "state">;
  services: Pick<Services, "tracking">;
  locations: Pick<Locations, "list">;
  worktrees: Pick<Worktrees, "list">;
  sessions: Pick<Sessions, "list" | "presets">;
  secrets: Pick<SecretResolver, "resolve">;
  upgrades: Pick<Upgrades, "start">;
}

/** The system routes. */
export function systemRoutes(box: SystemRoutesBackend): RouteTable {
  return new RouteTable("system")
    .add("POST", "/upgrade", async (c) => {
      // The body is the package itself (a .tar.gz), not JSON.
      const type = c.req.header("content-type") ?? "";
      if (!/^application\/(gzip|x-gzip|octet-stream)\b/.test(type)) {
        throw new DockError("unsupported_type", "the body must be a package (.tar.gz), as application/gzip", {
          status: 415,
        });
      }
      if (!c.req.raw.body) {
        throw new DockError("invalid_request", "the body must be a package", { status: 400 });
      }
      return json(await box.upgrades.start(c.req.raw.body, requestOrigin(c)), 202);
    })
    .add(
      "GET",
      "/info",
      async () => {
        // One look at the PATH folders serves the tools and the agent presets both (the agent's health
        // check asks every few seconds).
        const which = pathTools.lookup();
        const agents = availableAgents({}, (command) => which(command) !== null);
        return json(await system.boxInfo({ name: box.settings.name, build: BUILD, agents, which }));
      },
    )
    .add("GET", "/stats", async () => {
      const worktrees = box.worktrees.list();
      return json({
        ...(await system.stats({ paths: [box.paths.state, box.paths.userHome] })),
        locations: box.locations.list().length,
        worktrees: worktrees.length,
        agents: box.sessions.list().filter((s) => s.agent && !s.exited).length,
      });
    })
    .add(
      "GET",
      "/doctor",
      async () =>
        json([
          ...await system.doctor({ socket: box.paths.socket, stateDir: box.paths.state }),
          hooksCheck(box.hooks.state()),
          cgroupCheck(box.services.tracking),
        ]),
    )
    .add(
      "GET",
      "/fs",
      async (c) => json(await system.listFolder({ path: textQuery(c, "path"), home: box.paths.userHome })),
    )
    .add("GET", "/env", async () => json({ env: await readEnvFile(box.paths.envFile) }))
    .route({
      method: "PUT",
      path: "/env",
      input: async (c) => validateEnvFile(await body(c, ENV_PUT), "body", 400),
      gates: [{
        action: "config.change",
        describe: (file) => ({ target: { file: "env.json", value: file } }),
      }],
      handler: async (c, file) => {
        await writeEnvFile(box.paths.envFile, file);
        box.bus.publish({ type: "config.changed", origin: requestOrigin(c), data: { file: "env.json" } });
        return json(file);
      },
    })
    .add("GET", "/guard", async () => json(await readGuardFile(box.paths.guardFile)))
    .route({
      method: "PUT",
      path: "/guard",
      input: async (c) => validateGuard(await body(c, GUARD_PUT), "body", 400),
      gates: [{
        action: "config.change",
        describe: (settings) => ({ target: { file: "guard.json", value: settings } }),
      }],
      handler: async (c, settings) => {
        await writeGuardFile(box.paths.guardFile, settings);
        box.bus.publish({ type: "config.changed", origin: requestOrigin(c), data: { file: "guard.json" } });
        return json(settings);
      },
    })
    .add("POST", "/secrets/test", async (c) => {
      const { ref } = await body(c, SECRET_TEST);
      if (!isSecretReference(ref)) {
        return json({ ok: false, error: "not a secret reference: expected env://NAME or a vault reference" });
      }
      const result = await box.secrets.resolve(ref, { fresh: true });
      return json(result.ok ? { ok: true, length: result.value.length } : { ok: false, error: result.error });
    })
    .add("POST", "/stop", () => {
      throw new DockError("forbidden", "stop the daemon with its service manager or a signal", {
        status: 403,
      });
    });
}
