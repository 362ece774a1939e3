import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { assert, assertEquals, assertStringIncludes } from "../tests/assert.ts";
import {
  boxCgroupName,
  cgroupCheck,
  cgroupFolder,
  parseCgroup2Mounts,
  parseProcCgroup,
  serviceCgroupName,
} from "./cgroups.ts";

const fixtures = join(dirname(fileURLToPath(import.meta.url)), "..", "tests", "fixtures", "cgroups");
const fixture = (name: string) => Deno.readTextFileSync(join(fixtures, name));

Deno.test("parseProcCgroup reads the v2 line of a hybrid box, a v2-only one, and none on v1 only", () => {
  // Captured on the build box: v1 controllers beside a v2 hierarchy, the process in the v2 root.
  assertEquals(parseProcCgroup(fixture("hybrid_cgroup.txt")), "/");
  assertEquals(
    parseProcCgroup("0::/user.slice/user-1000.slice/user@1000.service/app.slice/dockd.service\n"),
    "/user.slice/user-1000.slice/user@1000.service/app.slice/dockd.service",
  );
  assertEquals(parseProcCgroup("12:pids:/user.slice\n1:name=systemd:/user.slice/session-2.scope\n"), null);
  // Outside the reader's cgroup namespace the path climbs out of its root.
  assertEquals(parseProcCgroup("0::/../../other.scope\n"), "/../../other.scope");
});

Deno.test("parseCgroup2Mounts finds the v2 mount beside v1 ones, read-only ones, and escaped paths", () => {
  assertEquals(parseCgroup2Mounts(fixture("hybrid_mountinfo.txt")), [
    { root: "/", mountPoint: "/sys/fs/cgroup/unified", readOnly: false },
  ]);
  // A v2-only systemd box (optional fields before " - "), a container's read-only subtree, a space (\040).
  const text = [
    "35 24 0:30 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate",
    "41 35 0:30 /docker/abc /sys/fs/cgroup ro,nosuid,nodev,noexec,relatime - cgroup2 cgroup ro",
    "42 26 0:30 / /mnt/my\\040cgroups rw,relatime - cgroup2 none rw",
    "43 26 0:31 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids",
    "",
  ].join("\n");
  assertEquals(parseCgroup2Mounts(text), [
    { root: "/", mountPoint: "/sys/fs/cgroup", readOnly: false },
    { root: "/docker/abc", mountPoint: "/sys/fs/cgroup", readOnly: true },
    { root: "/", mountPoint: "/mnt/my cgroups", readOnly: false },
  ]);
});

Deno.test("cgroupFolder places a cgroup under the mount that shows it", () => {
  const hybrid = parseCgroup2Mounts(fixture("hybrid_mountinfo.txt"));
  assertEquals(cgroupFolder(hybrid, "/")?.folder, "/sys/fs/cgroup/unified");
  assertEquals(cgroupFolder(hybrid, "/a/b.service")?.folder, "/sys/fs/cgroup/unified/a/b.service");
  const subtree = [{ root: "/docker/abc", mountPoint: "/sys/fs/cgroup", readOnly: false }];
  assertEquals(cgroupFolder(subtree, "/docker/abc/init.scope")?.folder, "/sys/fs/cgroup/init.scope");
  assertEquals(cgroupFolder(subtree, "/docker/abc")?.folder, "/sys/fs/cgroup");
  assertEquals(cgroupFolder(subtree, "/docker/abcd"), null);
  assertEquals(cgroupFolder([], "/"), null);
});

Deno.test("a box's folder name is fixed by its state folder; a service's name cannot collide", async () => {
  assertEquals(await boxCgroupName("/home/u/.dock/state"), await boxCgroupName("/home/u/.dock/state"));
  assert(await boxCgroupName("/a") !== await boxCgroupName("/b"));
  // What earlier releases named it (the first 12 hex digits of the path's SHA-256): an upgraded daemon
  // finds its services' cgroups where the one before left them.
  assertEquals(await boxCgroupName("/a"), "dock-6a50dc858413");
  // Names never hold ":", and the kernel's files start with "cgroup." or a controller's name and a dot.
  assertEquals(serviceCgroupName("app", "w", "web"), "app:w:web");
  assert(serviceCgroupName("a", "b-c", "d") !== serviceCgroupName("a-b", "c", "d"));
});

Deno.test("the doctor check names the mechanism, and the reason when it is the fallback", () => {
  const cgroup = cgroupCheck({ usable: true, folder: "/sys/fs/cgroup/x/dock-1", kill: true });
  assertEquals(cgroup.ok, true);
  assertEquals(cgroup.name, "services");
  assert(cgroup.detail.startsWith("cgroup v2 at /sys/fs/cgroup/x/dock-1"));
  const old = cgroupCheck({ usable: true, folder: "/f", kill: false });
  assertStringIncludes(old.detail, "each process is killed in turn");
  const fallback = cgroupCheck({ usable: false, reason: "no cgroup2 file system is mounted" });
  assertEquals(fallback.ok, true);
  assertStringIncludes(fallback.detail, "process groups and the DOCK_SERVICE mark");
  assertStringIncludes(
    fallback.detail,
    "escapes; cgroups unavailable because no cgroup2 file system is mounted",
  );
});
