/**
 * The registry's guard before each call (`PluginRegistry.guard`): a link out of a folder a plugin's
 * workers may read turns it off at the next call; a data folder it was granted nothing of is looked at
 * when it is measured, and once a link is found there the plugin stays off until the link is gone.
 */
import { assert, assertEquals, assertStringIncludes } from "../tests/assert.ts";
import { until } from "../tests/wait.ts";
import { EventBus } from "../core/events.ts";
import { MemoryLog } from "../core/log.ts";
import { join } from "../core/posix_path.ts";
import { Store } from "../core/store.ts";
import { PluginRegistry } from "./registry.ts";

/** Writes a plugin whose manifest asks for `read` in its data folder. */
async function writePlugin(home: string, id: string, read: string[]): Promise<void> {
  const folder = join(home, "plugins", id);
  await Deno.mkdir(folder, { recursive: true });
  await Deno.writeTextFile(
    join(folder, "dock-plugin.json"),
    JSON.stringify({ id, name: id, version: "1.0.0", main: "main.ts", permissions: { read } }),
  );
  await Deno.writeTextFile(join(folder, "main.ts"), "export default { fetch: () => new Response('ok') };");
}

Deno.test("guard: a link out of a data folder a plugin may read stops it at once; of one it may not, when measured", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "dock-registry-" }));
  const home = join(dir, "home");
  await writePlugin(home, "reader", ["."]);
  await writePlugin(home, "blind", []);
  const log = new MemoryLog();
  const store = new Store(join(dir, "events.db"));
  const registry = new PluginRegistry({
    home,
    state: join(dir, "state"),
    where: "test",
    bus: new EventBus(store, { log }),
    log,
    onReload: () => {},
  });
  try {
    await registry.load();
    await registry.scan();
    for (const [id, read] of [["reader", ["."]], ["blind", []]] as const) {
      await registry.setEnabled(registry.get(id), await registry.consent(id, { read: [...read] }));
    }
    const reader = registry.get("reader");
    const blind = registry.get("blind");
    const old = new Date(Date.now() - 3_600_000);
    for (const plugin of [reader, blind]) {
      await Deno.mkdir(plugin.data, { recursive: true });
      // A folder changed in its last 2 s is walked before every call (folder_check.ts): these are older.
      for (const folder of [plugin.dir, plugin.data]) await Deno.utime(folder, old, old);
      assertEquals(await registry.guard(plugin), null, plugin.id);
    }
    // Nothing changed since: each answers at once, awaiting nothing (a warm call's path).
    assertEquals(registry.guard(reader), null);
    assertEquals(registry.guard(blind), null);

    for (const plugin of [reader, blind]) await Deno.symlink("/etc", join(plugin.data, "out"));
    // Its workers may read the data folder: the next call sees the link.
    assertStringIncludes(String(await registry.guard(reader)), "out is a symlink out of its folder");
    // They may not: the link leads them nowhere until its folder is measured (every 2 s at most)...
    const found = await until(async () => (await registry.guard(blind)) ?? undefined, {
      what: "the link in a data folder it was granted nothing of",
    });
    assertStringIncludes(found, "out is a symlink out of its folder");
    // ...and from then on every call is refused while the link is there.
    for (let i = 0; i < 3; i++) assertStringIncludes(String(await registry.guard(blind)), "symlink");
    assert(blind.unsafe, "listed as unsafe");

    for (const plugin of [reader, blind]) {
      await Deno.remove(join(plugin.data, "out"));
      assertEquals(await registry.guard(plugin), null, `${plugin.id}: the link gone`);
      assertEquals(plugin.unsafe, undefined, plugin.id);
    }
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
});
