/**
 * The CLI's connection to the box daemon: always the typed client over the daemon's own socket.
 *
 * @module
 */
import { BoxClient } from "../client/box.ts";
import { boxPaths } from "../core/paths.ts";

/** A client of the local box daemon, tagging its requests with origin `cli`. */
export function localBox(): BoxClient {
  return new BoxClient({ socket: boxPaths().socket, origin: "cli" });
}
