import { assertEquals } from "../tests/assert.ts";
import { lockKey, prunable } from "./build.ts";

Deno.test("lockKey: a deno.lock key as name and version, scoped or not, with the peers it resolved with or not", () => {
  assertEquals(lockKey("hono@4.13.19"), { name: "hono", version: "4.13.19" });
  assertEquals(lockKey("@lydell/node-pty@1.1.0"), { name: "@lydell/node-pty", version: "1.1.0" });
  assertEquals(lockKey("@modelcontextprotocol/sdk@1.32.2_zod@4.6.7"), {
    name: "@modelcontextprotocol/sdk",
    version: "1.32.2",
  });
  assertEquals(lockKey("zod-to-json-schema@3.25.1_zod@4.6.7"), {
    name: "zod-to-json-schema",
    version: "3.25.1",
  });
});

Deno.test("prunable: declarations, maps, documents and a package's own tests go; code and licences stay", () => {
  const gone = [
    "index.d.ts",
    "v4/core/schemas.d.cts",
    "dist/esm/types.d.mts",
    "index.js.map",
    "README.md",
    "docs/API.markdown",
    "test/",
    "tests/",
    "__tests__/",
  ];
  const kept = [
    "index.js",
    "index.cjs",
    "dist/esm/types.js",
    "LICENSE",
    "package.json",
    "lib/test/",
    "src/tests.js",
    "testing/",
    "d.ts.js",
    "db.json",
  ];
  assertEquals(gone.filter((path) => !prunable(path)), []);
  assertEquals(kept.filter((path) => prunable(path)), []);
});
