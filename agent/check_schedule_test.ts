import { assert, assertEquals } from "../tests/assert.ts";
import { afterCheck, afterFailedCheck } from "./check_schedule.ts";

Deno.test("a box's backoff doubles per due check only; checks asked for in between do not lengthen it", () => {
  const half = () => 0.5; // no jitter
  let state = { failures: 0, nextCheck: 5000 }; // online until a check at 0 failed
  state = afterFailedCheck(state, 0, half);
  assertEquals(state, { failures: 1, nextCheck: 1000 });
  // Four sessions' sends fail at once, each asking for a check: still due at 1 s.
  for (const now of [10, 20, 30, 40]) state = afterFailedCheck(state, now, half);
  assertEquals(state, { failures: 1, nextCheck: 1000 });
  state = afterFailedCheck(state, 1000, half);
  assertEquals(state, { failures: 2, nextCheck: 3000 });
  for (let i = 0; i < 10; i++) state = afterFailedCheck(state, state.nextCheck, half);
  assertEquals(state.nextCheck - afterFailedCheck(state, state.nextCheck, half).nextCheck, -30_000);
});

Deno.test("boxes checked together are next checked apart: healthMs give or take a fifth", () => {
  assertEquals([afterCheck(1000, 5000, () => 0), afterCheck(1000, 5000, () => 0.5)], [5000, 6000]);
  assertEquals(afterCheck(1000, 5000, () => 0.999), 1000 + 5000 * (0.8 + 0.999 * 0.4));
  // 200 boxes checked in one tick: their next checks spread over two seconds, not one instant.
  const next = Array.from({ length: 200 }, () => afterCheck(0, 5000));
  assert(Math.max(...next) - Math.min(...next) > 1000, `${Math.min(...next)}..${Math.max(...next)}`);
  assert(next.every((at) => at >= 4000 && at <= 6000));
});
