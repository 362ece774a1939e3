import { assertEquals } from "../tests/assert.ts";
import { isOlder } from "./kits.ts";

Deno.test("isOlder: dotted parts numerically, a missing part is 0, no version is older than any", () => {
  for (
    const [installed, latest, older] of [
      ["1.9.0", "1.10.0", true],
      ["1.10.0", "1.9.0", false],
      ["1.2", "1.2.0", false],
      ["1.2.0", "1.2.1", true],
      ["2.0.0-beta", "2.0.0", false],
      [null, "0.0.1", true],
      ["1.0.0", null, false],
      [null, null, false],
    ] as const
  ) assertEquals(isOlder(installed, latest), older, `${installed} < ${latest}`);
});
