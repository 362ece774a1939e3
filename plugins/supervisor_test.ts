/**
 * The supervisor with the real registry and a real module host: a plugin's edits reach its next call;
 * a `fetch`'s bodies cross both ways whole.
 */
import { assertEquals } from "../tests/assert.ts";
import { SYSTEM_CLOCK } from "../core/clock.ts";
import { EventBus } from "../core/events.ts";
import { MemoryLog } from "../core/log.ts";
import { join } from "../core/posix_path.ts";
import { Store } from "../core/store.ts";
import { PluginRegistry } from "./registry.ts";
import { PluginSupervisor } from "./supervisor.ts";

/** Plugin `demo` (its `main.ts` is `main`), enabled, on a real registry and supervisor. */
async function rig(main: string) {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "dock-supervisor-" }));
  const folder = join(dir, "home", "plugins", "demo");
  await Deno.mkdir(folder, { recursive: true });
  await Deno.writeTextFile(
    join(folder, "dock-plugin.json"),
    JSON.stringify({ id: "demo", name: "demo", version: "1.0.0", main: "main.ts" }),
  );
  await Deno.writeTextFile(join(folder, "main.ts"), main);
  const log = new MemoryLog();
  const store = new Store(join(dir, "events.db"));
  const bus = new EventBus(store, { log });
  const registry = new PluginRegistry({
    home: join(dir, "home"),
    state: join(dir, "state"),
    where: "test",
    bus,
    log,
    onReload: (plugin) => supervisor.stopWorkers(plugin),
  });
  const supervisor = new PluginSupervisor({
    registry,
    bus,
    where: "test",
    dir: join(dir, "host"),
    clock: SYSTEM_CLOCK,
    log,
    onRequest: () => Promise.resolve(null),
  });
  await registry.load();
  await registry.scan();
  await registry.setEnabled(registry.get("demo"), await registry.consent("demo", undefined));
  return {
    folder,
    registry,
    fetch: (request: Request) => supervisor.fetch(registry.get("demo"), "/", request),
    async [Symbol.asyncDispose]() {
      supervisor.close();
      store.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

Deno.test("plugins: each edit of a warm plugin's module is what its next call runs, edit after edit", async () => {
  // Each version a different size, so the folder's signature changes whatever the clock's resolution.
  const version = (n: number) =>
    `export default { fetch() { return new Response("v${n}"); } };` + " ".repeat(n);
  await using r = await rig(version(0));
  const call = async () => await (await r.fetch(new Request("http://test/"))).text();
  assertEquals(await call(), "v0");
  const answers: string[] = [];
  // Before the fix, 5 and 10 calls in two runs of 30 answered the version before: the old worker's
  // end, said after the call that started its successor, made the successor forgotten (never stopped).
  for (let n = 1; n <= 20; n++) {
    await Deno.writeTextFile(join(r.folder, "main.ts"), version(n));
    await r.registry.scan(); // sees the change: stops the plugin's workers
    answers.push(await call());
  }
  assertEquals(answers, Array.from({ length: 20 }, (_, i) => `v${i + 1}`));
});

Deno.test("plugins: a fetch's request and answer bodies cross whole, from empty to MiBs (handed over, not copied)", async () => {
  await using r = await rig(
    `export default { async fetch(req) {
      const bytes = new Uint8Array(await req.arrayBuffer()).reverse();
      return new Response(bytes, { headers: { "x-got": String(bytes.length) } });
    } };`,
  );
  for (const size of [0, 1, 3, 70_000, 3 * 1024 * 1024]) {
    const sent = new Uint8Array(size).map((_, i) => (i * 31 + (i >> 10)) & 0xff);
    const response = await r.fetch(new Request("http://test/", { method: "POST", body: sent }));
    assertEquals(response.headers.get("x-got"), String(size));
    assertEquals(new Uint8Array(await response.arrayBuffer()), sent.reverse(), `${size} bytes`);
  }
});
