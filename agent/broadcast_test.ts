import { assertEquals, assertRejects, assertThrows } from "../tests/assert.ts";
import { DockError } from "../client/errors.ts";
import type { Location, QueueCreate, QueueItem, Session } from "../client/wire.ts";
import { Store } from "../core/store.ts";
import {
  type BroadcastBoxClient,
  Broadcaster,
  checkVariables,
  fillVariables,
  matches,
  targetIdentity,
  variablesOf,
  viewOf,
  type ViewSession,
} from "./broadcast.ts";
import { queueSendKey } from "./queue_plan.ts";

const VALUES = {
  session: "s1",
  worktree: "feat",
  location: "app",
  project: "app",
  box: "devbox",
  branch: "feat/x",
};

Deno.test("variables: the spec's names are filled in one pass, spaces allowed, values never expanded again", () => {
  assertEquals(
    fillVariables("{{session}} on {{ box }}: {{location}}/{{worktree}} @ {{branch}}", VALUES),
    "s1 on devbox: app/feat @ feat/x",
  );
  // Spec 6: "filled per agent (its branch, worktree, project, box)"; the project is the location.
  assertEquals(fillVariables("{{project}}", VALUES), "app");
  // A value holding {{…}} is typed as it is; no shell, so $(…) is text too.
  assertEquals(
    fillVariables("[{{branch}}]", { ...VALUES, branch: "{{session}} $(id)" }),
    "[{{session}} $(id)]",
  );
  assertEquals(variablesOf("{{box}} {{box}} {{ x y }}"), ["box", "x y"]);
  assertEquals(fillVariables("no variables {here}", VALUES), "no variables {here}");
});

Deno.test("variables: an unknown name is a 400 naming it, before anything is sent", () => {
  checkVariables("{{session}} {{branch}}");
  const error = assertThrows(() => checkVariables("hi {{session}} {{ticket}} {{event.type}}"), DockError);
  assertEquals((error as DockError).status, 400);
  assertEquals((error as DockError).detail?.field, "text");
  assertEquals(error.message.includes("{{ticket}}") && error.message.includes("{{event.type}}"), true);
  assertEquals(error.message.includes("{{session}},"), true, "it lists the names it fills");
});

function view(options: Partial<ViewSession> = {}): ViewSession {
  return {
    box: "devbox",
    name: "s1",
    agent: "claude",
    agent_state: "finished",
    reason: null,
    exited: false,
    location: "app",
    worktree: "feat",
    branch: "feat",
    ...options,
  };
}

Deno.test("where: every field named must match, and a program that exited is never selected", () => {
  assertEquals(matches(view(), { state: "finished" }), true);
  assertEquals(matches(view(), { state: "idle" }), false);
  assertEquals(matches(view(), { state: "finished", box: "devbox", location: "app", agent: "claude" }), true);
  assertEquals(matches(view(), { state: "finished", agent: "codex" }), false);
  assertEquals(matches(view(), { location: "web" }), false);
  assertEquals(matches(view({ exited: true }), { state: "finished" }), false);
  assertEquals(matches(view({ agent: null }), { agent: "claude" }), false);
});

Deno.test("the view: each session gets its worktree's branch from the box's locations", () => {
  const session = (name: string, worktree: string) => ({ name, location: "app", worktree }) as Session;
  const locations = [{
    name: "app",
    worktrees: [{ name: "main", branch: "main" }, { name: "feat", branch: null }],
  }] as unknown as Location[];
  const seen = viewOf("b", [session("a", "main"), session("c", "feat"), session("d", "gone")], locations);
  assertEquals(seen.map((s) => [s.box, s.name, s.branch]), [["b", "a", "main"], ["b", "c", null], [
    "b",
    "d",
    null,
  ]]);
});

Deno.test("target identity: the same broadcast id, box and session give the same queue id and key", async () => {
  const one = await targetIdentity("b1", "devbox", "s1");
  assertEquals(one, await targetIdentity("b1", "devbox", "s1"));
  assertEquals(one.queueId === (await targetIdentity("b1", "devbox", "s2")).queueId, false);
  // `a/b` + `c` and `a` + `b/c` are not the same target.
  assertEquals(
    (await targetIdentity("x", "a/b", "c")).nonce === (await targetIdentity("x", "a", "b/c")).nonce,
    false,
  );
  assertEquals(/^bc-[0-9a-f]{32}$/.test(one.queueId), true);
});

/** A box in memory: its sessions, and the keys its ledger has typed. */
class FakeBox implements BroadcastBoxClient {
  typed: { session: string; text: string; key?: string }[] = [];
  keys = new Set<string>();
  sessionsList: Session[] = [];
  waiting = new Set<string>();
  sessions(): Promise<Session[]> {
    return Promise.resolve(this.sessionsList);
  }
  locations(): Promise<Location[]> {
    return Promise.resolve([]);
  }
  send(
    name: string,
    text: string,
    options: { key?: string; unlessWaiting?: "permission" },
  ): Promise<Session> {
    if (options.unlessWaiting && this.waiting.has(name)) {
      return Promise.reject(
        new DockError("permission_prompt", "waits on a permission prompt", { status: 409 }),
      );
    }
    if (!options.key || !this.keys.has(options.key)) {
      this.keys.add(options.key ?? "");
      this.typed.push({ session: name, text, key: options.key });
    }
    return Promise.resolve(this.sessionsList.find((s) => s.name === name)!);
  }
}

function fakeSession(name: string): Session {
  return {
    name,
    agent: "claude",
    agent_state: "finished",
    state_time: null,
    reason: null,
    exited: false,
    exit_code: null,
    location: "app",
    worktree: name,
    path: "/x",
    command: "claude",
    created: "",
  };
}

Deno.test("Broadcaster: a retry with the same id types nothing twice; a permission prompt is queued with the same key", async () => {
  const dir = await Deno.makeTempDir();
  const store = new Store(`${dir}/agent.db`);
  try {
    const box = new FakeBox();
    box.sessionsList = [fakeSession("s1"), fakeSession("s2")];
    box.waiting.add("s2");
    const added: { request: QueueCreate; nonce?: string }[] = [];
    const items = new Map<string, QueueItem>();
    const broadcaster = new Broadcaster({
      store,
      boxes: {
        list: () => [{ name: "devbox" }],
        has: (name) => name === "devbox",
        online: () => true,
        client: () => box,
        check: () => Promise.resolve(),
      },
      queue: {
        add(request, _origin, options) {
          added.push({ request, nonce: options.nonce });
          const item = { ...request, id: request.id!, state: "queued" } as QueueItem;
          items.set(item.id, item);
          return { item, created: true };
        },
        get(id) {
          const item = items.get(id);
          if (!item) throw new DockError("not_found", "no", { status: 404 });
          return item;
        },
      },
    });
    const request = { id: "b1", text: "hi {{session}}", to: ["devbox/s1", "devbox/s2", "devbox/s1"] };
    const first = await broadcaster.run(request, "test");
    assertEquals(first.targets.map((t) => [t.session, t.outcome, t.reason]), [
      ["s1", "sent", undefined],
      ["s2", "queued", "waiting_permission"],
    ]);
    assertEquals(box.typed.map((t) => [t.session, t.text]), [["s1", "hi s1"]]);
    // The queued item is sent with the key the broadcast would have used.
    const { nonce } = await targetIdentity("b1", "devbox", "s2");
    assertEquals([added.length, added[0].nonce, added[0].request.text, added[0].request.wait], [
      1,
      nonce,
      "hi s2",
      true,
    ]);
    assertEquals(box.typed[0].key, queueSendKey((await targetIdentity("b1", "devbox", "s1")).nonce));

    const again = await broadcaster.run(request, "test");
    assertEquals(again.targets.map((t) => [t.session, t.outcome]), [["s1", "sent"], ["s2", "queued"]]);
    assertEquals(box.typed.length, 1, "typed once");
    assertEquals(added.length, 1, "queued once");

    await assertRejects(
      () => broadcaster.run({ text: "x {{nope}}", to: ["devbox/s1"] }, "t"),
      DockError,
      "{{nope}}",
    );
    await assertRejects(
      () => broadcaster.run({ text: "x", to: ["devbox/s1"], where: { state: "idle" } }, "t"),
      DockError,
    );
    await assertRejects(() => broadcaster.run({ text: "x", where: {} }, "t"), DockError, "at least one");
    await assertRejects(
      () => broadcaster.run({ text: "x", where: { box: "nobox" } }, "t"),
      DockError,
      "not found",
    );
  } finally {
    store.db.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("Broadcaster: an unanswered send is queued with its key (or failed with queue off); a 4xx fails, its prompt redacted", async () => {
  const dir = await Deno.makeTempDir();
  const store = new Store(`${dir}/agent.db`);
  try {
    let failure: DockError = new DockError("bad_gateway", "connection reset", { status: 502 });
    const box = new FakeBox();
    box.sessionsList = [fakeSession("s1")];
    box.send = () => Promise.reject(failure);
    const added: { request: QueueCreate; nonce?: string }[] = [];
    const broadcaster = new Broadcaster({
      store,
      boxes: {
        list: () => [{ name: "devbox" }],
        has: (name) => name === "devbox",
        online: () => true,
        client: () => box,
        check: () => Promise.resolve(),
      },
      queue: {
        add(request, _origin, options) {
          added.push({ request, nonce: options.nonce });
          return { item: { ...request, id: request.id!, state: "queued" } as QueueItem, created: true };
        },
        get: () => {
          throw new DockError("not_found", "no", { status: 404 });
        },
      },
    });
    const unanswered = await broadcaster.run({ id: "b2", text: "deploy now", to: ["devbox/s1"] }, "test");
    assertEquals(unanswered.targets.map((t) => [t.outcome, t.reason]), [["queued", "unconfirmed"]]);
    assertEquals(added[0].nonce, (await targetIdentity("b2", "devbox", "s1")).nonce);

    const off = await broadcaster.run(
      { id: "b3", text: "deploy now", to: ["devbox/s1"], queue: false },
      "test",
    );
    assertEquals(off.targets.map((t) => [t.outcome, t.reason]), [["failed", "send_unconfirmed"]]);
    assertEquals(off.targets[0].error?.includes("id b3"), true);

    failure = new DockError("gate_refused", "gate said no to 'deploy now'", { status: 403 });
    const refused = await broadcaster.run({ id: "b4", text: "deploy now", to: ["devbox/s1"] }, "test");
    assertEquals(refused.targets.map((t) => [t.outcome, t.reason, t.error]), [[
      "failed",
      "gate_refused",
      "gate said no to '‹prompt›'",
    ]]);
    assertEquals(added.length, 1, "only the unanswered one was queued");
  } finally {
    store.db.close();
    await Deno.remove(dir, { recursive: true });
  }
});
