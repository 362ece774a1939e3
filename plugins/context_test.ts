import { assert, assertEquals } from "../tests/assert.ts";
import { SYSTEM_EVENT_FAMILIES } from "./context.ts";

const ROOT = new URL("../", import.meta.url).pathname;

/** The families of the event types dock's own code publishes (`type: "family.what"` in its sources). */
async function publishedFamilies(): Promise<Map<string, string>> {
  const families = new Map<string, string>();
  const walk = async (dir: string) => {
    for await (const entry of Deno.readDir(dir)) {
      const path = `${dir}/${entry.name}`;
      if (entry.isDirectory && entry.name !== "examples") await walk(path);
      else if (entry.name.endsWith(".ts") && !entry.name.endsWith("_test.ts")) {
        const text = await Deno.readTextFile(path);
        for (const match of text.matchAll(/\btype: ["'`]([a-z_]+)\.[a-z_$]/g)) {
          families.set(match[1], path.slice(ROOT.length));
        }
      }
    }
  };
  for (const dir of ["agent", "daemon", "core", "plugins", "cli", "client"]) await walk(`${ROOT}${dir}`);
  return families;
}

Deno.test("every event family dock publishes is one a module may not announce", async () => {
  const families = await publishedFamilies();
  assert(families.size > 10, `found ${families.size}: the scan reads the sources`);
  for (const [family, file] of families) {
    assert(SYSTEM_EVENT_FAMILIES.has(family), `${file} publishes ${family}.*, not in SYSTEM_EVENT_FAMILIES`);
  }
  // The ones issue 29 names, and the app's families in SPEC.md.
  for (
    const family of ["agent", "session", "box", "queue", "worktree", "location", "service", "flow", "hook"]
  ) {
    assert(SYSTEM_EVENT_FAMILIES.has(family), family);
  }
  assertEquals(SYSTEM_EVENT_FAMILIES.has("notify"), false, "a plugin's own family stays open to it");
});
