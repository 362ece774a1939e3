/**
 * Whole-system conformance of the setup lifecycle (daemon/setup_state.ts) against a real `dockd` and real
 * git: no script → `none`; a script → `pending` → `running` → `succeeded` or `failed`; a setup a daemon
 * killed with -9 cut off → `failed` at the next start. (`pending` lasts only between the worktree's record
 * and its setup's start, so `pending → interrupt` is not driven here; the restart's update covers both.)
 */
import { join } from "node:path";
import { assertEquals } from "./assert.ts";
import { makeDirs, makeRepo, startBox } from "./harness.ts";
import { until, untilEvent } from "./wait.ts";
import { transition, transitions } from "../core/transition.ts";
import { SETUP_LIFECYCLE, type SetupEvent, type SetupPhase } from "../daemon/setup_state.ts";

Deno.test("setup lifecycle: none, succeeded, failed and interrupted are what the daemon records", async () => {
  const dirs = await makeDirs();
  let box = await startBox({ dirs });
  try {
    const work = join(dirs.home, "work");
    const plain = await makeRepo(work, "plain");
    const app = await makeRepo(work, "app", {
      ".dock/config.json": JSON.stringify({
        setup: 'if [ "$DOCK_WORKTREE_NAME" = slow ]; then while [ ! -e release ]; do sleep 0.1; done; fi; ' +
          '[ "$DOCK_WORKTREE_NAME" != bad ]',
      }),
    });
    await box.client.addLocation({ name: "plain", path: plain });
    await box.client.addLocation({ name: "app", path: app });
    assertEquals((await box.client.createWorktree("plain", { name: "p" })).setup.state, "none");
    const mark = (await box.client.emit({ type: "test.mark" })).id!;
    await box.client.createWorktree("app", { name: "good" });
    await box.client.createWorktree("app", { name: "bad" });
    for (const type of ["worktree.setup.finished", "worktree.setup.failed"]) {
      await untilEvent(box.client, (e) => e.type === type, { after: mark });
    }
    assertEquals((await box.client.worktree("app", "good")).setup.state, "succeeded");
    assertEquals((await box.client.worktree("app", "bad")).setup.state, "failed");

    const slow = await box.client.createWorktree("app", { name: "slow" });
    await until(async () => (await box.client.worktree("app", "slow")).setup.state === "running", {
      on: box,
    });
    await box.stop({ kill: true });
    box = await startBox({ dirs });
    const after = (await box.client.worktree("app", "slow")).setup;
    assertEquals([after.state, after.error], ["failed", "interrupted by a daemon restart"]);
    await Deno.writeTextFile(join(slow.path, "release"), ""); // the orphaned script ends
  } finally {
    await box[Symbol.asyncDispose]();
  }
});

Deno.test("setup lifecycle: every change the table does not name is refused and said", () => {
  const events: SetupEvent[] = ["plan", "skip", "start", "succeed", "fail", "interrupt"];
  for (const from of Object.keys(SETUP_LIFECYCLE) as SetupPhase[]) {
    for (const event of events) {
      const said: string[] = [];
      const to = transition(SETUP_LIFECYCLE, from, event, { log: (m) => said.push(m) });
      const allowed = transitions(SETUP_LIFECYCLE).some(([a, e]) => a === from && e === event);
      assertEquals([to !== null, said.length], [allowed, allowed ? 0 : 1], `${from} ${event}`);
    }
  }
});
