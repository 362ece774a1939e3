import { assertEquals } from "../tests/assert.ts";
import { MemoryLog } from "../core/log.ts";
import { SerialQueue } from "./serial_queue.ts";

Deno.test("a serial queue hands items over one at a time, in order, past a throw, dropping the oldest past its backlog", async () => {
  const handled: number[] = [];
  let running = 0;
  let most = 0;
  // The handler says when it waits at its gate and when it has handled its item: nothing polls.
  let arrived = Promise.withResolvers<() => void>();
  let finished = Promise.withResolvers<void>();
  const log = new MemoryLog();
  const queue = new SerialQueue<number>({
    name: "test",
    backlog: 3,
    log,
    handle: async (item) => {
      running++;
      most = Math.max(most, running);
      await new Promise<void>((release) => arrived.resolve(release));
      running--;
      handled.push(item);
      finished.resolve();
      if (item === 2) throw new Error("item 2 fails");
    },
  });
  /** Lets the item waiting at the gate through and waits until it is handled. */
  const letOneThrough = async () => {
    const release = await arrived.promise;
    arrived = Promise.withResolvers();
    const done = finished.promise;
    release();
    await done;
    finished = Promise.withResolvers();
  };
  for (let i = 1; i <= 6; i++) queue.push(i); // 1 is taken at once; 2..6 wait, 2 and 3 are dropped
  assertEquals(queue.waiting, 3);
  assertEquals(queue.dropped, 2);
  for (let i = 0; i < 4; i++) await letOneThrough();
  assertEquals(handled, [1, 4, 5, 6]);
  assertEquals(most, 1);
  queue.push(2);
  await letOneThrough();
  queue.push(7); // after a handler threw, the next still runs
  await letOneThrough();
  assertEquals(handled, [1, 4, 5, 6, 2, 7]);
  // The drop is said once however many go; the throw is said with the item's error.
  assertEquals(log.records.map((r) => [r.level, r.message]), [
    ["warn", "test: more than 3 events waiting; dropping the oldest"],
    ["error", "test: cannot handle an item: item 2 fails"],
  ]);
});

Deno.test("a serial queue never runs its handler inside push (the publisher's delivery)", async () => {
  const log: string[] = [];
  const handledOne = Promise.withResolvers<void>();
  const queue = new SerialQueue<number>({
    name: "test",
    backlog: 10,
    log: new MemoryLog(),
    handle: (item) => {
      log.push(`handle ${item}`);
      handledOne.resolve();
      return Promise.resolve();
    },
  });
  queue.push(1);
  log.push("pushed");
  await handledOne.promise;
  assertEquals(log, ["pushed", "handle 1"]);
});
