import { assertEquals } from "../../tests/assert.ts";
import { DrawPolicy, QUIET_MS, SMALL_WRITE } from "./term_draw.ts";

Deno.test("term_draw: a small write into a quiet stream is drawn at once, a busy or large one waits for the frame", () => {
  const policy = new DrawPolicy();
  // A key's echo after a pause: drawn now.
  assertEquals(policy.drawsNow(1, 1000), true);
  // The next key's echo a frame later: drawn now too.
  assertEquals(policy.drawsNow(3, 1000 + QUIET_MS), true);
  // Output less than a frame after the previous write (a stream under way): the frame draws it.
  assertEquals(policy.drawsNow(10, 1000 + QUIET_MS + 1), false);
  assertEquals(policy.drawsNow(10, 1000 + QUIET_MS + 2), false);
  // Quiet again, but a large write (a screen redraw, bulk output): the frame draws it.
  assertEquals(policy.drawsNow(SMALL_WRITE + 1, 2000), false);
  // Every write counts for quiet, the large one too.
  assertEquals(policy.drawsNow(1, 2000 + QUIET_MS - 1), false);
  assertEquals(policy.drawsNow(SMALL_WRITE, 3000), true);
});
