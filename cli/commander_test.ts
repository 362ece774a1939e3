import { assertEquals } from "../tests/assert.ts";
import { vendoredCommander } from "./vendor/commander.ts";

Deno.test("cli/vendor/commander is commander as deno.json pins it, with only its node: imports replaced", async () => {
  const expected = await vendoredCommander();
  for (const [file, text] of expected) {
    const vendored = await Deno.readTextFile(new URL(`./vendor/commander/${file}`, import.meta.url));
    assertEquals(
      vendored === text,
      true,
      `cli/vendor/commander/${file} is stale: run deno run -A cli/vendor/commander.ts`,
    );
  }
  // Guards against a reader that finds nothing.
  assertEquals(expected.has("lib/command.js") && expected.size >= 7, true);
});
