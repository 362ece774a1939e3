import { DockError } from "../client/errors.ts";
import type { Session } from "../client/wire.ts";
import { Store } from "../core/store.ts";
import { assert, assertEquals, assertRejects } from "../tests/assert.ts";
import { BOX_SCHEMA } from "./schema.ts";
import { FakeClock } from "../tests/fake_clock.ts";
import { SEND_KEY_DAYS, SendLedger } from "./send_ledger.ts";

function session(name: string): Session {
  return {
    name,
    agent: "claude",
    agent_state: "running",
    state_time: null,
    reason: null,
    exited: false,
    exit_code: null,
    location: "app",
    worktree: "feat",
    path: "/srv/app-feat",
    command: "claude",
    created: "2024-01-01T00:00:00.000Z",
    from_session: null,
  };
}

async function refusal(fn: () => Promise<unknown>): Promise<DockError> {
  return await assertRejects(fn, DockError) as DockError;
}

async function ledger() {
  const dir = await Deno.makeTempDir({ prefix: "dock-ledger-" });
  const store = new Store(`${dir}/box.db`, { schema: BOX_SCHEMA });
  const clock = new FakeClock(Date.parse("2026-01-01T00:00:00Z"));
  return {
    store,
    clock,
    ledger: new SendLedger({ store, clock }),
    async [Symbol.asyncDispose]() {
      store.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

Deno.test("send ledger: a key is typed once; a repeat replays the answer, to the same session only", async () => {
  await using held = await ledger();
  let typed = 0;
  const send = (commit: () => void) => {
    commit();
    typed++;
    return Promise.resolve(session("s1"));
  };
  assert(!held.ledger.known("k1"));
  assertEquals(await held.ledger.once("k1", "s1", send), session("s1"));
  assert(held.ledger.known("k1"));
  assertEquals(await held.ledger.once("k1", "s1", send), session("s1"));
  assertEquals(typed, 1);
  const conflict = await refusal(() => held.ledger.once("k1", "s2", send));
  assertEquals([conflict.code, conflict.status], ["key_conflict", 409]);
});

Deno.test("send ledger: a repeat while the first is typing waits for its outcome", async () => {
  await using held = await ledger();
  const typing = Promise.withResolvers<Session>();
  let typed = 0;
  const send = (commit: () => void) => {
    commit();
    typed++;
    return typing.promise;
  };
  const first = held.ledger.once("k1", "s1", send);
  const repeat = held.ledger.once("k1", "s1", send);
  assert(held.ledger.known("k1"));
  typing.resolve(session("s1"));
  assertEquals(await Promise.all([first, repeat]), [session("s1"), session("s1")]);
  assertEquals(typed, 1);
});

Deno.test("send ledger: a failure after commit is replayed as the same error; one before it is not kept", async () => {
  await using held = await ledger();
  const early = () => Promise.reject(new DockError("exited", "session 's1' has exited", { status: 409 }));
  await assertRejects(() => held.ledger.once("k1", "s1", early), DockError, "has exited");
  assert(!held.ledger.known("k1"));
  const late = (commit: () => void) => {
    commit();
    return Promise.reject(new Error("tmux went away"));
  };
  const failed = await refusal(() => held.ledger.once("k2", "s1", late));
  assertEquals([failed.code, failed.status], ["send_failed", 422]);
  const replayed = await refusal(() => held.ledger.once("k2", "s1", late));
  assertEquals([replayed.code, replayed.status, replayed.message], [failed.code, 422, failed.message]);
});

Deno.test("send ledger: a key recorded but never settled (the daemon stopped typing) refuses a repeat", async () => {
  await using held = await ledger();
  const interrupted = Promise.withResolvers<Session>();
  const first = held.ledger.once("k1", "s1", (commit) => {
    commit();
    return interrupted.promise;
  });
  // A new daemon on the same database: the key is there, its outcome is not.
  const after = new SendLedger({ store: held.store, clock: held.clock });
  const refused = await refusal(() => after.once("k1", "s1", () => Promise.resolve(session("s1"))));
  assertEquals([refused.code, refused.status], ["send_interrupted", 409]);
  interrupted.resolve(session("s1"));
  await first;
});

Deno.test("send ledger: a resumable key never settled is finished by a repeat, once, and settled", async () => {
  await using held = await ledger();
  const interrupted = Promise.withResolvers<Session>();
  const first = held.ledger.once("k1", "s1", (commit) => {
    commit({ resumable: true });
    return interrupted.promise;
  });
  // A new daemon on the same database: it finishes the resumable send instead of refusing.
  const after = new SendLedger({ store: held.store, clock: held.clock });
  let resumed = 0;
  const resume = async () => {
    resumed++;
    await Promise.resolve();
    return session("s1");
  };
  const fresh = () => Promise.reject(new Error("a recorded key is never sent afresh"));
  const [one, two] = await Promise.all([
    after.once("k1", "s1", fresh, resume),
    after.once("k1", "s1", fresh, resume),
  ]);
  assertEquals([one, two, resumed], [session("s1"), session("s1"), 1]);
  assertEquals(await after.once("k1", "s1", fresh, resume), session("s1"));
  assertEquals(resumed, 1, "settled: replayed, not resumed again");
  const conflict = await refusal(() => after.once("k1", "s2", fresh, resume));
  assertEquals(conflict.code, "key_conflict");
  interrupted.resolve(session("s1"));
  await first;

  // Without a way to resume it (or for a key recorded as typing) a repeat is refused.
  const pending = held.ledger.once("k2", "s1", (commit) => {
    commit({ resumable: true });
    return Promise.withResolvers<Session>().promise;
  });
  const refused = await refusal(() =>
    new SendLedger({ store: held.store, clock: held.clock }).once("k2", "s1", fresh)
  );
  assertEquals([refused.code, refused.status], ["send_interrupted", 409]);
  void pending;
});

Deno.test("send ledger: a resume that fails is settled as that failure", async () => {
  await using held = await ledger();
  void held.ledger.once("k1", "s1", (commit) => {
    commit({ resumable: true });
    return Promise.withResolvers<Session>().promise;
  });
  const after = new SendLedger({ store: held.store, clock: held.clock });
  const gone = () => Promise.reject(new DockError("not_found", "session 's1' not found", { status: 404 }));
  const failed = await refusal(() => after.once("k1", "s1", () => Promise.resolve(session("s1")), gone));
  assertEquals([failed.code, failed.status], ["not_found", 404]);
  const replayed = await refusal(() => after.once("k1", "s1", () => Promise.resolve(session("s1"))));
  assertEquals([replayed.code, replayed.status], ["not_found", 404]);
});

Deno.test("send ledger: keys older than SEND_KEY_DAYS are forgotten at the next prune, younger ones kept", async () => {
  await using held = await ledger();
  const send = (commit: () => void) => {
    commit();
    return Promise.resolve(session("s1"));
  };
  await held.ledger.once("old", "s1", send);
  held.clock.advance(SEND_KEY_DAYS * 86_400_000 - 3_600_000);
  await held.ledger.once("recent", "s1", send);
  held.clock.advance(2 * 3_600_000); // "old" is now a week and an hour old, "recent" two hours
  // Old keys go every 200 keys recorded (not on each): record enough for one prune.
  for (let i = 0; i < 200; i++) await held.ledger.once(`k${i}`, "s1", send);
  assert(!held.ledger.known("old"), "a key older than the days kept is forgotten");
  assert(held.ledger.known("recent"), "a younger key is kept");
});
