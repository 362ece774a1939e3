/**
 * `GET tunnel?port=P` (a WebSocket): a byte stream to `127.0.0.1:P` on the box, so the laptop can reach
 * a worktree's server (port forwards, the private-URL proxy) over the one connection it already has
 * to the box, authenticated like every other request. Only loopback is reachable this way.
 *
 * @module
 */
import { DockError } from "../../client/errors.ts";
import { intQuery, RouteTable } from "../../core/http.ts";
import { connEnd, pump, webSocketEnd } from "../../core/pump.ts";
import { acceptWebSocket, requireWebSocket } from "../../core/websocket.ts";
import type { TlsEnv } from "./pair.ts";

/** The tunnel route. */
export function tunnelRoutes(): RouteTable {
  return new RouteTable("tunnel").add("GET", "/tunnel", async (c) => {
    const port = intQuery(c, "port", { min: 1, max: 65535, fallback: 0 });
    if (!port) throw new DockError("invalid_request", "port: required (1 to 65535)", { status: 400 });
    // Refused before connecting: a plain request must not open a connection to the port.
    requireWebSocket(c.req.raw, "the tunnel");
    let conn: Deno.TcpConn;
    try {
      conn = await Deno.connect({ hostname: "127.0.0.1", port });
    } catch (cause) {
      throw new DockError("port_closed", `nothing listens on 127.0.0.1:${port} on the box`, {
        status: 502,
        cause,
      });
    }
    const { socket, response } = acceptWebSocket(c.req.raw, "the tunnel");
    // A laptop's tunnel over TLS holds the laptop's tie: its revocation closes the socket.
    const tie = (c.env as TlsEnv | undefined)?.tie;
    pump(webSocketEnd(socket, "the laptop"), connEnd(conn, `127.0.0.1:${port}`), {
      // The laptop's side cannot stop reading, and an upload to a slow server must not fail.
      maxBacklogBytes: Infinity,
      signal: tie?.signal,
    }).then(tie?.release);
    return response;
  });
}
