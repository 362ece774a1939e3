import { assertEquals } from "../tests/assert.ts";
import { Store } from "../core/store.ts";
import { SYSTEM_CLOCK } from "../core/clock.ts";
import type { EventBus } from "../core/events.ts";
import { BOX_SCHEMA } from "./schema.ts";
import { Locations } from "./locations.ts";

Deno.test("Locations.config: the repository's file read again whenever it changed, also an edit of the same size at once", async () => {
  const dir = await Deno.makeTempDir({ prefix: "dock-locations-test-" });
  const store = new Store(`${dir}/box.db`, { schema: BOX_SCHEMA });
  try {
    const repo = `${dir}/app`;
    await Deno.mkdir(`${repo}/.dock`, { recursive: true });
    store.run("INSERT INTO locations (name, path, created) VALUES ('app', ?, '2024-01-01T00:00:00Z')", repo);
    const locations = new Locations(store, { publish() {} } as unknown as EventBus, SYSTEM_CLOCK);
    const gate = async () => (await locations.config("app")).effective.hooks?.map((hook) => hook.run);
    assertEquals(await gate(), undefined, "no file");
    const file = `${repo}/.dock/config.json`;
    const write = (run: string) =>
      Deno.writeTextFileSync(file, JSON.stringify({ hooks: [{ on: "before:session.send", run }] }));
    write("exit 0");
    assertEquals(await gate(), ["exit 0"]);
    // The same size, within the same tick of the kernel's clock: the signature alone would not tell.
    write("exit 1");
    assertEquals(await gate(), ["exit 1"]);
    // Settled and unchanged: kept (the same problems, the same layers), and edited copies do not leak.
    const old = new Date(Date.now() - 60_000);
    await Deno.utime(file, old, old);
    const first = await locations.config("app");
    first.effective.hooks!.length = 0;
    assertEquals(await gate(), ["exit 1"]);
    Deno.removeSync(file);
    assertEquals(await gate(), undefined, "removed");
    Deno.writeTextFileSync(file, "{ not json");
    assertEquals((await locations.config("app")).errors?.length, 1);
    assertEquals((await locations.config("app")).errors?.length, 1, "the same problem again, not doubled");
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
});
