/**
 * The laptop's box registry routes (spec 4.1): `GET /v1/boxes`, `POST /v1/boxes/add-local` `{ name? }`
 * (this machine's own dockd, through its socket) and `DELETE /v1/boxes/{box}` (unpairs and forgets it).
 * Pairing and `add-ssh` are `pair.ts`; the relay to a box's own API is `agent/relay.ts`.
 *
 * @module
 */
import type { ForgottenBox } from "../../client/wire.ts";
import { BOX_ADD_LOCAL } from "../../client/schemas_laptop.ts";
import { body, json, param, requestOrigin, RouteTable } from "../../core/http.ts";
import { removeAutostart } from "../add_ssh.ts";
import type { Boxes } from "../boxes.ts";
import { forgetBox } from "../pairing.ts";
import type { SshTransports } from "../ssh_transport.ts";

/** What the box registry routes use of the agent. */
export interface BoxesRoutesBackend {
  boxes: Pick<Boxes, "status" | "add">;
  /** The local dockd's socket, which `add-local` registers. */
  localSocket: string;
  /** Unpairs box `name` and forgets it (see {@linkcode forgetEverywhere}). */
  forget(name: string, origin: string): Promise<ForgottenBox>;
}

/** The box registry routes. */
export function boxesRoutes(agent: BoxesRoutesBackend): RouteTable {
  return new RouteTable("boxes")
    .add("GET", "/boxes", () => json(agent.boxes.status()))
    .add("POST", "/boxes/add-local", async (c) => {
      const request = await body(c, BOX_ADD_LOCAL);
      const added = await agent.boxes.add(
        { name: request?.name ?? "local", kind: "socket", address: agent.localSocket },
        requestOrigin(c),
      );
      return json(added, 201);
    })
    .add("DELETE", "/boxes/:box", async (c) => json(await agent.forget(param(c, "box"), requestOrigin(c))));
}

/**
 * Forgets box `name`: unpaired through its SSH transport (when it has one), which is closed only then;
 * a box added over SSH loses its crontab @reboot entry too.
 */
export async function forgetEverywhere(
  agent: { boxes: Boxes; transports: SshTransports },
  name: string,
  origin: string,
): Promise<ForgottenBox> {
  const ssh = agent.boxes.has(name) ? agent.boxes.sshDestinations().get(name) : undefined;
  const forgotten = await forgetBox(agent.boxes, name, { origin });
  if (ssh) await removeAutostart(ssh, agent.transports.identity(name));
  await agent.transports.remove(name);
  return forgotten;
}
