/**
 * The agent's own routes (spec 4.1): `GET /v1/status`, `POST /v1/refresh` (asks every box again, then
 * answers the status), `POST /v1/upgrade` (the body is this laptop's new package) and `POST /v1/stop`,
 * which is always refused.
 *
 * @module
 */
import type { UpgradeStarted } from "../../client/wire.ts";
import { DockError } from "../../client/errors.ts";
import { json, requestOrigin, RouteTable } from "../../core/http.ts";
import { loopbackJson } from "./sessions.ts";

/** What the agent's own routes use of it. */
export interface StatusRoutesBackend {
  /** The agent's status now (`AgentStatus`), as JSON. */
  statusJson(): string;
  /** Asks every box again. */
  refresh(): Promise<unknown>;
  /** Installs `body` as this laptop's dock and hands over to it (`agent/self_upgrade.ts`). */
  upgrade(body: ReadableStream<Uint8Array>, origin: string): Promise<UpgradeStarted>;
}

/** The status, refresh, upgrade and stop routes. */
export function statusRoutes(agent: StatusRoutesBackend): RouteTable {
  return new RouteTable("agent")
    .add("GET", "/status", () => loopbackJson(agent.statusJson()))
    .add("POST", "/refresh", async () => {
      await agent.refresh();
      return loopbackJson(agent.statusJson());
    })
    .add("POST", "/upgrade", async (c) => {
      // The body is the package itself (a .tar.gz), not JSON (as a box's POST upgrade).
      if (!/^application\/(gzip|x-gzip|octet-stream)\b/.test(c.req.header("content-type") ?? "")) {
        throw new DockError("unsupported_type", "the body must be a package (.tar.gz), as application/gzip", {
          status: 415,
        });
      }
      if (!c.req.raw.body) {
        throw new DockError("invalid_request", "the body must be a package", { status: 400 });
      }
      return json(await agent.upgrade(c.req.raw.body, requestOrigin(c)), 202);
    })
    .add("POST", "/stop", () => {
      // Refused on purpose: every holder of the token (the app in a browser, a plugin through ctx.api)
      // could call it. `dock agent stop` signals the pid GET /v1/status reports instead: only a process
      // of this user can signal the agent, which is what the CLI is.
      throw new DockError("refused", "the agent cannot be stopped through its API", { status: 403 });
    });
}
