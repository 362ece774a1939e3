import { assertEquals } from "../tests/assert.ts";
import { withoutToken } from "./relay.ts";

Deno.test("withoutToken: the laptop's token never goes on to a box", () => {
  assertEquals(withoutToken("?token=abc"), "");
  assertEquals(withoutToken("?cols=80&token=abc&rows=24"), "?cols=80&rows=24");
  assertEquals(withoutToken("?path=%2Fhome%2Fme"), "?path=%2Fhome%2Fme");
  assertEquals(withoutToken("?mytoken=1"), "?mytoken=1");
});
