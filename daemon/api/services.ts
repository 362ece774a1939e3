/**
 * Routes of services and ports in use: a worktree's services (list, start, stop, restart, log),
 * pause and resume, and the box-wide listening ports attributed to worktrees.
 *
 * @module
 */
import type { Pauses } from "../pause.ts";
import type { Services } from "../services.ts";
import type { Worktrees } from "../worktrees.ts";
import type { Port, WorktreePorts, WorktreeService } from "../../client/wire.ts";
import { portsInUse } from "../procs.ts";
import {
  flagQuery,
  intQuery,
  json,
  ndjsonChecked,
  param,
  requestOrigin,
  RouteTable,
} from "../../core/http.ts";

/** What the service, pause and ports routes use of the box. */
export interface ServiceRoutesBackend {
  services: Pick<Services, "list" | "start" | "stop" | "restart" | "log" | "running">;
  pauses: Pick<Pauses, "pause" | "resume">;
  worktrees: Pick<Worktrees, "list">;
}

/** The service, pause and ports routes. */
export function serviceRoutes(box: ServiceRoutesBackend): RouteTable {
  const wt = "/locations/:name/worktrees/:wt";
  const svc = `${wt}/services/:service`;
  const target = (c: Parameters<Parameters<RouteTable["add"]>[2]>[0]) =>
    [param(c, "name"), param(c, "wt"), param(c, "service")] as const;
  return new RouteTable("services")
    .add("GET", `${wt}/services`, async (c) => {
      const services = await box.services.list(param(c, "name"), param(c, "wt"));
      return json(withPorts(services, await listening(box)));
    })
    .add("POST", `${svc}/start`, async (c) => json(await box.services.start(...target(c), requestOrigin(c))))
    .add("POST", `${svc}/stop`, async (c) => json(await box.services.stop(...target(c), requestOrigin(c))))
    .add(
      "POST",
      `${svc}/restart`,
      async (c) => json(await box.services.restart(...target(c), requestOrigin(c))),
    )
    .add("GET", `${svc}/log`, (c) => {
      const tail = intQuery(c, "tail", { min: 0, max: 100_000, fallback: 200 });
      const follow = flagQuery(c, "follow");
      const [location, worktree, name] = target(c);
      const lines = box.services.log(location, worktree, name, { tail, follow, signal: c.req.raw.signal });
      return ndjsonChecked(lines);
    })
    .add(
      "POST",
      `${wt}/pause`,
      async (c) => json(await box.pauses.pause(param(c, "name"), param(c, "wt"), requestOrigin(c))),
    )
    .add(
      "POST",
      `${wt}/resume`,
      async (c) => json(await box.pauses.resume(param(c, "name"), param(c, "wt"), requestOrigin(c))),
    )
    .add("GET", "/ports", async () => json(await listening(box)))
    .add("GET", "/services", async () => {
      const ports = await listening(box);
      const byWorktree = new Map<string, WorktreePorts>();
      for (const worktree of box.worktrees.list()) {
        byWorktree.set(`${worktree.location}/${worktree.name}`, {
          location: worktree.location,
          worktree: worktree.name,
          path: worktree.path,
          ports: [],
        });
      }
      for (const port of ports) {
        if (port.location && port.worktree) {
          byWorktree.get(`${port.location}/${port.worktree}`)?.ports.push(port);
        }
      }
      return json([...byWorktree.values()].filter((entry) => entry.ports.length));
    });
}

/** Every listening TCP port on the box, attributed to worktrees and services. */
function listening(box: ServiceRoutesBackend): Promise<Port[]> {
  return Promise.resolve(portsInUse(box.worktrees.list(), box.services.running()));
}

function withPorts(services: WorktreeService[], ports: Port[]): WorktreeService[] {
  return services.map((service) => ({
    ...service,
    ports: ports.filter((p) =>
      p.service === service.name && p.location === service.location && p.worktree === service.worktree
    ).map((p) => p.port),
  }));
}
