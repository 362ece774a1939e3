import { assertEquals } from "../tests/assert.ts";
import { SYSTEM_CLOCK } from "./clock.ts";
import { HooksFileWatcher } from "./hooks_file.ts";
import { MemoryLog } from "./log.ts";

const nextTurn = () => new Promise((resolve) => setImmediate(resolve));

Deno.test("HooksFileWatcher.current: the file is checked once for a batch of events run at once, and again after an await", async () => {
  const dir = await Deno.makeTempDir({ prefix: "dock-hooks-file-test-" });
  const path = `${dir}/hooks.json`;
  const watcher = new HooksFileWatcher(path, { clock: SYSTEM_CLOCK, log: new MemoryLog() });
  try {
    await nextTurn();
    assertEquals(watcher.current(), []);
    // Written while the same code runs on (as the bus delivers a batch of events): not looked at again.
    Deno.writeTextFileSync(path, `{ "hooks": [{ "on": "*", "run": "true" }] }`);
    assertEquals(watcher.current(), [], "one check for the batch");
    await Promise.resolve();
    assertEquals(watcher.current().map((hook) => hook.run), ["true"], "after an await the edit is seen");
    // What the watcher writes itself and GET hooks' state are never held back by the turn's check.
    await watcher.write({ hooks: [{ on: "a", run: "1" }] });
    assertEquals(watcher.current().map((hook) => hook.on), ["a"]);
    Deno.writeTextFileSync(path, `{ "hooks": [] }`);
    assertEquals(watcher.state().hooks, []);
  } finally {
    watcher.close();
    await Deno.remove(dir, { recursive: true });
  }
});
