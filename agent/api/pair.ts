/**
 * `POST /v1/boxes/pair` `{ link, name? }`: pairs this laptop with the box a `dockd pair` link names
 * (see `agent/pairing.ts` for how the box's CA is pinned) and registers it; answers the box's status.
 * `POST /v1/boxes/add-ssh` `{ host, name?, identity? }`: installs dock there over SSH and pairs it
 * (`agent/add_ssh.ts`), streaming each step as NDJSON.
 * `POST /v1/boxes/{box}/upgrade`: sends this laptop's package to the box and follows its hand-over
 * (`agent/upgrade.ts`), streaming each step the same way.
 *
 * @module
 */
import { ADD_SSH_REQUEST, PAIR_REQUEST } from "../../client/schemas.ts";
import { body, json, ndjson, param, requestOrigin, RouteTable } from "../../core/http.ts";
import type { ClientPaths } from "../../core/paths.ts";
import type { Boxes } from "../boxes.ts";
import type { SshTransports } from "../ssh_transport.ts";
import { addSsh, checkAddSsh } from "../add_ssh.ts";
import { pairBox } from "../pairing.ts";
import { throughNetwork } from "../networks.ts";
import { checkUpgrade, upgradeBox } from "../upgrade.ts";

/** What the pairing route uses of the agent. */
export interface PairRoutesBackend {
  paths: Pick<ClientPaths, "client">;
  boxes: Boxes;
  transports: SshTransports;
}

/** The routes that bring boxes in and up to date: pairing by a link, `add-ssh` and `upgrade` (NDJSON). */
export function pairRoutes(agent: PairRoutesBackend): RouteTable {
  return new RouteTable("pair").add("POST", "/boxes/pair", async (c) => {
    const request = await body(c, PAIR_REQUEST);
    // The credential will sit in agent.db: keep its folder the user's alone, even if it was loosened.
    await Deno.chmod(agent.paths.client, 0o700);
    const link = request.network ? await throughNetwork(agent, request.network, request.link) : request.link;
    return json(await pairBox(agent.boxes, { link, name: request.name }, { origin: requestOrigin(c) }), 201);
  }).add("POST", "/boxes/add-ssh", async (c) => {
    const request = await body(c, ADD_SSH_REQUEST);
    await checkAddSsh(request);
    await Deno.chmod(agent.paths.client, 0o700);
    return ndjson(addSsh(agent, request));
  }).add("POST", "/boxes/:box/upgrade", (c) => {
    const name = param(c, "box");
    checkUpgrade(agent, name);
    return ndjson(upgradeBox(agent, name));
  });
}
