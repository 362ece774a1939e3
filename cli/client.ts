/**
 * The CLI's connection to the box daemon: always the typed client over the daemon's own socket.
 *
 * @module
 */
import { BoxClient } from "../client/box.ts";
import { boxPaths } from "../core/paths.ts";

/**
 * A client of the local box daemon, tagging its requests with origin `cli`, or with `DOCK_ORIGIN` when a
 * flow's run step runs the command (`flow:<id>`: what it causes never starts that flow again).
 */
export function localBox(): BoxClient {
  const origin = Deno.env.get("DOCK_ORIGIN")?.startsWith("flow:") ? Deno.env.get("DOCK_ORIGIN")! : "cli";
  return new BoxClient({ socket: boxPaths().socket, origin, oneShotReads: true });
}
