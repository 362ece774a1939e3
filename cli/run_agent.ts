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
import { printReady } from "./ready.ts";

/** Options of {@linkcode runAgent}. */
export interface RunAgentOptions {
  /** The port of the agent's API on 127.0.0.1: 0 lets the system choose (the ready line names it). */
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
  const limits = {
    ...listenLimitsFromEnv(),
    signal: stopping.signal,
    maxPerPeer: Number.MAX_SAFE_INTEGER,
    log: (line: string) => agent.log.warn(line),
  };
  // Port 0 lets the system choose: the app's gate checks the Host header against the port bound, so the
  // app is built once the listener has one (no request is handled before this turn of the loop ends).
  const built: { app?: ReturnType<typeof agentApp> } = {};
  const server = serveGuarded(
    { hostname: "127.0.0.1", port },
    (request) => built.app!.fetch(request),
    limits,
  );
  const bound = server.addr.port;
  built.app = agentApp(agent, { port: bound });
  // What `GET /v1/status` reports it started with: the port bound, which a shell dials, not the 0 asked for.
  if (bound !== port) agent.process.env.DOCK_AGENT_PORT = String(bound);
  const url = `http://127.0.0.1:${bound}`;
  console.error(`dock: agent listening on ${url}`);
  const askedProxy = Deno.env.get("DOCK_PROXY_PORT") || "1377";
  let proxyPort = Number(askedProxy);
  try {
    proxyPort = serveGuarded(
      { hostname: "127.0.0.1", port: proxyPort },
      (request) => agent.proxy.handle(request),
      limits,
    ).addr.port;
    agent.proxyState = { enabled: true, port: proxyPort };
    if (String(proxyPort) !== askedProxy) agent.process.env.DOCK_PROXY_PORT = String(proxyPort);
  } catch (error) {
    // The API works without the proxy; the status says why there is none.
    agent.proxyState = { enabled: false, port: proxyPort, error: (error as Error).message };
    console.error(`dock: no proxy on ${proxyPort}: ${(error as Error).message}`);
  }
  printReady({
    ready: "dock agent",
    pid: Deno.pid,
    api: `127.0.0.1:${bound}`,
    proxy: agent.proxyState.enabled ? `127.0.0.1:${proxyPort}` : null,
  });
  await options.onReady?.(url, agent.token);
  const stop = () => stopping.abort();
  agent.stopRequested = stop;
  Deno.addSignalListener("SIGINT", stop);
  Deno.addSignalListener("SIGTERM", stop);
  await server.finished;
  agent.close();
}
