/**
 * Route of the terminal relay on the agent's API: `GET /v1/boxes/{box}/sessions/{name}/attach`
 * (spec 4.1, 4.3). The gate in front has already checked the token (`?token=` on this upgrade).
 *
 * @module
 */
import { DockError, notFound } from "../../client/errors.ts";
import { param, RouteTable } from "../../daemon/api/http.ts";
import type { Agent } from "../agent.ts";
import { attachRelay, type BoxTarget, tlsTarget } from "../attach_relay.ts";
import type { Boxes } from "../boxes.ts";

/** What a TLS box's attach needs beyond its address: the pinned CA and this laptop's credential. */
export interface TlsCredentials {
  tlsCredentials(name: string): { caCerts: string[]; credential: string } | null;
}

/** Options of {@linkcode attachRoutes}. */
export interface AttachRouteOptions {
  /** How a box is reached. @default {the agent's box registry: {@linkcode boxTarget}} */
  target?: (box: string) => BoxTarget | Promise<BoxTarget>;
}

/** The attach relay's route, to mount under `/v1`. */
export function attachRoutes(agent: Agent, options: AttachRouteOptions = {}): RouteTable {
  const target = options.target ?? ((box: string) => boxTarget(agent.boxes, box));
  return new RouteTable("attach").add("GET", "/boxes/:box/sessions/:name/attach", async (c) => {
    const box = param(c, "box");
    const url = new URL(c.req.url);
    return await attachRelay(c.req.raw, {
      box,
      target: await target(box),
      session: param(c, "name"),
      cols: url.searchParams.get("cols"),
      rows: url.searchParams.get("rows"),
    });
  });
}

/**
 * How the agent reaches `name`: its daemon's socket, or its TLS address with the CA and credential the
 * registry keeps (read through a `tlsCredentials(name)` method on {@linkcode Boxes} when it has one).
 */
export function boxTarget(boxes: Boxes, name: string): BoxTarget {
  const record = boxes.list().find((box) => box.name === name);
  if (!record) throw notFound("box", name);
  if (record.kind === "socket") return { kind: "socket", path: record.address };
  const credentials = (boxes as Boxes & Partial<TlsCredentials>).tlsCredentials?.(name);
  if (!credentials) {
    throw new DockError(
      "unsupported",
      `box '${name}': attaching over TLS needs the box's CA and credential`,
      {
        status: 422,
      },
    );
  }
  return tlsTarget(record.address, credentials);
}
