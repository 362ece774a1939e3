import { assertEquals } from "../tests/assert.ts";
import { SerialQueue } from "./serial_queue.ts";

Deno.test("a serial queue hands items over one at a time, in order, past a throw, dropping the oldest past its backlog", async () => {
  const handled: number[] = [];
  let running = 0;
  let most = 0;
  const gates: (() => void)[] = [];
  const queue = new SerialQueue<number>({
    name: "test",
    backlog: 3,
    handle: async (item) => {
      running++;
      most = Math.max(most, running);
      await new Promise<void>((resolve) => gates.push(resolve));
      running--;
      handled.push(item);
      if (item === 2) throw new Error("item 2 fails");
    },
  });
  for (let i = 1; i <= 6; i++) queue.push(i); // 1 is taken at once; 2..6 wait, 2 and 3 are dropped
  assertEquals(queue.waiting, 3);
  assertEquals(queue.dropped, 2);
  while (handled.length < 4) {
    await new Promise((resolve) => setTimeout(resolve, 1));
    gates.shift()?.();
  }
  assertEquals(handled, [1, 4, 5, 6]);
  assertEquals(most, 1);
  queue.push(2);
  while (handled.length < 5) {
    await new Promise((resolve) => setTimeout(resolve, 1));
    gates.shift()?.();
  }
  queue.push(7); // after a handler threw, the next still runs
  while (handled.length < 6) {
    await new Promise((resolve) => setTimeout(resolve, 1));
    gates.shift()?.();
  }
  assertEquals(handled, [1, 4, 5, 6, 2, 7]);
});

Deno.test("a serial queue never runs its handler inside push (the publisher's delivery)", async () => {
  const log: string[] = [];
  const queue = new SerialQueue<number>({
    name: "test",
    backlog: 10,
    handle: (item) => {
      log.push(`handle ${item}`);
      return Promise.resolve();
    },
  });
  queue.push(1);
  log.push("pushed");
  await new Promise((resolve) => setTimeout(resolve, 0));
  assertEquals(log, ["pushed", "handle 1"]);
});
