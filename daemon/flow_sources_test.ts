import { assertEquals } from "../tests/assert.ts";
import { SYSTEM_CLOCK } from "../core/clock.ts";
import { MemoryLog } from "../core/log.ts";
import { FlowSources } from "./flow_sources.ts";
import type { Locations } from "./locations.ts";

const NO_LOCATIONS = { list: () => [], get: () => undefined, config: () => undefined } as unknown as Pick<
  Locations,
  "list" | "get" | "config"
>;

Deno.test("FlowSources.refreshInBatch: the flows file is checked once for a batch of events run at once, and again after an await", async () => {
  const dir = await Deno.makeTempDir({ prefix: "dock-flow-sources-test-" });
  const file = `${dir}/flows.json`;
  const sources = new FlowSources({
    file,
    locations: NO_LOCATIONS,
    clock: SYSTEM_CLOCK,
    log: new MemoryLog(),
  });
  const flow = {
    id: "f",
    name: "F",
    enabled: true,
    trigger: { event: "a.b" },
    steps: [{ kind: "run", command: "true" }],
  };
  try {
    await Promise.resolve();
    sources.refreshInBatch();
    assertEquals(sources.fileCandidates(), []);
    // Written while the same code runs on (as the bus delivers a batch of events): not looked at again.
    Deno.writeTextFileSync(file, JSON.stringify({ flows: [flow] }));
    sources.refreshInBatch();
    assertEquals(sources.fileCandidates(), [], "one check for the batch");
    await Promise.resolve();
    sources.refreshInBatch();
    assertEquals(
      sources.fileCandidates().map((candidate) => candidate.flow.id),
      ["f"],
      "seen after an await",
    );
  } finally {
    sources.close();
    await Deno.remove(dir, { recursive: true });
  }
});
