/**
 * Whole-system test of a plugin's warm `fn` path on a box (issue 34): what a warm call no longer looks up
 * each time (its module's real path, found once per start of its workers) never outlives a change of
 * its folder, which the check before every call still sees.
 */
import { join } from "node:path";
import { assertEquals, assertRejects, assertStringIncludes } from "./assert.ts";
import { DockError } from "../client/errors.ts";
import { makeDirs, startBox } from "./harness.ts";

Deno.test("plugins: a warm fn's module swapped for a link out is refused at the next call; fixed, it answers anew", async () => {
  const dirs = await makeDirs();
  const dir = join(dirs.dockHome, "plugins", "warm");
  await Deno.mkdir(dir, { recursive: true });
  await Deno.writeTextFile(
    join(dir, "dock-plugin.json"),
    JSON.stringify({ id: "warm", name: "warm", version: "1.0.0", main: "main.ts" }),
  );
  const module = (v: string) => `export default { fetch() { return Response.json({ v: "${v}" }); } };`;
  await Deno.writeTextFile(join(dir, "main.ts"), module("first"));
  // Scans far apart: only the check before each call can see the change.
  await using box = await startBox({ dirs, env: { DOCK_PLUGIN_SCAN_MS: "600000" } });
  await box.client.enablePlugin("warm", {});
  const call = async () => {
    const response = await box.client.callPlugin("warm", "");
    return { status: response.status, body: await response.json() };
  };
  for (let i = 0; i < 3; i++) assertEquals(await call(), { status: 200, body: { v: "first" } });

  const outside = join(dirs.root, "outside.ts");
  await Deno.writeTextFile(outside, module("outside"));
  await Deno.remove(join(dir, "main.ts"));
  await Deno.symlink(outside, join(dir, "main.ts"));
  const refused = await assertRejects(call, DockError) as DockError;
  assertEquals([refused.status, refused.code], [409, "plugin_off"]);
  assertStringIncludes(refused.message, "main.ts is a symlink out of its folder");

  await Deno.remove(join(dir, "main.ts"));
  await Deno.writeTextFile(join(dir, "main.ts"), module("fixed"));
  assertEquals(await call(), { status: 200, body: { v: "fixed" } });
});
