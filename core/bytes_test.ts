import { assertEquals } from "../tests/assert.ts";
import { concatBytes, hex, sameSecret, sha256Hex } from "./bytes.ts";

Deno.test("concatBytes: parts in order, empty ones too; none is empty", () => {
  assertEquals(
    concatBytes([new Uint8Array([1, 2]), new Uint8Array(), new Uint8Array([3])]),
    new Uint8Array([1, 2, 3]),
  );
  assertEquals(concatBytes([]), new Uint8Array());
});

Deno.test("sha256Hex: text as UTF-8, bytes as they are, cut to the bytes asked for", async () => {
  const abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
  assertEquals(await sha256Hex("abc"), abc);
  assertEquals(await sha256Hex(new Uint8Array([0x61, 0x62, 0x63])), abc);
  assertEquals(await sha256Hex("abc", 8), abc.slice(0, 16));
});

Deno.test("hex: two lowercase digits a byte, leading zeros kept", () => {
  assertEquals(hex(new Uint8Array([0, 1, 0xab, 0xff])), "0001abff");
  assertEquals(hex(new Uint8Array()), "");
});

Deno.test("sameSecret: equal only for the same bytes, given as text or encoded", () => {
  assertEquals(sameSecret("s3cret", "s3cret"), true);
  assertEquals(sameSecret("s3cret", new TextEncoder().encode("s3cret")), true);
  assertEquals(sameSecret("s3cret", "s3creT"), false);
  assertEquals(sameSecret("s3cret", "s3cret!"), false, "another length");
  assertEquals(sameSecret("", ""), true);
});
