import { assertEquals, assertThrows } from "../tests/assert.ts";
import { formatDuration, parseDuration } from "./duration.ts";

Deno.test("parseDuration reads the spec's forms", () => {
  assertEquals(parseDuration("30s"), 30_000);
  assertEquals(parseDuration("1m"), 60_000);
  assertEquals(parseDuration("2h"), 7_200_000);
  assertEquals(parseDuration("1h30m"), 5_400_000);
  assertEquals(parseDuration("250ms"), 250);
  assertEquals(parseDuration("15"), 15_000);
  assertEquals(parseDuration(2.5), 2_500);
});

Deno.test("parseDuration refuses what is not a duration", () => {
  for (const bad of ["", "10x", "m", "1m 2s", "-1s", "1h30"]) {
    assertThrows(() => parseDuration(bad), Error, "timeout");
  }
  assertThrows(() => parseDuration(-1), Error, "non-negative");
});

Deno.test("formatDuration round-trips common values", () => {
  assertEquals(formatDuration(5_400_000), "1h30m");
  assertEquals(formatDuration(45_000), "45s");
  assertEquals(formatDuration(250), "250ms");
  assertEquals(parseDuration(formatDuration(3_723_000)), 3_723_000);
});
