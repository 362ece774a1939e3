import { assert, assertEquals } from "../tests/assert.ts";
import type { QueueState } from "../client/wire.ts";
import { transition, transitions } from "../core/transition.ts";
import {
  blockedIds,
  canTransition,
  type HeldState,
  type PlanContext,
  planQueue,
  QUEUE_TRANSITIONS,
  type QueueEvent,
  queueSendKey,
  redact,
  type Slot,
} from "./queue_plan.ts";

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

Deno.test("the plan: an item left sending for a forgotten box is failed, not sent", () => {
  const plan = planQueue(
    [slot("s", 1, "sending"), slot("q", 2, "queued"), slot("t", 3, "sending", { box: "kept" })],
    context({ known: (box) => box === "kept", online: () => false }),
  );
  assertEquals([plan.forgotten, plan.send], [["s"], []]);
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

Deno.test("the send key: the item's nonce and its generation (0 until edited or retried)", () => {
  assertEquals([queueSendKey("n"), queueSendKey("n", 2)], ["q-n-0", "q-n-2"]);
});
