/**
 * The laptop's own tools for reaching boxes: networks and discovery (`networks.ts`), `GET /v1/editors`, `POST /v1/editors/open` (`editors.ts`),
 * `GET /v1/ssh-config` and `POST /v1/ssh-config` (`ssh_config.ts`), `POST /v1/setup/port80[?remove=1]`
 * (`port80.ts`).
 *
 * @module
 */
import { EDITOR_OPEN } from "../../client/schemas_laptop.ts";
import { body, flagQuery, json, ndjson, param, RouteTable, textQuery } from "../../core/http.ts";
import { setupPort80 } from "../port80.ts";
import { editors, type EditorsBackend, openEditor } from "../editors.ts";
import { sshConfigState, writeSshConfig } from "../ssh_config.ts";
import { discover, login, networks, type NetworksBackend, peers } from "../networks.ts";

/** The editor and SSH config routes. */
export function localToolRoutes(
  agent: EditorsBackend & NetworksBackend & { proxyPort: () => number },
): RouteTable {
  return new RouteTable("local-tools")
    .add(
      "POST",
      "/setup/port80",
      (c) =>
        ndjson(
          setupPort80({ proxyPort: agent.proxyPort(), remove: flagQuery(c, "remove"), path: agent.path?.() }),
        ),
    )
    .add("GET", "/networks", async () => json(await networks(agent)))
    .add("GET", "/networks/:name/peers", async (c) => json(await peers(agent, param(c, "name"))))
    .add("POST", "/networks/:name/login", (c) => {
      const name = param(c, "name");
      return ndjson(login(agent, name));
    })
    .add(
      "GET",
      "/discover",
      async (c) => json(await discover(agent, textQuery(c, "network", 64) ?? "tailscale")),
    )
    .add("GET", "/editors", () => json(editors(agent)))
    .add("POST", "/editors/open", async (c) => json(await openEditor(agent, await body(c, EDITOR_OPEN))))
    .add("GET", "/ssh-config", async () => json(await sshConfigState(agent, agent.home)))
    .add("POST", "/ssh-config", async () => json(await writeSshConfig(agent, agent.home)));
}
