import { assertEquals } from "../tests/assert.ts";
import { FakeClock } from "../tests/fake_clock.ts";
import { ClockDeadlines, every, sleep } from "./clock.ts";

Deno.test("every calls its function each interval until cancelled", () => {
  const clock = new FakeClock(0);
  const calls: number[] = [];
  const stop = every(clock, 100, () => calls.push(clock.now()));
  clock.advance(350);
  assertEquals(calls, [100, 200, 300]);
  stop();
  clock.advance(500);
  assertEquals(calls.length, 3);
});

Deno.test("every keeps its schedule when the function throws", () => {
  const clock = new FakeClock(0);
  let calls = 0;
  const stop = every(clock, 10, () => {
    calls++;
    throw new Error("boom");
  });
  try {
    clock.advance(10);
  } catch { /* the first call's error reaches the advancer */ }
  try {
    clock.advance(10);
  } catch { /* and the second's */ }
  stop();
  assertEquals(calls, 2);
});

Deno.test("sleep resolves when the clock reaches it and rejects when aborted first", async () => {
  const clock = new FakeClock(0);
  let done = false;
  const slept = sleep(clock, 50).then(() => done = true);
  clock.advance(49);
  await Promise.resolve();
  assertEquals(done, false);
  clock.advance(1);
  await slept;
  assertEquals(done, true);

  const controller = new AbortController();
  const aborted = sleep(clock, 50, controller.signal).then(() => "slept", () => "aborted");
  controller.abort(new Error("stop"));
  assertEquals(await aborted, "aborted");
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
