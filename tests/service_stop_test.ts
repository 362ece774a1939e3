/**
 * Stopping a service stops what it started even when that left its process group (issue 11: the README
 * promised forked children go too, and a child that called `setsid` stayed). Everything a service starts
 * carries `DOCK_SERVICE=<location>/<worktree>/<name>@<state dir>` in its environment; stop finds it by that.
 */
import { join } from "node:path";
import { assertEquals } from "./assert.ts";
import { eventually, makeRepo, startBox } from "./harness.ts";

function sleepers(marker: string): number[] {
  const pids: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const cmdline = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`).replaceAll("\0", " ");
      const state = Deno.readTextFileSync(`/proc/${entry.name}/stat`).split(") ")[1]?.[0];
      if (cmdline.startsWith("sleep ") && cmdline.includes(marker) && state !== "Z") {
        pids.push(Number(entry.name));
      }
    } catch { /* gone meanwhile */ }
  }
  return pids;
}

Deno.test("stop ends a service's children that left its process group with setsid, and a daemonized one", async () => {
  const marker = `98${Date.now() % 100000}`;
  await using box = await startBox();
  const repo = await makeRepo(join(box.dirs.home, "work"), "app", {
    ".dock/config.json": JSON.stringify({
      services: [{
        name: "escapist",
        // One child in a session of its own, one double-forked away from the service (reparented).
        run: `setsid sleep ${marker}1 & (setsid sh -c 'sleep ${marker}2 & exit 0' &) ; sleep ${marker}3`,
      }],
    }),
  });
  await box.client.addLocation({ name: "app", path: repo });
  await box.client.createWorktree("app", { name: "w" });
  await box.client.serviceAction("app", "w", "escapist", "start");
  await eventually(() => Promise.resolve(sleepers(marker).length === 3));
  const stopped = await box.client.serviceAction("app", "w", "escapist", "stop");
  assertEquals(stopped.state, "stopped");
  assertEquals(sleepers(marker), []);
});
