import { assert, assertEquals } from "../tests/assert.ts";
import { EventBus } from "./events.ts";
import { sse } from "./sse.ts";
import { Store } from "./store.ts";
import { afterTurn, OncePerBatch } from "./turn.ts";

/** Resolves after the turns queued before it (immediates run in the order they were queued). */
const turnsLater = async (turns: number) => {
  for (let i = 0; i < turns; i++) await new Promise<void>((resolve) => afterTurn(resolve));
};

/**
 * Runs `fn` with `setTimeout` taken away: a zero-delay timer queued meanwhile never fires, so what
 * still happens did not wait for the timers' tick (which took ~2 ms a wait, measured).
 */
async function withoutTimers(fn: (timers: () => number) => Promise<void>): Promise<void> {
  const real = globalThis.setTimeout;
  let queued = 0;
  globalThis.setTimeout = ((() => {
    queued++;
    return 0;
  }) as unknown) as typeof setTimeout;
  try {
    await fn(() => queued);
  } finally {
    globalThis.setTimeout = real;
  }
}

Deno.test("afterTurn: runs after the current turn's microtasks, once; cancelled, never", async () => {
  const order: string[] = [];
  afterTurn(() => order.push("turn"));
  const cancel = afterTurn(() => order.push("cancelled"));
  cancel();
  queueMicrotask(() => order.push("microtask"));
  order.push("sync");
  await turnsLater(2);
  assertEquals(order, ["sync", "microtask", "turn"]);
});

Deno.test("bus: a turn's announcements are journaled and delivered at its end, with no timer", async () => {
  const dir = await Deno.makeTempDir();
  const store = new Store(`${dir}/db`);
  try {
    await withoutTimers(async (timers) => {
      const bus = new EventBus(store);
      const seen: number[] = [];
      bus.subscribe((event) => seen.push(event.data!.i as number));
      const taken: number[] = [];
      for (let i = 0; i < 3; i++) {
        bus.announce({ type: "t.e", data: { i } }).then((event) => taken.push(event.id!));
      }
      await turnsLater(2);
      assertEquals(seen, [0, 1, 2]);
      assertEquals(taken, [1, 2, 3]);
      assertEquals(timers(), 0);
    });
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("sse: a turn's live events reach the stream at its end, with no timer", async () => {
  const dir = await Deno.makeTempDir();
  const store = new Store(`${dir}/db`);
  const abort = new AbortController();
  try {
    await withoutTimers(async (timers) => {
      const bus = new EventBus(store);
      const reader = sse(bus, undefined, abort.signal).body!.getReader();
      const decoder = new TextDecoder();
      let text = decoder.decode((await reader.read()).value); // ": connected"
      bus.publish({ type: "t.live", data: { i: 1 } });
      bus.publish({ type: "t.live", data: { i: 2 } });
      const next = reader.read();
      await turnsLater(2);
      let done = false;
      next.then(() => done = true);
      await turnsLater(1);
      assert(done, "the live batch did not reach the stream within the turn after it");
      text += decoder.decode((await next).value);
      assertEquals([...text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1])), [1, 2]);
      assertEquals(timers(), 0);
      await reader.cancel();
    });
  } finally {
    abort.abort();
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("OncePerBatch: a check runs once until the microtasks, again after an await", async () => {
  const batch = new OncePerBatch();
  let checks = 0;
  const check = () => void checks++;
  batch.run(check);
  batch.run(check);
  batch.run(check);
  assertEquals(checks, 1, "once for the synchronous batch");
  await Promise.resolve();
  await Promise.resolve();
  batch.run(check);
  assertEquals(checks, 2, "again once the batch's microtasks ran");
  // A check that throws is not counted as made: the next call checks again.
  const failing = new OncePerBatch();
  let tries = 0;
  try {
    failing.run(() => {
      tries++;
      throw new Error("stat failed");
    });
  } catch { /* expected */ }
  failing.run(() => void tries++);
  assertEquals(tries, 2);
});
