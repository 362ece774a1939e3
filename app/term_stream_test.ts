import { assertEquals } from "../tests/assert.ts";
import { altScreenFilter, historyAbove } from "./src/term_stream.ts";

const bytes = (text: string) => new TextEncoder().encode(text);
const text = (chunks: Uint8Array[]) =>
  new TextDecoder().decode(new Uint8Array(chunks.flatMap((c) => [...c])));

Deno.test("altScreenFilter: the alternate-screen switches go, whatever the cuts; the rest passes intact", () => {
  // As tmux's client starts: enter the alternate screen, clear, draw (with a multi-byte character).
  const stream = "\x1b[?1049h\x1b[H\x1b[2Jé line\r\n\x1b[31mred\x1b[m\x1b[?1047l\x1b[?47h$ ";
  const want = "\x1b[H\x1b[2Jé line\r\n\x1b[31mred\x1b[m$ ";
  const all = bytes(stream);
  for (let cut = 0; cut <= all.length; cut++) {
    const filter = altScreenFilter();
    const out = [filter(all.subarray(0, cut)), filter(all.subarray(cut))];
    assertEquals(text(out), want, `cut at ${cut}`);
  }
  const filter = altScreenFilter();
  const plain = bytes("no escapes here");
  assertEquals(filter(plain), plain);
});

Deno.test("historyAbove: the history without the visible screen the attach redraws", () => {
  assertEquals(historyAbove("1\n2\n3\n$ ls\nfile\n", "$ ls\nfile\n"), "1\n2\n3\n");
  // The screen changed between the two captures: everything is kept.
  assertEquals(historyAbove("1\n2\n$ x\n", "$ y\n"), "1\n2\n$ x\n");
  assertEquals(historyAbove("1\n2\n", "\n"), "1\n2\n");
});
