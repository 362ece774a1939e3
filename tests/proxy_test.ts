/**
 * The private-URL proxy: `http://<wt>.<loc>.<box>.localhost:<proxy>/` reaches the worktree's server on
 * the box (HTTP, redirects, WebSocket), named routes win, unknown hosts are refused.
 */
import { join } from "node:path";
import { assertEquals, assertStringIncludes } from "./assert.ts";
import { AgentClient } from "../client/agent.ts";
import { openWebSocket } from "../core/ws_client.ts";
import { makeDirs, makeRepo, startAgent, startBox } from "./harness.ts";
import { until } from "./wait.ts";

const DENO = Deno.execPath();
const SERVER = `exec "${DENO}" eval --no-config '
Deno.serve({ hostname: "127.0.0.1", port: Number(Deno.env.get("PORT")), onListen() {} }, (request) => {
  const url = new URL(request.url);
  if (url.pathname === "/ws") {
    const { socket, response } = Deno.upgradeWebSocket(request);
    socket.onmessage = (e) => socket.send("echo:" + e.data);
    return response;
  }
  if (url.pathname === "/go") return new Response(null, { status: 302, headers: { location: "http://localhost:" + Deno.env.get("PORT") + "/there" } });
  return new Response(Deno.env.get("DOCK_WORKTREE_NAME") + " host=" + request.headers.get("host"));
})'`;

async function raw(
  port: number,
  host: string,
  path: string,
): Promise<{ status: number; head: string; body: string }> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  await conn.write(
    new TextEncoder().encode(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`),
  );
  let text = "";
  const buffer = new Uint8Array(65536);
  const timer = setTimeout(() => conn.close(), 5000);
  while (true) {
    const n = await conn.read(buffer).catch(() => null);
    if (n === null) break;
    text += new TextDecoder().decode(buffer.subarray(0, n));
  }
  clearTimeout(timer);
  try {
    conn.close();
  } catch { /* closed by the timer */ }
  const [head, ...rest] = text.split("\r\n\r\n");
  return { status: Number(head.split(" ")[1]), head, body: rest.join("\r\n\r\n") };
}

Deno.test("the proxy serves a worktree's HTTP and WebSocket server by its name", async () => {
  const dirs = await makeDirs();
  await using box = await startBox({ dirs });
  await using agent = await startAgent(dirs);
  const client = new AgentClient({ url: agent.url, token: agent.token });
  try {
    await client.addLocal("devbox");
    const repo = await makeRepo(join(dirs.home, "work"), "app", {
      ".dock/config.json": JSON.stringify({ services: [{ name: "web", run: SERVER, autostart: true }] }),
    });
    await box.client.addLocation({ name: "app", path: repo });
    const wt = await box.client.createWorktree("app", { name: "site" });
    const host = `site.app.devbox.localhost:${agent.proxyPort}`;
    const page = await until(async () => {
      const answer = await raw(agent.proxyPort, host, "/");
      return answer.status === 200 ? answer : undefined;
    }, { timeoutMs: 20_000 });
    assertStringIncludes(page.body, `site host=localhost:${wt.ports[0]}`);

    const redirect = await raw(agent.proxyPort, host, "/go");
    assertEquals(redirect.status, 302);
    assertStringIncludes(redirect.head.toLowerCase(), `location: http://${host}/there`);

    const conn = await Deno.connect({ hostname: "127.0.0.1", port: agent.proxyPort });
    const ws = await openWebSocket(conn, { host, path: "/ws" });
    await ws.sendText("hello");
    const message = await ws.next();
    assertEquals(new TextDecoder().decode(message!.data), "echo:hello");
    await ws.close(1000);

    const unknown = await raw(agent.proxyPort, `nope.app.devbox.localhost:${agent.proxyPort}`, "/");
    assertEquals(unknown.status, 502);
    const foreign = await raw(agent.proxyPort, "example.com", "/");
    assertEquals(foreign.status, 404);

    const added = await fetch(`${agent.url}/v1/routes`, {
      method: "POST",
      headers: { authorization: `Bearer ${agent.token}`, "content-type": "application/json" },
      body: JSON.stringify({ pattern: "myapp.localhost", box: "devbox", port: wt.ports[0] }),
    });
    assertEquals(added.status, 201);
    await added.body?.cancel();
    const routed = await raw(agent.proxyPort, `myapp.localhost:${agent.proxyPort}`, "/");
    assertStringIncludes(routed.body, "site host=");
    assertEquals((await client.status()).routes.map((r) => r.pattern), ["myapp.localhost"]);
    assertEquals((await client.status()).proxy.enabled, true);
  } finally {
    client.close();
  }
});
