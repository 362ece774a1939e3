/**
 * Tests of port blocks: the /proc parser on captured text, the pure block search, and the allocator on
 * a real SQLite file (reopened to check stability) and real listening sockets.
 *
 * @module
 */
import { DockError } from "../client/errors.ts";
import { assert, assertEquals, assertThrows } from "../tests/assert.ts";
import {
  canBind,
  findBlock,
  type Listener,
  listeningPorts,
  parseProcNetTcp,
  PortAllocator,
  readListeners,
} from "./ports.ts";
import { Store } from "../core/store.ts";
import { BOX_SCHEMA } from "./schema.ts";
import { until } from "../tests/wait.ts";

const FIXTURES = new URL("../tests/fixtures/", import.meta.url);

function fixture(name: string): string {
  return Deno.readTextFileSync(new URL(name, FIXTURES));
}

// A store in a temp dir with one location; `worktrees` names rows to create in it.
async function tempStore(worktrees: string[] = []): Promise<{ path: string; dir: string; store: Store }> {
  const dir = await Deno.makeTempDir({ prefix: "dock_ports_test_" });
  const path = `${dir}/box.db`;
  const store = new Store(path, { schema: BOX_SCHEMA });
  store.run("INSERT INTO locations (name, path, created) VALUES ('loc', '/repo', '2024-01-01T00:00:00Z')");
  for (const name of worktrees) addWorktree(store, name);
  return { path, dir, store };
}

function addWorktree(store: Store, name: string): void {
  store.run(
    "INSERT INTO worktrees (location, name, path, origin, created) VALUES ('loc', ?, ?, 'dock', ?)",
    name,
    `/repo/.worktrees/${name}`,
    "2024-01-01T00:00:00Z",
  );
}

function nothingListens(): Set<number> {
  return new Set();
}

Deno.test("parseProcNetTcp reads only LISTEN rows of a captured /proc/net/tcp", () => {
  const listeners = parseProcNetTcp(fixture("proc_net_tcp.txt"), 4);
  assertEquals(
    listeners,
    [
      { port: 2024, address: "0.0.0.0", inode: 552, family: 4 },
      { port: 24570, address: "0.0.0.0", inode: 6160, family: 4 },
      { port: 24567, address: "127.0.0.1", inode: 6159, family: 4 },
    ] satisfies Listener[],
  );
});

Deno.test("parseProcNetTcp decodes IPv6 addresses of a captured /proc/net/tcp6", () => {
  const listeners = parseProcNetTcp(fixture("proc_net_tcp6.txt"), 6);
  assertEquals(
    listeners,
    [
      { port: 24568, address: "::", inode: 6161, family: 6 },
      { port: 24569, address: "::1", inode: 6162, family: 6 },
    ] satisfies Listener[],
  );
});

Deno.test("parseProcNetTcp handles mapped and full IPv6 addresses, and ignores junk", () => {
  const header = "  sl  local_address                         remote_address                        st";
  const row = (address: string, state: string, inode: number) =>
    `   0: ${address}:1F90 00000000000000000000000000000000:0000 ${state} 00000000:00000000 00:00000000 ` +
    `00000000  1000        0 ${inode} 1 0000000000000000 100 0 0 10 0`;
  const text = [
    header,
    row("0000000000000000FFFF00000100007F", "0A", 1),
    row("B80D0120000000000000000001000000", "0A", 2),
    row("00000000000000000000000001000000", "01", 3),
    "garbage line",
    "",
  ].join("\n");
  assertEquals(parseProcNetTcp(text, 6), [
    { port: 8080, address: "::ffff:127.0.0.1", inode: 1, family: 6 },
    { port: 8080, address: "2001:db8::1", inode: 2, family: 6 },
  ]);
  assertEquals(parseProcNetTcp("", 4), []);
});

Deno.test("findBlock returns the lowest free block, skipping taken and busy ports", () => {
  const none = new Set<number>();
  assertEquals(findBlock({ range: [100, 200], count: 3, taken: none, busy: none }), [100, 101, 102]);
  assertEquals(
    findBlock({ range: [100, 200], count: 3, taken: new Set([100]), busy: new Set([103]) }),
    [104, 105, 106],
  );
  // A single free port between two used ones is not enough for a block of two.
  assertEquals(
    findBlock({ range: [100, 200], count: 2, taken: new Set([100, 102]), busy: none }),
    [103, 104],
  );
});

Deno.test("findBlock uses the range end inclusively and returns null when nothing fits", () => {
  const none = new Set<number>();
  assertEquals(findBlock({ range: [100, 104], count: 2, taken: new Set([100, 101, 102]), busy: none }), [
    103,
    104,
  ]);
  assertEquals(findBlock({ range: [100, 104], count: 5, taken: none, busy: none }), [
    100,
    101,
    102,
    103,
    104,
  ]);
  assertEquals(findBlock({ range: [100, 104], count: 6, taken: none, busy: none }), null);
  assertEquals(findBlock({ range: [100, 104], count: 2, taken: new Set([101]), busy: new Set([103]) }), null);
  assertEquals(findBlock({ range: [100, 100], count: 1, taken: none, busy: none }), [100]);
});

Deno.test("findBlock clamps count to at least 1", () => {
  const none = new Set<number>();
  assertEquals(findBlock({ range: [100, 104], count: 0, taken: new Set([100]), busy: none }), [101]);
  assertEquals(findBlock({ range: [100, 104], count: -3, taken: none, busy: none }), [100]);
});

Deno.test("PortAllocator gives 20 worktrees disjoint blocks that survive a reopen", async () => {
  const names = Array.from({ length: 20 }, (_, i) => `wt${i}`);
  const { path, dir, store } = await tempStore(names);
  try {
    const busy = new Set([20004, 20031]);
    const allocator = new PortAllocator(store, { listening: () => busy });
    const blocks = new Map<string, number[]>();
    for (const name of names) blocks.set(name, allocator.allocate("loc", name, 3));

    const every = [...blocks.values()].flat();
    assertEquals(new Set(every).size, 60, "blocks overlap");
    for (const block of blocks.values()) {
      assertEquals(block.length, 3);
      assertEquals(block[2] - block[0], 2, "block is not contiguous");
      assert(block.every((port) => port >= 20000 && port <= 29999 && !busy.has(port)));
    }
    assertEquals(blocks.get("wt0"), [20000, 20001, 20002]);
    assertEquals(blocks.get("wt1"), [20005, 20006, 20007], "skips the busy 20004");
    assertEquals(allocator.all().length, 60);
    assertEquals(allocator.all().filter((row) => row.worktree === "wt1").map((row) => row.idx), [0, 1, 2]);

    // Idempotent: asking again changes nothing, even if the block's own ports are now listened on.
    busy.add(20000);
    assertEquals(allocator.allocate("loc", "wt0", 3), [20000, 20001, 20002]);

    store.close();
    const reopened = new Store(path, { schema: BOX_SCHEMA });
    try {
      const again = new PortAllocator(reopened, { listening: nothingListens });
      for (const name of names) {
        assertEquals(again.portsOf("loc", name), blocks.get(name));
        assertEquals(again.allocate("loc", name, 3), blocks.get(name));
      }
    } finally {
      reopened.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("PortAllocator release frees the block for the next worktree", async () => {
  const { dir, store } = await tempStore(["a", "b", "c", "d"]);
  try {
    const allocator = new PortAllocator(store, { range: [30000, 30099], listening: nothingListens });
    assertEquals(allocator.allocate("loc", "a", 2), [30000, 30001]);
    assertEquals(allocator.allocate("loc", "b", 2), [30002, 30003]);
    allocator.release("loc", "a");
    assertEquals(allocator.portsOf("loc", "a"), []);
    assertEquals(allocator.allocate("loc", "c", 2), [30000, 30001]);

    // Removing the worktree row frees its block too (ON DELETE CASCADE).
    store.run("DELETE FROM worktrees WHERE location = 'loc' AND name = 'b'");
    assertEquals(allocator.allocate("loc", "d", 2), [30002, 30003]);
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("PortAllocator resizes a block keeping its first ports when possible", async () => {
  const { dir, store } = await tempStore(["a", "b"]);
  try {
    const allocator = new PortAllocator(store, { range: [30000, 30099], listening: nothingListens });
    assertEquals(allocator.allocate("loc", "a", 3), [30000, 30001, 30002]);
    assertEquals(allocator.allocate("loc", "a", 1), [30000], "shrinking drops the tail");
    assertEquals(allocator.allocate("loc", "a", 4), [30000, 30001, 30002, 30003], "grows in place");
    assertEquals(allocator.allocate("loc", "b", 1), [30004]);
    // 30004 is b's now: a cannot grow in place, so it moves to the lowest block of five.
    assertEquals(allocator.allocate("loc", "a", 5), [30005, 30006, 30007, 30008, 30009]);
    assertEquals(allocator.all().filter((row) => row.worktree === "a").map((row) => row.idx), [
      0,
      1,
      2,
      3,
      4,
    ]);
    // Counts clamp to 1..10.
    assertEquals(allocator.allocate("loc", "b", 0), [30004]);
    assertEquals(allocator.allocate("loc", "b", 50).length, 10);
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("PortAllocator throws ports_exhausted (409) and keeps the old block", async () => {
  const { dir, store } = await tempStore(["a", "b"]);
  try {
    const allocator = new PortAllocator(store, { range: [30000, 30003], listening: nothingListens });
    assertEquals(allocator.allocate("loc", "a", 3), [30000, 30001, 30002]);
    const error = assertThrows(() => allocator.allocate("loc", "b", 2), DockError, "no free block");
    assert(error instanceof DockError);
    assertEquals([error.code, error.status], ["ports_exhausted", 409]);
    assertEquals(allocator.portsOf("loc", "b"), []);

    assertThrows(() => allocator.allocate("loc", "a", 5), DockError, "30000-30003");
    assertEquals(allocator.portsOf("loc", "a"), [30000, 30001, 30002], "rolled back");
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("PortAllocator refuses a worktree the store does not know", async () => {
  const { dir, store } = await tempStore();
  try {
    const allocator = new PortAllocator(store, { listening: nothingListens });
    const error = assertThrows(() => allocator.allocate("loc", "ghost", 1), DockError, "ghost");
    assertEquals((error as DockError).status, 404);
    assertThrows(() => new PortAllocator(store, { range: [30010, 30000] }), RangeError, "'range'");
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("PortAllocator falls back to the bind probe when the kernel table is empty", async () => {
  const { dir, store } = await tempStore(["a"]);
  try {
    const refused = new Set([30000, 30002]);
    const allocator = new PortAllocator(store, {
      range: [30000, 30099],
      listening: nothingListens,
      probe: (port) => !refused.has(port),
    });
    assertEquals(allocator.allocate("loc", "a", 2), [30003, 30004]);
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test({
  name: "readListeners and the allocator see a real listening socket",
  ignore: Deno.build.os !== "linux",
  fn: async () => {
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (listener.addr as Deno.NetAddr).port;
    let inode = 0;
    const { dir, store } = await tempStore(["a"]);
    try {
      const seen = readListeners().filter((entry) => entry.port === port);
      assertEquals(seen.map(({ address, family }) => ({ address, family })), [
        { address: "127.0.0.1", family: 4 },
      ]);
      assert(seen[0].inode > 0);
      inode = seen[0].inode;
      assert(listeningPorts().has(port));
      assertEquals(canBind(port), false);

      // The range starts at the listened-on port, so the block must start after it.
      const allocator = new PortAllocator(store, { range: [port, Math.min(port + 20, 65535)] });
      const block = allocator.allocate("loc", "a", 2);
      assert(!block.includes(port), `block ${block} includes the listened-on port ${port}`);
      assert(block[0] > port);
    } finally {
      listener.close();
      store.close();
      await Deno.remove(dir, { recursive: true });
    }
    // The socket itself goes (the port may already be another test's: tests run in parallel). Once every
    // copy of its descriptor is closed: a child another test's worker forks meanwhile holds one until it
    // execs (seen on a loaded machine), so this waits for that, bounded.
    await until(() =>
      Promise.resolve(!readListeners().some((entry) => entry.port === port && entry.inode === inode))
    );
  },
});
