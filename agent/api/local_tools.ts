/**
 * The laptop's own tools for reaching boxes: `GET /v1/editors`, `POST /v1/editors/open` (`editors.ts`),
 * `GET /v1/ssh-config` and `POST /v1/ssh-config` (`ssh_config.ts`).
 *
 * @module
 */
import { EDITOR_OPEN } from "../../client/schemas.ts";
import { body, json, RouteTable } from "../../core/http.ts";
import { editors, type EditorsBackend, openEditor } from "../editors.ts";
import { sshConfigState, writeSshConfig } from "../ssh_config.ts";

/** The editor and SSH config routes. */
export function localToolRoutes(agent: EditorsBackend): RouteTable {
  return new RouteTable("local-tools")
    .add("GET", "/editors", () => json(editors(agent)))
    .add("POST", "/editors/open", async (c) => json(await openEditor(agent, await body(c, EDITOR_OPEN))))
    .add("GET", "/ssh-config", async () => json(await sshConfigState(agent, agent.home)))
    .add("POST", "/ssh-config", async () => json(await writeSshConfig(agent, agent.home)));
}
