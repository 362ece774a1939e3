import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { assert, assertEquals, assertRejects, assertStringIncludes } from "../tests/assert.ts";
import { DockError } from "../client/errors.ts";
import {
  boxInfo,
  doctor,
  installHint,
  listFolder,
  parseDf,
  parseLoadavg,
  parseMeminfo,
  parseUptime,
  stats,
  TOOLS,
} from "./system.ts";

// Captured on a Linux box: cat /proc/{meminfo,loadavg,uptime}; df -P -k / /tmp /proc /dev/shm
const fixtures = join(dirname(fileURLToPath(import.meta.url)), "..", "tests", "fixtures", "system");
const fixture = (name: string) => Deno.readTextFileSync(join(fixtures, name));

Deno.test("parseMeminfo reads total and available memory in bytes", () => {
  assertEquals(parseMeminfo(fixture("meminfo.txt")), {
    total: 24684096 * 1024,
    available: 24406348 * 1024,
    used_percent: 1.1,
  });
});

Deno.test("parseMeminfo estimates available memory on kernels without MemAvailable", () => {
  const text = "MemTotal: 1000 kB\nMemFree: 100 kB\nBuffers: 50 kB\nCached: 100 kB\n";
  assertEquals(parseMeminfo(text), { total: 1024000, available: 256000, used_percent: 75 });
  assertEquals(parseMeminfo(""), { total: 0, available: 0, used_percent: 0 });
});

Deno.test("parseDf reads POSIX df output, including pseudo filesystems", () => {
  assertEquals(parseDf(fixture("df.txt")), [
    {
      filesystem: "/dev/vda",
      total: 264212084 * 1024,
      used: 22792596 * 1024,
      free: 83598316 * 1024,
      mount: "/",
    },
    {
      filesystem: "/dev/vda",
      total: 264212084 * 1024,
      used: 22792596 * 1024,
      free: 83598316 * 1024,
      mount: "/",
    },
    { filesystem: "proc", total: 0, used: 0, free: 0, mount: "/proc" },
    { filesystem: "tmpfs", total: 24684096 * 1024, used: 0, free: 24684096 * 1024, mount: "/dev/shm" },
  ]);
});

Deno.test("parseDf keeps spaces in filesystem names and mount points", () => {
  const text = "Filesystem 1024-blocks Used Available Capacity Mounted on\n" +
    "map auto_home         0        0         0   100%    /System/Volumes/Data/home\n" +
    "//u@nas/My Share    2048     1024      1024    50%    /Volumes/My Share\n";
  assertEquals(parseDf(text).map((e) => [e.filesystem, e.mount, e.free]), [
    ["map auto_home", "/System/Volumes/Data/home", 0],
    ["//u@nas/My Share", "/Volumes/My Share", 1024 * 1024],
  ]);
  assertEquals(parseDf(""), []);
});

Deno.test("parseLoadavg and parseUptime read /proc", () => {
  assertEquals(parseLoadavg(fixture("loadavg.txt")), [0.05, 0.1, 0.04]);
  assertEquals(parseUptime(fixture("uptime.txt")), 523);
  assertEquals(parseUptime("garbage"), 0);
});

Deno.test("stats reports memory, load, uptime and one disk per mount", async () => {
  const dir = await Deno.makeTempDir();
  try {
    await Deno.mkdir(join(dir, "sub"));
    const result = await stats({ paths: [dir, join(dir, "sub"), join(dir, "missing"), dir] });
    assert(result.memory.total > 0);
    assert(result.memory.used_percent >= 0 && result.memory.used_percent <= 100);
    assertEquals(result.load.length, 3);
    assert(result.uptime > 0);
    assertEquals(result.disks.length, 1);
    assertEquals(result.disks[0].path, dir);
    assert(result.disks[0].total > 0 && result.disks[0].free <= result.disks[0].total);
    assertEquals(await stats({ paths: [] }).then((s) => s.disks), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("boxInfo names the OS, architecture, user, home and the tools found", async () => {
  const info = await boxInfo({
    name: "devbox",
    build: "1.2.3",
    agents: [{ id: "claude", command: "claude" }],
    which: (name) => ["git", "tmux", "claude"].includes(name) ? `/usr/bin/${name}` : null,
  });
  assertEquals(info.name, "devbox");
  assertEquals(info.build, "1.2.3");
  assertEquals([info.os, info.arch], [Deno.build.os, Deno.build.arch]);
  assertEquals(info.tools, ["git", "tmux", "claude"]);
  assertEquals(info.agents, [{ id: "claude", command: "claude" }]);
  assert(info.user, "the user is found through USER or id -un");
  assertEquals(info.home, Deno.env.get("HOME"));
  assertEquals(TOOLS.includes("cursor-agent"), true);
});

Deno.test("doctor passes on a healthy box", async () => {
  const dir = await Deno.makeTempDir();
  const socket = join(dir, "dockd.sock");
  const listener = Deno.listen({ transport: "unix", path: socket });
  try {
    await Deno.chmod(socket, 0o600);
    const checks = await doctor({
      socket,
      stateDir: dir,
      which: (name) => name === "git" ? "git" : name === "tmux" ? "/bin/true" : null,
    });
    const byName = Object.fromEntries(checks.map((c) => [c.name, c]));
    assertEquals(checks.map((c) => c.name), ["git", "tmux", "socket", "state_dir", "disk"]);
    assertEquals(byName.git.ok, true);
    assertStringIncludes(byName.git.detail, "git version");
    assertEquals(byName.socket, { name: "socket", ok: true, detail: `${socket} is mode 0600` });
    assertEquals(byName.state_dir.ok, true);
    assertStringIncludes(byName.disk.detail, "GiB free");
    // No probe file is left behind.
    assertEquals((await Array.fromAsync(Deno.readDir(dir))).map((e) => e.name), ["dockd.sock"]);
  } finally {
    listener.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("doctor names what is wrong and how to fix it", async () => {
  const dir = await Deno.makeTempDir();
  const socket = join(dir, "dockd.sock");
  await Deno.writeTextFile(socket, "");
  await Deno.chmod(socket, 0o644);
  try {
    const checks = await doctor({ socket, stateDir: join(dir, "missing"), which: () => null });
    const byName = Object.fromEntries(checks.map((c) => [c.name, c]));
    assertEquals(byName.tmux, {
      name: "tmux",
      ok: false,
      detail:
        "tmux not found on PATH; install tmux: apt-get install tmux (Debian/Ubuntu) or brew install tmux (macOS)",
    });
    assertEquals(byName.git.ok, false);
    assertStringIncludes(byName.git.detail, installHint("git"));
    assertEquals(byName.socket.ok, false);
    assertStringIncludes(byName.socket.detail, "mode 0644, should be 0600");
    assertEquals(byName.state_dir.ok, false);
    assertEquals(byName.disk.ok, false);
    const gone = await doctor({ socket: join(dir, "nope.sock"), stateDir: dir, which: () => null });
    assertStringIncludes(gone.find((c) => c.name === "socket")!.detail, "does not exist");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("doctor fails a git too old for the adapter", async () => {
  const dir = await Deno.makeTempDir();
  const fake = join(dir, "git");
  await Deno.writeTextFile(fake, "#!/bin/sh\necho 'git version 2.30.1'\n");
  await Deno.chmod(fake, 0o755);
  try {
    const checks = await doctor({ socket: fake, stateDir: dir, which: (n) => n === "git" ? fake : null });
    const git = checks.find((c) => c.name === "git")!;
    assertEquals(git.ok, false);
    assertStringIncludes(git.detail, "git 2.36 or newer is needed");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

// ---------------------------------------------------------------------------------------------------
// listFolder

/** A home with work/ holding a repository, a folder, a file, a hidden entry and links in and out. */
async function tempHome(): Promise<
  { home: string; outside: string; [Symbol.asyncDispose](): Promise<void> }
> {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "dock-fs-test-" }));
  const home = join(root, "home");
  const outside = join(root, "outside");
  await Deno.mkdir(join(home, "work", "repo", ".git"), { recursive: true });
  await Deno.mkdir(join(home, "work", "Notes"), { recursive: true });
  await Deno.mkdir(join(home, "work", "wt"), { recursive: true });
  await Deno.writeTextFile(join(home, "work", "wt", ".git"), "gitdir: ../repo/.git/worktrees/wt\n");
  await Deno.mkdir(join(home, "work", ".cache"));
  await Deno.writeTextFile(join(home, "work", "a-file.txt"), "x");
  await Deno.writeTextFile(join(home, "work", ".env"), "x");
  await Deno.mkdir(outside);
  await Deno.symlink(outside, join(home, "work", "escape"));
  await Deno.symlink(join(home, "work", "Notes"), join(home, "work", "notes-link"));
  await Deno.symlink(join(home, "nowhere"), join(home, "work", "broken"));
  return { home, outside, [Symbol.asyncDispose]: () => Deno.remove(root, { recursive: true }) };
}

Deno.test("listFolder lists ~/work by default, folders first, without hidden entries or links out", async () => {
  await using t = await tempHome();
  const listing = await listFolder({ home: t.home });
  const work = join(t.home, "work");
  assertEquals(listing.path, work);
  assertEquals(listing.parent, t.home);
  assertEquals(listing.entries, [
    { name: "Notes", path: join(work, "Notes"), dir: true, git: false },
    { name: "notes-link", path: join(work, "notes-link"), dir: true, git: false },
    { name: "repo", path: join(work, "repo"), dir: true, git: true },
    { name: "wt", path: join(work, "wt"), dir: true, git: true },
    { name: "a-file.txt", path: join(work, "a-file.txt"), dir: false, git: false },
  ]);
});

Deno.test("listFolder falls back to home without ~/work and has no parent at home", async () => {
  await using t = await tempHome();
  await Deno.rename(join(t.home, "work"), join(t.home, "projects"));
  const listing = await listFolder({ home: t.home });
  assertEquals(listing.path, t.home);
  assertEquals(listing.parent, null);
  assertEquals(listing.entries.map((e) => e.name), ["projects"]);
  assertEquals((await listFolder({ home: t.home, path: "~" })).path, t.home);
  assertEquals((await listFolder({ home: t.home, path: "~/projects" })).path, join(t.home, "projects"));
  assertEquals(
    (await listFolder({ home: t.home, path: "projects/Notes" })).path,
    join(t.home, "projects", "Notes"),
  );
});

Deno.test("listFolder refuses paths outside home, through .. or a symbolic link", async () => {
  await using t = await tempHome();
  for (
    const path of [
      "/",
      t.outside,
      join(t.home, ".."),
      join(t.home, "work", "..", "..", "outside"),
      "../outside",
    ]
  ) {
    const error = await assertRejects(() => listFolder({ home: t.home, path }), DockError) as DockError;
    assertEquals([error.code, error.status], ["outside_home", 403], path);
  }
  const viaLink = await assertRejects(
    () => listFolder({ home: t.home, path: join(t.home, "work", "escape") }),
    DockError,
  ) as DockError;
  assertEquals([viaLink.code, viaLink.status], ["outside_home", 403]);
  // Outside home, even a missing path is refused rather than reported missing.
  const missingOutside = await assertRejects(
    () => listFolder({ home: t.home, path: "/no/such/dir" }),
    DockError,
  );
  assertEquals((missingOutside as DockError).status, 403);
});

Deno.test("listFolder answers 404 for a missing folder and 400 for a file", async () => {
  await using t = await tempHome();
  const missing = await assertRejects(
    () => listFolder({ home: t.home, path: join(t.home, "work", "nope") }),
    DockError,
  ) as DockError;
  assertEquals([missing.code, missing.status], ["not_found", 404]);
  const broken = await assertRejects(
    () => listFolder({ home: t.home, path: join(t.home, "work", "broken") }),
    DockError,
  ) as DockError;
  assertEquals(broken.status, 404);
  const file = await assertRejects(
    () => listFolder({ home: t.home, path: join(t.home, "work", "a-file.txt") }),
    DockError,
  ) as DockError;
  assertEquals([file.code, file.status], ["not_a_folder", 400]);
});

Deno.test("listFolder follows a link that stays inside home and reports the real path", async () => {
  await using t = await tempHome();
  const listing = await listFolder({ home: t.home, path: join(t.home, "work", "notes-link") });
  assertEquals(listing.path, join(t.home, "work", "Notes"));
  assertEquals(listing.parent, join(t.home, "work"));
});
