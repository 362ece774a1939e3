/**
 * `GET tunnel?port=P` (a WebSocket): a byte stream to `127.0.0.1:P` on the box, so the laptop can reach
 * a worktree's server (port forwards, the private-URL proxy) over the one connection it already has
 * to the box, authenticated like every other request. Only loopback is reachable this way.
 *
 * @module
 */
import { DockError } from "../../client/errors.ts";
import { whileBacklogged } from "../../client/websocket.ts";
import type { Box } from "../box.ts";
import { intQuery, RouteTable } from "../../core/http.ts";

/** The tunnel route. */
export function tunnelRoutes(_box: Box): RouteTable {
  return new RouteTable("tunnel").add("GET", "/tunnel", async (c) => {
    const port = intQuery(c, "port", { min: 1, max: 65535, fallback: 0 });
    if (!port) throw new DockError("invalid_request", "port: required (1 to 65535)", { status: 400 });
    if (c.req.header("upgrade")?.toLowerCase() !== "websocket") {
      throw new DockError("upgrade_required", "the tunnel is a WebSocket: send Upgrade: websocket", {
        status: 400,
      });
    }
    let conn: Deno.TcpConn;
    try {
      conn = await Deno.connect({ hostname: "127.0.0.1", port });
    } catch (cause) {
      throw new DockError("port_closed", `nothing listens on 127.0.0.1:${port} on the box`, {
        status: 502,
        cause,
      });
    }
    const { socket, response } = Deno.upgradeWebSocket(c.req.raw);
    socket.binaryType = "arraybuffer";
    pipe(socket, conn);
    return response;
  });
}

/** Copies bytes both ways until either side ends, then ends the other. */
export function pipe(socket: WebSocket, conn: Deno.Conn): void {
  let writes = Promise.resolve();
  let closed = false;
  const close = () => {
    if (closed) return;
    closed = true;
    try {
      conn.close();
    } catch { /* closed */ }
    try {
      socket.close(1000);
    } catch { /* closed */ }
  };
  socket.onmessage = (event) => {
    if (typeof event.data === "string") return;
    const bytes = new Uint8Array(event.data as ArrayBuffer);
    // Writes are chained so they keep their order.
    writes = writes.then(async () => {
      let written = 0;
      while (written < bytes.length) written += await conn.write(bytes.subarray(written));
    }).catch(close);
  };
  socket.onclose = close;
  socket.onerror = close;
  socket.onopen = async () => {
    const buffer = new Uint8Array(64 * 1024);
    try {
      while (!closed) {
        const n = await conn.read(buffer);
        if (n === null) break;
        socket.send(buffer.slice(0, n));
        await whileBacklogged(socket, { stop: () => closed });
      }
    } catch {
      // the port closed the connection
    }
    await writes;
    close();
  };
}
