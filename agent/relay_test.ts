import { TransportError } from "../client/errors.ts";
import { SYSTEM_CLOCK } from "../core/clock.ts";
import { EventBus } from "../core/events.ts";
import { Store } from "../core/store.ts";
import { assertEquals, assertRejects } from "../tests/assert.ts";
import { type RawServer, rawServer } from "../tests/raw_http_server.ts";
import { Boxes } from "./boxes.ts";
import { relay, withoutToken } from "./relay.ts";

Deno.test("withoutToken: the laptop's token never goes on to a box", () => {
  assertEquals(withoutToken("?token=abc"), "");
  assertEquals(withoutToken("?cols=80&token=abc&rows=24"), "?cols=80&rows=24");
  assertEquals(withoutToken("?path=%2Fhome%2Fme"), "?path=%2Fhome%2Fme");
  assertEquals(withoutToken("?mytoken=1"), "?mytoken=1");
});

/** The relay in front of a hand-written box on a socket, through the agent's real registry. */
async function withRelay(
  reply: Parameters<typeof rawServer>[0],
  fn: (
    server: RawServer,
    send: (method: string, path: string, init?: RequestInit) => Promise<Response>,
  ) => Promise<void>,
): Promise<void> {
  const server = await rawServer(reply);
  const dir = await Deno.makeTempDir();
  const store = new Store(`${dir}/agent.db`);
  const boxes = new Boxes(store, new EventBus(store), { healthMs: 3_600_000, clock: SYSTEM_CLOCK });
  try {
    await boxes.add({ name: "raw", kind: "socket", address: server.socket }, "test");
    await fn(server, (method, path, init) =>
      relay(
        boxes,
        "raw",
        path.split("?")[0].split("/"),
        new Request(`http://127.0.0.1:1378/v1/boxes/raw/api/${path}`, { method, ...init }),
      ));
  } finally {
    boxes.close();
    store.close();
    await server.stop();
    await Deno.remove(dir, { recursive: true });
  }
}

/** What the relay asked the box, less the registry's own health check. */
const relayed = (server: RawServer) => server.seen.filter((r) => !r.path.endsWith("/v1/info"));

Deno.test("relay: requests to a box go over one kept connection", async () => {
  await withRelay(
    () => ({ body: '{"ok":true}', headers: { "content-type": "application/json" } }),
    async (server, send) => {
      const before = server.counts.connections;
      for (let i = 0; i < 20; i++) {
        const answer = await send(i % 2 ? "POST" : "GET", `things/${i}?x=${i}`, i % 2 ? { body: "{}" } : {});
        assertEquals([answer.status, await answer.json()], [200, { ok: true }]);
      }
      assertEquals(
        relayed(server).map((r) => r.path),
        Array.from({ length: 20 }, (_, i) => `/v1/things/${i}?x=${i}`),
      );
      assertEquals(server.counts.connections - before, 1, "one connection for 20 requests");
    },
  );
});

Deno.test("relay: a POST the box read but never answered is a 502 and was sent once", async () => {
  await withRelay((r) => r.method === "POST" ? "close" : { body: "{}" }, async (server, send) => {
    await (await send("GET", "things")).text(); // a kept connection to send the POST on
    const error = await assertRejects(
      () => send("POST", "sessions/s1/send", { body: '{"text":"hi"}' }),
      TransportError,
    );
    assertEquals([(error as TransportError).status as number, (error as TransportError).code], [
      502,
      "box_connection_failed",
    ]);
    assertEquals(relayed(server).filter((r) => r.method === "POST").map((r) => r.body), ['{"text":"hi"}']);
  });
});

Deno.test("relay: a compressed answer passes through as the box compressed it", async () => {
  const text = JSON.stringify({ items: Array.from({ length: 500 }, (_, i) => `item ${i}`) });
  const gzip = new Uint8Array(
    await new Response(new Blob([text]).stream().pipeThrough(new CompressionStream("gzip"))).arrayBuffer(),
  );
  await withRelay(
    () => ({
      body: gzip,
      headers: { "content-type": "application/json", "content-encoding": "gzip", vary: "Accept-Encoding" },
    }),
    async (_server, send) => {
      const answer = await send("GET", "list", { headers: { "accept-encoding": "gzip" } });
      assertEquals(answer.headers.get("content-encoding"), "gzip");
      assertEquals(new Uint8Array(await answer.arrayBuffer()), gzip);
    },
  );
});
