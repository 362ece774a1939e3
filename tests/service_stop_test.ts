/**
 * Stopping a service stops what it started even when that left its process group (issue 11: the README
 * promised forked children go too, and a child that called `setsid` stayed). Where the box allows a
 * cgroup (v2) per service, everything the service starts is born in it and is killed with it, even a
 * process that clears its environment; elsewhere (`DOCK_CGROUPS=off` here) everything a service starts
 * carries `DOCK_SERVICE=<location>/<worktree>/<name>@<state dir>` in its environment and stop finds it by
 * that. Both ways run here when this machine allows cgroups; the doctor names the one in force.
 */
import { dirname, join } from "node:path";
import { assert, assertEquals } from "./assert.ts";
import { makeRepo, processesWith, startBox, type TestBox } from "./harness.ts";
import { until } from "./wait.ts";
import { boxCgroupFolder, detectCgroups, serviceCgroupName } from "../daemon/cgroups.ts";

// The same detection a daemon started from this process makes (it inherits this process's cgroup).
const probeDir = await Deno.makeTempDir({ prefix: "dock-cgroup-probe-" });
const machine = await detectCgroups({ stateDir: probeDir });
await Deno.remove(probeDir, { recursive: true });
const unusable = machine.usable ? "" : ` (ignored: cgroups unavailable because ${machine.reason})`;

const sleepers = (marker: string) => processesWith("sleep ", marker);

/** A box with worktree app/w whose config has one service, `name`, running `run`. */
async function boxWithService(name: string, run: string, env: Record<string, string> = {}): Promise<TestBox> {
  const box = await startBox({ env });
  const repo = await makeRepo(join(box.dirs.home, "work"), "app", {
    ".dock/config.json": JSON.stringify({ services: [{ name, run }] }),
  });
  await box.client.addLocation({ name: "app", path: repo });
  await box.client.createWorktree("app", { name: "w" });
  return box;
}

async function servicesCheck(box: TestBox): Promise<string> {
  return (await box.client.doctor()).find((check) => check.name === "services")!.detail;
}

async function serviceCgroup(box: TestBox, name: string): Promise<string> {
  const place = await boxCgroupFolder(box.dirs.state);
  if (!("folder" in place)) throw new Error(place.reason);
  return join(place.folder, serviceCgroupName("app", "w", name));
}

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

for (const mode of ["cgroup", "process group and mark"] as const) {
  Deno.test({
    name:
      `stop ends a service's children that left its process group with setsid, and a daemonized one (${mode})${
        mode === "cgroup" ? unusable : ""
      }`,
    ignore: mode === "cgroup" && !machine.usable,
    fn: async () => {
      const marker = `98${Date.now() % 100000}`;
      await using box = await boxWithService(
        "escapist",
        // One child in a session of its own, one double-forked away from the service (reparented).
        `setsid sleep ${marker}1 & (setsid sh -c 'sleep ${marker}2 & exit 0' &) ; sleep ${marker}3`,
        mode === "cgroup" ? {} : { DOCK_CGROUPS: "off" },
      );
      const detail = await servicesCheck(box);
      if (mode === "cgroup") assert(detail.startsWith("cgroup v2 at "), detail);
      else assert(detail.startsWith("process groups and the DOCK_SERVICE mark"), detail);
      await box.client.serviceAction("app", "w", "escapist", "start");
      await until(() => sleepers(marker).length === 3);
      if (mode === "cgroup") {
        const procs = Deno.readTextFileSync(join(await serviceCgroup(box, "escapist"), "cgroup.procs"));
        for (const pid of sleepers(marker)) assert(procs.split("\n").includes(String(pid)), procs);
      }
      const stopped = await box.client.serviceAction("app", "w", "escapist", "stop");
      assertEquals(stopped.state, "stopped");
      assertEquals(sleepers(marker), []);
      if (mode === "cgroup") {
        // Its cgroup is gone, and the box's folder with it: no other service of the box runs.
        assertEquals(exists(await serviceCgroup(box, "escapist")), false);
        assertEquals(exists(dirname(await serviceCgroup(box, "escapist"))), false);
      }
    },
  });
}

Deno.test({
  name: `stop ends a child that cleared its environment and called setsid (cgroup)${unusable}`,
  ignore: !machine.usable,
  fn: async () => {
    const marker = `97${Date.now() % 100000}`;
    // Neither the process group nor the DOCK_SERVICE mark leads to it: only the cgroup does.
    await using box = await boxWithService(
      "scrubbed",
      `env -i setsid sh -c 'sleep ${marker}' & sleep ${marker}1`,
    );
    await box.client.serviceAction("app", "w", "scrubbed", "start");
    await until(() => {
      const scrubbed = sleepers(marker).filter((pid) =>
        !Deno.readTextFileSync(`/proc/${pid}/environ`).includes("DOCK_SERVICE=")
      );
      return Promise.resolve(scrubbed.length === 1);
    });
    const stopped = await box.client.serviceAction("app", "w", "scrubbed", "stop");
    assertEquals(stopped.state, "stopped");
    assertEquals(sleepers(marker), []);
    assertEquals(exists(await serviceCgroup(box, "scrubbed")), false);
  },
});

Deno.test({
  name:
    `a service that ends on its own takes a child that cleared its environment with it (cgroup)${unusable}`,
  ignore: !machine.usable,
  fn: async () => {
    const marker = `96${Date.now() % 100000}`;
    // A long backoff: no restart starts a second child while the test looks.
    await using box = await boxWithService("quitter", `env -i setsid sh -c 'sleep ${marker}' & exit 3`, {
      DOCK_SERVICE_BACKOFF_MS: "600000",
    });
    await box.client.serviceAction("app", "w", "quitter", "start");
    const crashed = await until(async () => {
      const service = (await box.client.services("app", "w")).find((s) => s.name === "quitter");
      return service?.state === "crashed" && service;
    }, { on: box });
    assertEquals(crashed.exit_code, 3);
    assertEquals(sleepers(marker), []);
    assertEquals(exists(await serviceCgroup(box, "quitter")), false);
    await box.client.serviceAction("app", "w", "quitter", "stop");
  },
});
