import { assertEquals } from "../tests/assert.ts";
import { Deadlines } from "./deadlines.ts";

Deno.test("Deadlines: fire once when passed, re-arming moves them, disarmed ones do not fire", () => {
  let now = 0;
  const deadlines = new Deadlines({ tickMs: 10, now: () => now, manual: true });
  const fired: string[] = [];
  const a = deadlines.add(() => fired.push("a"));
  const b = deadlines.add(() => fired.push("b"));
  const c = deadlines.add(() => fired.push("c"));
  a.arm(100);
  b.arm(100);
  c.arm(50);
  now = 60;
  deadlines.sweep();
  assertEquals(fired, ["c"]);
  a.arm(100); // a request came: a's deadline moves to 160
  b.disarm(); // a request in flight
  now = 150;
  deadlines.sweep();
  assertEquals(fired, ["c"]);
  now = 160;
  deadlines.sweep();
  deadlines.sweep();
  assertEquals(fired, ["c", "a"]);
  b.arm(10);
  b.disarm(); // the connection is done
  c.arm(5);
  now = 1000;
  deadlines.sweep();
  assertEquals(fired, ["c", "a", "c"]);
  deadlines.close();
});

Deno.test("Deadlines: on its own interval, an armed deadline fires and the interval ends with the last one", async () => {
  const deadlines = new Deadlines({ tickMs: 5 });
  const { promise, resolve } = Promise.withResolvers<void>();
  const deadline = deadlines.add(resolve);
  // The interval is unref'd (it keeps no process alive): a listener does, here a handle never waited for.
  const alive = setInterval(() => {}, 60_000);
  try {
    deadline.arm(20);
    await promise;
  } finally {
    clearInterval(alive);
    deadline.disarm();
    deadlines.close();
  }
});
