/**
 * The exit watcher over a real database, with tmux replaced by a list of panes the test sets and a fake
 * clock the test moves: each poll happens when the test moves the clock by the poll interval, so how
 * long a dead pane may wait for its status, and how many failed lists make a server gone, are counted on
 * the clock, never waited for.
 */
import { EventBus } from "../core/events.ts";
import { MemoryLog } from "../core/log.ts";
import { Store } from "../core/store.ts";
import { assert, assertEquals } from "../tests/assert.ts";
import { FakeClock } from "../tests/fake_clock.ts";
import { ExitWatcher } from "./exit_watcher.ts";
import { BOX_SCHEMA } from "./schema.ts";
import type { Pane } from "./tmux.ts";

const POLL_MS = 500;

/** A pane of session `name`, alive unless `dead` says otherwise. */
function pane(name: string, dead?: { status: number | null }): Pane {
  return {
    session: name,
    pid: 1,
    dead: dead !== undefined,
    deadStatus: dead?.status ?? null,
    width: 80,
    height: 24,
    server: 7,
  };
}

/** A watcher over sessions `names`, all alive in tmux until the test says otherwise. */
async function world(names: string[]) {
  const dir = await Deno.makeTempDir({ prefix: "dock-exit-watcher-" });
  const store = new Store(`${dir}/box.db`, { schema: BOX_SCHEMA });
  for (const name of names) {
    store.run(
      `INSERT INTO sessions (name, location, worktree, path, command, agent, state_time, created)
       VALUES (?, 'app', 'main', '/srv/app', 'claude', 'claude', ?, ?)`,
      name,
      "2026-01-01T00:00:00.000Z",
      "2026-01-01T00:00:00.000Z",
    );
  }
  const clock = new FakeClock(Date.parse("2026-01-01T00:00:00Z"));
  const log = new MemoryLog();
  const bus = new EventBus(store);
  const ended: string[] = [];
  const nudged: number[] = [];
  const tmux = {
    /** What the next list of panes answers: panes, or an error (the server unreachable). */
    answer: (): Promise<Pane[]> => Promise.resolve(names.map((name) => pane(name))),
    lists: 0,
  };
  const watcher = new ExitWatcher({
    store,
    bus,
    tmux: {
      panes: () => {
        tmux.lists++;
        return tmux.answer();
      },
      nudge: (server) => void nudged.push(server),
    },
    states: { endTurn: (name, cause) => void ended.push(`${name} ${cause}`) },
    pollMs: POLL_MS,
    clock,
    log,
  });
  await watcher.start();
  return {
    store,
    clock,
    log,
    tmux,
    ended,
    nudged,
    watcher,
    /** Moves the clock by one poll interval and lets that poll finish (tmux answers at once). */
    async poll() {
      const before = tmux.lists;
      clock.advance(POLL_MS);
      assertEquals(tmux.lists, before + 1, "one poll per interval");
      await new Promise((resolve) => setTimeout(resolve, 0));
    },
    exited: (name: string) => ({
      ...store.get<{ exited: number; exit_code: number | null }>(
        "SELECT exited, exit_code FROM sessions WHERE name = ?",
        name,
      ),
    }),
    events: () =>
      bus.since(0).filter((event) => event.type === "session.exited").map((event) => ({ ...event.data })),
    async [Symbol.asyncDispose]() {
      watcher.close();
      store.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

Deno.test("exit watcher: a dead pane's status ends its session; one without a status waits 3 s of the clock", async () => {
  await using w = await world(["s1", "s2"]);
  w.tmux.answer = () => Promise.resolve([pane("s1", { status: 3 }), pane("s2")]);
  await w.poll();
  assertEquals(w.exited("s1"), { exited: 1, exit_code: 3 });
  assertEquals(w.ended, ["s1 exit"]);
  assertEquals(w.events(), [{ session: "s1", exit_code: 3 }]);

  // Dead, but tmux has no status for it yet: tmux is nudged, and the session waits for one.
  w.tmux.answer = () => Promise.resolve([pane("s1", { status: 3 }), pane("s2", { status: null })]);
  await w.poll(); // first seen dead: its wait starts now
  for (let waited = 0; waited < 3000; waited += POLL_MS) {
    assertEquals(w.exited("s2"), { exited: 0, exit_code: null }, `after ${waited} ms`);
    await w.poll();
  }
  assertEquals(w.exited("s2"), { exited: 1, exit_code: null });
  assert(w.nudged.length >= 6 && w.nudged.every((server) => server === 7), JSON.stringify(w.nudged));
  assertEquals(w.ended, ["s1 exit", "s2 exit"]);
});

Deno.test("exit watcher: what ended while no daemon watched is marked at start, with the cause restart", async () => {
  await using w = await world([]);
  w.store.run(
    `INSERT INTO sessions (name, location, worktree, path, command, agent, state_time, created)
     VALUES ('gone', 'app', 'main', '/srv/app', 'claude', 'claude', ?, ?)`,
    "2026-01-01T00:00:00.000Z",
    "2026-01-01T00:00:00.000Z",
  );
  const again = new ExitWatcher({
    store: w.store,
    bus: new EventBus(w.store),
    tmux: { panes: () => Promise.resolve([]), nudge: () => {} },
    states: { endTurn: (name, cause) => void w.ended.push(`${name} ${cause}`) },
    clock: w.clock,
    log: w.log,
  });
  await again.start();
  again.close();
  assertEquals(w.exited("gone"), { exited: 1, exit_code: null });
  assertEquals(w.ended, ["gone restart"]);
});

Deno.test("exit watcher: a tmux server unreachable for six polls in a row is gone, and the log says so", async () => {
  await using w = await world(["s1"]);
  w.tmux.answer = () => Promise.reject(new Error("no server running"));
  for (let poll = 1; poll < 6; poll++) {
    await w.poll();
    assertEquals(w.exited("s1")?.exited, 0, `after ${poll} failed lists`);
  }
  assertEquals(w.log.records, []);
  await w.poll();
  assertEquals(w.exited("s1"), { exited: 1, exit_code: null });
  assertEquals(w.log.records.map((record) => [record.level, record.message]), [
    ["error", "tmux server unreachable; its sessions count as exited: no server running"],
  ]);
});

Deno.test("exit watcher: a session tmux is making is judged only by a list begun after it was made", async () => {
  await using w = await world([]);
  w.store.run(
    `INSERT INTO sessions (name, location, worktree, path, command, agent, state_time, created)
     VALUES ('new', 'app', 'main', '/srv/app', 'claude', 'claude', ?, ?)`,
    "2026-01-01T00:00:00.000Z",
    "2026-01-01T00:00:00.000Z",
  );
  w.watcher.making("new");
  await w.poll(); // its row is there, its tmux session not yet: not judged
  assertEquals(w.exited("new")?.exited, 0);
  // A list begun before tmux made it, answered after: it cannot show the session, and says nothing.
  const held = Promise.withResolvers<Pane[]>();
  w.tmux.answer = () => held.promise;
  w.clock.advance(POLL_MS);
  w.watcher.made("new");
  held.resolve([]);
  await new Promise((resolve) => setTimeout(resolve, 0));
  assertEquals(w.exited("new")?.exited, 0);
  // A list begun after it was made and without it: its program ended.
  w.tmux.answer = () => Promise.resolve([]);
  await w.poll();
  assertEquals(w.exited("new"), { exited: 1, exit_code: null });
});
