/**
 * The plugin host generations' lifecycle (host_phase.ts): each allowed change is made by the real module
 * host with real host processes (live → retired when a wider grant takes its place, retired → ended once
 * its calls are done, live → ended when it closes), and every other change is refused and said.
 */
import { assertEquals } from "../tests/assert.ts";
import { SYSTEM_CLOCK } from "../core/clock.ts";
import { MemoryLog } from "../core/log.ts";
import { join } from "node:path";
import { transition, transitions } from "../core/transition.ts";
import { HOST_LIFECYCLE, type HostEvent, type HostPhase } from "./host_phase.ts";
import { ModuleHost } from "./module_host.ts";

Deno.test("host lifecycle: retire, end after retiring, and end are what the module host does", async () => {
  const dir = await Deno.realPath(await Deno.makeTempDir({ prefix: "dock-hostphase-" }));
  await Deno.writeTextFile(join(dir, "echo.ts"), "export default { event() { return null; } };");
  const seen: string[] = [];
  const modules = new ModuleHost({
    clock: SYSTEM_CLOCK,
    log: new MemoryLog(),
    dir: join(dir, ".host"),
    onRequest: () => Promise.resolve(null),
    onHostPhase: ({ generation, from, event, to }) => seen.push(`${generation} ${from} ${event} ${to}`),
  });
  const spec = (key: string, env: string[]) => ({
    key,
    module: join(dir, "echo.ts"),
    grant: { read: [dir], write: [], net: [], env },
    label: `test:${key}`,
  });
  try {
    await modules.call(spec("narrow", []), "event", {}, 30_000);
    // A grant the first host does not cover: it is retired, and (nothing in flight) ended.
    await modules.call(spec("wide", ["HOME"]), "event", {}, 30_000);
  } finally {
    modules.close();
    await Deno.remove(dir, { recursive: true });
  }
  assertEquals(seen, ["1 live retire retired", "1 retired end ended", "2 live end ended"]);
  assertEquals(
    [...new Set(seen.map((line) => line.split(" ").slice(1).join(" ")))].sort(),
    transitions(HOST_LIFECYCLE).map((t) => t.join(" ")).sort(),
  );
});

Deno.test("host lifecycle: every change the table does not name is refused and said", () => {
  const events: HostEvent[] = ["retire", "end"];
  for (const from of Object.keys(HOST_LIFECYCLE) as HostPhase[]) {
    for (const event of events) {
      const said: string[] = [];
      const to = transition(HOST_LIFECYCLE, from, event, { log: (m) => said.push(m) });
      const allowed = transitions(HOST_LIFECYCLE).some(([a, e]) => a === from && e === event);
      assertEquals([to !== null, said.length], [allowed, allowed ? 0 : 1], `${from} ${event}`);
    }
  }
});
