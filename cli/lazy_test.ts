import { assert, assertEquals } from "../tests/assert.ts";
import { bundled } from "./lazy.ts";
import { UNBUNDLED } from "../package/unbundled.ts";

Deno.test("lazy: from sources, every module is the source", () => {
  const from = "file:///dock/src/cli/lazy.ts";
  for (const file of ["./agent.ts", "./serve.ts", "../core/paths.ts"]) {
    assertEquals(bundled(file, from), file);
  }
});

Deno.test("lazy: from a bundle, a module of cli/ is its bundle beside it, the servers and the rest are sources", () => {
  const from = "file:///dock/src/cli/chunk-ABCD1234.js";
  assertEquals(bundled("./agent.ts", from), "./agent.js");
  assertEquals(bundled("./dockd_main.ts", from), "./dockd_main.js");
  assertEquals(bundled("./serve.ts", from), "./serve.ts");
  assertEquals(bundled("./run_agent.ts", from), "./run_agent.ts");
  assertEquals(bundled("../core/paths.ts", from), "../core/paths.ts");
});

Deno.test("lazy: the modules left as sources are modules of cli/", async () => {
  assert(UNBUNDLED.length > 0);
  for (const file of UNBUNDLED) {
    const info = await Deno.stat(new URL(file, import.meta.url));
    assert(info.isFile, file);
  }
});
