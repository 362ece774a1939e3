import { assertEquals } from "../tests/assert.ts";
import { FakeClock } from "../tests/fake_clock.ts";
import { ClockDeadlines, Deadlines } from "./deadlines.ts";

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

Deno.test("ClockDeadlines calls each deadline at its time on one timer, never a cancelled one", () => {
  const clock = new FakeClock(0);
  let timers = 0;
  const counted = {
    now: () => clock.now(),
    after: (ms: number, fn: () => void) => {
      timers++;
      return clock.after(ms, fn);
    },
  };
  const deadlines = new ClockDeadlines(counted);
  const fired: string[] = [];
  deadlines.after(100, () => fired.push(`a@${clock.now()}`));
  const cancelB = deadlines.after(150, () => fired.push(`b@${clock.now()}`));
  deadlines.after(200, () => fired.push(`c@${clock.now()}`));
  // Due after the one the timer waits for: no new timer.
  assertEquals(timers, 1);
  cancelB();
  clock.advance(100);
  assertEquals(fired, ["a@100"]);
  // Sooner than the one waited for: the timer moves.
  deadlines.after(50, () => fired.push(`d@${clock.now()}`));
  clock.advance(200);
  assertEquals(fired, ["a@100", "d@150", "c@200"]);
  clock.advance(1000);
  assertEquals(fired.length, 3);
});

Deno.test("ClockDeadlines calls every due deadline when one throws, then throws the first error", () => {
  const clock = new FakeClock(0);
  const deadlines = new ClockDeadlines(clock);
  const fired: number[] = [];
  deadlines.after(10, () => {
    throw new Error("first");
  });
  deadlines.after(10, () => fired.push(1));
  let thrown = "";
  try {
    clock.advance(10);
  } catch (error) {
    thrown = (error as Error).message;
  }
  assertEquals([thrown, fired], ["first", [1]]);
  deadlines.after(5, () => fired.push(2));
  clock.advance(5);
  assertEquals(fired, [1, 2]);
});
