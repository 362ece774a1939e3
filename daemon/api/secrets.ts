/**
 * `POST secrets/report { location }`: which secrets of a worktree's environment resolve and which do not,
 * and why, never a value; `POST secrets/environment { location }`: the layers that environment is built
 * from (`Worktrees.environmentLayers`), secret references unresolved, which `dockd secret exec` resolves
 * in its own process. On the box's own socket only: over TLS they answer 403 (`socketOnly`), and a
 * request the laptop's relay brings to a socket box says so (`x-dock-relay`) and is refused too: they
 * are for the person at the box and the tools they run there.
 *
 * @module
 */
import { DockError } from "../../client/errors.ts";
import { SECRET_REPORT } from "../../client/schemas.ts";
import type { SecretReport } from "../../client/wire.ts";
import type { Context } from "hono";
import { body, json, RouteTable } from "../../core/http.ts";
import type { SecretOutcome } from "../env.ts";
import type { Worktrees } from "../worktrees.ts";

/** The header the laptop's relay adds to what it brings to a box. */
export const RELAY_HEADER = "x-dock-relay";

/** What the secrets routes use of the box. */
export interface SecretRoutesBackend {
  worktrees: Pick<Worktrees, "target" | "environment" | "environmentLayers">;
}

/** Refuses a request the laptop's relay brought: these routes are for the box's own user. */
function refuseRelayed(c: Context, path: string): void {
  if (c.req.header(RELAY_HEADER)) {
    throw new DockError(
      "socket_only",
      `POST /v1/${path} works only on the box itself, not through a laptop`,
      {
        status: 403,
      },
    );
  }
}

/** The socket-only secrets routes. */
export function secretRoutes(box: SecretRoutesBackend): RouteTable {
  return new RouteTable("secrets").add("POST", "/secrets/environment", async (c) => {
    refuseRelayed(c, "secrets/environment");
    // The same body as the report's: whose environment.
    const request = await body(c, SECRET_REPORT);
    return json(await box.worktrees.environmentLayers(box.worktrees.target(request.location)));
  }).add("POST", "/secrets/report", async (c) => {
    refuseRelayed(c, "secrets/report");
    const request = await body(c, SECRET_REPORT);
    const worktree = box.worktrees.target(request.location);
    const secrets: SecretOutcome[] = [];
    await box.worktrees.environment(worktree, { onSecret: (outcome) => secrets.push(outcome) });
    const report: SecretReport = {
      location: worktree.location,
      worktree: worktree.name,
      secrets: secrets.map(({ variable, scheme, ok, error, length }) => ({
        variable,
        scheme,
        ok,
        ...(error === undefined ? {} : { error }),
        ...(length === undefined ? {} : { length }),
      })),
    };
    return json(report);
  });
}
