/**
 * The laptop agent in this process (`dock agent`, `dock up`): its API on loopback and the proxy. Loaded
 * only by the commands that run it (see `lazy.ts`): it brings the agent's servers, hono, zod and
 * node:sqlite.
 *
 * @module
 */
import { Agent } from "../agent/agent.ts";
import { agentApp } from "../agent/api/server.ts";
import { listenLimitsFromEnv, serveGuarded } from "../core/listen.ts";
import { clientPaths } from "../core/paths.ts";

/** Options of {@linkcode runAgent}. */
export interface RunAgentOptions {
  /** The port of the agent's API on 127.0.0.1. */
  port: number;
  /** Called once the API listens, with its URL and the UI token. */
  onReady?: (url: string, token: string) => void | Promise<void>;
}

/** Runs the agent in this process until SIGINT or SIGTERM. */
export async function runAgent(options: RunAgentOptions): Promise<void> {
  const { port } = options;
  const health = Number(Deno.env.get("DOCK_AGENT_HEALTH_MS"));
  // Test only: lets whole-system tests see a queue item in `sending` (see agent/queue.ts).
  const sendDelay = Number(Deno.env.get("DOCK_QUEUE_TEST_SEND_DELAY_MS"));
  const agent = new Agent(clientPaths(), {
    healthMs: health > 0 ? health : undefined,
    queueSendDelayMs: sendDelay > 0 ? sendDelay : undefined,
  });
  await agent.start();
  const stopping = new AbortController();
  // Loopback, but any local process can connect (the proxy needs no token): the same guarded listener as
  // the box's TLS port (core/listen.ts), every connection from one address, so no per-peer cap.
  const limits = { ...listenLimitsFromEnv(), signal: stopping.signal, maxPerPeer: Number.MAX_SAFE_INTEGER };
  const app = agentApp(agent, { port });
  const server = serveGuarded({ hostname: "127.0.0.1", port }, (request) => app.fetch(request), limits);
  const url = `http://127.0.0.1:${port}`;
  console.error(`dock: agent listening on ${url}`);
  const proxyPort = Number(Deno.env.get("DOCK_PROXY_PORT") || 1377);
  try {
    serveGuarded(
      { hostname: "127.0.0.1", port: proxyPort },
      (request) => agent.proxy.handle(request),
      limits,
    );
    agent.proxyState = { enabled: true, port: proxyPort };
  } catch (error) {
    // The API works without the proxy; the status says why there is none.
    agent.proxyState = { enabled: false, port: proxyPort, error: (error as Error).message };
    console.error(`dock: no proxy on ${proxyPort}: ${(error as Error).message}`);
  }
  await options.onReady?.(url, agent.token);
  const stop = () => stopping.abort();
  agent.stopRequested = stop;
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
  await server.finished;
  agent.close();
}
