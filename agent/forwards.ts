/**
 * Port forwards (spec 2.4, 4.1): `local` on the laptop's loopback carries each connection to the box's
 * loopback `remote` port, through the box's `tunnel` WebSocket over the agent's own connection to the
 * box (its socket, or TLS with the pinned CA and this laptop's credential).
 *
 * @module
 */
import { DockError, notFound } from "../client/errors.ts";
import { type Clock, sleep } from "../core/clock.ts";
import type { EventBus } from "../core/events.ts";
import { errorText, type Log } from "../core/log.ts";
import { connEnd, messageSocketEnd, pump } from "../core/pump.ts";
import type { ConnWebSocket } from "../core/websocket.ts";
import { boxTarget, openBoxWebSocket } from "./attach_relay.ts";
import type { Boxes } from "./boxes.ts";

/** A forward as `GET /v1/status` and the API report it. */
export interface Forward {
  id: string;
  box: string;
  local: number;
  remote: number;
  created: string;
  /** Connections carried now. */
  connections: number;
}

interface Live {
  forward: Forward;
  listener: Deno.Listener;
}

/** Knobs and seams of {@linkcode Forwards}. */
export interface ForwardsOptions {
  /** Connections one forward carries at once (more are closed at once). @default {256} */
  maxConnections?: number;
  /** Paces the retries of an accept that failed. */
  clock: Clock;
  /** Where a forward that cannot accept says so. */
  log: Log;
}

/** The forwards of this laptop (they live as long as the agent). */
export class Forwards {
  #boxes: Boxes;
  #bus: EventBus;
  #live = new Map<string, Live>();
  #maxConnections: number;
  #clock: Clock;
  #log: Log;

  constructor(boxes: Boxes, bus: EventBus, options: ForwardsOptions) {
    this.#boxes = boxes;
    this.#bus = bus;
    this.#maxConnections = options.maxConnections ?? 256;
    this.#clock = options.clock;
    this.#log = options.log;
  }

  /** Every forward. */
  list(): Forward[] {
    return [...this.#live.values()].map((live) => ({ ...live.forward }));
  }

  /**
   * Starts forwarding `local` to the box's `remote` (ports the API has checked); refuses a local
   * port already taken.
   */
  create(request: { box: string; local: number; remote: number }, origin: string): Forward {
    boxTarget(this.#boxes, request.box); // 404 for an unknown box
    let listener: Deno.Listener;
    try {
      listener = Deno.listen({ hostname: "127.0.0.1", port: request.local });
    } catch (cause) {
      throw new DockError("port_taken", `local port ${request.local} is already in use on this laptop`, {
        status: 409,
        cause,
      });
    }
    if (takenOnIpv6Loopback(request.local)) {
      listener.close();
      throw new DockError("port_taken", `local port ${request.local} is already in use on [::1]`, {
        status: 409,
      });
    }
    const forward: Forward = {
      id: crypto.randomUUID().slice(0, 8),
      ...request,
      created: new Date(this.#clock.now()).toISOString(),
      connections: 0,
    };
    this.#live.set(forward.id, { forward, listener });
    this.#accept(forward, listener);
    this.#bus.publish({ type: "forward.created", origin, data: { ...forward } });
    return { ...forward };
  }

  /** Stops a forward (and the connections it carries); returns it. */
  remove(id: string, origin: string): Forward {
    const live = this.#live.get(id);
    if (!live) throw notFound("forward", id);
    this.#live.delete(id);
    live.listener.close();
    this.#bus.publish({ type: "forward.removed", origin, data: { ...live.forward } });
    return { ...live.forward };
  }

  /** Stops every forward. */
  close(): void {
    for (const live of this.#live.values()) live.listener.close();
    this.#live.clear();
  }

  /** Opens a byte stream to the box's loopback `port` (also used by the proxy). */
  tunnel(box: string, port: number): Promise<ConnWebSocket> {
    return openBoxWebSocket(boxTarget(this.#boxes, box), `/v1/tunnel?port=${port}`);
  }

  /**
   * Accepts until the listener closes. Any local process may connect, so connections are capped (each
   * costs a tunnel to the box), and an accept that fails for want of file descriptors is said once and
   * retried after a pause instead of ending the forward.
   */
  async #accept(forward: Forward, listener: Deno.Listener): Promise<void> {
    let failing = false;
    while (this.#live.get(forward.id)?.listener === listener) {
      let conn: Deno.Conn;
      try {
        conn = await listener.accept();
      } catch (error) {
        if (error instanceof Deno.errors.BadResource || this.#live.get(forward.id)?.listener !== listener) {
          return;
        }
        if (!failing) {
          this.#log.error(`forward ${forward.local}: cannot accept (${errorText(error)}); retrying`);
        }
        failing = true;
        await sleep(this.#clock, 100);
        continue;
      }
      failing = false;
      if (forward.connections >= this.#maxConnections) {
        conn.close(); // over the cap: refused at once, the forward's own connections go on
        continue;
      }
      forward.connections++;
      this.#carry(forward, conn).finally(() => forward.connections--);
    }
  }

  async #carry(forward: Forward, conn: Deno.Conn): Promise<void> {
    let ws: ConnWebSocket;
    try {
      ws = await this.tunnel(forward.box, forward.remote);
    } catch {
      conn.close(); // the box or its port is not there: the client sees the connection close
      return;
    }
    await splice(conn, ws);
  }
}

/** Carries bytes between a local connection and a box's tunnel (the one pump) until either ends. */
export function splice(conn: Deno.Conn, ws: ConnWebSocket): Promise<void> {
  return pump(connEnd(conn, "the local connection"), messageSocketEnd(ws, "the box's tunnel"));
}

function takenOnIpv6Loopback(port: number): boolean {
  try {
    Deno.listen({ hostname: "::1", port }).close();
    return false;
  } catch (error) {
    return error instanceof Deno.errors.AddrInUse;
  }
}
