import { assert, assertEquals } from "../tests/assert.ts";
import type { DockEvent } from "../client/wire.ts";
import { EventBus } from "../core/events.ts";
import { Store } from "../core/store.ts";
import type { Boxes } from "./boxes.ts";
import { EventMerge, MAX_BATCH_BYTES } from "./merge.ts";

/** A registry of one online box whose event stream yields `events`, then stays open until aborted. */
function oneBox(events: DockEvent[]): Boxes {
  const fake = {
    list: () => [{ name: "b1" }],
    online: () => true,
    watch: () => () => {},
    check: () => Promise.resolve(),
    client: () => ({
      async *events(options: { signal?: AbortSignal }) {
        yield* events;
        await new Promise((resolve) => options.signal?.addEventListener("abort", resolve));
      },
    }),
  };
  return fake as unknown as Boxes;
}

Deno.test("merge: a batch full in bytes is journaled at once; order and the cursor hold across batches", async () => {
  const dir = await Deno.makeTempDir();
  const store = new Store(`${dir}/db`);
  const bus = new EventBus(store);
  // 60 events of ~40 KB arrive in one turn: ~2.4 MB, past MAX_BATCH_BYTES, under the 500-event bound.
  const pad = "q".repeat(40_000);
  const events: DockEvent[] = Array.from({ length: 60 }, (_, i) => ({
    id: 1000 + i,
    type: "m.e",
    time: "2026-01-02T03:04:05.000Z",
    data: { i, pad },
  }));
  const batches: number[] = [];
  const publishAll = bus.publishAll.bind(bus);
  bus.publishAll = (announces, alongside) => {
    batches.push(announces.length);
    return publishAll(announces, alongside);
  };
  const merge = new EventMerge(store, bus, oneBox(events));
  try {
    merge.start();
    const deadline = Date.now() + 10_000;
    while (bus.since(0).length < 60 && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    const copied = bus.since(0);
    assertEquals(copied.map((event) => event.data!.i), events.map((event) => event.data!.i));
    assert(copied.every((event) => event.box === "b1"));
    const perBatch = Math.ceil(MAX_BATCH_BYTES / 40_000);
    assert(batches.length >= 3 && batches.every((n) => n <= perBatch), `batches ${batches}`);
    assertEquals(
      store.get<{ last_id: number }>("SELECT last_id FROM box_cursors WHERE box = 'b1'")?.last_id,
      1059,
    );
  } finally {
    merge.close();
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
});
