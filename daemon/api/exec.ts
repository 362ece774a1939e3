/**
 * Route of exec: run a command to completion in a worktree (`?stream=1` streams NDJSON lines).
 *
 * @module
 */
import { EXEC_REQUEST } from "../../client/schemas.ts";
import { type Exec, execTimeout } from "../exec.ts";
import type { Worktrees } from "../worktrees.ts";
import { body, flagQuery, json, ndjson, RouteTable } from "../../core/http.ts";

/** What the exec route uses of the box. */
export interface ExecRoutesBackend {
  worktrees: Pick<Worktrees, "target">;
  exec: Pick<Exec, "run" | "stream">;
}

/** The exec route, gated by `before:exec`. */
export function execRoutes(box: ExecRoutesBackend): RouteTable {
  return new RouteTable("exec").route({
    method: "POST",
    path: "/exec",
    input: async (c) => {
      const request = await body(c, EXEC_REQUEST);
      const job = {
        location: request.location,
        command: request.command,
        timeoutMs: execTimeout(request.timeout),
      };
      box.worktrees.target(job.location); // 404 before anything runs or streams
      return job;
    },
    gates: [{
      action: "exec",
      describe: (job) => ({
        target: { location: job.location, command: job.command },
        location: job.location,
      }),
    }],
    handler: async (c, job) => {
      if (flagQuery(c, "stream")) return ndjson(box.exec.stream(job, c.req.raw.signal));
      return json(await box.exec.run(job, { signal: c.req.raw.signal }));
    },
  });
}
