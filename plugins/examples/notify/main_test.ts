import assert from "node:assert/strict";
import { callFetch, fakeContext, fakeEvent } from "@dock/plugin/testing";
import plugin from "./main.ts";

/** A webhook on loopback that keeps what it is sent, answering `status`. */
function webhook(status = 200) {
  const bodies: string[] = [];
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (request) => {
    bodies.push(await request.text());
    return new Response(null, { status });
  });
  return { bodies, server, url: `http://127.0.0.1:${server.addr.port}/topic` };
}

Deno.test("notify posts who waits to its webhook, counts it and announces notify.sent", async () => {
  const hook = webhook();
  try {
    const ctx = fakeContext({ config: { webhook: hook.url } });
    await plugin.event(
      fakeEvent("agent.waiting", { session: "web-1", agent: "claude", reason: "question" }),
      ctx,
    );
    await plugin.event(fakeEvent("agent.finished", { session: "web-1", agent: "claude" }), ctx);
    await plugin.event(fakeEvent("session.sent", { session: "web-1" }), ctx); // not one of its events
    assert.deepEqual(hook.bodies, ["claude in web-1 needs you", "claude in web-1 finished"]);
    assert.deepEqual(ctx.emitted, [
      { type: "notify.sent", data: { session: "web-1", text: "claude in web-1 needs you", sent: 1 } },
      { type: "notify.sent", data: { session: "web-1", text: "claude in web-1 finished", sent: 2 } },
    ]);
    assert.deepEqual(await (await callFetch(plugin, "/status", {}, ctx)).json(), { sent: 2 });
    assert.deepEqual((await callFetch(plugin, "/nope", {}, ctx)).status, 404);
  } finally {
    await hook.server.shutdown();
  }
});

Deno.test("notify fails the call when the webhook refuses, and counts nothing", async () => {
  const hook = webhook(500);
  try {
    const ctx = fakeContext({ config: { webhook: hook.url } });
    await assert.rejects(
      () => plugin.event(fakeEvent("agent.waiting", { session: "web-1" }), ctx),
      /the webhook answered 500/,
    );
    assert.deepEqual(ctx.emitted, []);
    assert.deepEqual(await ctx.kv.get("sent"), null);
  } finally {
    await hook.server.shutdown();
  }
});
