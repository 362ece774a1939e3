/**
 * The box API: one hono app with every route table mounted under `/v1`, served on the daemon's own
 * unix socket (mode 0600: the socket's permissions are its authentication). Laptops reach the same
 * app over TCP+TLS with their own gate (issue 5).
 *
 * @module
 */
import { Hono } from "hono";
import { DockError } from "../../client/errors.ts";
import type { Box } from "../box.ts";
import { eventRoutes } from "./events.ts";
import { execRoutes } from "./exec.ts";
import { errorResponse, mount } from "./http.ts";
import { locationRoutes } from "./locations.ts";
import { serviceRoutes } from "./services.ts";
import { sessionRoutes } from "./sessions.ts";
import { systemRoutes } from "./system.ts";
import { worktreeRoutes } from "./worktrees.ts";

/** Builds the box API app. */
export function boxApp(box: Box): Hono {
  const app = new Hono();
  app.onError((error) => errorResponse(error));
  app.notFound((c) =>
    errorResponse(
      new DockError("not_found", `no such endpoint: ${c.req.method} ${c.req.path}`, { status: 404 }),
    )
  );
  mount(app, "/v1", [
    locationRoutes(box),
    worktreeRoutes(box),
    execRoutes(box),
    eventRoutes(box),
    systemRoutes(box),
    serviceRoutes(box),
    sessionRoutes(box),
  ]);
  return app;
}

/** Serves the app on the daemon's socket; resolves once it listens. */
export async function serveSocket(
  box: Box,
  options: { signal?: AbortSignal } = {},
): Promise<Deno.HttpServer> {
  const path = box.paths.socket;
  await Deno.remove(path).catch(() => {});
  const app = boxApp(box);
  const { promise, resolve } = Promise.withResolvers<void>();
  const server = Deno.serve({
    path,
    signal: options.signal,
    onListen: () => resolve(),
    onError: (error) => errorResponse(error),
  }, app.fetch);
  await promise;
  // Deno creates the socket 0755; only the box's user may talk to the daemon.
  await Deno.chmod(path, 0o600);
  return server;
}
