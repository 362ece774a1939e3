/**
 * The supervised lifecycle's conformance (supervised.ts `SUPERVISED_LIFECYCLE`): every change the table
 * allows is taken by the real supervisor with real processes, and nothing else is. Rows a daemon killed
 * with -9 would leave behind (a stop cut off mid-way, a child that died before adoption) are written into
 * the store as such a daemon leaves them; every change is then made by the supervisor. Its clock is a
 * fake one the test moves: a backoff passes when the test says so, and each wait is on the change it
 * waits for (the supervisor's trace), never a poll.
 */
import { assert, assertEquals } from "../tests/assert.ts";
import { FakeClock } from "../tests/fake_clock.ts";
import { MemoryLog } from "../core/log.ts";
import { join } from "../core/posix_path.ts";
import { Store } from "../core/store.ts";
import { events, transition, transitions } from "../core/transition.ts";
import type { ServiceState } from "../client/wire.ts";
import { BOX_SCHEMA } from "./schema.ts";
import { SUPERVISED_LIFECYCLE, type SupervisedEvent, type SupervisedScope } from "./supervised.ts";
import { Supervisor, type SupervisorOptions } from "./supervisor.ts";

const STATES: ServiceState[] = ["stopped", "running", "stopping", "crashed", "failed"];

/** A dead process's pid: what a row holds when its child died while no daemon watched. */
async function deadPid(): Promise<number> {
  const child = new Deno.Command("true").spawn();
  await child.status;
  return child.pid;
}

Deno.test("supervised lifecycle: every allowed change is taken by the real supervisor; nothing else is", async () => {
  const dir = await Deno.makeTempDir({ prefix: "dock-supervisor-test-" });
  const store = new Store(join(dir, "box.db"), { schema: BOX_SCHEMA });
  const seen = new Set<string>();
  const log = new MemoryLog();
  const said = () => log.records.map((record) => record.message);
  const clock = new FakeClock(Date.parse("2026-01-01T00:00:00Z"));
  /** Who waits for which child to reach which state. */
  const waiters = new Set<{ key: string; to: ServiceState; resolve: () => void }>();
  /** Resolves when `name` next changes to `to` (its row is written in the same step as the trace). */
  const next = (name: string, to: ServiceState) => {
    const { promise, resolve } = Promise.withResolvers<void>();
    waiters.add({ key: `//${name}`, to, resolve });
    return promise;
  };
  const published: string[] = [];
  let brokenCalls = 0;
  const commands: Record<string, () => string> = {
    long: () => "exec sleep 1000",
    crashy: () => "exit 3",
    broken: () => {
      if (++brokenCalls > 1) throw new Error("its command is gone");
      return "exit 3";
    },
    ghost: () => "exec sleep 1000",
    halted: () => "exec sleep 1000",
    halted2: () => "exec sleep 1000",
    odd: () => "exec sleep 1000",
    once: () => "exit 0",
  };
  const ended: string[] = [];
  const endedOnce = Promise.withResolvers<void>();
  const scope = (overrides: Partial<SupervisedScope> = {}): SupervisedScope => ({
    table: "units",
    noun: "unit",
    describe: (_l, _w, name) => ({ unit: name }),
    place: () => ({ path: dir }),
    environment: (_l, _w, _n, mark) =>
      Promise.resolve({ PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", HOME: dir, DOCK_SERVICE: mark }),
    command: (_l, _w, name) => Promise.resolve().then(() => commands[name]()),
    logFile: (_l, _w, name) => join(dir, "logs", `${name}.log`),
    ...overrides,
  });
  const supervisor = (options: Partial<SupervisorOptions> = {}) =>
    new Supervisor({
      store,
      bus: {
        publish: (event) => {
          published.push(event.type);
          return { ...event, time: new Date().toISOString() };
        },
      },
      paths: { state: dir },
      scope: scope(),
      backoffMs: 20,
      maxBackoffMs: 20,
      stableMs: 60_000,
      maxCrashes: 2,
      stopTimeoutMs: 2000,
      pollMs: 50,
      clock,
      log,
      trace: ({ key, from, event, to }) => {
        seen.add(`${from} ${event} ${to}`);
        for (const waiter of [...waiters]) {
          if (waiter.key === key && waiter.to === to) {
            waiters.delete(waiter);
            waiter.resolve();
          }
        }
      },
      ...options,
    });
  const main = supervisor();
  const patient = supervisor({ backoffMs: 60_000, maxBackoffMs: 60_000 });
  const tunnels = supervisor({
    scope: scope({
      table: "tunnels",
      noun: "tunnel",
      restart: "never",
      events: false,
      ended: (_l, _w, name, whileDown) => {
        ended.push(`${name} ${whileDown}`);
        endedOnce.resolve();
        return Promise.resolve();
      },
    }),
  });
  const state = (name: string, table = "units") =>
    store.get<{ state: ServiceState }>(`SELECT state FROM ${table} WHERE name = ?`, name)?.state;
  /** Starts `name` on `main`, which crashes it, restarts it after each backoff, then marks it failed. */
  const crashUntilFailed = async (name: string) => {
    const failed = next(name, "failed");
    let crashed = next(name, "crashed");
    await main.start("", "", name, "test");
    for (let crash = 1; crash <= 2; crash++) {
      await crashed; // its restart waits out the backoff on the clock
      crashed = next(name, "crashed");
      clock.advance(20);
    }
    await failed;
    assertEquals(state(name), "failed");
  };
  // Children are unref'd (they must not keep dockd alive); the daemon's listener keeps its loop alive, here this.
  const alive = setInterval(() => {}, 1000);
  try {
    // stopped → running → stopping → stopped, and a stop of what is stopped.
    const long = await main.start("", "", "long", "test");
    assertEquals(long.state, "running");
    await main.stop("", "", "long", "test");
    assertEquals(state("long"), "stopped");
    await main.stop("", "", "long", "test");
    assertEquals(state("long"), "stopped");

    // A child that keeps crashing: crashed, restarted, crashed, restarted, failed; started again; stopped.
    await crashUntilFailed("crashy");
    await crashUntilFailed("crashy");
    await main.stop("", "", "crashy", "test");
    assertEquals(state("crashy"), "stopped");

    // Crashed and waiting out its backoff when stopped.
    const waiting = next("broken", "crashed");
    await patient.start("", "", "broken", "test");
    await waiting;
    assertEquals(state("broken"), "crashed");
    await patient.stop("", "", "broken", "test");
    assertEquals(state("broken"), "stopped");
    // A restart that cannot even launch: crashed → failed.
    brokenCalls = 0;
    const crashed = next("broken", "crashed");
    const failed = next("broken", "failed");
    await main.start("", "", "broken", "test");
    await crashed;
    clock.advance(20);
    await failed;
    assertEquals(state("broken"), "failed");

    // The `never` policy: an end leaves it stopped and tells its scope.
    await tunnels.start("", "", "once", "test");
    await endedOnce.promise;
    assertEquals(state("once", "tunnels"), "stopped");
    assertEquals(ended, ["once false"]);

    // Left behind by a daemon killed with -9: a child that died unwatched, and stops cut off mid-way.
    const insert = (name: string, desired: string, rowState: ServiceState, pid: number | null) =>
      store.run(
        "INSERT INTO units (location, worktree, name, desired, state, pid) VALUES ('', '', ?, ?, ?, ?)",
        name,
        desired,
        rowState,
        pid,
      );
    insert("ghost", "running", "running", await deadPid());
    assertEquals((await main.start("", "", "ghost", "test")).state, "running");
    insert("halted", "stopped", "stopping", null);
    assertEquals((await main.start("", "", "halted", "test")).state, "running");
    insert("halted2", "stopped", "stopping", null);
    await main.stop("", "", "halted2", "test");
    assertEquals(state("halted2"), "stopped");

    // A row no allowed change fits (stopped, yet wanted running with a dead pid): refused and logged.
    insert("odd", "running", "stopped", await deadPid());
    const before = said().length;
    await main.adopt();
    assertEquals(state("odd"), "stopped");
    assert(
      said().slice(before).includes("unit //odd: 'crash' refused in state 'stopped'"),
      JSON.stringify(said()),
    );

    // Every allowed change was taken.
    assertEquals([...seen].sort(), transitions(SUPERVISED_LIFECYCLE).map((t) => t.join(" ")).sort());
    assert(published.includes("unit.crashed") && published.includes("unit.failed"));
    assert(!published.some((type) => type.startsWith("tunnel.")), "the tunnels' scope publishes nothing");
  } finally {
    for (const name of ["long", "ghost", "halted"]) await main.stop("", "", name, "test").catch(() => {});
    main.close();
    patient.close();
    tunnels.close();
    clearInterval(alive);
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("supervised lifecycle: every change the table does not name is refused and said", () => {
  for (const from of STATES) {
    for (const event of events(SUPERVISED_LIFECYCLE) as SupervisedEvent[]) {
      const said: string[] = [];
      const to = transition(SUPERVISED_LIFECYCLE, from, event, { log: (m) => said.push(m) });
      const allowed = transitions(SUPERVISED_LIFECYCLE).some(([a, e]) => a === from && e === event);
      assertEquals(to !== null, allowed, `${from} ${event}`);
      assertEquals(said.length, allowed ? 0 : 1, `${from} ${event}`);
    }
  }
});
