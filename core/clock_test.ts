import { assertEquals } from "../tests/assert.ts";
import { FakeClock } from "../tests/fake_clock.ts";
import { every, sleep } from "./clock.ts";

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
