import { assertEquals } from "../tests/assert.ts";
import { iconPng } from "./phone_pages.ts";

/** The chunks of a PNG, by type (the data of each; IDAT concatenated is the image's zlib stream). */
function pngChunks(png: Uint8Array): Map<string, Uint8Array> {
  const chunks = new Map<string, Uint8Array>();
  const view = new DataView(png.buffer, png.byteOffset, png.byteLength);
  for (let at = 8; at < png.length;) {
    const length = view.getUint32(at);
    const type = new TextDecoder().decode(png.subarray(at + 4, at + 8));
    chunks.set(type, png.subarray(at + 8, at + 8 + length));
    at += 12 + length;
  }
  return chunks;
}

Deno.test("the icon is a PNG a decoder reads: its header's size, and zlib data of one filtered row per line", async () => {
  const png = await iconPng(24);
  assertEquals([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  const chunks = pngChunks(png);
  assertEquals([...chunks.keys()], ["IHDR", "IDAT", "IEND"]);
  const header = new DataView(chunks.get("IHDR")!.slice().buffer);
  assertEquals([header.getUint32(0), header.getUint32(4), header.getUint8(8), header.getUint8(9)], [
    24,
    24,
    8,
    2,
  ]);
  const stream = new Blob([chunks.get("IDAT")!.slice()]).stream().pipeThrough(
    new DecompressionStream("deflate"),
  );
  const rows = new Uint8Array(await new Response(stream).arrayBuffer());
  assertEquals(rows.length, 24 * (24 * 3 + 1));
  for (let y = 0; y < 24; y++) assertEquals(rows[y * (24 * 3 + 1)], 0, `row ${y}'s filter`);
  // Two colours: the background in the corner, the ink somewhere on the stroke.
  assertEquals([...rows.subarray(1, 4)], [0x0f, 0x17, 0x2a]);
  const pixels = new Set<string>();
  for (let y = 0; y < 24; y++) {
    for (let x = 0; x < 24; x++) {
      const at = y * (24 * 3 + 1) + 1 + x * 3;
      pixels.add([...rows.subarray(at, at + 3)].join(","));
    }
  }
  assertEquals([...pixels].sort(), ["15,23,42", "74,222,128"]);
});
