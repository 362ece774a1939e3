import { assertEquals, assertRejects, assertStringIncludes, assertThrows } from "../tests/assert.ts";
import { DockError } from "../client/errors.ts";
import type { AgentState, QueueState, Session } from "../client/wire.ts";
import { EventBus } from "../core/events.ts";
import { MemoryLog } from "../core/log.ts";
import { Store } from "../core/store.ts";
import { transitions } from "../core/transition.ts";
import { FakeClock } from "../tests/fake_clock.ts";
import { Queue, type QueueBoxClient, type QueueOptions } from "./queue.ts";
import { DELIVERED_KEPT, QUEUE_TRANSITIONS } from "./queue_plan.ts";

// The engine runs on a FakeClock: its backoffs, re-reads and send deadlines move only when a test
// advances it, and the tests await the queue's own events, never real time.
const START = Date.parse("2026-01-01T00:00:00Z");

/** A box in memory: records the keys it typed, answers like the real one. */
class FakeBox implements QueueBoxClient {
  typed: { session: string; text: string; key?: string }[] = [];
  keys = new Map<string, Session>();
  sessionsKnown = new Set(["s1", "s2"]);
  /** The next sends fail this way (a DockError, or a thrown error: unreachable). */
  failures: Error[] = [];
  state: AgentState = "idle";
  reason: Session["reason"] = null;
  /** Sends wait until their signal aborts (a box that never answers); the abort reasons' names. */
  hang = false;
  aborted: string[] = [];
  /** The key of every send asked for, answered or not. */
  keysSent: (string | undefined)[] = [];
  /** Runs once after the next read of the sessions has been answered (a change the reader missed). */
  afterRead?: () => void;
  sessions(): Promise<Session[]> {
    const answer = [...this.sessionsKnown].map((name) => ({
      ...session(name, this.state),
      reason: this.reason,
    }));
    const after = this.afterRead;
    this.afterRead = undefined;
    after?.();
    return Promise.resolve(answer);
  }
  send(
    name: string,
    text: string,
    options: { key?: string; unlessWaiting?: "permission"; signal?: AbortSignal },
  ): Promise<Session> {
    this.keysSent.push(options.key);
    if (this.hang) {
      return new Promise((_, reject) =>
        options.signal?.addEventListener("abort", () => {
          this.aborted.push((options.signal!.reason as Error).name);
          reject(options.signal!.reason);
        })
      );
    }
    const failure = this.failures.shift();
    if (failure) return Promise.reject(failure);
    if (!this.sessionsKnown.has(name)) {
      return Promise.reject(new DockError("not_found", `session '${name}' not found`, { status: 404 }));
    }
    // As the box does: checked in the step that types (daemon/sessions.ts).
    if (options.unlessWaiting && this.state === "waiting" && this.reason === options.unlessWaiting) {
      return Promise.reject(
        new DockError("permission_prompt", "waits on a permission prompt", { status: 409 }),
      );
    }
    const earlier = options.key && this.keys.get(options.key);
    if (earlier) return Promise.resolve(earlier);
    this.typed.push({ session: name, text, key: options.key });
    const answer = session(name, this.state);
    if (options.key) this.keys.set(options.key, answer);
    return Promise.resolve(answer);
  }
}

function session(name: string, state: AgentState): Session {
  return {
    name,
    agent: null,
    agent_state: state,
    state_time: new Date().toISOString(),
    reason: null,
    exited: false,
    exit_code: null,
    location: "app",
    worktree: "app",
    path: "/",
    command: "sh",
    created: new Date().toISOString(),
  };
}

interface World {
  online: boolean;
  known: boolean;
  store: Store;
  bus: EventBus;
  clock: FakeClock;
  log: MemoryLog;
}

async function withQueue(
  fn: (queue: Queue, box: FakeBox, world: World) => Promise<void>,
  options: Pick<QueueOptions, "trace" | "sendTimeoutMs"> = {},
) {
  const dir = await Deno.makeTempDir();
  const store = new Store(`${dir}/agent.db`);
  const bus = new EventBus(store);
  const box = new FakeBox();
  const world: World = {
    online: true,
    known: true,
    store,
    bus,
    clock: new FakeClock(START),
    log: new MemoryLog(),
  };
  const queue = new Queue({
    store,
    bus,
    boxes: {
      has: (name) => name === "b" && world.known,
      online: () => world.online,
      client: () => box,
      check: () => Promise.resolve(),
    },
    clock: world.clock,
    log: world.log,
    ...options,
  });
  queue.start();
  try {
    await fn(queue, box, world);
    assertEquals(world.log.records, [], "nothing went wrong unexpectedly");
  } finally {
    queue.close();
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
}

/**
 * Resolves once `done` holds: checked now and after each event the bus carries (every state change
 * announces one), so nothing is polled. A condition that never comes leaves no timer pending and Deno
 * fails the test ("the event loop has already resolved").
 */
function settled(queue: Queue, bus: EventBus, done: (states: QueueState[]) => boolean): Promise<void> {
  const check = () => done(queue.list().map((item) => item.state));
  if (check()) return Promise.resolve();
  return new Promise((resolve) => {
    const unsubscribe = bus.subscribe(() => {
      if (!check()) return;
      unsubscribe();
      resolve();
    });
  });
}

/** Lets a pass the queue planned run (a kick is a microtask; a send's first step is synchronous). */
function passed(): Promise<void> {
  return new Promise<void>((resolve) => queueMicrotask(resolve));
}

Deno.test("the engine delivers in order per session, once per key, and keeps failures", async () => {
  await withQueue(async (queue, box, world) => {
    for (let i = 0; i < 5; i++) {
      queue.add({ id: `a${i}`, box: "b", session: "s1", text: `a${i}`, wait: false }, "t");
    }
    for (let i = 0; i < 3; i++) queue.add({ id: `b${i}`, box: "b", session: "s2", text: `b${i}` }, "t");
    await settled(queue, world.bus, (states) => states.every((s) => s === "delivered"));
    assertEquals(box.typed.filter((t) => t.session === "s1").map((t) => t.text), [
      "a0",
      "a1",
      "a2",
      "a3",
      "a4",
    ]);
    assertEquals(box.typed.filter((t) => t.session === "s2").map((t) => t.text), ["b0", "b1", "b2"]);
    assertEquals(new Set(box.typed.map((t) => t.key)).size, 8, "one key per item");

    // The same id again answers the existing item.
    const again = queue.add({ id: "a0", box: "b", session: "s1", text: "other" }, "t");
    assertEquals([again.created, again.item.text, again.item.state], [false, "a0", "delivered"]);

    // A 4xx fails the item and blocks the one behind it; an unreachable box only queues it again.
    queue.add({ id: "f", box: "b", session: "nope", text: "f" }, "t");
    queue.add({ id: "g", box: "b", session: "nope", text: "g" }, "t");
    await settled(queue, world.bus, () => queue.get("f").state === "failed");
    assertEquals(queue.get("f").error, "session 'nope' not found");
    assertEquals([queue.get("g").state === "failed", queue.get("g").blocked], [false, true]);
    box.sessionsKnown.add("nope");
    box.failures.push(new DockError("unreachable", "cannot reach", { status: 503 }));
    const retried = queue.retry("f", "t");
    assertEquals([retried.state, retried.blocked, retried.error], ["queued", false, undefined]);
    await settled(queue, world.bus, () => queue.get("f").attempts === 2 && queue.get("f").state === "queued");
    // The lane backs off 1 s on the queue's clock: nothing goes before it has passed.
    world.clock.advance(999);
    await passed();
    assertEquals([queue.get("f").state, queue.get("f").attempts], ["queued", 2], "still backing off");
    world.clock.advance(1);
    await settled(queue, world.bus, () => queue.get("g").state === "delivered");
    assertEquals(queue.get("f").attempts, 3, "failed once, unreachable once, delivered");
    assertEquals(box.typed.slice(-2).map((t) => t.text), ["f", "g"]);
    assertThrows(() => queue.retry("f", "t"), DockError, "only a failed item");
  });
});

Deno.test("the engine: a send the box never answers times out on the queue's clock and is resent with its key", async () => {
  await withQueue(async (queue, box, world) => {
    box.hang = true;
    queue.add({ id: "h", box: "b", session: "s1", text: "slow", wait: false }, "t");
    await settled(queue, world.bus, () => queue.get("h").state === "sending");
    world.clock.advance(29_999);
    await passed();
    assertEquals(queue.get("h").state, "sending", "its deadline has not come");
    box.hang = false;
    world.clock.advance(1);
    await settled(queue, world.bus, () => queue.get("h").state === "queued");
    assertEquals(
      [box.typed.length, box.aborted],
      [0, ["TimeoutError"]],
      "the request was cut short, not answered",
    );
    // Backed off 1 s, then resent with the same key (the box, had it typed it, would answer that).
    world.clock.advance(1000);
    await settled(queue, world.bus, () => queue.get("h").state === "delivered");
    assertEquals([queue.get("h").attempts, box.typed.length, box.keysSent.length], [2, 1, 2]);
    assertEquals(box.keysSent[0], box.keysSent[1], "one key for both attempts");
  }, { sendTimeoutMs: 30_000 });
});

Deno.test("the engine holds a wait item while the agent waits on a permission prompt, then sends it", async () => {
  await withQueue(async (queue, box, world) => {
    [box.state, box.reason] = ["waiting", "permission"];
    queue.add({ id: "p", box: "b", session: "s1", text: "next task" }, "t");
    queue.add({ id: "n", box: "b", session: "s2", text: "no wait", wait: false }, "t");
    await settled(
      queue,
      world.bus,
      () => queue.get("p").state === "waiting" && queue.get("n").state === "delivered",
    );
    assertEquals(box.typed.map((t) => t.text), ["no wait"], "nothing typed into the permission prompt");
    // The person answers; the turn ends; the box's report makes the queue read its sessions again.
    [box.state, box.reason] = ["finished", null];
    world.bus.publish({ type: "agent.finished", box: "b", data: { session: "s1" } });
    await settled(queue, world.bus, () => queue.get("p").state === "delivered");
    assertEquals(box.typed.map((t) => t.text), ["no wait", "next task"]);
  });
});

Deno.test("the engine: a permission prompt raised after the sessions were read is not answered by the item", async () => {
  await withQueue(async (queue, box, world) => {
    box.state = "finished";
    // The plan reads "finished"; the agent then asks for permission before the item's send reaches the box.
    box.afterRead = () => [box.state, box.reason] = ["waiting", "permission"];
    queue.add({ id: "p", box: "b", session: "s1", text: "next task" }, "t");
    await settled(
      queue,
      world.bus,
      () => queue.get("p").attempts === 1 && queue.get("p").state === "waiting",
    );
    assertEquals(box.typed, [], "nothing typed into the permission prompt");
    assertEquals(queue.get("p").error, undefined, "held, not failed");
    [box.state, box.reason] = ["finished", null];
    world.bus.publish({ type: "agent.finished", box: "b", data: { session: "s1" } });
    await settled(queue, world.bus, () => queue.get("p").state === "delivered");
    assertEquals(box.typed.map((t) => t.text), ["next task"]);
  });
});

Deno.test("the engine resends an item left sending with the same key; an edit makes a new key", async () => {
  await withQueue(async (queue, box, world) => {
    world.online = false;
    const item = queue.add({ id: "k", box: "b", session: "s1", text: "one", wait: false }, "t").item;
    assertEquals(item.state, "queued");
    // As if an earlier agent marked it sending and died after the box typed it.
    world.store.run("UPDATE queue SET state = 'sending', attempts = 1 WHERE id = 'k'");
    const nonce = world.store.get<{ nonce: string }>("SELECT nonce FROM queue WHERE id = 'k'")!.nonce;
    box.keys.set(`q-${nonce}-0`, session("s1", "idle"));
    await assertRejects(() => queue.sendNow("k", "t"), DockError, "offline");
    // Left sending for an offline box: 409 all the same (spec 3.1), since it may have been typed; it is
    // resent with its key once the box is back.
    queue.add({ id: "left", box: "b", session: "s2", text: "left", wait: false }, "t");
    world.store.run("UPDATE queue SET state = 'sending' WHERE id = 'left'");
    const left = world.store.get<{ nonce: string }>("SELECT nonce FROM queue WHERE id = 'left'")!.nonce;
    box.keys.set(`q-${left}-0`, session("s2", "idle"));
    assertEquals(
      (assertThrows(() => queue.remove("left", "t"), DockError, "same key once the box is back") as DockError)
        .status,
      409,
    );
    world.online = true;
    assertThrows(() => queue.remove("k", "t"), DockError, "being sent");
    world.online = false;
    // The engine plans while the box is offline: a box event kicks it, and a pass runs as a microtask
    // after a kick, so this one (queued after it) resolves once the pass is done.
    world.bus.publish({ type: "box.offline", data: { box: "b" } });
    await new Promise<void>((resolve) => queueMicrotask(resolve));
    assertEquals([queue.get("k").state, box.typed.length], ["sending", 0]);
    world.online = true;
    world.bus.publish({ type: "box.online", data: { box: "b" } });
    await settled(queue, world.bus, (states) => states[0] === "delivered");
    assertEquals(box.typed, [], "the box had typed it: replayed, not typed again");

    world.online = false;
    queue.add({ id: "e", box: "b", session: "s1", text: "draft", wait: false }, "t");
    const edited = queue.edit("e", { text: "final" }, "t");
    assertEquals([edited.state, edited.text, edited.seq > item.seq], ["queued", "final", true]);
    world.online = true;
    world.bus.publish({ type: "box.online", data: { box: "b" } });
    await settled(queue, world.bus, (states) => states.every((s) => s === "delivered"));
    assertEquals(box.typed.map((t) => [t.text, t.key]), [[
      "final",
      `q-${world.store.get<{ nonce: string }>("SELECT nonce FROM queue WHERE id = 'e'")!.nonce}-1`,
    ]]);
    assertThrows(() => queue.edit("e", { text: "late" }, "t"), DockError, "delivered");
    assertEquals(queue.remove("e", "t").id, "e");
    assertThrows(() => queue.get("e"), DockError, "not found");
  });
});

Deno.test("spec 3.1: DELETE of a sending item is 409; a forgotten box's sending item fails, never typed", async () => {
  await withQueue(async (queue, box, world) => {
    world.online = false;
    queue.add({ id: "k", box: "b", session: "s1", text: "one", wait: false }, "t");
    queue.add({ id: "q", box: "b", session: "s2", text: "two", wait: false }, "t");
    // As if an earlier agent marked it sending and died: nobody knows whether the box typed it.
    world.store.run("UPDATE queue SET state = 'sending', attempts = 1 WHERE id = 'k'");
    const refused = assertThrows(() => queue.remove("k", "t"), DockError, "being sent") as DockError;
    assertEquals([refused.status, queue.get("k").state], [409, "sending"]);
    // The box is forgotten (`DELETE /v1/boxes/b` announces box.removed): nothing can ever resend the
    // item with its key, nor ask the box. It fails, saying so, and is typed nowhere.
    world.known = false;
    world.bus.publish({ type: "box.removed", data: { box: "b" } });
    await settled(queue, world.bus, (states) => states[0] === "failed");
    const failed = queue.get("k");
    assertStringIncludes(failed.error ?? "", "may or may not have been typed");
    assertEquals([queue.get("q").state, box.typed.length], ["queued", 0]);
    // Now it may go, as any item not being sent.
    assertEquals(queue.remove("k", "t").state, "failed");
  });
});

Deno.test("delivered items are pruned past 24 hours and beyond the newest 1,000", async () => {
  const dir = await Deno.makeTempDir();
  const store = new Store(`${dir}/agent.db`);
  const bus = new EventBus(store);
  const boxes = {
    has: () => true,
    online: () => false,
    client: () => new FakeBox(),
    check: () => Promise.resolve(),
  };
  try {
    const clock = new FakeClock(START);
    const log = new MemoryLog();
    const first = new Queue({ store, bus, boxes, clock, log });
    const now = clock.now();
    store.transaction(() => {
      for (let i = 0; i < DELIVERED_KEPT + 10; i++) {
        first.add({ id: `d${i}`, box: "b", session: "s1", text: "x" }, "t");
        // The first five were delivered two days ago; the rest a minute apart, oldest first.
        const at = i < 5 ? now - 2 * 86_400_000 : now - (DELIVERED_KEPT + 10 - i) * 60_000;
        store.run(
          "UPDATE queue SET state = 'delivered', last_attempt = ? WHERE id = ?",
          new Date(at).toISOString(),
          `d${i}`,
        );
      }
      first.add({ id: "pending", box: "b", session: "s1", text: "x" }, "t");
    });
    const queue = new Queue({ store, bus, boxes, clock, log });
    queue.start();
    queue.close();
    const ids = queue.list().map((item) => item.id);
    assertEquals(ids.length, DELIVERED_KEPT + 1);
    assertEquals([ids[0], ids.at(-1)], ["d10", "pending"], "the oldest delivered went; the pending stays");
    assertEquals(log.records, []);
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the lifecycle's conformance: every change the table allows is one the engine makes", async () => {
  const seen = new Set<string>();
  await withQueue(async (queue, box, world) => {
    const item = (id: string, session: string, wait = false) =>
      queue.add({ id, box: "b", session, text: id, wait }, "t");
    const state = (id: string, wanted: QueueState) =>
      settled(queue, world.bus, () => queue.get(id).state === wanted);
    // queued → sending → delivered.
    item("a", "s1");
    await state("a", "delivered");
    // A 4xx fails it; a retry, and then an edit of a failed one, put it back in line.
    box.failures = [new DockError("not_found", "no such session", { status: 404 })];
    item("f", "s2");
    await state("f", "failed");
    queue.retry("f", "t");
    await state("f", "delivered");
    box.failures = [new DockError("not_found", "no such session", { status: 404 })];
    item("g", "s2");
    await state("g", "failed");
    queue.edit("g", { text: "g2" }, "t");
    await state("g", "delivered");
    // A queued item edited while its box is offline.
    world.online = false;
    item("e", "s1");
    queue.edit("e", { text: "e2" }, "t");
    // Left `sending` by an agent that died mid-send: resent with its key once the box is back.
    item("k", "s2");
    world.store.run("UPDATE queue SET state = 'sending', attempts = 1 WHERE id = 'k'");
    world.online = true;
    world.bus.publish({ type: "box.online", data: { box: "b" } });
    await settled(
      queue,
      world.bus,
      () => queue.get("e").state === "delivered" && queue.get("k").state === "delivered",
    );
    // A permission prompt raised after the read: requeued, then held (waiting); edited while held; the box
    // going offline puts it back in line; the turn's end sends it.
    box.state = "finished";
    box.afterRead = () => [box.state, box.reason] = ["waiting", "permission"];
    item("p", "s1", true);
    await settled(
      queue,
      world.bus,
      () => queue.get("p").attempts === 1 && queue.get("p").state === "waiting",
    );
    queue.edit("p", { text: "p2" }, "t");
    await state("p", "waiting");
    world.online = false;
    world.bus.publish({ type: "box.offline", data: { box: "b" } });
    await state("p", "queued");
    [box.state, box.reason] = ["finished", null];
    world.online = true;
    world.bus.publish({ type: "box.online", data: { box: "b" } });
    world.bus.publish({ type: "agent.finished", box: "b", data: { session: "s1" } });
    await state("p", "delivered");
  }, { trace: ({ from, event, to }) => seen.add(`${from} ${event} ${to}`) });
  assertEquals([...seen].sort(), transitions(QUEUE_TRANSITIONS).map((t) => t.join(" ")).sort());
});
