/**
 * Sessions.send's `unlessWaiting` and its serial lane, over a real database, agent state and send
 * ledger with tmux replaced by a recorder whose paste can be held: the permission check is made after
 * the typing of every send before it (a prompt raised meanwhile is seen), and sends to one session never
 * interleave. On a fake clock: `wait`'s timeout passes when the test moves it.
 */
import { DockError } from "../client/errors.ts";
import type { WaitResult } from "../client/wire.ts";
import { EventBus } from "../core/events.ts";
import { Store } from "../core/store.ts";
import { assertEquals, assertRejects } from "../tests/assert.ts";
import { FakeClock } from "../tests/fake_clock.ts";
import { AgentStates } from "./agent_state.ts";
import { BOX_SCHEMA } from "./schema.ts";
import { SendLedger } from "./send_ledger.ts";
import { Sessions, type SessionsOptions } from "./sessions.ts";

const CREATED = "2024-01-01T00:00:00.000Z";

/** Sessions over a fresh database with agent session `s1` at rest, and a tmux that records each step. */
async function world() {
  const dir = await Deno.makeTempDir({ prefix: "dock-sessions-" });
  const store = new Store(`${dir}/box.db`, { schema: BOX_SCHEMA });
  // Reported since it started (state_time after created): a send does not wait for it to be ready.
  store.run(
    `INSERT INTO sessions (name, location, worktree, path, command, agent, state_time, created)
     VALUES ('s1', 'app', 'main', '/srv/app', 'claude', 'claude', ?, ?)`,
    "2024-01-01T00:00:01.000Z",
    CREATED,
  );
  const bus = new EventBus(store);
  // Time moves only when the test moves it: the order of a send's turn and a report is the test's.
  const clock = new FakeClock(Date.parse("2024-01-01T00:01:00Z"));
  const states = new AgentStates({ store, bus, clock });
  const steps: string[] = [];
  /** Pastes of these texts wait for their resolver. */
  const held = new Map<string, PromiseWithResolvers<void>>();
  const pasting = new Map<string, PromiseWithResolvers<void>>();
  const tmux = {
    async paste(_name: string, text: string, enter: boolean) {
      steps.push(`paste ${text}`);
      pasting.get(text)?.resolve();
      await held.get(text)?.promise;
      if (enter) steps.push(`enter ${text}`);
    },
  };
  const sessions = new Sessions({
    store,
    bus,
    tmux: tmux as unknown as SessionsOptions["tmux"],
    locations: {} as SessionsOptions["locations"],
    worktrees: {} as SessionsOptions["worktrees"],
    states,
    exits: { making() {}, made() {}, abandoned() {}, onChange: () => () => {} },
    ledger: new SendLedger({ store, clock }),
    dir: `${dir}/sessions`,
    clock,
  });
  return {
    sessions,
    clock,
    states,
    steps,
    /** Holds the paste of `text` until the answer's `release`; `started` resolves when it begins. */
    hold(text: string) {
      const gate = Promise.withResolvers<void>();
      const started = Promise.withResolvers<void>();
      held.set(text, gate);
      pasting.set(text, started);
      return { started: started.promise, release: () => gate.resolve() };
    },
    async [Symbol.asyncDispose]() {
      sessions.close();
      store.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

Deno.test("send unlessWaiting: refused while the agent waits on a permission prompt, typed otherwise", async () => {
  await using w = await world();
  await w.sessions.send("s1", "first", true, "test", { unlessWaiting: "permission" });
  w.states.set("s1", "waiting", { cause: "hook:Notification", reason: "permission" });
  const refused = await assertRejects(
    () => w.sessions.send("s1", "y", true, "test", { unlessWaiting: "permission" }),
    DockError,
    "waits on a permission prompt",
  ) as DockError;
  assertEquals([refused.code, refused.status], ["permission_prompt", 409]);
  // Keyed the same: refused before the key is recorded, so the key types it once the prompt is answered.
  await assertRejects(
    () => w.sessions.send("s1", "keyed", true, "test", { unlessWaiting: "permission", key: "k" }),
    DockError,
    "permission prompt",
  );
  // Another reason to wait is not a permission prompt: typed.
  w.states.set("s1", "waiting", { cause: "hook:Notification", reason: "question" });
  await w.sessions.send("s1", "an answer", true, "test", { unlessWaiting: "permission" });
  assertEquals(w.steps, ["paste first", "enter first", "paste an answer", "enter an answer"]);
});

Deno.test("send unlessWaiting: checked after the typing of the sends before it, never between", async () => {
  await using w = await world();
  const first = w.hold("ASK-PERMISSION");
  const asking = w.sessions.send("s1", "ASK-PERMISSION", true, "test");
  await first.started;
  // A send arrives while the first is being typed; the agent raises its prompt before that typing ends.
  const answer = w.sessions.send("s1", "y", true, "test", { unlessWaiting: "permission" });
  const second = w.sessions.send("s1", "plain", true, "test");
  // Reported after the first send's own time (times are to the millisecond; a report dated before it would
  // be dropped as older than the turn the send started: seen on a loaded machine when dated from before
  // the send was asked for).
  w.clock.advance(1);
  w.states.set("s1", "waiting", { cause: "hook:Notification", reason: "permission" });
  first.release();
  await asking;
  await assertRejects(() => answer, DockError, "permission prompt");
  await second;
  // One send at a time, whole, in order: the refused one typed nothing.
  assertEquals(w.steps, ["paste ASK-PERMISSION", "enter ASK-PERMISSION", "paste plain", "enter plain"]);
});

Deno.test("wait: times out after timeoutMs of the clock, not before; a change of state wakes it at once", async () => {
  await using w = await world();
  let settled: WaitResult | undefined;
  const waiting = w.sessions.wait("s1", { states: ["finished"], timeoutMs: 5000 }).then((r) => settled = r);
  w.clock.advance(4999);
  await new Promise((resolve) => setTimeout(resolve, 0)); // whatever the wait does now, it has done
  assertEquals(settled, undefined, "still waiting a millisecond before its time");
  w.clock.advance(1);
  assertEquals(await waiting, { state: "idle", timed_out: true, exited: false });
  // A report wakes a wait while the clock stands still.
  const woken = w.sessions.wait("s1", { states: ["finished"], timeoutMs: 60_000 });
  w.states.set("s1", "finished", { cause: "hook:Stop" });
  assertEquals(await woken, { state: "finished", timed_out: false, exited: false });
});
