import { assertEquals } from "../tests/assert.ts";
import { afterFailedCheck } from "./boxes.ts";

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
