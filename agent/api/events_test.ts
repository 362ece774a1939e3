import { EventBus } from "../../core/events.ts";
import { Store } from "../../core/store.ts";
import { assert, assertEquals } from "../../tests/assert.ts";
import { AGENT_PORT, AGENT_TOKEN, agentTables } from "../../tests/route_tables.ts";
import { eventRoutes } from "./events.ts";

/** The event routes over a real journal in a temporary store, counting the app views that follow it. */
async function eventsApp() {
  const dir = await Deno.makeTempDir({ prefix: "dock-agent-events-" });
  const store = new Store(`${dir}/agent.db`);
  const bus = new EventBus(store);
  const views = { opened: 0, closed: 0 };
  const tables = agentTables([eventRoutes({
    bus,
    viewOpened: () => {
      views.opened++;
      return () => views.closed++;
    },
  })]);
  const close = async () => {
    store.close();
    await Deno.remove(dir, { recursive: true });
  };
  return { tables, bus, views, close };
}

/** Opens `GET /v1/events` and reads until `text` has come, then closes it. */
async function follow(
  tables: Awaited<ReturnType<typeof eventsApp>>["tables"],
  headers: Record<string, string>,
) {
  const abort = new AbortController();
  const response = await tables.app.request(`http://127.0.0.1:${AGENT_PORT}/v1/events`, {
    headers: { host: `127.0.0.1:${AGENT_PORT}`, authorization: `Bearer ${AGENT_TOKEN}`, ...headers },
    signal: abort.signal,
  });
  const reader = response.body!.getReader();
  return {
    response,
    async until(text: string): Promise<string> {
      let seen = "";
      while (!seen.includes(text)) {
        const { value, done } = await reader.read();
        if (done) break;
        seen += new TextDecoder().decode(value);
      }
      return seen;
    },
    async close() {
      abort.abort();
      await reader.cancel().catch(() => {});
    },
  };
}

Deno.test("event routes: an announced event comes back on the stream, with the caller's origin", async () => {
  const world = await eventsApp();
  try {
    const posted = await world.tables.call("POST", "/events", {
      json: { type: "build.finished", data: { ok: true } },
      headers: { "x-dock-origin": "cli" },
    });
    assertEquals([posted.status, posted.body.type, posted.body.origin], [201, "build.finished", "cli"]);
    const named = await world.tables.call("POST", "/events", {
      json: { type: "build.started", origin: "ci" },
    });
    assertEquals([named.status, named.body.origin], [201, "ci"]);
    // Resumed after the first: only the second is replayed, and an app view is counted while it follows.
    const stream = await follow(world.tables, {
      "last-event-id": String(posted.body.id),
      "x-dock-origin": "app",
    });
    assertEquals(stream.response.headers.get("content-type")?.startsWith("text/event-stream"), true);
    const seen = await stream.until("build.started");
    assert(!seen.includes("build.finished"), seen);
    assertEquals(world.views, { opened: 1, closed: 0 });
    await stream.close();
    assertEquals(world.views, { opened: 1, closed: 1 });
    world.tables.assertEveryRouteSucceeded();
  } finally {
    await world.close();
  }
});

Deno.test("event routes: a strict body, a malformed type, and the token", async () => {
  const world = await eventsApp();
  try {
    await world.tables.refusesUnknownField("POST", "/events", { type: "build.finished" });
    const bad = await world.tables.call("POST", "/events", { json: { type: "Build Finished" } });
    assertEquals([bad.status, bad.body.error.code], [400, "invalid_request"]);
    const nul = await world.tables.call("POST", "/events", { json: { type: "a.b", origin: "x\u0000y" } });
    assertEquals(nul.status, 400);
    await world.tables.assertEveryRouteNeedsToken();
    assertEquals(world.bus.lastId(), 0);
  } finally {
    await world.close();
  }
});
