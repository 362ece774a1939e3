import { assertEquals, assertRejects } from "../tests/assert.ts";
import { readSse } from "../client/http.ts";
import { EventBus } from "./events.ts";
import { sse } from "./sse.ts";
import { Store } from "./store.ts";

async function withBus(fn: (bus: EventBus) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir();
  const store = new Store(`${dir}/db`);
  try {
    await fn(new EventBus(store));
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("sse: a resume reads the journal a page at a time as the client takes it, then goes live", async () => {
  await withBus(async (bus) => {
    for (let i = 0; i < 1000; i++) bus.publish({ type: "n.e", data: { i } });
    // Count what the stream asks the journal for: pages, never the whole backlog.
    const asked: number[] = [];
    const since = bus.since.bind(bus);
    bus.since = (id, limit) => {
      asked.push(limit ?? -1);
      return since(id, limit);
    };
    const abort = new AbortController();
    const response = sse(bus, 0, abort.signal, { page: 50 });
    const ids: number[] = [];
    for await (const message of readSse(response.body!)) {
      ids.push(Number(message.id));
      if (ids.length === 1000) bus.publish({ type: "n.live" });
      if (ids.length === 1001) break;
    }
    abort.abort();
    assertEquals(ids, Array.from({ length: 1001 }, (_, i) => i + 1));
    assertEquals(asked.every((limit) => limit === 50), true);
    assertEquals(asked.length >= 20, true);
  });
});

Deno.test("sse: events published while a resume replays arrive once, in order", async () => {
  await withBus(async (bus) => {
    for (let i = 0; i < 300; i++) bus.publish({ type: "n.e", data: { i } });
    const abort = new AbortController();
    const response = sse(bus, 0, abort.signal, { page: 20 });
    const ids: number[] = [];
    for await (const message of readSse(response.body!)) {
      ids.push(Number(message.id));
      if (ids.length % 7 === 0 && ids.length < 300) bus.publish({ type: "n.during" });
      if (ids.length === 342) break;
    }
    abort.abort();
    assertEquals(ids, Array.from({ length: 342 }, (_, i) => i + 1));
  });
});

Deno.test("sse: a client that stops reading is cut off past maxBehind; one that reads is not", async () => {
  await withBus(async (bus) => {
    const abort = new AbortController();
    const stalled = sse(bus, undefined, abort.signal, { maxBehind: 64 * 1024 });
    const reading = sse(bus, undefined, abort.signal, { maxBehind: 64 * 1024 });
    const received: number[] = [];
    let notify = () => {};
    const reader = (async () => {
      for await (const message of readSse(reading.body!)) {
        received.push(Number(message.id));
        notify();
        if (received.length === 200) return;
      }
    })();
    const pad = "p".repeat(1024);
    for (let i = 0; i < 200; i++) {
      // The reading client takes each event before the next, as a connection that keeps up would.
      const taken = new Promise<void>((resolve) => notify = resolve);
      bus.publish({ type: "n.e", data: { i, pad } });
      await taken;
    }
    await reader;
    assertEquals(received.length, 200);
    // 200 KB went past the stalled client: its stream ended with an error, not a growing queue.
    await assertRejects(async () => {
      for await (const _ of readSse(stalled.body!)) { /* drain what was queued before the cut */ }
    });
    abort.abort();
  });
});
