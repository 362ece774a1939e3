/**
 * The private-URL proxy (spec 2.10): `http://<worktree>.<location>.<box>.localhost:1377/` serves the
 * worktree's lowest listening port on that box, WebSocket upgrades included (dev-server hot reload).
 * Named routes (`POST /v1/routes { pattern, box, port }`) are tried first. The upstream sees
 * `Host: localhost:<port>` and a matching Origin, as if the browser were on the box (requests go out
 * through node:http, since fetch does not let a caller set Host); a redirect's `Location` back to
 * loopback is turned back into the private URL. Bytes travel over the box's tunnel: one loopback
 * listener per (box, port), made on first use and kept.
 *
 * @module
 */
import http from "node:http";
import { DockError } from "../client/errors.ts";
import { type Clock } from "../core/clock.ts";
import { originPath } from "../core/forward_path.ts";
import { errorResponse } from "../core/http.ts";
import { pump, webSocketEnd } from "../core/pump.ts";
import { acceptWebSocket, isWebSocketUpgrade } from "../core/websocket.ts";
import type { Boxes } from "./boxes.ts";
import { type Forwards, splice } from "./forwards.ts";

/** A named route: requests whose host matches `pattern` go to `box`'s `port`. */
export interface Route {
  pattern: string;
  box: string;
  port: number;
}

/** The proxy's routing and its loopback ends of the tunnels. */
export class Proxy {
  #boxes: Boxes;
  #forwards: Forwards;
  #routes: Route[] = [];
  #ends = new Map<string, Promise<number>>();
  #lookups = new Map<string, { port: number; until: number }>();
  #clock: Clock;

  /** `clock`: how long a worktree's port stays cached is measured on it. */
  constructor(boxes: Boxes, forwards: Forwards, options: { clock: Clock }) {
    this.#boxes = boxes;
    this.#forwards = forwards;
    this.#clock = options.clock;
  }

  /** The named routes. */
  routes(): Route[] {
    return [...this.#routes];
  }

  /** Adds (or replaces) a named route. `pattern` is a host name, or `*.` and a suffix. */
  addRoute(route: Route): Route {
    if (!/^(\*\.)?[a-z0-9.-]+$/i.test(route.pattern)) {
      throw new DockError(
        "invalid_request",
        `pattern: a host name or *.suffix, got ${JSON.stringify(route.pattern)}`,
        {
          status: 400,
          detail: { field: "pattern" },
        },
      );
    }
    this.#boxes.client(route.box); // 404 for an unknown box
    this.#routes = [...this.#routes.filter((r) => r.pattern !== route.pattern), route];
    return route;
  }

  /** Removes a named route; 404 when there is none. */
  removeRoute(pattern: string): Route {
    const route = this.#routes.find((r) => r.pattern === pattern);
    if (!route) throw new DockError("not_found", `no route '${pattern}'`, { status: 404 });
    this.#routes = this.#routes.filter((r) => r !== route);
    return route;
  }

  /** Serves one request of the proxy listener. */
  async handle(request: Request): Promise<Response> {
    try {
      // The worktree's server is the route's whole scope; its path still passes the one check.
      const path = originPath(new URL(request.url));
      const host = (request.headers.get("host") ?? "").toLowerCase();
      const name = host.replace(/:\d+$/, "");
      const target = this.#route(name) ?? await this.#worktree(name);
      const end = await this.#end(target.box, target.port);
      const upstreamHost = `localhost:${target.port}`;
      if (isWebSocketUpgrade(request)) return this.#websocket(request, `ws://127.0.0.1:${end}${path}`);
      const headers = new Headers(request.headers);
      headers.set("host", upstreamHost);
      if (headers.has("origin")) headers.set("origin", `http://${upstreamHost}`);
      const upstream = await upstreamFetch(end, path, request, headers);
      const out = new Headers(upstream.headers);
      // Hop-by-hop headers describe the upstream connection, not this one.
      for (const name of ["connection", "keep-alive", "transfer-encoding", "upgrade", "proxy-connection"]) {
        out.delete(name);
      }
      const location = out.get("location");
      if (location) {
        out.set(
          "location",
          location.replace(
            new RegExp(`^https?://(localhost|127\\.0\\.0\\.1):(${target.port}|${end})\\b`),
            `http://${host}`,
          ),
        );
      }
      return new Response(upstream.body, { status: upstream.status, headers: out });
    } catch (error) {
      if (error instanceof DockError) return errorResponse(error);
      return errorResponse(
        new DockError("bad_gateway", `the worktree's server did not answer: ${(error as Error).message}`, {
          status: 502,
        }),
      );
    }
  }

  #route(name: string): Route | undefined {
    return this.#routes.find((r) =>
      r.pattern.startsWith("*.") ? name.endsWith(r.pattern.slice(1)) : name === r.pattern
    );
  }

  /** `<wt>.<loc>.<box>.localhost` → the worktree's lowest listening port (cached for a moment). */
  async #worktree(name: string): Promise<{ box: string; port: number }> {
    const labels = name.split(".");
    if (labels.length < 4 || labels.at(-1) !== "localhost") {
      throw new DockError("unknown_host", `no worktree or route for host '${name}'`, { status: 404 });
    }
    const box = labels.at(-2)!;
    const location = labels.at(-3)!;
    const worktree = labels.slice(0, -3).join(".");
    const cached = this.#lookups.get(name);
    if (cached && cached.until > this.#clock.now()) return { box, port: cached.port };
    const client = this.#boxes.client(box);
    const listening = (await client.ports())
      .filter((p) => p.location === location && p.worktree === worktree)
      .map((p) => p.port)
      .sort((a, b) => a - b);
    if (!listening.length) {
      throw new DockError(
        "nothing_listening",
        `nothing listens in worktree '${location}/${worktree}' on box '${box}'`,
        {
          status: 502,
        },
      );
    }
    this.#lookups.set(name, { port: listening[0], until: this.#clock.now() + 2000 });
    return { box, port: listening[0] };
  }

  /** A loopback port on this laptop that reaches the box's `port` through its tunnel. */
  #end(box: string, port: number): Promise<number> {
    const key = `${box}:${port}`;
    let end = this.#ends.get(key);
    if (!end) {
      const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
      (async () => {
        for await (const conn of listener) {
          this.#forwards.tunnel(box, port).then((ws) => splice(conn, ws), () => conn.close());
        }
      })().catch(() => {});
      end = Promise.resolve((listener.addr as Deno.NetAddr).port);
      this.#ends.set(key, end);
    }
    return end;
  }

  /** The browser's WebSocket and the worktree server's, joined by the one pump. */
  #websocket(request: Request, upstreamUrl: string): Response {
    const { socket, response } = acceptWebSocket(request, "a WebSocket route");
    // What the browser sends before the server's socket opens waits in the pump.
    pump(
      webSocketEnd(socket, "the browser"),
      webSocketEnd(new WebSocket(upstreamUrl), "the worktree's server"),
    );
    return response;
  }
}

/** Sends `request` to `127.0.0.1:port` with exactly `headers` (Host included) and streams the answer. */
function upstreamFetch(port: number, path: string, request: Request, headers: Headers): Promise<Response> {
  return new Promise((resolve, reject) => {
    const outgoing = http.request(
      { hostname: "127.0.0.1", port, path, method: request.method, headers: Object.fromEntries(headers) },
      (incoming) => {
        const out = new Headers();
        for (const [name, value] of Object.entries(incoming.headers)) {
          if (value === undefined) continue;
          for (const item of Array.isArray(value) ? value : [value]) out.append(name, String(item));
        }
        const status = incoming.statusCode ?? 502;
        const empty = request.method === "HEAD" || status === 204 || status === 304;
        const body = empty ? null : new ReadableStream<Uint8Array>({
          start(controller) {
            incoming.on("data", (chunk: Uint8Array) => controller.enqueue(new Uint8Array(chunk)));
            incoming.on("end", () => controller.close());
            incoming.on("error", (error: Error) => controller.error(error));
          },
          cancel() {
            incoming.destroy();
          },
        });
        if (empty) incoming.resume();
        resolve(new Response(body, { status, headers: out }));
      },
    );
    outgoing.on("error", reject);
    request.signal.addEventListener("abort", () => outgoing.destroy(), { once: true });
    (async () => {
      if (request.body) { for await (const chunk of request.body) outgoing.write(chunk); }
      outgoing.end();
    })().catch((error) => outgoing.destroy(error));
  });
}
