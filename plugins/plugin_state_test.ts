/**
 * The plugin lifecycle's conformance (plugin_state.ts `PLUGIN_LIFECYCLE`): every change the table allows
 * is made by the real registry and supervisor (real plugin folders, a real module host running the
 * plugin's module), and every change it does not name is refused and said. What the API lists is
 * derived from the phase, the grant and the workers by `listedState`.
 */
import { assert, assertEquals } from "../tests/assert.ts";
import { SYSTEM_CLOCK } from "../core/clock.ts";
import { EventBus } from "../core/events.ts";
import { MemoryLog } from "../core/log.ts";
import { join } from "../core/posix_path.ts";
import { Store } from "../core/store.ts";
import { events, transition, transitions } from "../core/transition.ts";
import type { DockEvent } from "../client/wire.ts";
import { listedState, PLUGIN_LIFECYCLE, type PluginPhase } from "./plugin_state.ts";
import { PluginRegistry } from "./registry.ts";
import { PluginSupervisor } from "./supervisor.ts";

const PING: DockEvent = { type: "test.ping", time: "2026-01-01T00:00:00.000Z", origin: "test", data: {} };

Deno.test("plugin lifecycle: every allowed change is made by the real registry and supervisor; nothing else is", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "dock-plugin-state-" }));
  const home = join(dir, "home");
  const folder = join(home, "plugins", "demo");
  const other = join(home, "plugins", "other");
  await Deno.mkdir(folder, { recursive: true });
  await Deno.mkdir(other, { recursive: true });
  const manifest = (id: string, note = "", module = "hook.ts") =>
    JSON.stringify({
      id,
      name: id,
      version: "1.0.0",
      description: note || undefined,
      hooks: [{ on: "test.ping", module }],
    });
  // Each write changes the folder's size, so its signature changes whatever the clock's resolution.
  let edits = 0;
  const write = (path: string, text: string) => Deno.writeTextFile(path, text + " ".repeat(++edits));
  const broken = () => write(join(folder, "hook.ts"), `throw new Error("broken on purpose");`);
  const fixed = () => write(join(folder, "hook.ts"), "export default { event() { return null; } };");
  await write(join(folder, "dock-plugin.json"), manifest("demo"));
  await broken();
  await write(join(other, "dock-plugin.json"), "{ not json");

  const seen: string[] = [];
  const log = new MemoryLog();
  const store = new Store(join(dir, "events.db"));
  const bus = new EventBus(store, { log });
  const published: string[] = [];
  bus.subscribe((event) => published.push(`${event.type} ${event.data?.id}`));
  const registry = new PluginRegistry({
    home,
    state: join(dir, "state"),
    where: "test",
    bus,
    log,
    // Called by scans only, once the supervisor below exists.
    onReload: (plugin) => supervisor.stopWorkers(plugin),
    onPhase: ({ id, from, event, to }) => seen.push(`${id} ${from} ${event} ${to}`),
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
  const demo = () => registry.get("demo");
  const listed = () => registry.info(demo(), supervisor.running(demo())).state;
  /** Enables demo as a user does: the consent check, then the grant. */
  const enable = async () => await registry.setEnabled(demo(), await registry.consent("demo", undefined));
  try {
    await registry.load();
    await registry.scan(); // demo: unread → loaded; other: unread → invalid
    assertEquals([listed(), registry.info(registry.get("other"), false).state], ["off", "off"]);
    await enable(); // loaded → enable → loaded
    assertEquals(listed(), "idle");
    // Its module does not load: failed at once, announced, and it runs nothing more.
    const [first] = await supervisor.testEvent(demo(), PING); // loaded → fail → failed
    assert(first.error?.includes("did not load"), first.error);
    assertEquals([demo().phase, listed()], ["failed", "failed"]);
    assert(published.includes("plugin.failed demo"), published.join(", "));
    assertEquals(registry.runnable(demo()), false);
    await enable(); // failed → enable → loaded
    assertEquals(listed(), "idle");
    await supervisor.testEvent(demo(), PING); // failed again
    await fixed();
    await registry.scan(); // failed → read → loaded (the dev loop: no enable needed)
    assertEquals(await supervisor.testEvent(demo(), PING), [{ module: "hook.ts" }]);
    assertEquals(demo().phase, "loaded");
    await write(join(folder, "dock-plugin.json"), manifest("demo", "edited"));
    await registry.scan(); // loaded → read → loaded
    await write(join(folder, "dock-plugin.json"), "{ broken");
    await registry.scan(); // loaded → reject → invalid
    assertEquals([demo().phase, listed()], ["invalid", "off"]);
    await write(join(folder, "dock-plugin.json"), "{ still broken");
    await registry.scan(); // invalid → reject → invalid
    // A module never imported before: a host that imported hook.ts (fixed) may serve it from its
    // module cache, whatever the file says now.
    await write(join(folder, "hook2.ts"), `throw new Error("broken on purpose");`);
    await write(join(folder, "dock-plugin.json"), manifest("demo", "", "hook2.ts"));
    await registry.scan(); // invalid → read → loaded: the grant outlived the broken manifest
    assertEquals(listed(), "idle");
    const [again] = await supervisor.testEvent(demo(), PING); // loaded → fail → failed
    assert(again.error?.includes("did not load"), again.error);
    await write(join(folder, "dock-plugin.json"), "{ broken again");
    await registry.scan(); // failed → reject → invalid
    assertEquals([demo().phase, listed(), registry.info(demo(), false).error !== undefined], [
      "invalid",
      "off",
      true,
    ]);
  } finally {
    supervisor.close();
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
  assertEquals(log.records.filter((r) => r.message.includes("refused")), [], "nothing refused on the way");
  const changes = new Set(seen.map((line) => line.split(" ").slice(1).join(" ")));
  assertEquals([...changes].sort(), transitions(PLUGIN_LIFECYCLE).map((t) => t.join(" ")).sort());
  assertEquals(seen.filter((line) => line.startsWith("other ")), ["other unread reject invalid"]);
});

Deno.test("plugin lifecycle: every change the table does not name is refused and said", () => {
  for (const from of Object.keys(PLUGIN_LIFECYCLE) as PluginPhase[]) {
    for (const event of events(PLUGIN_LIFECYCLE)) {
      const said: string[] = [];
      const to = transition(PLUGIN_LIFECYCLE, from, event, { name: "plugin demo", log: (m) => said.push(m) });
      const allowed = transitions(PLUGIN_LIFECYCLE).some(([a, e]) => a === from && e === event);
      assertEquals([to !== null, said.length], [allowed, allowed ? 0 : 1], `${from} ${event}`);
      if (!allowed) assertEquals(said, [`plugin demo: '${event}' refused in state '${from}'`]);
    }
  }
});

Deno.test("plugin lifecycle: the listed state is a failure first, then why it is off, then its workers", () => {
  const base = { phase: "loaded" as PluginPhase, off: null, starting: 0, running: false };
  assertEquals(listedState(base), "idle");
  assertEquals(listedState({ ...base, running: true }), "running");
  assertEquals(listedState({ ...base, running: true, starting: 1 }), "starting");
  assertEquals(listedState({ ...base, running: true, unsafe: "a link leads out" }), "off");
  assertEquals(listedState({ ...base, off: "not enabled", running: true }), "off");
  assertEquals(listedState({ ...base, phase: "invalid" }), "off");
  assertEquals(listedState({ ...base, phase: "unread" }), "off");
  assertEquals(listedState({ ...base, phase: "failed", off: "not enabled", unsafe: "x" }), "failed");
});
