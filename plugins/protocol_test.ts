import { assertEquals, assertThrows } from "../tests/assert.ts";
import { fromBase64, toBase64 } from "./protocol.ts";

Deno.test("protocol: base64 both ways is the standard alphabet, round trips any size, and refuses what is not base64", () => {
  assertEquals(toBase64(new Uint8Array()), "");
  assertEquals(toBase64(new TextEncoder().encode('{"ok":true}')), btoa('{"ok":true}'));
  for (const size of [1, 2, 3, 0x8000, 0x8001, 3 * 1024 * 1024 + 1]) {
    const bytes = new Uint8Array(size).map((_, i) => (i * 7919 + (i >> 8)) & 0xff);
    const text = toBase64(bytes);
    assertEquals(text.length, Math.ceil(size / 3) * 4, `${size} bytes`);
    assertEquals(fromBase64(text), bytes, `${size} bytes`);
  }
  // What `atob` took, it still takes (padding left out); what it refused, it still refuses.
  assertEquals(new TextDecoder().decode(fromBase64("aGk")), "hi");
  for (const text of ["a", "not base64!", "aGk=aGk=", "\u0000AAA"]) assertThrows(() => fromBase64(text));
});
