import type { AgentReport } from "../client/wire.ts";
import { SYSTEM_CLOCK } from "../core/clock.ts";
import { EventBus } from "../core/events.ts";
import { Store } from "../core/store.ts";
import { assertEquals } from "../tests/assert.ts";
import { AgentStates } from "./agent_state.ts";
import { BOX_SCHEMA } from "./schema.ts";

const CREATED = "2024-01-01T00:00:00.000Z";

/** A report of Claude working in `path`. */
function report(type: AgentReport["type"], path: string, extra: Partial<AgentReport> = {}): AgentReport {
  return { type, origin: "claude", data: { path, agent: "claude", session_id: null }, ...extra };
}

/** Agent state over a fresh database holding two live sessions: `app` and, nested in it, `deep`. */
async function states(now?: () => number) {
  const dir = await Deno.makeTempDir({ prefix: "dock-agent-state-" });
  const store = new Store(`${dir}/box.db`, { schema: BOX_SCHEMA });
  for (const [name, path] of [["app", "/srv/app"], ["deep", "/srv/app/packages/web"]]) {
    store.run(
      `INSERT INTO sessions (name, location, worktree, path, command, agent, state_time, created)
       VALUES (?, 'app', 'main', ?, 'claude', 'claude', ?, ?)`,
      name,
      path,
      CREATED,
      CREATED,
    );
  }
  const bus = new EventBus(store);
  const agentStates = new AgentStates({ store, bus, clock: now ? { now } : SYSTEM_CLOCK });
  let changes = 0;
  agentStates.onChange(() => changes++);
  return {
    agentStates,
    changes: () => changes,
    state: (name: string) => ({
      ...store.get<{ agent_state: string; state_time: string }>(
        "SELECT agent_state, state_time FROM sessions WHERE name = ?",
        name,
      ),
    }),
    async [Symbol.asyncDispose]() {
      store.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

Deno.test("agent state: a report finds its session by DOCK_SESSION, else by the deepest worktree path", async () => {
  await using held = await states();
  const named = held.agentStates.ingest(
    report("agent.waiting", "/srv/app/packages/web", { session: "app", time: "2024-01-01T10:00:00Z" }),
  );
  assertEquals(named?.data, {
    path: "/srv/app/packages/web",
    agent: "claude",
    session_id: null,
    session: "app",
  });
  assertEquals(held.state("app"), { agent_state: "waiting", state_time: "2024-01-01T10:00:00.000Z" });
  const byPath = held.agentStates.ingest(report("agent.started", "/srv/app/packages/web/src"));
  assertEquals(byPath?.data?.session, "deep");
  assertEquals(held.state("deep")?.agent_state, "running");
  assertEquals(held.changes(), 2);
});

Deno.test("agent state: DOCK_SESSION naming a session whose worktree does not hold the report's directory yields to the directory", async () => {
  // Codex's shared background server runs every session's hooks with the first session's environment.
  await using held = await states();
  held.agentStates.ingest(
    report("agent.started", "/srv/app", { session: "deep", time: "2024-01-01T10:00:00Z" }),
  );
  assertEquals(held.state("app").agent_state, "running");
  assertEquals(held.state("deep").agent_state, "idle");
  // A directory no live session holds (spelled through a symlink, say): the named session still.
  held.agentStates.ingest(
    report("agent.finished", "/elsewhere", { session: "deep", time: "2024-01-01T10:00:01Z" }),
  );
  assertEquals(held.state("deep").agent_state, "finished");
});

Deno.test("agent state: Codex's notify while its approval prompt is up leaves the session waiting", async () => {
  await using held = await states();
  const codex = (type: AgentReport["type"], hook: string, time: string, reason?: "permission") =>
    held.agentStates.ingest({
      type,
      origin: "codex",
      session: "app",
      time,
      data: { path: "/srv/app", agent: "codex", session_id: "t-1", hook, ...(reason ? { reason } : {}) },
    });
  codex("agent.waiting", "PermissionRequest", "2024-01-01T10:00:00Z", "permission");
  const announced = codex("agent.finished", "notify", "2024-01-01T10:00:01Z");
  assertEquals(announced?.type, "agent.finished"); // still announced
  assertEquals(held.state("app").agent_state, "waiting");
  // Its Stop hook ends the turn; a notify at any other time does too.
  codex("agent.finished", "Stop", "2024-01-01T10:00:02Z");
  assertEquals(held.state("app").agent_state, "finished");
  codex("agent.started", "UserPromptSubmit", "2024-01-01T10:00:03Z");
  codex("agent.finished", "notify", "2024-01-01T10:00:04Z");
  assertEquals(held.state("app").agent_state, "finished");
});

Deno.test("agent state: by path, a live session running an agent before a plain shell, the newest first; a name that only starts the same holds nothing", async () => {
  const dir = await Deno.makeTempDir({ prefix: "dock-agent-state-" });
  const store = new Store(`${dir}/box.db`, { schema: BOX_SCHEMA });
  try {
    const rows: [string, string, string | null, number, string][] = [
      ["old-agent", "/srv/app", "claude", 0, "2024-01-01T00:00:00.000Z"],
      ["new-agent", "/srv/app", "codex", 0, "2024-01-02T00:00:00.000Z"],
      ["newest-shell", "/srv/app", null, 0, "2024-01-03T00:00:00.000Z"],
      ["gone-agent", "/srv/app", "claude", 1, "2024-01-04T00:00:00.000Z"],
      ["sibling", "/srv/app2", "claude", 0, "2024-01-05T00:00:00.000Z"],
    ];
    for (const [name, path, agent, exited, created] of rows) {
      store.run(
        `INSERT INTO sessions (name, location, worktree, path, command, agent, exited, created)
         VALUES (?, 'app', 'main', ?, 'sh', ?, ?, ?)`,
        name,
        path,
        agent,
        exited,
        created,
      );
    }
    const agentStates = new AgentStates({ store, bus: new EventBus(store), clock: SYSTEM_CLOCK });
    assertEquals(agentStates.ingest(report("agent.started", "/srv/app/src"))?.data?.session, "new-agent");
    assertEquals(agentStates.ingest(report("agent.started", "/srv/app2"))?.data?.session, "sibling");
    assertEquals(agentStates.ingest(report("agent.started", "/srv/ap"))?.data?.session, undefined);
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("agent state: an older report is announced but changes nothing; a second delivery is dropped", async () => {
  await using held = await states();
  const finished = report("agent.finished", "/srv/app", { session: "app", time: "2024-01-01T10:00:00Z" });
  held.agentStates.ingest(finished);
  assertEquals(held.agentStates.ingest(finished), null);
  const older = held.agentStates.ingest({ ...finished, type: "agent.started", time: "2024-01-01T09:59:00Z" });
  assertEquals(older?.type, "agent.started");
  assertEquals(held.state("app"), { agent_state: "finished", state_time: "2024-01-01T10:00:00.000Z" });
  assertEquals(held.changes(), 1);
});

Deno.test("agent state: a report of no session is announced as it came and changes nothing", async () => {
  await using held = await states();
  const stray = held.agentStates.ingest(report("agent.waiting", "/tmp/x", { origin: "codex" }));
  assertEquals([stray?.type, stray?.origin, stray?.data], ["agent.waiting", "codex", {
    path: "/tmp/x",
    agent: "claude",
    session_id: null,
  }]);
  assertEquals(held.state("app"), { agent_state: "idle", state_time: CREATED });
  assertEquals(held.changes(), 0);
});

Deno.test("agent state: a report dated far ahead, or a clock that stepped back, never freezes a session", async () => {
  let clock = Date.parse("2026-06-01T12:00:00Z");
  await using held = await states(() => clock);
  // Dated in the year 9999: applied as of now, not as of 9999.
  held.agentStates.ingest(
    report("agent.started", "/srv/app", { session: "app", time: "9999-01-01T00:00:00Z" }),
  );
  assertEquals(held.state("app"), { agent_state: "running", state_time: "2026-06-01T12:00:00.000Z" });
  held.agentStates.ingest(
    report("agent.finished", "/srv/app", { session: "app", time: "2026-06-01T12:00:01Z" }),
  );
  assertEquals(held.state("app")?.agent_state, "finished");
  // The box's clock steps back an hour: what arrives now still counts, in the order it arrives.
  clock -= 3_600_000;
  held.agentStates.ingest(
    report("agent.started", "/srv/app", { session: "app", time: new Date(clock).toISOString() }),
  );
  assertEquals(held.state("app"), { agent_state: "running", state_time: "2026-06-01T11:00:00.000Z" });
  held.agentStates.ingest(report("agent.waiting", "/srv/app", { session: "app" }));
  assertEquals(held.state("app")?.agent_state, "waiting");
  // A late (spooled) report is still ordered by its own time: older than the state held, it changes nothing.
  held.agentStates.ingest(
    report("agent.finished", "/srv/app", { session: "app", time: new Date(clock - 60_000).toISOString() }),
  );
  assertEquals(held.state("app")?.agent_state, "waiting");
  assertEquals(held.changes(), 4);
});

Deno.test("agent state: each change is kept with its cause and reason, the last 50 per session", async () => {
  let clock = Date.parse("2024-01-02T00:00:00Z");
  await using held = await states(() => clock);
  const waiting = report("agent.waiting", "/srv/app", { session: "app" });
  held.agentStates.ingest({
    ...waiting,
    data: { ...waiting.data, hook: "Notification", reason: "permission" },
  });
  clock += 1000;
  held.agentStates.set("app", "running", { cause: "input" });
  clock += 1000;
  // The same state again changes nothing worth keeping.
  held.agentStates.set("app", "running", { cause: "input" });
  held.agentStates.endTurn("app", "exit");
  assertEquals(held.agentStates.history("app"), [
    { state: "waiting", reason: "permission", cause: "hook:Notification", time: "2024-01-02T00:00:00.000Z" },
    { state: "running", reason: null, cause: "input", time: "2024-01-02T00:00:01.000Z" },
    { state: "finished", reason: null, cause: "exit", time: "2024-01-02T00:00:02.000Z" },
  ]);
  // A finished turn is not ended again; a session at rest is left alone.
  held.agentStates.endTurn("app", "restart");
  assertEquals(held.agentStates.history("app").length, 3);
  assertEquals(held.agentStates.history("deep"), []);

  for (let i = 0; i < 60; i++) {
    clock += 1000;
    held.agentStates.set("app", i % 2 ? "running" : "waiting", { cause: `step-${i}`, reason: "input" });
  }
  const kept = held.agentStates.history("app");
  assertEquals(kept.length, 50);
  assertEquals([kept[0].cause, kept.at(-1)!.cause], ["step-10", "step-59"]);
  // Reason is kept only while waiting.
  assertEquals(kept.at(-1)!.reason, null);
  assertEquals(kept.at(-2)!.reason, "input");
  held.agentStates.forget("app");
  assertEquals(held.agentStates.history("app"), []);
});
