import { assert, assertEquals, assertRejects, assertStringIncludes, assertThrows } from "../tests/assert.ts";
import { DockError } from "../client/errors.ts";
import type { AgentState, QueueState, Session } from "../client/wire.ts";
import { EventBus } from "../core/events.ts";
import { Store } from "../core/store.ts";
import { transition, transitions } from "../core/transition.ts";
import {
  blockedIds,
  canTransition,
  DELIVERED_KEPT,
  type HeldState,
  type PlanContext,
  planQueue,
  Queue,
  QUEUE_TRANSITIONS,
  type QueueBoxClient,
  type QueueEvent,
  type QueueOptions,
  redact,
  type Slot,
} from "./queue.ts";

const STATES: QueueState[] = ["queued", "waiting", "sending", "failed", "delivered"];

function slot(id: string, seq: number, state: QueueState, options: Partial<Slot> = {}): Slot {
  return { id, seq, state, box: "b", session: "s", wait: false, ...options };
}

function context(options: Partial<PlanContext> = {}): PlanContext {
  return { known: () => true, online: () => true, busy: () => false, agentState: () => "idle", ...options };
}

Deno.test("the lifecycle: forward, the back edges spec 3.1 names, and delivered is final", () => {
  assertEquals(Object.keys(QUEUE_TRANSITIONS).sort(), [...STATES].sort());
  assert(canTransition("queued", "waiting"));
  assert(canTransition("waiting", "sending"));
  assert(canTransition("sending", "delivered"));
  assert(canTransition("sending", "failed"));
  assert(canTransition("sending", "queued"), "a box never reached: back in the queue, not failed");
  assert(canTransition("failed", "queued"), "retry and edit");
  assert(canTransition("waiting", "queued"), "the box went away again");
  assert(!canTransition("failed", "delivered"));
  assert(!canTransition("queued", "failed"), "only a send can fail");
  assert(!canTransition("waiting", "delivered"));
  for (const to of STATES) assert(!canTransition("delivered", to), `delivered → ${to}`);
});

Deno.test("blocked: items behind a failed one of the same session, not other sessions", () => {
  const slots = [
    slot("a", 1, "delivered"),
    slot("b", 2, "failed"),
    slot("c", 3, "queued"),
    slot("d", 4, "waiting"),
    slot("e", 5, "failed"),
    slot("x", 6, "queued", { session: "other" }),
    slot("y", 7, "queued", { box: "b2" }),
  ];
  assertEquals([...blockedIds(slots)].sort(), ["c", "d", "e"]);
  // Order is by seq, not by position in the list.
  assertEquals([...blockedIds([...slots].reverse())].sort(), ["c", "d", "e"]);
  assertEquals([...blockedIds([slot("c", 3, "queued"), slot("b", 4, "failed")])], []);
});

Deno.test("the plan: one send per session, oldest first, sessions in parallel", () => {
  const slots = [
    slot("s2", 2, "queued", { session: "two" }),
    slot("a1", 1, "queued"),
    slot("a3", 3, "queued"),
    slot("d", 4, "delivered", { session: "three" }),
    slot("t5", 5, "queued", { session: "three" }),
  ];
  assertEquals(planQueue(slots, context()).send, ["a1", "s2", "t5"]);
  // A lane with a send in flight waits; the others go.
  assertEquals(planQueue(slots, context({ busy: (lane) => lane === "b/s" })).send, ["s2", "t5"]);
});

Deno.test("the plan: a failed item holds its lane; an item left sending goes first", () => {
  const held = planQueue([slot("f", 1, "failed"), slot("q", 2, "queued")], context());
  assertEquals(held.send, []);
  const resumed = planQueue([slot("q", 1, "queued"), slot("s", 2, "sending")], context());
  assertEquals(resumed.send, ["s"], "a send cut short (explicit send, agent killed) is finished first");
});

Deno.test("the plan: offline boxes keep their items queued; waiting follows the agent's turn", () => {
  const slots = [
    slot("w1", 1, "queued", { wait: true }),
    slot("n1", 2, "queued", { session: "n" }),
    slot("w2", 3, "waiting", { box: "gone", wait: true }),
  ];
  const offline = planQueue(slots, context({ online: (box) => box === "nobox" }));
  assertEquals([offline.send, offline.waiting, offline.queued], [[], [], ["w2"]]);

  const states = new Map<string, HeldState | null | undefined>();
  const plan = (state: HeldState | null | undefined) => {
    states.set("s", state);
    return planQueue(slots, context({ online: (box) => box === "b", agentState: (_, s) => states.get(s) }));
  };
  const unknown = plan(undefined);
  assertEquals([unknown.send, unknown.waiting, unknown.read], [["n1"], ["w1"], ["b"]]);
  assertEquals(plan("running").send, ["n1"], "mid-turn: the wait item is held, the other goes");
  assertEquals(plan("finished").send, ["w1", "n1"]);
  assertEquals(plan("waiting").send, ["w1", "n1"]);
  assertEquals(plan("permission").send, ["n1"], "a permission prompt is the person's: the wait item is held");
  assertEquals(plan(null).send, ["w1", "n1"], "no such session: sent, and the box answers 404");
});

Deno.test("redact removes a quoted prompt from an error message", () => {
  assertEquals(redact("gate said: deploy to prod now", "deploy to prod"), "gate said: ‹prompt› now");
  assertEquals(redact("session 's1' not found", "x"), "session 's1' not found");
});

/** A box in memory: records the keys it typed, answers like the real one. */
class FakeBox implements QueueBoxClient {
  typed: { session: string; text: string; key?: string }[] = [];
  keys = new Map<string, Session>();
  sessionsKnown = new Set(["s1", "s2"]);
  /** The next sends fail this way (a DockError, or a thrown error: unreachable). */
  failures: Error[] = [];
  state: AgentState = "idle";
  reason: Session["reason"] = null;
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
    options: { key?: string; unlessWaiting?: "permission" },
  ): Promise<Session> {
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

async function withQueue(
  fn: (
    queue: Queue,
    box: FakeBox,
    world: { online: boolean; known: boolean; store: Store; bus: EventBus },
  ) => Promise<void>,
  options: Pick<QueueOptions, "trace"> = {},
) {
  const dir = await Deno.makeTempDir();
  const store = new Store(`${dir}/agent.db`);
  const bus = new EventBus(store);
  const box = new FakeBox();
  const world = { online: true, known: true, store, bus };
  const queue = new Queue({
    store,
    bus,
    boxes: {
      has: (name) => name === "b" && world.known,
      online: () => world.online,
      client: () => box,
      check: () => Promise.resolve(),
    },
    ...options,
  });
  queue.start();
  try {
    await fn(queue, box, world);
  } finally {
    queue.close();
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
}

async function settled(queue: Queue, done: (states: QueueState[]) => boolean): Promise<void> {
  for (let i = 0; i < 1000; i++) {
    if (done(queue.list().map((item) => item.state))) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error(`queue did not settle: ${JSON.stringify(queue.list().map((i) => [i.id, i.state]))}`);
}

Deno.test("the engine delivers in order per session, once per key, and keeps failures", async () => {
  await withQueue(async (queue, box) => {
    for (let i = 0; i < 5; i++) {
      queue.add({ id: `a${i}`, box: "b", session: "s1", text: `a${i}`, wait: false }, "t");
    }
    for (let i = 0; i < 3; i++) queue.add({ id: `b${i}`, box: "b", session: "s2", text: `b${i}` }, "t");
    await settled(queue, (states) => states.every((s) => s === "delivered"));
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
    await settled(queue, () => queue.get("f").state === "failed");
    assertEquals(queue.get("f").error, "session 'nope' not found");
    assertEquals([queue.get("g").state === "failed", queue.get("g").blocked], [false, true]);
    box.sessionsKnown.add("nope");
    box.failures.push(new DockError("unreachable", "cannot reach", { status: 503 }));
    const retried = queue.retry("f", "t");
    assertEquals([retried.state, retried.blocked, retried.error], ["queued", false, undefined]);
    await settled(queue, () => queue.get("g").state === "delivered");
    assertEquals(queue.get("f").attempts, 3, "failed once, unreachable once, delivered");
    assertEquals(box.typed.slice(-2).map((t) => t.text), ["f", "g"]);
    assertThrows(() => queue.retry("f", "t"), DockError, "only a failed item");
  });
});

Deno.test("the engine holds a wait item while the agent waits on a permission prompt, then sends it", async () => {
  await withQueue(async (queue, box, world) => {
    [box.state, box.reason] = ["waiting", "permission"];
    queue.add({ id: "p", box: "b", session: "s1", text: "next task" }, "t");
    queue.add({ id: "n", box: "b", session: "s2", text: "no wait", wait: false }, "t");
    await settled(queue, () => queue.get("p").state === "waiting" && queue.get("n").state === "delivered");
    assertEquals(box.typed.map((t) => t.text), ["no wait"], "nothing typed into the permission prompt");
    // The person answers; the turn ends; the box's report makes the queue read its sessions again.
    [box.state, box.reason] = ["finished", null];
    world.bus.publish({ type: "agent.finished", box: "b", data: { session: "s1" } });
    await settled(queue, () => queue.get("p").state === "delivered");
    assertEquals(box.typed.map((t) => t.text), ["no wait", "next task"]);
  });
});

Deno.test("the engine: a permission prompt raised after the sessions were read is not answered by the item", async () => {
  await withQueue(async (queue, box, world) => {
    box.state = "finished";
    // The plan reads "finished"; the agent then asks for permission before the item's send reaches the box.
    box.afterRead = () => [box.state, box.reason] = ["waiting", "permission"];
    queue.add({ id: "p", box: "b", session: "s1", text: "next task" }, "t");
    await settled(queue, () => queue.get("p").attempts === 1 && queue.get("p").state === "waiting");
    assertEquals(box.typed, [], "nothing typed into the permission prompt");
    assertEquals(queue.get("p").error, undefined, "held, not failed");
    [box.state, box.reason] = ["finished", null];
    world.bus.publish({ type: "agent.finished", box: "b", data: { session: "s1" } });
    await settled(queue, () => queue.get("p").state === "delivered");
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
    await settled(queue, (states) => states[0] === "delivered");
    assertEquals(box.typed, [], "the box had typed it: replayed, not typed again");

    world.online = false;
    queue.add({ id: "e", box: "b", session: "s1", text: "draft", wait: false }, "t");
    const edited = queue.edit("e", { text: "final" }, "t");
    assertEquals([edited.state, edited.text, edited.seq > item.seq], ["queued", "final", true]);
    world.online = true;
    world.bus.publish({ type: "box.online", data: { box: "b" } });
    await settled(queue, (states) => states.every((s) => s === "delivered"));
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
    await settled(queue, (states) => states[0] === "failed");
    const failed = queue.get("k");
    assertStringIncludes(failed.error ?? "", "may or may not have been typed");
    assertEquals([queue.get("q").state, box.typed.length], ["queued", 0]);
    // Now it may go, as any item not being sent.
    assertEquals(queue.remove("k", "t").state, "failed");
  });
});

Deno.test("the plan: an item left sending for a forgotten box is failed, not sent", () => {
  const plan = planQueue(
    [slot("s", 1, "sending"), slot("q", 2, "queued"), slot("t", 3, "sending", { box: "kept" })],
    context({ known: (box) => box === "kept", online: () => false }),
  );
  assertEquals([plan.forgotten, plan.send], [["s"], []]);
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
    const first = new Queue({ store, bus, boxes });
    const now = Date.now();
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
    const queue = new Queue({ store, bus, boxes });
    queue.start();
    queue.close();
    const ids = queue.list().map((item) => item.id);
    assertEquals(ids.length, DELIVERED_KEPT + 1);
    assertEquals([ids[0], ids.at(-1)], ["d10", "pending"], "the oldest delivered went; the pending stays");
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
    const state = (id: string, wanted: QueueState) => settled(queue, () => queue.get(id).state === wanted);
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
    await settled(queue, () => queue.get("e").state === "delivered" && queue.get("k").state === "delivered");
    // A permission prompt raised after the read: requeued, then held (waiting); edited while held; the box
    // going offline puts it back in line; the turn's end sends it.
    box.state = "finished";
    box.afterRead = () => [box.state, box.reason] = ["waiting", "permission"];
    item("p", "s1", true);
    await settled(queue, () => queue.get("p").attempts === 1 && queue.get("p").state === "waiting");
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

Deno.test("the lifecycle refuses, and says, every change the table does not name", () => {
  const events: QueueEvent[] = ["edit", "hold", "offline", "send", "deliver", "fail", "requeue", "retry"];
  for (const from of STATES) {
    for (const event of events) {
      const said: string[] = [];
      const to = transition(QUEUE_TRANSITIONS, from, event, { log: (m) => said.push(m) });
      const allowed = transitions(QUEUE_TRANSITIONS).some(([a, e]) => a === from && e === event);
      assertEquals([to !== null, said.length], [allowed, allowed ? 0 : 1], `${from} ${event}`);
    }
  }
});
