import { assertEquals, assertStringIncludes } from "../tests/assert.ts";
import { SYSTEM_CLOCK } from "../core/clock.ts";
import { MemoryLog } from "../core/log.ts";
import { join } from "../core/posix_path.ts";
import { ModuleHost } from "./module_host.ts";
import { SDK_DIR, sdkImportMap, writeSdkImportMap } from "./sdk_map.ts";

Deno.test("the import map names the SDK's files, which exist", async () => {
  const { imports } = sdkImportMap();
  assertEquals(imports["@dock/plugin"], `file://${join(SDK_DIR, "mod.ts")}`);
  assertEquals(imports["@dock/plugin/testing"], `file://${join(SDK_DIR, "testing.ts")}`);
  for (const url of Object.values(imports)) await Deno.stat(new URL(url));
});

Deno.test("a sandboxed plugin imports definePlugin from @dock/plugin at run time, and nothing else of dock", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "dock-sdk-map-" }));
  await Deno.writeTextFile(
    join(dir, "main.ts"),
    `import { definePlugin, SDK_VERSION, BOX_ROUTES } from "@dock/plugin";
import { definePlugin as fromNpm } from "npm:@dock/plugin";
export default definePlugin({
  async fetch(request) {
    if (new URL(request.url).pathname === "/outside") {
      return new Response(await Deno.readTextFile(${
      JSON.stringify(new URL("../mod.ts", import.meta.url).pathname)
    }));
    }
    return Response.json({ version: SDK_VERSION, routes: BOX_ROUTES.length > 0, same: fromNpm === definePlugin });
  },
});
`,
  );
  const modules = new ModuleHost({
    clock: SYSTEM_CLOCK,
    log: new MemoryLog(),
    dir: join(dir, ".host"),
    onRequest: () => Promise.resolve(null),
  });
  const spec = {
    key: `${dir}/main.ts`,
    module: join(dir, "main.ts"),
    grant: { read: [dir], write: [], net: [], env: [] },
    label: "test:sdk",
  };
  try {
    const fetched = await modules.call(
      spec,
      "fetch",
      { method: "GET", url: "http://p/", headers: [] },
      30_000,
    );
    const answer = fetched.value as { status: number; body: string };
    assertEquals(answer.status, 200);
    assertEquals(JSON.parse(atob(answer.body)), { version: "0.1.0", routes: true, same: true });
    // The SDK's folder is readable; the rest of the checkout is not.
    const outside = await modules.call(
      spec,
      "fetch",
      { method: "GET", url: "http://p/outside", headers: [] },
      30_000,
    )
      .catch((error) => error as Error);
    assertStringIncludes(String((outside as Error).message), "Requires read access");
  } finally {
    await modules.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("writeSdkImportMap: a reader never sees the file half-written while it is rewritten", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const path = await writeSdkImportMap(dir);
    let writing = true;
    const writers = Promise.all(Array.from({ length: 200 }, () => writeSdkImportMap(dir))).finally(() =>
      writing = false
    );
    let reads = 0;
    while (writing) {
      // A host process reads it as Deno does: whole, as JSON.
      JSON.parse(await Deno.readTextFile(path));
      reads++;
    }
    await writers;
    assertEquals(reads > 0, true);
    assertEquals([...Deno.readDirSync(dir)].map((entry) => entry.name), ["import-map.json"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
