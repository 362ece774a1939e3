import { assert, assertEquals } from "../tests/assert.ts";
import { AgentClient } from "./agent.ts";
import { BoxClient } from "./box.ts";
import { PluginCalls } from "./plugin_calls.ts";

/** One request as the stand-in server saw it. */
interface Seen {
  method: string;
  path: string;
  type: string | null;
  body: string;
}

/** A server that records each request and answers `{}`. */
function recorder() {
  const seen: Seen[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (request) => {
    const url = new URL(request.url);
    seen.push({
      method: request.method,
      path: url.pathname + url.search,
      type: request.headers.get("content-type"),
      body: await request.text(),
    });
    return Response.json({});
  });
  return { seen, url: `http://127.0.0.1:${server.addr.port}`, close: () => server.shutdown() };
}

/** Every plugin call, in one order, on `client`. */
async function everyCall(client: PluginCalls): Promise<void> {
  await client.plugins({ signal: AbortSignal.any([]) });
  await client.plugin("p1", 20);
  await client.enablePlugin("p1", { read: ["a"] });
  await client.installPlugin("p1", [{ path: "mod.ts", data: "eA==" }]);
  await client.pluginConfig("p1");
  await client.setPluginConfig("p1", { k: "v" });
  await client.pluginTestEvent("p1", { type: "agent.finished" });
  await (await client.callPlugin("p1", "/a b/c", { body: '{"x":1}' })).body?.cancel();
  await (await client.callPlugin("p1", "x", { body: "plain" })).body?.cancel();
  await (await client.callPlugin("p1", "")).body?.cancel();
  await client.disablePlugin("p1");
  await client.removePlugin("p1");
}

Deno.test("the box's and the laptop's clients make the same plugin calls (one PluginCalls for both)", async () => {
  const server = recorder();
  try {
    const box = new BoxClient({ url: server.url });
    const agent = new AgentClient({ url: server.url, token: "t" });
    assert(box instanceof PluginCalls && agent instanceof PluginCalls);
    await everyCall(box);
    const fromBox = server.seen.splice(0);
    await everyCall(agent);
    assertEquals(server.seen, fromBox);
    box.close();
    agent.close();
  } finally {
    await server.close();
  }
  const calls = server.seen.map((seen) => `${seen.method} ${seen.path}`);
  assertEquals(calls, [
    "GET /v1/plugins",
    "GET /v1/plugins/p1?log=20",
    "POST /v1/plugins/p1/enable",
    "PUT /v1/plugins/p1/files",
    "GET /v1/plugins/p1/config",
    "PUT /v1/plugins/p1/config",
    "POST /v1/plugins/p1/test-event",
    "POST /v1/plugins/p1/fn/a%20b/c",
    "POST /v1/plugins/p1/fn/x",
    "GET /v1/plugins/p1/fn",
    "POST /v1/plugins/p1/disable",
    "DELETE /v1/plugins/p1",
  ]);
  // A body given as text is sent as JSON when it parses as JSON, else as plain text.
  assertEquals(server.seen.slice(7, 9).map((seen) => [seen.type, seen.body]), [
    ["application/json", '{"x":1}'],
    ["text/plain; charset=utf-8", "plain"],
  ]);
  assertEquals(JSON.parse(server.seen[2].body), { permissions: { read: ["a"] } });
});
