import { assertEquals, assertRejects } from "../tests/assert.ts";
import { readSse } from "../client/http.ts";
import { EventBus } from "./events.ts";
import { FANOUT_BATCH_BYTES, sse } from "./sse.ts";
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
    const sinceRaw = bus.sinceRaw.bind(bus);
    bus.sinceRaw = (id, limit) => {
      asked.push(limit);
      return sinceRaw(id, limit);
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

/** The frames of a stream as text, comments left out, until `count` events have come. */
async function framesOf(body: ReadableStream<Uint8Array>, count: number): Promise<string> {
  const decoder = new TextDecoder();
  const pieces: string[] = [];
  let seen = 0;
  let carry = "\n"; // the end of what came before: a frame starts a line with "id: "
  const reader = body.getReader();
  while (seen < count) {
    const { value, done } = await reader.read();
    if (done) break;
    const piece = decoder.decode(value, { stream: true });
    pieces.push(piece);
    seen += (carry + piece).split("\nid: ").length - 1;
    carry = (carry + piece).slice(-4);
  }
  const text = pieces.join("");
  await reader.cancel();
  return text.split("\n\n").filter((frame) => frame && !frame.startsWith(":")).join("\n\n");
}

Deno.test("sse: a replay sends the very bytes live delivery sent, events large and small", async () => {
  await withBus(async (bus) => {
    const abort = new AbortController();
    const live = framesOf(sse(bus, undefined, abort.signal).body!, 6);
    bus.publish({ type: "n.small", origin: "cli", data: { text: "héllo \u2028 ✓", n: [1, -0, 1e21] } });
    bus.publish({ type: "n.empty" });
    bus.publish({
      type: "n.large",
      data: { blob: "z".repeat(40_000), nested: { "2": 1, b: null, "1": true } },
    });
    bus.publishAll([
      { type: "n.merged", box: "devbox", origin: "claude", time: "2026-01-02T03:04:05.000Z", data: { a: 1 } },
      { type: "n.merged-large", box: "devbox", data: { blob: "é".repeat(20_000) } },
      { type: "n.last", data: {} },
    ]);
    const sent = await live;
    const replayed = await framesOf(sse(bus, 0, abort.signal, { page: 2 }).body!, 6);
    abort.abort();
    assertEquals(replayed, sent);
    assertEquals(sent.split("\n\n").length, 6);
  });
});

Deno.test("sse: clients resuming together read each large event from the journal once", async () => {
  await withBus(async (bus) => {
    for (let i = 0; i < 100; i++) bus.publish({ type: "n.e", data: { i, pad: "p".repeat(20_000) } });
    const read: number[] = [];
    const sinceRaw = bus.sinceRaw.bind(bus);
    bus.sinceRaw = (id, limit) => {
      const events = sinceRaw(id, limit);
      read.push(...events.map((event) => event.id));
      return events;
    };
    const abort = new AbortController();
    const streams = Array.from({ length: 5 }, () => framesOf(sse(bus, 0, abort.signal).body!, 100));
    const texts = await Promise.all(streams);
    abort.abort();
    assertEquals(texts.every((text) => text === texts[0]), true);
    assertEquals(texts[0].split("\n\n").length, 100);
    assertEquals(read.sort((a, b) => a - b), Array.from({ length: 100 }, (_, i) => i + 1));
  });
});

Deno.test("sse: a replay of large events reads small pages", async () => {
  await withBus(async (bus) => {
    for (let i = 0; i < 30; i++) bus.publish({ type: "n.big", data: { i, blob: "b".repeat(60_000) } });
    const asked: number[] = [];
    const sinceRaw = bus.sinceRaw.bind(bus);
    bus.sinceRaw = (id, limit) => {
      asked.push(limit);
      return sinceRaw(id, limit);
    };
    const abort = new AbortController();
    const text = await framesOf(sse(bus, 0, abort.signal).body!, 30);
    abort.abort();
    assertEquals(text.split("\n\n").length, 30);
    // The first page is the default 20 events; once their size is known, about 256 KiB a page.
    assertEquals(asked[0], 20);
    assertEquals(asked.slice(1).every((limit) => limit <= 5), true, String(asked));
  });
});

/** Reads a stream's chunks until `count` events have come; returns the chunks' count and the ids, in order. */
async function chunksOf(
  body: ReadableStream<Uint8Array>,
  count: number,
): Promise<{ chunks: number; ids: number[] }> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let text = "";
  let chunks = 0;
  const ids: number[] = [];
  while (ids.length < count) {
    const { value, done } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
    if (!decoder.decode(value).startsWith(":")) chunks++;
    let end: number;
    while ((end = text.indexOf("\n\n")) >= 0) {
      const frame = text.slice(0, end);
      text = text.slice(end + 2);
      if (frame.startsWith("id: ")) ids.push(Number(frame.slice(4, frame.indexOf("\n"))));
    }
  }
  await reader.cancel();
  return { chunks, ids };
}

Deno.test("sse: events of one turn go to each client in one write; order holds across turns", async () => {
  await withBus(async (bus) => {
    const abort = new AbortController();
    const clients = Array.from({ length: 3 }, () => chunksOf(sse(bus, undefined, abort.signal).body!, 300));
    // Three turns of 100 small events each: one chunk per turn per client, where each event was one.
    for (let turn = 0; turn < 3; turn++) {
      for (let i = 0; i < 100; i++) bus.publish({ type: "n.e", data: { turn, i } });
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const results = await Promise.all(clients);
    abort.abort();
    for (const { chunks, ids } of results) {
      assertEquals(ids, Array.from({ length: 300 }, (_, i) => i + 1));
      assertEquals(chunks <= 6, true, `${chunks} writes for 3 turns`);
    }
  });
});

Deno.test("sse: a full batch is written at once, without waiting for the end of the turn", async () => {
  await withBus(async (bus) => {
    const abort = new AbortController();
    const reader = sse(bus, undefined, abort.signal).body!.getReader();
    await reader.read(); // ": connected"
    // One turn, past FANOUT_BATCH_BYTES: the first full batch goes out before the turn ends.
    const pad = "p".repeat(1000);
    for (let i = 0; i < 1.5 * FANOUT_BATCH_BYTES / 1000; i++) bus.publish({ type: "n.e", data: { i, pad } });
    let first: Uint8Array | undefined;
    reader.read().then(({ value }) => first = value);
    // Only microtasks run here (no timer): a read that resolves had its bytes queued already.
    for (let k = 0; k < 10 && !first; k++) await Promise.resolve();
    abort.abort();
    assertEquals(new TextDecoder().decode(first).startsWith("id: 1\n"), true);
  });
});

Deno.test("sse: a stalled client is cut off while the others get every batch, in order", async () => {
  await withBus(async (bus) => {
    const abort = new AbortController();
    const stalled = sse(bus, undefined, abort.signal, { maxBehind: 64 * 1024 });
    const readers = Array.from(
      { length: 3 },
      () => chunksOf(sse(bus, undefined, abort.signal, { maxBehind: 64 * 1024 }).body!, 1000),
    );
    const pad = "p".repeat(1000);
    // Bursts of 20 events (~20 KB) a turn: the readers keep up, the stalled client falls past 64 KiB.
    for (let i = 0; i < 1000; i++) {
      bus.publish({ type: "n.e", data: { i, pad } });
      if (i % 20 === 19) await new Promise((resolve) => setTimeout(resolve, 1));
    }
    for (const { ids } of await Promise.all(readers)) {
      assertEquals(ids, Array.from({ length: 1000 }, (_, i) => i + 1));
    }
    await assertRejects(async () => {
      for await (const _ of readSse(stalled.body!)) { /* drain what was queued before the cut */ }
    });
    abort.abort();
  });
});

Deno.test("sse: a resume that starts while a batch is pending gets each event once, in order", async () => {
  await withBus(async (bus) => {
    const abort = new AbortController();
    const live = chunksOf(sse(bus, undefined, abort.signal).body!, 150);
    for (let i = 0; i < 50; i++) bus.publish({ type: "n.e", data: { i } });
    // In the same turn: a resume from 0 (its replay reads what the pending batch holds), then more.
    const resumed = chunksOf(sse(bus, 0, abort.signal, { page: 7 }).body!, 150);
    for (let i = 50; i < 100; i++) bus.publish({ type: "n.e", data: { i } });
    await new Promise((resolve) => setTimeout(resolve, 1));
    for (let i = 100; i < 150; i++) bus.publish({ type: "n.e", data: { i } });
    const expected = Array.from({ length: 150 }, (_, i) => i + 1);
    assertEquals((await resumed).ids, expected);
    assertEquals((await live).ids, expected);
    abort.abort();
  });
});
