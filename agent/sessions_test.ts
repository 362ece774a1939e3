import type { BoxSessions, BoxStatus, DockEvent } from "../client/wire.ts";
import { assert, assertEquals } from "../tests/assert.ts";
import { FakeClock } from "../tests/fake_clock.ts";
import { MAX_AGE_MS, READ_MS, READS_AT_ONCE, SessionIndex } from "./sessions.ts";

/** A box as the index sees it: its status, and what its `GET sessions` answers. */
interface FakeBox {
  status: BoxStatus;
  sessions: string[];
  /** Set: the read fails with it. */
  fails?: string;
  /** Set: the read answers this text as it is. */
  raw?: string;
  /** Set: the read waits for this before answering (what the box held when it was asked). */
  hold?: Promise<void>;
}

function boxStatus(name: string, online = true): BoxStatus {
  return {
    name,
    kind: "tls",
    transport: "tls",
    address: `https://127.0.0.1:1/${name}`,
    online,
    since: null,
    error: null,
    latency_ms: null,
    build: null,
    behind: false,
  };
}

function session(name: string) {
  return { name, agent: null, agent_state: "idle", exited: false };
}

/** An index over fake boxes, the reads each box answered, and a way to publish events to it. */
function harness(names: string[]) {
  const clock = new FakeClock(Date.parse("2026-11-26T12:00:00Z"));
  const boxes = new Map<string, FakeBox>(
    names.map((name) => [name, { status: boxStatus(name), sessions: [`${name}-1`] }]),
  );
  const reads: string[] = [];
  let running = 0, mostAtOnce = 0;
  const listeners = new Set<(event: DockEvent) => void>();
  const index = new SessionIndex({
    boxes: {
      status: () =>
        [...boxes.values()].map(({ status }) => ({
          name: status.name,
          online: status.online,
          json: JSON.stringify(status),
        })),
      read: async (name, { signal }) => {
        const box = boxes.get(name)!;
        const asked = box.sessions.slice();
        reads.push(name);
        running++;
        mostAtOnce = Math.max(mostAtOnce, running);
        try {
          await Promise.resolve();
          if (box.hold) {
            await Promise.race([
              box.hold,
              new Promise((_, reject) => signal.addEventListener("abort", () => reject(signal.reason))),
            ]);
          }
          if (box.fails) throw new Error(box.fails);
          return box.raw ?? JSON.stringify(asked.map(session));
        } finally {
          running--;
        }
      },
    },
    subscribe: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    clock,
  });
  let id = 0;
  const publish = (event: Partial<DockEvent> & { type: string }) => {
    for (const listener of listeners) {
      listener({ id: ++id, origin: "dock", time: new Date(clock.now()).toISOString(), data: {}, ...event });
    }
  };
  const read = async (box?: string): Promise<BoxSessions[]> => JSON.parse(await index.json(box));
  /** Asks `ask` again, a turn of the event loop apart, until `done` holds (reads behind an answer). */
  const poll = async <T>(ask: () => Promise<T>, done: (answer: T) => boolean): Promise<T> => {
    for (let turn = 0;; turn++) {
      const answer = await ask();
      if (done(answer) || turn >= 100) return answer;
      await new Promise((resolve) => setTimeout(resolve, 0));
    }
  };
  const names_ = (answer: BoxSessions[]) =>
    Object.fromEntries(answer.map((entry) => [entry.box.name, entry.sessions.map((s) => s.name)]));
  return { index, clock, boxes, reads, publish, read, poll, names: names_, mostAtOnce: () => mostAtOnce };
}

Deno.test("session index: each box read once, then again only after an event that changes its sessions", async () => {
  const t = harness(["a", "b", "c"]);
  assertEquals(t.names(await t.read()), { a: ["a-1"], b: ["b-1"], c: ["c-1"] });
  assertEquals(t.reads.sort(), ["a", "b", "c"]);
  t.reads.length = 0;
  // Kept: nothing changed.
  const again = await t.read();
  assertEquals(t.reads, []);
  assertEquals(again.map((e) => [e.box.name, e.stale, e.error]), [["a", false, null], ["b", false, null], [
    "c",
    false,
    null,
  ]]);
  // A box's own event that changes sessions marks that box only; other events of it do not.
  t.boxes.get("b")!.sessions.push("b-2");
  t.publish({ type: "session.created", box: "b", data: { name: "b-2" } });
  t.publish({ type: "service.started", box: "a", data: {} });
  t.publish({ type: "session.created", data: { name: "laptop" } }); // the laptop's own, no box
  assertEquals(t.names(await t.read()), { a: ["a-1"], b: ["b-1", "b-2"], c: ["c-1"] });
  assertEquals(t.reads, ["b"]);
  t.reads.length = 0;
  for (const type of ["agent.waiting", "task.created", "session.exited"]) {
    t.publish({ type, box: "c", data: { session: "c-1" } });
    await t.read();
  }
  assertEquals(t.reads, ["c", "c", "c"]);
  t.reads.length = 0;
  // One box asked for: only it is read, and only when stale.
  t.publish({ type: "session.removed", box: "a", data: { name: "a-1" } });
  t.publish({ type: "session.removed", box: "b", data: { name: "b-1" } });
  assertEquals((await t.read("a")).map((e) => e.box.name), ["a"]);
  assertEquals(t.reads, ["a"]);
  t.index.close();
});

Deno.test("session index: a list older than the safety age is sent as kept at once and read again behind the answer", async () => {
  const t = harness(["a"]);
  const readAt = new Date(t.clock.now()).toISOString();
  await t.read();
  t.clock.advance(MAX_AGE_MS - 1);
  await t.read();
  assertEquals(t.reads, ["a"]);
  // The box holds its answer: the read must not wait for it (a hang on the old code, which waited; the
  // fake clock moved past READ_MS after a turn ends that wait, so it fails instead of hanging).
  let release = () => {};
  const box = t.boxes.get("a")!;
  box.hold = new Promise<void>((resolve) => release = resolve);
  box.sessions.push("a-2");
  t.clock.advance(1);
  const unstick = setTimeout(() => t.clock.advance(READ_MS), 0);
  const answer = await t.read();
  clearTimeout(unstick);
  assertEquals(t.reads, ["a", "a"], "read again, behind the answer");
  assertEquals(
    [answer[0].sessions.map((s) => s.name), answer[0].read, answer[0].stale, answer[0].error],
    [["a-1"], readAt, true, null],
  );
  box.hold = undefined;
  release();
  // The next answer waits for nothing and has the list read behind the last one.
  const updated = await t.poll(() => t.read(), (a) => a[0].stale === false);
  assertEquals([updated[0].sessions.map((s) => s.name), updated[0].read], [
    ["a-1", "a-2"],
    new Date(t.clock.now()).toISOString(),
  ]);
  assertEquals(t.reads, ["a", "a"]);
});

Deno.test("session index: an offline box shows its last known list, stale, and is not asked", async () => {
  const t = harness(["a", "b"]);
  await t.read();
  t.boxes.get("b")!.status.online = false;
  t.boxes.get("b")!.sessions.push("b-2");
  t.publish({ type: "session.created", box: "b", data: { name: "b-2" } });
  t.reads.length = 0;
  const answer = await t.read();
  assertEquals(t.reads, []);
  assertEquals(answer[1].sessions.map((s) => s.name), ["b-1"]);
  assertEquals([answer[1].box.online, answer[1].stale], [false, true]);
  // Online again: announced by the agent (`data.box`), read ahead of the next load.
  t.boxes.get("b")!.status.online = true;
  t.publish({ type: "box.online", data: { box: "b" } });
  const back = await t.read();
  assertEquals(t.reads, ["b"]);
  assertEquals([back[1].sessions.map((s) => s.name), back[1].stale], [["b-1", "b-2"], false]);
});

Deno.test("session index: a read that fails or answers no list keeps the last known list, with the error", async () => {
  const t = harness(["a"]);
  await t.read();
  const box = t.boxes.get("a")!;
  for (
    const [change, error] of [
      [() => box.fails = "connection reset", "connection reset"],
      [
        () => (box.fails = undefined, box.raw = `{"error":1}`),
        "the box's list of sessions is not a list of sessions",
      ],
      [() => box.raw = `[{"nom":"x"}]`, "the box's list of sessions is not a list of sessions"],
      [() => box.raw = "not json", "Unexpected token"],
    ] as [() => void, string][]
  ) {
    change();
    t.publish({ type: "session.created", box: "a", data: { name: "x" } });
    const [entry] = await t.read();
    assertEquals([entry.sessions.map((s) => s.name), entry.stale], [["a-1"], true]);
    assert(entry.error?.includes(error), `${entry.error} names ${error}`);
  }
  // A box that stopped answering: given up after READ_MS, on the clock.
  box.raw = undefined;
  box.hold = new Promise(() => {});
  t.publish({ type: "session.created", box: "a", data: { name: "x" } });
  const pending = t.read();
  await new Promise((resolve) => setTimeout(resolve, 0));
  t.clock.advance(READ_MS);
  const [entry] = await pending;
  assertEquals([entry.stale, entry.error?.includes("timed out")], [true, true]);
});

Deno.test("session index: a change during a read is read again; reads run a few at a time", async () => {
  const t = harness(["a"]);
  const box = t.boxes.get("a")!;
  let release!: () => void;
  box.hold = new Promise((resolve) => release = resolve);
  const first = t.read();
  await new Promise((resolve) => setTimeout(resolve, 0));
  // The list changes after the box was asked: the answer on its way is older than the event.
  box.sessions.push("a-2");
  t.publish({ type: "session.created", box: "a", data: { name: "a-2" } });
  box.hold = undefined;
  release();
  assertEquals(t.names(await first), { a: ["a-1", "a-2"] });
  assertEquals(t.reads, ["a", "a"]);

  const many = harness(Array.from({ length: READS_AT_ONCE * 3 }, (_, i) => `b${i}`));
  assertEquals((await many.read()).length, READS_AT_ONCE * 3);
  assertEquals(many.reads.length, READS_AT_ONCE * 3);
  assertEquals(many.mostAtOnce(), READS_AT_ONCE);
});

Deno.test("session index: a forgotten box goes; one asked for by a name no box has is a 404", async () => {
  const t = harness(["a", "b"]);
  await t.read();
  t.boxes.delete("b");
  assertEquals((await t.read()).map((e) => e.box.name), ["a"]);
  const missing = await t.index.json("b").catch((error) => error);
  assertEquals([missing.status, missing.code], [404, "not_found"]);
});

Deno.test("session index: the answer kept between reads follows a box's status, list, error and age, box by box", async () => {
  const t = harness(["a", "b"]);
  const first = await t.index.json();
  assertEquals(await t.index.json(), first, "nothing changed: the same answer");
  // A status changed without an event (a health check's latency or build): that box's part only.
  t.boxes.get("b")!.status.latency_ms = 3.5;
  const moved: BoxSessions[] = JSON.parse(await t.index.json());
  assertEquals([moved[0].box.latency_ms, moved[1].box.latency_ms], [null, 3.5]);
  assertEquals(moved[0], JSON.parse(first)[0]);
  // A read that fails: the list kept, with the error, in that box's part.
  t.boxes.get("a")!.fails = "box went away";
  t.publish({ type: "session.created", box: "a", data: { name: "a-2" } });
  const failed: BoxSessions[] = JSON.parse(await t.index.json());
  assertEquals([failed[0].error, failed[0].stale, failed[0].sessions.map((s) => s.name)], [
    "box went away",
    true,
    ["a-1"],
  ]);
  assertEquals(failed[1], moved[1]);
  // Read again once a is back (a changed list: waited on), b older than the safety age (behind the
  // answer: here it may end before the answer, as a's read takes longer); the read times move with it.
  t.boxes.get("a")!.fails = undefined;
  t.boxes.get("a")!.sessions.push("a-2");
  t.clock.advance(MAX_AGE_MS);
  const later: BoxSessions[] = await t.poll(
    async () => JSON.parse(await t.index.json()),
    (answer: BoxSessions[]) => !answer[1].stale,
  );
  assertEquals(t.names(later), { a: ["a-1", "a-2"], b: ["b-1"] });
  assertEquals(later.map((e) => [e.read, e.stale, e.error]), [
    [new Date(t.clock.now()).toISOString(), false, null],
    [new Date(t.clock.now()).toISOString(), false, null],
  ]);
  t.index.close();
});
