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
      status: () => [...boxes.values()].map((box) => ({ ...box.status })),
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
  const names_ = (answer: BoxSessions[]) =>
    Object.fromEntries(answer.map((entry) => [entry.box.name, entry.sessions.map((s) => s.name)]));
  return { index, clock, boxes, reads, publish, read, names: names_, mostAtOnce: () => mostAtOnce };
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

Deno.test("session index: a list older than the safety age is read again, events or not", async () => {
  const t = harness(["a"]);
  await t.read();
  t.clock.advance(MAX_AGE_MS - 1);
  await t.read();
  assertEquals(t.reads, ["a"]);
  t.clock.advance(1);
  const answer = await t.read();
  assertEquals(t.reads, ["a", "a"]);
  assertEquals(answer[0].read, new Date(t.clock.now()).toISOString());
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
