/**
 * A worktree's setup script in process: a real store, bus and shell, the box's clock faked, so what is
 * recorded is dated by that clock and nothing waits for real time.
 */
import { assertEquals } from "../tests/assert.ts";
import { FakeClock } from "../tests/fake_clock.ts";
import { join } from "../core/posix_path.ts";
import type { DockEvent, SetupState, StreamLine, Worktree } from "../client/wire.ts";
import { EventBus } from "../core/events.ts";
import { type LogFields, MemoryLog } from "../core/log.ts";
import { Store } from "../core/store.ts";
import { BOX_SCHEMA } from "./schema.ts";
import { type ReadyStep, WorktreeSetups } from "./worktree_setup.ts";

const T0 = Date.parse("2026-03-02T10:00:00Z");

/** A MemoryLog that also says when an error was logged. */
class WaitingLog extends MemoryLog {
  readonly said = Promise.withResolvers<void>();
  override error(message: string, fields?: LogFields): void {
    super.error(message, fields);
    this.said.resolve();
  }
}

async function withSetups(
  readySteps: ReadyStep[],
  fn: (context: {
    setups: WorktreeSetups;
    worktree: Worktree;
    row: () => Record<string, unknown>;
    events: DockEvent[];
    log: WaitingLog;
    store: Store;
  }) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "dock-setup-" });
  const store = new Store(join(dir, "box.db"), { schema: BOX_SCHEMA });
  try {
    const path = join(dir, "feat");
    await Deno.mkdir(path);
    store.run("INSERT INTO locations (name, path, created) VALUES ('app', ?, '')", join(dir, "app"));
    store.run(
      `INSERT INTO worktrees (location, name, path, main, origin, setup_state, created)
       VALUES ('app', 'feat', ?, 0, 'dock', 'pending', '')`,
      path,
    );
    const bus = new EventBus(store);
    const events: DockEvent[] = [];
    bus.subscribe((event) => void events.push(event));
    const row = () => store.get<Record<string, unknown>>("SELECT * FROM worktrees WHERE name = 'feat'")!;
    const current = (): Worktree => ({
      name: "feat",
      location: "app",
      path,
      branch: null,
      main: false,
      origin: "dock",
      ports: [],
      setup: {
        state: row().setup_state as SetupState,
        ...(row().setup_exit === null ? {} : { exit_code: row().setup_exit as number }),
      },
      created: "",
    });
    const log = new WaitingLog();
    const setups = new WorktreeSetups({
      store,
      bus,
      paths: { logs: join(dir, "logs") },
      environment: () => Promise.resolve({ env: { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin" } }),
      current,
      readySteps,
      clock: new FakeClock(T0),
      log,
    });
    await fn({ setups, worktree: current(), row, events, log, store });
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
}

async function lines(setups: WorktreeSetups, worktree: Worktree): Promise<StreamLine[]> {
  const out: StreamLine[] = [];
  for await (const line of setups.log(worktree)) out.push(line);
  return out;
}

Deno.test("setup: dated by the box's clock, announced and logged; then every ready step runs, a throwing one logged", async () => {
  const ready = Promise.withResolvers<Worktree>();
  const steps: ReadyStep[] = [
    () => {
      throw new Error("autostart broke"); // at once, not a rejection
    },
    (worktree) => ready.resolve(worktree),
  ];
  await withSetups(steps, async ({ setups, worktree, row, events, log }) => {
    setups.start(worktree, "echo hello; echo world");
    await setups.settled();
    const at = new Date(T0).toISOString();
    const { setup_state, setup_exit, setup_started, setup_finished, setup_error } = row();
    assertEquals(
      { setup_state, setup_exit, setup_started, setup_finished, setup_error },
      { setup_state: "succeeded", setup_exit: 0, setup_started: at, setup_finished: at, setup_error: null },
    );
    assertEquals(events.map((e) => e.type), ["worktree.setup.started", "worktree.setup.finished"]);
    // The script runs in a login shell: what the user's profile prints comes first.
    assertEquals((await lines(setups, worktree)).slice(-3), [
      { line: "hello" },
      { line: "world" },
      { done: true, exit_code: 0 },
    ]);
    assertEquals((await ready.promise).name, "feat", "the step after the throwing one still ran");
    await log.said.promise;
    assertEquals(log.records.map((r) => r.message), ["after setup of feat: autostart broke"]);
  });
});

Deno.test("setup: a failing script is recorded failed with its exit code, and nothing is ready", async () => {
  let readied = 0;
  await withSetups([() => void readied++], async ({ setups, worktree, row, events }) => {
    setups.start(worktree, "echo oops >&2; exit 3");
    await setups.settled();
    assertEquals([row().setup_state, row().setup_exit], ["failed", 3]);
    assertEquals(events.map((e) => e.type), ["worktree.setup.started", "worktree.setup.failed"]);
    assertEquals(events[1].data, { location: "app", worktree: "feat", exit_code: 3, timed_out: false });
    assertEquals(readied, 0);
  });
});

Deno.test("setup: one a previous daemon left pending is failed at start, dated by the box's clock", async () => {
  await withSetups([], ({ setups, row }) => {
    setups.recoverInterrupted();
    const { setup_state, setup_finished, setup_error } = row();
    assertEquals(
      { setup_state, setup_finished, setup_error },
      {
        setup_state: "failed",
        setup_finished: new Date(T0).toISOString(),
        setup_error: "interrupted by a daemon restart",
      },
    );
    return Promise.resolve();
  });
});
