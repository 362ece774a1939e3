/**
 * What a plugin's consent shows beside its permissions: what each scope it asks for can lead to
 * (plugins/scopes.ts) and which user its shell commands run as. The registry puts it in every listing
 * (`GET plugins`, `GET plugins/{id}`) and in the refusal of an enable that confirms the wrong thing, so
 * the CLI's prompt and the app's dialog show the same words.
 *
 * @module
 */
import { userInfo } from "node:os";
import type { PluginInfo, PluginPermissions } from "../client/wire.ts";
import { scopeClasses } from "./scopes.ts";

let user: string | undefined;

/**
 * The user this process runs as: the daemon's on a box, the agent's on the laptop, who a plugin's shell
 * commands run as. Read from the system (`getpwuid`), not `$USER`, which a service manager may leave
 * unset or a caller may set to anything.
 */
export function processUser(): string {
  if (user === undefined) {
    try {
      user = userInfo().username || `uid ${Deno.uid()}`;
    } catch {
      user = `uid ${Deno.uid()}`;
    }
  }
  return user;
}

/** The consent's context for `permissions`: its scopes' classes, and the user when it has commands. */
export function consentOf(
  permissions: PluginPermissions | undefined,
): Pick<PluginInfo, "scope_classes" | "runs_as"> {
  return {
    ...(permissions?.scopes?.length ? { scope_classes: scopeClasses(permissions.scopes) } : {}),
    ...(permissions?.commands?.length ? { runs_as: processUser() } : {}),
  };
}
