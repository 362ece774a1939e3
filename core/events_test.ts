import { assertEquals, assertThrows } from "../tests/assert.ts";
import type { DockEvent } from "../client/wire.ts";
import { DockError } from "../client/errors.ts";
import { ANNOUNCE_BATCH_BYTES, EventBus, MAX_EVENT_DATA } from "./events.ts";
import { Store } from "./store.ts";
import { MemoryLog } from "./log.ts";

Deno.test("events are journaled with increasing ids and delivered to subscribers", async () => {
  const dir = await Deno.makeTempDir();
  const store = new Store(`${dir}/db`);
  const bus = new EventBus(store, { now: () => new Date("2026-01-02T03:04:05Z") });
  const seen: DockEvent[] = [];
  const unsubscribe = bus.subscribe((e) => seen.push(e));
  const a = bus.publish({ type: "a.one", origin: "tool", data: { x: 1 } });
  unsubscribe();
  const b = bus.publish({ type: "a.two" });
  assertEquals(a, { id: 1, type: "a.one", time: "2026-01-02T03:04:05.000Z", data: { x: 1 }, origin: "tool" });
  assertEquals(b.id, 2);
  assertEquals(seen.map((e) => e.id), [1]);
  assertEquals(bus.since(0).map((e) => e.type), ["a.one", "a.two"]);
  assertEquals(bus.since(1), [{ id: 2, type: "a.two", time: "2026-01-02T03:04:05.000Z", data: {} }]);
  assertEquals(bus.lastId(), 2);
  store.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("the journal is bounded; a failing subscriber does not stop delivery", async () => {
  const dir = await Deno.makeTempDir();
  const store = new Store(`${dir}/db`);
  const bus = new EventBus(store, { journalSize: 100 });
  let delivered = 0;
  bus.subscribe(() => {
    throw new Error("boom");
  });
  bus.subscribe(() => delivered++);
  const original = console.error;
  console.error = () => {};
  try {
    for (let i = 0; i < 1000; i++) bus.publish({ type: "n.e", data: { i } });
  } finally {
    console.error = original;
  }
  assertEquals(delivered, 1000);
  const kept = bus.since(0);
  assertEquals(kept.length <= 600 && kept.length >= 100, true);
  assertEquals(kept.at(-1)?.data, { i: 999 });
  store.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("publishAll journals a batch with the caller's writes in one transaction, then delivers it", async () => {
  const dir = await Deno.makeTempDir();
  const store = new Store(`${dir}/db`);
  store.db.exec("CREATE TABLE cursor (id INTEGER)");
  const bus = new EventBus(store);
  const seen: string[] = [];
  bus.subscribe((e) => seen.push(`${e.id}:${e.type}:${e.box}`));
  const events = bus.publishAll([{ type: "b.one", box: "x" }, { type: "b.two", box: "x" }], () => {
    // Inside the transaction: the events are journaled but not yet delivered.
    assertEquals(seen, []);
    store.run("INSERT INTO cursor (id) VALUES (7)");
  });
  assertEquals(events.map((e) => e.id), [1, 2]);
  assertEquals(seen, ["1:b.one:x", "2:b.two:x"]);
  // When the caller's writes fail, none of the batch is journaled or delivered.
  assertThrows(() =>
    bus.publishAll([{ type: "b.three" }], () => {
      throw new Error("cursor write failed");
    })
  );
  assertEquals(bus.since(0).map((e) => e.type), ["b.one", "b.two"]);
  assertEquals(seen.length, 2);
  assertEquals(store.all<{ id: number }>("SELECT id FROM cursor").map((row) => row.id), [7]);
  store.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("the journal is bounded in bytes, and the database file shrinks when it is pruned", async () => {
  const dir = await Deno.makeTempDir();
  const store = new Store(`${dir}/db`);
  const bound = 512 * 1024;
  const bus = new EventBus(store, { journalBytes: bound });
  const blob = "x".repeat(60 * 1024);
  for (let i = 0; i < 200; i++) bus.publish({ type: "big.one", data: { i, blob } });
  const held = bus.journal();
  assertEquals(held.bytes <= bound, true, `journal holds ${held.bytes} bytes`);
  assertEquals(held.events, bus.since(0).length);
  assertEquals((bus.since(0).at(-1)?.data as { i: number }).i, 199);
  store.db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  // 200 × 60 KB went through; the file holds about the bound (pages, indexes), not 12 MB.
  const size = (await Deno.stat(`${dir}/db`)).size;
  assertEquals(size < 2 * bound, true, `the database file is ${size} bytes`);
  store.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("an event's data is bounded: publish refuses it (413), a merged copy keeps its envelope", async () => {
  const dir = await Deno.makeTempDir();
  const store = new Store(`${dir}/db`);
  const bus = new EventBus(store);
  const huge = { blob: "é".repeat(40 * 1024) }; // 80 KiB of UTF-8 in 40 K characters
  const error = assertThrows(() => bus.publish({ type: "big.one", data: huge }), DockError) as DockError;
  assertEquals([error.code, error.status], ["event_too_large", 413]);
  assertEquals(error.message.includes(String(MAX_EVENT_DATA)), true);
  const [copy] = bus.publishAll([{ type: "big.one", data: huge, box: "b" }]);
  assertEquals(copy.data, { truncated: true, bytes: 81_931 });
  assertEquals(bus.since(0).map((e) => e.data), [{ truncated: true, bytes: 81_931 }]);
  store.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("a journal reopened keeps its size accounting and prunes to the new bound", async () => {
  const dir = await Deno.makeTempDir();
  const first = new Store(`${dir}/db`);
  const bus = new EventBus(first);
  for (let i = 0; i < 50; i++) bus.publish({ type: "n.e", data: { i, pad: "p".repeat(1000) } });
  const before = bus.journal();
  first.close();
  const second = new Store(`${dir}/db`);
  assertEquals(new EventBus(second).journal(), before);
  const smaller = new EventBus(second, { journalSize: 20 });
  assertEquals(smaller.journal().events <= 20, true);
  assertEquals((smaller.since(0).at(-1)?.data as { i: number }).i, 49);
  second.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("lastId is the newest id ever given, even when the journal was trimmed to nothing or reopened", async () => {
  const dir = await Deno.makeTempDir();
  try {
    let store = new Store(`${dir}/db`);
    // A byte bound one event does not fit in: each publish trims the journal to nothing.
    let bus = new EventBus(store, { journalBytes: 100 });
    for (let i = 0; i < 5; i++) bus.publish({ type: "big.one", data: { blob: "x".repeat(200) } });
    assertEquals(bus.since(0), []);
    assertEquals(bus.lastId(), 5);
    store.close();
    store = new Store(`${dir}/db`);
    bus = new EventBus(store);
    assertEquals(bus.lastId(), 5);
    assertEquals(bus.publish({ type: "next.one" }).id, 6);
    store.close();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("announce journals the events of one turn in one transaction, in order; a full batch at once", async () => {
  const dir = await Deno.makeTempDir();
  const store = new Store(`${dir}/db`);
  const bus = new EventBus(store);
  const commits: number[] = [];
  const transaction = store.transaction.bind(store);
  store.transaction = <T>(fn: () => T): T => {
    const result = transaction(fn);
    commits.push(bus.lastId());
    return result;
  };
  const seen: number[] = [];
  bus.subscribe((event) => seen.push(event.id!));
  // One turn: 50 small events, one commit at the end of the turn, each announcer told its id.
  const first = await Promise.all(
    Array.from({ length: 50 }, (_, i) => bus.announce({ type: "a.e", data: { i } })),
  );
  assertEquals(first.map((event) => event.id), Array.from({ length: 50 }, (_, i) => i + 1));
  assertEquals(first.map((event) => event.data!.i), Array.from({ length: 50 }, (_, i) => i));
  assertEquals(commits, [50]);
  // A turn past ANNOUNCE_BATCH_BYTES: the full batch is journaled before the turn ends.
  const pad = "p".repeat(10_000);
  const count = Math.ceil(ANNOUNCE_BATCH_BYTES / 10_000) + 5;
  const second = Array.from({ length: count }, (_, i) => bus.announce({ type: "a.big", data: { i, pad } }));
  assertEquals(commits.length, 2);
  assertEquals(bus.journal().events > 50, true);
  await Promise.all(second);
  assertEquals(commits.length, 3);
  // A publish after announces of the same turn comes after them: ids keep the order of arrival.
  const announced = bus.announce({ type: "a.before" });
  const published = bus.publish({ type: "a.after" });
  assertEquals((await announced).id! < published.id!, true);
  // Inside a caller's transaction a publish leaves them to their own batch (never rolled back with it).
  const pending = bus.announce({ type: "a.pending" });
  const inside = store.transaction(() => bus.publish({ type: "a.inside" }));
  assertEquals((await pending).id, inside.id! + 1);
  assertEquals(seen, Array.from({ length: bus.lastId() }, (_, i) => i + 1));
  // Too large: refused at once, nothing queued.
  assertThrows(
    () => bus.announce({ type: "a.huge", data: { blob: "x".repeat(MAX_EVENT_DATA) } }),
    DockError,
    "at most",
  );
  store.close();
  await Deno.remove(dir, { recursive: true });
});

Deno.test("a subscriber that throws is said to the bus's log; the others still get the event", async () => {
  const dir = await Deno.makeTempDir();
  const store = new Store(`${dir}/db`);
  const log = new MemoryLog();
  const bus = new EventBus(store, { log });
  const seen: string[] = [];
  bus.subscribe(() => {
    throw new Error("subscriber broke");
  });
  bus.subscribe((event) => seen.push(event.type));
  bus.publish({ type: "x.y", origin: "test" });
  assertEquals(seen, ["x.y"]);
  assertEquals(log.records, [
    { level: "error", message: "event listener failed on x.y: subscriber broke", fields: undefined },
  ]);
  store.close();
  await Deno.remove(dir, { recursive: true });
});
