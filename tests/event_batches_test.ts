/**
 * Whole-system test of the event path's batches: `POST events` taken at once by a box (journaled a
 * turn at a time), copied by the agent's merge (batches bounded in bytes) and fanned out to SSE clients
 * (a turn's frames in one write, large ones in pieces). Order and completeness hold across all three.
 */
import { assert, assertEquals } from "./assert.ts";
import { AgentClient } from "../client/agent.ts";
import type { DockEvent } from "../client/wire.ts";
import { makeDirs, startAgent, startBox } from "./harness.ts";
import { Changes, until } from "./wait.ts";

/** Events the box takes, in waves sent at once. */
const WAVES = 8;
const PER_WAVE = 50;

Deno.test("events sent at once keep the box's order through its journal, the merge and every client", async () => {
  const dirs = await makeDirs();
  await using box = await startBox({ dirs });
  await using agent = await startAgent(dirs);
  const client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  const controller = new AbortController();
  try {
    await client.addLocal();
    const live: DockEvent[][] = [[], []];
    const ready = [false, false];
    // The readers are the streams under test: they say when they brought one more.
    const heard = new Changes();
    const readers = live.map((seen, k) =>
      (async () => {
        for await (const event of client.events({ signal: controller.signal })) {
          if (event.type === "batch.e") {
            seen.push(event);
            heard.changed();
          }
          if (event.type === "batch.ready") ready[k] = true;
        }
      })()
    );
    // Both clients are live before the first wave: a mark each has seen.
    await until(async () => {
      await client.emit({ type: "batch.ready" });
      return ready.every(Boolean);
    });
    // Every other event is 60 KB: a wave is ~1.5 MB, past the box's batch (256 KiB) and the merge's (1 MiB).
    const pad = "p".repeat(60_000);
    const taken: DockEvent[] = [];
    for (let wave = 0; wave < WAVES; wave++) {
      taken.push(
        ...await Promise.all(Array.from({ length: PER_WAVE }, (_, i) => {
          const seq = wave * PER_WAVE + i;
          return box.client.emit({ type: "batch.e", data: seq % 2 ? { seq, pad } : { seq } });
        })),
      );
    }
    // The box's order: its ids. Every client must see exactly that order, each event once.
    const order = taken.toSorted((a, b) => a.id! - b.id!).map((event) => event.data!.seq);
    assertEquals(new Set(order).size, WAVES * PER_WAVE);
    await until(() => live.every((seen) => seen.length >= order.length), { wake: heard, timeoutMs: 30_000 });
    for (const seen of live) {
      assertEquals(seen.map((event) => event.data!.seq), order);
      assert(seen.every((event, i) => event.box === "local" && (i === 0 || event.id! > seen[i - 1].id!)));
      assert(seen.every((event) => (event.data!.seq as number) % 2 === 0 || event.data!.pad === pad));
    }
    // A client resuming from the start of the journal reads the same.
    const resumed: DockEvent[] = [];
    for await (const event of client.events({ after: 0, signal: AbortSignal.timeout(20_000) })) {
      if (event.type === "batch.e") resumed.push(event);
      if (resumed.length === order.length) break;
    }
    assertEquals(resumed.map((event) => event.id), live[0].map((event) => event.id));
    controller.abort();
    await Promise.all(readers);
  } finally {
    controller.abort();
    client.close();
  }
});
