import { assertEquals } from "../../tests/assert.ts";
import type { Session } from "../../client/wire.ts";
import { lastLine, LastLines } from "./last_lines.ts";

const session = (name: string, state: string) =>
  ({ name, agent_state: state, state_time: state, exited: false }) as unknown as Session;

Deno.test("last lines: read two at a time after the hold, once more when the screen settled, with one timer for all", async () => {
  const realTimeout = globalThis.setTimeout;
  const reads: string[] = [];
  let running = 0, most = 0;
  // Waits for the count of reads begun, woken by the reader itself (after a turn of the event loop, so
  // what the read it counts hands back is taken in first).
  const waiting: [count: number, resolve: () => void][] = [];
  const readsReach = (count: number) => new Promise<void>((resolve) => waiting.push([count, resolve]));
  const lines = new LastLines(async (box, name) => {
    reads.push(`${box}/${name}`);
    most = Math.max(most, ++running);
    await Promise.resolve();
    running--;
    for (const [count, resolve] of waiting) if (reads.length >= count) realTimeout(resolve, 0);
    return `prompt of ${name}\n$ ${name} ${reads.length}\n\n   \n`;
  });
  const timers: number[] = [];
  // Counts the timers the reads set (the settle timer comes from clock.ts's `after`).
  globalThis.setTimeout = ((fn: () => void, ms?: number) => {
    timers.push(ms ?? 0);
    return realTimeout(fn, ms);
  }) as typeof setTimeout;
  try {
    lines.hold(true);
    const many = Array.from({ length: 50 }, (_, i) => session(`s${i}`, "idle"));
    lines.ask("b", many);
    assertEquals(reads, [], "held while the board's lists load");
    lines.hold(false);
    await readsReach(50);
    assertEquals(reads.length, 50);
    assertEquals(most, 2, "two at a time");
    assertEquals(
      timers.filter((ms) => ms >= 1000 && ms <= 2000).length,
      1,
      "one timer for the 50 reads waiting to settle",
    );
    assertEquals(lastLine("b/s0").value.startsWith("$ s0"), true, lastLine("b/s0").value);
    // A state changed before the screen settled: read now, and that read's settle replaces the old one.
    lines.ask("b", [session("s1", "running")]);
    await readsReach(51);
    await readsReach(101);
    assertEquals(reads.length, 101);
    assertEquals(reads.slice(51).filter((r) => r === "b/s1").length, 1, "s1 once more, for its newer state");
    // Asked again for states already read: nothing.
    lines.ask("b", many.slice(2));
    assertEquals(reads.length, 101);
  } finally {
    globalThis.setTimeout = realTimeout;
  }
});
