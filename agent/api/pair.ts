/**
 * `POST /v1/boxes/pair` `{ link, name?, network? }`: pairs this laptop with the box a `dockd pair` link
 * names (see `agent/pairing.ts` for how the box's CA is pinned) and registers it; answers the box's status.
 * `POST /v1/boxes/add-ssh` `{ host, name?, identity?, via?, listen? }`: installs dock there over SSH and
 * pairs it (`agent/add_ssh.ts`), streaming each step as NDJSON.
 * `POST /v1/boxes/{box}/upgrade`: sends this laptop's package to the box and follows its hand-over
 * (`agent/upgrade.ts`), streaming each step the same way.
 *
 * @module
 */
import type { z } from "zod";
import type { BoxStatus } from "../../client/wire.ts";
import { ADD_SSH_REQUEST, PAIR_REQUEST } from "../../client/schemas_laptop.ts";
import { body, json, ndjson, param, requestOrigin, RouteTable } from "../../core/http.ts";
import { addSsh, type AddSshBackend, checkAddSsh } from "../add_ssh.ts";
import { pairBox } from "../pairing.ts";
import { throughNetwork } from "../networks.ts";
import { checkUpgrade, type UpgradeBackend, upgradeBox } from "../upgrade.ts";

type PairRequest = z.infer<typeof PAIR_REQUEST>;
type AddSshRequest = z.infer<typeof ADD_SSH_REQUEST>;

/**
 * What the pairing routes use: each check runs before its answer starts, so a bad request is a 4xx,
 * not a failed step in a stream that already answered 200.
 */
export interface PairRoutesBackend {
  /** Pairs with the box `request.link` names; answers its status. */
  pair(request: PairRequest, origin: string): Promise<BoxStatus>;
  /** Refuses an `add-ssh` request that cannot work (the destination, `listen`, the name). */
  checkAddSsh(request: AddSshRequest): Promise<unknown>;
  /** Installs dock over SSH and pairs the box, step by step. */
  addSsh(request: AddSshRequest): AsyncIterable<unknown>;
  /** Refuses an upgrade of a box this laptop does not know. */
  checkUpgrade(name: string): void;
  /** Upgrades box `name`, step by step. */
  upgrade(name: string): AsyncIterable<unknown>;
}

/** The routes that bring boxes in and up to date: pairing by a link, `add-ssh` and `upgrade` (NDJSON). */
export function pairRoutes(agent: PairRoutesBackend): RouteTable {
  return new RouteTable("pair").add("POST", "/boxes/pair", async (c) => {
    const request = await body(c, PAIR_REQUEST);
    return json(await agent.pair(request, requestOrigin(c)), 201);
  }).add("POST", "/boxes/add-ssh", async (c) => {
    const request = await body(c, ADD_SSH_REQUEST);
    await agent.checkAddSsh(request);
    return ndjson(agent.addSsh(request));
  }).add("POST", "/boxes/:box/upgrade", (c) => {
    const name = param(c, "box");
    agent.checkUpgrade(name);
    return ndjson(agent.upgrade(name));
  });
}

/** The agent's pairing backend: what the routes above do, on this laptop's registry and SSH transports. */
export function pairBackend(agent: AddSshBackend & UpgradeBackend): PairRoutesBackend {
  return {
    pair: async (request, origin) => {
      // The credential will sit in agent.db: keep its folder the user's alone, even if it was loosened.
      await Deno.chmod(agent.paths.client, 0o700);
      const link = request.network
        ? await throughNetwork(agent, request.network, request.link)
        : request.link;
      return await pairBox(agent.boxes, { link, name: request.name }, { origin });
    },
    checkAddSsh: async (request) => {
      await checkAddSsh(request);
      await Deno.chmod(agent.paths.client, 0o700);
    },
    addSsh: (request) => addSsh(agent, request),
    checkUpgrade: (name) => checkUpgrade(agent, name),
    upgrade: (name) => upgradeBox(agent, name),
  };
}
