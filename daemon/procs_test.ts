/**
 * Tests of the process table: the `/proc/<pid>/stat` parser on captured lines, the readers on this
 * process and real children, the pure port attribution, and the whole composition on real listeners.
 *
 * @module
 */
import { assert, assertEquals, assertMatch, assertThrows } from "../tests/assert.ts";
import type { Listener } from "./ports.ts";
import { readListeners } from "./ports.ts";
import {
  attributePorts,
  type AttributePortsOptions,
  commandOf,
  cwdOf,
  groupMembers,
  groupRss,
  isAlive,
  memoryPercent,
  pageSize,
  parseStat,
  portsInUse,
  type Proc,
  processes,
  readProc,
  socketOwners,
} from "./procs.ts";

const FIXTURES = new URL("../tests/fixtures/proc/", import.meta.url);

function fixture(name: string): string {
  return Deno.readTextFileSync(new URL(name, FIXTURES));
}

// Real processes change state on their own time; this waits for one to get there (bounded).
async function until<T>(what: string, probe: () => T | undefined | false): Promise<T> {
  const deadline = Date.now() + 5000;
  for (;;) {
    const value = probe();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

Deno.test("parseStat reads a plain line", () => {
  assertEquals(parseStat(fixture("stat_cat.txt")), {
    pid: 11485,
    ppid: 11462,
    pgid: 11462,
    sid: 10827,
    state: "R",
    startTime: 173048,
    rssPages: 395,
    comm: "cat",
  });
});

Deno.test("parseStat keeps spaces and parentheses in comm, reading from the last ')'", () => {
  const spaced = parseStat(fixture("stat_spaces_parens.txt"));
  assertEquals(spaced.comm, "a (b) c");
  assertEquals([spaced.pid, spaced.ppid, spaced.pgid, spaced.sid], [11470, 11469, 11462, 10827]);
  assertEquals([spaced.state, spaced.startTime, spaced.rssPages], ["S", 172947, 405]);

  const closing = parseStat(fixture("stat_close_paren.txt"));
  assertEquals(closing.comm, "x) (y");
  assertEquals([closing.pid, closing.state, closing.startTime, closing.rssPages], [11471, "S", 172947, 441]);
});

Deno.test("parseStat reads zombie and stopped processes", () => {
  const zombie = parseStat(fixture("stat_zombie.txt"));
  assertEquals([zombie.pid, zombie.ppid, zombie.state, zombie.rssPages, zombie.comm], [
    11473,
    11472,
    "Z",
    0,
    "sleep",
  ]);
  const stopped = parseStat(fixture("stat_stopped.txt"));
  assertEquals([stopped.pid, stopped.pgid, stopped.state, stopped.startTime], [11528, 11524, "T", 173476]);
});

Deno.test("parseStat rejects text that is not a stat line", () => {
  assertThrows(() => parseStat(""), SyntaxError, "Cannot parse");
  assertThrows(() => parseStat("12 sleep S 1 2 3"), SyntaxError, "no '(comm)'");
  assertThrows(() => parseStat("12 (sleep) S 1 2"), SyntaxError, "bad fields");
});

Deno.test("readProc and isAlive see this process and tell a reused pid by its start time", async () => {
  const self = readProc(Deno.pid);
  assert(self !== null);
  assertEquals(self.pid, Deno.pid);
  assert(self.rss > 0 && self.rss % pageSize() === 0);
  assert(isAlive(Deno.pid));
  assert(isAlive(Deno.pid, self.startTime));
  assert(!isAlive(Deno.pid, self.startTime + 1));

  const child = new Deno.Command("true").spawn();
  await child.status;
  assert(!isAlive(child.pid));
  assertEquals(readProc(child.pid), null);
  assertEquals(cwdOf(child.pid), null);
  assertEquals(commandOf(child.pid), null);
  assert(processes().some((proc) => proc.pid === Deno.pid));
});

Deno.test("a zombie is not alive and not a group member", async () => {
  // `sleep 0` exits under a parent that no longer waits (the shell became `sleep 30`): a zombie.
  const child = new Deno.Command("sh", { args: ["-c", "sleep 0 & exec sleep 30"], detached: true }).spawn();
  try {
    const zombie = await until(
      "the zombie",
      () => processes().find((p) => p.ppid === child.pid && p.state === "Z"),
    );
    assert(!isAlive(zombie.pid));
    assert(!isAlive(zombie.pid, zombie.startTime));
    assertEquals(groupMembers(child.pid).map((p) => p.pid), [child.pid]);
    assertEquals(commandOf(zombie.pid), "sleep"); // empty cmdline: falls back to comm
  } finally {
    Deno.kill(-child.pid, "SIGKILL");
    await child.status;
  }
});

Deno.test("groupMembers and groupRss cover a detached child's whole process group", async () => {
  const child = new Deno.Command("sh", { args: ["-c", "sleep 30 & sleep 30"], detached: true }).spawn();
  try {
    // Wait for both forks to have exec'd sleep (a fork is "sh" until then).
    const members = await until("three members", () => {
      const found = groupMembers(child.pid);
      return found.filter((p) => p.comm === "sleep").length === 2 && found;
    });
    assertEquals(members.map((p) => p.comm).sort(), ["sh", "sleep", "sleep"]);
    assert(members.every((p) => p.pgid === child.pid));
    const procs = processes();
    const rss = groupRss(child.pid, procs);
    assert(rss > 0);
    assertEquals(rss, groupMembers(child.pid, procs).reduce((sum, p) => sum + p.rss, 0));
    // Deno puts the resolved program path in argv[0].
    assertMatch(commandOf(child.pid) ?? "", /(^|\/)sh -c sleep 30 & sleep 30$/);
    assertEquals(cwdOf(child.pid), Deno.realPathSync(Deno.cwd()));
  } finally {
    Deno.kill(-child.pid, "SIGKILL");
    await child.status;
  }
  await until("the group to go", () => groupMembers(child.pid).length === 0);
  assertEquals(groupRss(child.pid), 0);
});

Deno.test("socketOwners finds a socket this process listens on", () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    const { port } = listener.addr as Deno.NetAddr;
    const socket = readListeners().find((l) => l.port === port && l.address === "127.0.0.1");
    assert(socket !== undefined);
    assertEquals(socketOwners().get(socket.inode), Deno.pid);
  } finally {
    listener.close();
  }
});

Deno.test("memoryPercent is a percentage", () => {
  const used = memoryPercent();
  assert(used > 0 && used <= 100, `used ${used}`);
});

// --- attributePorts -------------------------------------------------------------------------------

function proc(pid: number, pgid: number, comm = "node"): Proc {
  return { pid, ppid: 1, pgid, sid: pgid, state: "S", startTime: 100, rss: 4096, comm };
}

function listen(port: number, inode: number, address = "0.0.0.0", family: 4 | 6 = 4): Listener {
  return { port, address, inode, family };
}

// Processes 100 (in /w/app), 200 (in /w/app/pkg/web), 300 (in /w/app2), 400 (in /elsewhere).
function options(listeners: Listener[], extra: Partial<AttributePortsOptions> = {}): AttributePortsOptions {
  const cwds = new Map([[100, "/w/app"], [200, "/w/app/pkg/web"], [300, "/w/app2"], [400, "/elsewhere"]]);
  return {
    listeners,
    owners: new Map([[1, 100], [2, 200], [3, 300], [4, 400], [5, 100], [6, 100]]),
    procs: new Map(
      [proc(100, 100), proc(200, 150), proc(300, 300, "python3"), proc(400, 400)].map((p) => [p.pid, p]),
    ),
    cwd: (pid) => cwds.get(pid) ?? null,
    worktrees: [
      { location: "loc", name: "app", path: "/w/app", ports: [20000, 20001] },
      { location: "loc", name: "web", path: "/w/app/pkg/web/", ports: [20010] },
      { location: "loc", name: "app2", path: "/w/app2", ports: [20020] },
    ],
    ...extra,
  };
}

Deno.test("attributePorts: a port in a block is that worktree's, whoever listens", () => {
  // Process 300 works in app2, but 20001 is in app's block.
  const [use] = attributePorts(options([listen(20001, 3)]));
  assertEquals(use, {
    port: 20001,
    address: "0.0.0.0",
    family: 4,
    pid: 300,
    command: "python3",
    location: "loc",
    worktree: "app",
    service: null,
    via: "block",
  });
});

Deno.test("attributePorts: outside blocks, the deepest worktree holding the owner's cwd", () => {
  const uses = attributePorts(options([listen(3000, 2), listen(3001, 1), listen(3002, 3), listen(3003, 4)]));
  assertEquals(uses.map((u) => [u.port, u.worktree, u.via]), [
    [3000, "web", "cwd"], // /w/app/pkg/web is in app and in web: web is deeper
    [3001, "app", "cwd"], // the worktree folder itself
    [3002, "app2", "cwd"], // /w/app2 is not inside /w/app
    [3003, null, null],
  ]);
});

Deno.test("attributePorts: a socket without a known owner has no pid, command or worktree", () => {
  const [use] = attributePorts(options([listen(5432, 99)]));
  assertEquals(use, {
    port: 5432,
    address: "0.0.0.0",
    family: 4,
    pid: null,
    command: null,
    location: null,
    worktree: null,
    service: null,
    via: null,
  });
});

Deno.test("attributePorts: the service is the one whose process group holds the owner", () => {
  const services = [
    { location: "loc", worktree: "app", name: "api", pgid: 100 },
    { location: "loc", worktree: "web", name: "web", pgid: 150 },
  ];
  const uses = attributePorts(
    options([listen(3000, 2), listen(3001, 1), listen(3002, 3)], {
      services,
      command: (pid) => `cmd ${pid}`,
    }),
  );
  assertEquals(uses.map((u) => [u.port, u.service, u.command]), [
    [3000, "web", "cmd 200"], // pid 200 runs in group 150
    [3001, "api", "cmd 100"],
    [3002, null, "cmd 300"],
  ]);
});

Deno.test("attributePorts: one entry per port, the IPv4 listener shown for a dual-stack owner", () => {
  const uses = attributePorts(
    options([
      listen(8080, 5, "::", 6),
      listen(8080, 1, "0.0.0.0", 4),
      // An unreadable IPv4 socket loses to a known IPv6 owner on the same port.
      listen(9090, 98, "127.0.0.1", 4),
      listen(9090, 6, "::1", 6),
      listen(443, 4, "::", 6),
    ]),
  );
  assertEquals(uses.map((u) => [u.port, u.address, u.family, u.pid]), [
    [443, "::", 6, 400],
    [8080, "0.0.0.0", 4, 100],
    [9090, "::1", 6, 100],
  ]);
});

// --- portsInUse on real processes -----------------------------------------------------------------

Deno.test("portsInUse attributes a real server by its cwd and a real socket by its block", async () => {
  const root = await Deno.makeTempDir({ prefix: "dock_procs_test_" });
  await Deno.mkdir(`${root}/app/server`, { recursive: true });
  await Deno.mkdir(`${root}/app2`);
  const code =
    `Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: ({ port }) => console.log(port) }, () =>
    new Response("ok"));`;
  const server = new Deno.Command(Deno.execPath(), {
    args: ["eval", code],
    cwd: `${root}/app/server`,
    detached: true,
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const lines = server.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const block = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  try {
    let output = "";
    while (!output.includes("\n")) {
      const { value, done } = await lines.read();
      if (done) throw new Error("server exited before listening");
      output += value;
    }
    const serverPort = Number(output.trim());
    const blockPort = (block.addr as Deno.NetAddr).port;

    const uses = portsInUse(
      [
        { location: "loc", name: "app", path: `${root}/app`, ports: [] },
        { location: "loc", name: "app2", path: `${root}/app2`, ports: [blockPort] },
      ],
      [{ location: "loc", worktree: "app", name: "web", pgid: server.pid }],
    );
    const served = uses.find((u) => u.port === serverPort);
    assert(served !== undefined);
    assertEquals([served.pid, served.worktree, served.via, served.service], [
      server.pid,
      "app",
      "cwd",
      "web",
    ]);
    assert(served.command?.includes("eval"), `command ${served.command}`);

    const held = uses.find((u) => u.port === blockPort);
    assert(held !== undefined);
    assertEquals([held.pid, held.location, held.worktree, held.via, held.service], [
      Deno.pid,
      "loc",
      "app2",
      "block",
      null,
    ]);
    assertEquals(uses.map((u) => u.port), [...uses.map((u) => u.port)].sort((a, b) => a - b));
  } finally {
    block.close();
    await lines.cancel();
    Deno.kill(-server.pid, "SIGKILL");
    await server.status;
    await Deno.remove(root, { recursive: true });
  }
});
