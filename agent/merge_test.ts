import { assert, assertEquals } from "../tests/assert.ts";
import { DockError } from "../client/errors.ts";
import type { DockEvent } from "../client/wire.ts";
import { EventBus } from "../core/events.ts";
import { MemoryLog } from "../core/log.ts";
import { Store } from "../core/store.ts";
import { FakeClock } from "../tests/fake_clock.ts";
import type { Boxes } from "./boxes.ts";
import { EventMerge, MAX_BATCH_BYTES } from "./merge.ts";

/**
 * A registry of one online box. Each follow of its stream takes the next of `streams` (the cursor it
 * was asked from is kept in `asked`): a DockError is thrown, a list of events is yielded, then the
 * stream stays open until aborted. `drained` resolves once a list has been yielded in full.
 */
function oneBox(streams: (DockEvent[] | DockError)[]) {
  const asked: number[] = [];
  let drained!: () => void;
  const done = new Promise<void>((resolve) => drained = resolve);
  const fake = {
    list: () => [{ name: "b1" }],
    online: () => true,
    watch: () => () => {},
    check: () => Promise.resolve(),
    client: () => ({
      async *events(options: { after: number; signal?: AbortSignal }) {
        asked.push(options.after);
        const next = streams.shift() ?? [];
        if (next instanceof DockError) throw next;
        yield* next;
        drained();
        await new Promise((resolve) => options.signal?.addEventListener("abort", resolve));
      },
    }),
  };
  return { boxes: fake as unknown as Boxes, asked, drained: done };
}

/** A store and bus in a temporary folder, removed after `fn`. */
async function withBus(fn: (store: Store, bus: EventBus) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir();
  const store = new Store(`${dir}/db`);
  const bus = new EventBus(store);
  try {
    await fn(store, bus);
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
}

function events(count: number, first: number, data: Record<string, unknown> = {}): DockEvent[] {
  return Array.from({ length: count }, (_, i) => ({
    id: first + i,
    type: "m.e",
    time: "2026-01-02T03:04:05.000Z",
    data: { i, ...data },
  }));
}

Deno.test("merge: a batch full in bytes is journaled at once; order and the cursor hold across batches", async () => {
  await withBus(async (store, bus) => {
    // 60 events of ~40 KB arrive in one turn: ~2.4 MB, past MAX_BATCH_BYTES, under the 500-event bound.
    const sent = events(60, 1000, { pad: "q".repeat(40_000) });
    const batches: number[] = [];
    const publishAll = bus.publishAll.bind(bus);
    bus.publishAll = (announces, alongside) => {
      batches.push(announces.length);
      return publishAll(announces, alongside);
    };
    // The merge's turn, on a clock: the last, partial batch waits for it (`after(0)`), which the test gives.
    const clock = new FakeClock(0);
    const box = oneBox([sent]);
    const turn = (fn: () => void) => clock.after(0, fn);
    const merge = new EventMerge(store, bus, box.boxes, { clock, turn, log: new MemoryLog() });
    try {
      merge.start();
      await box.drained;
      const perBatch = Math.ceil(MAX_BATCH_BYTES / 40_000);
      assertEquals(batches.reduce((a, b) => a + b, 0), 60 - (60 % perBatch), "the full batches went at once");
      clock.advance(0);
      const copied = bus.since(0);
      assertEquals(copied.map((event) => event.data!.i), sent.map((event) => event.data!.i));
      assert(copied.every((event) => event.box === "b1"));
      assert(batches.length >= 3 && batches.every((n) => n <= perBatch), `batches ${batches}`);
      assertEquals(
        store.get<{ last_id: number }>("SELECT last_id FROM box_cursors WHERE box = 'b1'")?.last_id,
        1059,
      );
    } finally {
      merge.close();
    }
  });
});

Deno.test("merge: a box whose journal was reset is copied from its start, and the log says so", async () => {
  await withBus(async (store, bus) => {
    const clock = new FakeClock(0);
    const log = new MemoryLog();
    const box = oneBox([
      new DockError("after_last_event", "the journal ends before event 5000", { status: 400 }),
      events(3, 1),
    ]);
    const merge = new EventMerge(store, bus, box.boxes, { clock, turn: (fn) => clock.after(0, fn), log });
    store.run("INSERT INTO box_cursors (box, last_id) VALUES ('b1', 5000)");
    try {
      merge.start();
      await box.drained;
      clock.advance(0);
      assertEquals(box.asked, [5000, 0], "asked from its cursor, then from the start");
      assertEquals(bus.since(0).map((event) => event.data!.i), [0, 1, 2]);
      assertEquals(log.records.map((record) => record.level), ["warn"]);
      assert(log.records[0].message.includes("its journal was reset"), log.records[0].message);
    } finally {
      merge.close();
    }
  });
});

Deno.test("merge: the events of every box that arrive in one turn are journaled in one transaction, each box's cursor with them", async () => {
  await withBus(async (store, bus) => {
    const commits: string[][] = [];
    const publishAll = bus.publishAll.bind(bus);
    bus.publishAll = (announces, alongside) => {
      commits.push(announces.map((announce) => `${announce.box}:${announce.data!.i}`));
      return publishAll(announces, alongside);
    };
    const drained: Promise<void>[] = [];
    const streams = new Map([["b1", events(3, 10)], ["b2", events(2, 20)]]);
    const fake = {
      list: () => [{ name: "b1" }, { name: "b2" }],
      online: () => true,
      watch: () => () => {},
      check: () => Promise.resolve(),
      client: (name: string) => ({
        async *events(options: { signal?: AbortSignal }) {
          const { promise, resolve } = Promise.withResolvers<void>();
          drained.push(promise);
          yield* streams.get(name)!;
          resolve();
          await new Promise((done) => options.signal?.addEventListener("abort", done));
        },
      }),
    };
    // The turn ends when the test says so: both boxes' streams have yielded everything by then.
    const clock = new FakeClock(0);
    const merge = new EventMerge(store, bus, fake as unknown as Boxes, {
      clock,
      turn: (fn) => clock.after(0, fn),
      log: new MemoryLog(),
    });
    try {
      merge.start();
      while (drained.length < 2) await new Promise((resolve) => setTimeout(resolve, 1));
      await Promise.all(drained);
      assertEquals(commits, [], "nothing journaled before the turn ends");
      clock.advance(0);
      assertEquals(commits, [["b1:0", "b1:1", "b1:2", "b2:0", "b2:1"]], "one transaction for both boxes");
      const cursors = store.all<{ box: string; last_id: number }>(
        "SELECT box, last_id FROM box_cursors ORDER BY box",
      );
      assertEquals(cursors.map((row) => [row.box, row.last_id]), [["b1", 12], ["b2", 21]]);
      assertEquals(bus.since(0).map((event) => `${event.box}:${event.data!.i}`), commits[0]);
    } finally {
      merge.close();
    }
  });
});
