/**
 * `POST secrets/report { location }`: which secrets of a worktree's environment resolve and which do not,
 * and why, never a value: on the box's own socket only. Over TLS it answers 403 (`socketOnly`), and a
 * request the laptop's relay brings to a socket box says so (`x-dock-relay`) and is refused too: the
 * report is for the person at the box and the tools they run there (`dockd secret exec` checks with it).
 *
 * @module
 */
import { DockError } from "../../client/errors.ts";
import { SECRET_REPORT } from "../../client/schemas.ts";
import type { SecretReport } from "../../client/wire.ts";
import { body, json, RouteTable } from "../../core/http.ts";
import type { SecretOutcome } from "../env.ts";
import type { Worktrees } from "../worktrees.ts";

/** The header the laptop's relay adds to what it brings to a box. */
export const RELAY_HEADER = "x-dock-relay";

/** What the secrets routes use of the box. */
export interface SecretRoutesBackend {
  worktrees: Pick<Worktrees, "target" | "environment">;
}

/** The socket-only secrets routes. */
export function secretRoutes(box: SecretRoutesBackend): RouteTable {
  return new RouteTable("secrets").add("POST", "/secrets/report", async (c) => {
    if (c.req.header(RELAY_HEADER)) {
      throw new DockError(
        "socket_only",
        "POST /v1/secrets/report works only on the box itself, not through a laptop",
        {
          status: 403,
        },
      );
    }
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
