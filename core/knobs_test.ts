import { assertEquals } from "../tests/assert.ts";
import { positiveFromEnv } from "./knobs.ts";

Deno.test("positiveFromEnv: a positive whole number, else undefined (the module's default holds)", () => {
  const env = (value?: string) => ({ get: () => value });
  assertEquals(positiveFromEnv("X", env("2000")), 2000);
  for (const value of [undefined, "", "0", "-5", "1.5", "ten"]) {
    assertEquals(positiveFromEnv("X", env(value)), undefined, String(value));
  }
});
