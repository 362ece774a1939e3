import { assertEquals } from "../tests/assert.ts";
import { concatBytes } from "./bytes.ts";

Deno.test("concatBytes: parts in order, empty ones too; none is empty", () => {
  assertEquals(
    concatBytes([new Uint8Array([1, 2]), new Uint8Array(), new Uint8Array([3])]),
    new Uint8Array([1, 2, 3]),
  );
  assertEquals(concatBytes([]), new Uint8Array());
});
