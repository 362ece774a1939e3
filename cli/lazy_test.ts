import { assert, assertEquals } from "../tests/assert.ts";
import { bundled } from "./lazy.ts";
import { BUNDLED_SOURCES } from "../package/unbundled.ts";

Deno.test("lazy: from sources, every module is the source", () => {
  const from = "file:///dock/src/cli/lazy.ts";
  for (const file of ["./agent.ts", "./serve.ts", "../core/paths.ts"]) {
    assertEquals(bundled(file, from), file);
  }
});

Deno.test("lazy: from a bundle, every module is its bundle beside its source", () => {
  const from = "file:///dock/src/cli/chunk-ABCD1234.js";
  assertEquals(bundled("./agent.ts", from), "./agent.js");
  assertEquals(bundled("./dockd_main.ts", from), "./dockd_main.js");
  assertEquals(bundled("./serve.ts", from), "./serve.js");
  assertEquals(bundled("../core/mcp.ts", from), "../core/mcp.js");
  assertEquals(bundled("../core/paths.ts", from), "../core/paths.js");
});

Deno.test("lazy: the bundled sources are modules outside cli/", async () => {
  assert(BUNDLED_SOURCES.length > 0);
  for (const file of BUNDLED_SOURCES) {
    assert(file.startsWith("../") && file.endsWith(".ts"), file);
    const info = await Deno.stat(new URL(file, import.meta.url));
    assert(info.isFile, file);
  }
});
