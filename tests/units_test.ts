/**
 * Whole-system test of units (daemon/units.ts): the box's own long-running processes, supervised by the
 * services' code: started with their environment (secrets resolved), logged, adopted and not doubled
 * after the daemon is killed with -9, restarted with backoff and failed when they keep crashing,
 * stopped as a whole group and forgotten.
 */
import { join } from "node:path";
import { assertEquals, assertRejects, assertStringIncludes } from "./assert.ts";
import { DockError } from "../client/errors.ts";
import { makeDirs, processesWith, startBox } from "./harness.ts";
import { until, untilEvent } from "./wait.ts";
import { untilGone } from "./process_exits.ts";

Deno.test("units: run with their environment, survive kill -9 once, restart with backoff, fail, stop whole", async () => {
  const dirs = await makeDirs();
  const env = { DOCK_SERVICE_BACKOFF_MS: "50", DOCK_UNIT_TEST_SECRET: "from-the-daemon" };
  let box = await startBox({ dirs, env });
  try {
    const marker = `unit-${Date.now() % 100000}`;
    const mark = (await box.client.emit({ type: "test.mark" })).id!;
    const ticker = await box.client.createUnit({
      name: "ticker",
      run: `while true; do echo "tick $GREETING $SECRET $DOCK_UNIT"; sleep 0.2; done # ${marker}`,
      env: { GREETING: "hello", SECRET: "env://DOCK_UNIT_TEST_SECRET" },
      autostart: true,
    });
    assertEquals([ticker.state, ticker.autostart], ["running", true]);
    await untilEvent(box.client, (e) => e.type === "unit.created" && e.data?.unit === "ticker", {
      after: mark,
    });
    await untilEvent(box.client, (e) => e.type === "unit.started" && e.data?.unit === "ticker", {
      after: mark,
    });
    // The file the daemon writes the unit's output to.
    const log = join(dirs.state, "box", "logs", "units", "ticker.log");
    const logged = await until(async () => {
      const lines: string[] = [];
      for await (const line of box.client.unitLog("ticker", { tail: 5 })) {
        if (line.line) lines.push(line.line);
      }
      return lines.length ? lines : undefined;
    }, { watch: log });
    assertEquals(logged.at(-1), "tick hello from-the-daemon ticker");
    assertEquals(processesWith("/bin/sh -c", marker).length, 1);
    const dup = await assertRejects(
      () => box.client.createUnit({ name: "ticker", run: "true" }),
      DockError,
    ) as DockError;
    assertEquals(dup.status, 409);
    const bad = await assertRejects(
      () => box.client.createUnit({ name: "Bad Name", run: "true" }),
      DockError,
    ) as DockError;
    assertEquals(bad.status, 400);

    // The daemon killed with -9 and started again: the same process, adopted, not a second one.
    await box.stop({ kill: true });
    box = await startBox({ dirs, env });
    const adopted = await box.client.unit("ticker");
    assertEquals([adopted.state, adopted.pid], ["running", ticker.pid]);
    assertEquals(processesWith("/bin/sh -c", marker).length, 1);

    // One that keeps crashing: restarted with backoff, then failed.
    const before = (await box.client.emit({ type: "test.mark" })).id!;
    await box.client.createUnit({ name: "crasher", run: "exit 3" });
    const failed = await until(async () => {
      const unit = await box.client.unit("crasher");
      return unit.state === "failed" ? unit : undefined;
    }, { on: box, timeoutMs: 30_000 });
    assertEquals(failed.exit_code, 3);
    assertStringIncludes(failed.error ?? "", "crashed");
    const crashed = await untilEvent(box.client, (e) => e.type === "unit.crashed", { after: before });
    assertEquals([crashed.data?.unit, crashed.data?.exit_code], ["crasher", 3]);

    // Stopped, started, listed by the CLI; removed: its processes gone, then 404.
    assertEquals((await box.client.unitAction("ticker", "stop")).state, "stopped");
    assertEquals(processesWith("/bin/sh -c", marker).length, 0);
    assertEquals((await box.client.unitAction("ticker", "start")).state, "running");
    const listed = await box.cli(["unit", "list"]);
    assertEquals(listed.code, 0, listed.stderr);
    assertStringIncludes(listed.stdout, "ticker");
    assertStringIncludes(listed.stdout, "crasher");
    await box.client.removeUnit("ticker");
    await untilGone(() => processesWith("/bin/sh -c", marker), { what: "the removed unit's processes" });
    assertEquals((await assertRejects(() => box.client.unit("ticker"), DockError) as DockError).status, 404);
    assertEquals((await box.client.units()).map((u) => u.name), ["crasher"]);
  } finally {
    await box[Symbol.asyncDispose]();
  }
});
