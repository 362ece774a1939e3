import { assertEquals } from "../../tests/assert.ts";
import type { Terminal } from "@xterm/xterm";
import { DrawPolicy, QUIET_MS, SMALL_WRITE, warmWidths } from "./term_draw.ts";

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

Deno.test("term_draw: the printable ASCII glyphs' widths are measured ahead, regular only; nothing without the renderer's cache", () => {
  const measured: string[] = [];
  const widthCache = {
    get: (c: string, bold: boolean, italic: boolean) => {
      measured.push(`${c}${bold ? "B" : ""}${italic ? "I" : ""}`);
      return 9;
    },
  };
  const term = { _core: { _renderService: { _renderer: { value: { _widthCache: widthCache } } } } };
  assertEquals(warmWidths(term as unknown as Terminal), true);
  assertEquals(measured.length, 95);
  assertEquals([measured[0], measured.at(-1)], [" ", "~"]);
  assertEquals(measured.includes("a") && measured.includes("Z") && measured.includes("0"), true);
  // Another renderer (or another xterm.js): nothing reached, nothing thrown.
  assertEquals(warmWidths({ _core: { _renderService: {} } } as unknown as Terminal), false);
  assertEquals(warmWidths({} as unknown as Terminal), false);
});
