import { Hono } from "hono";
import { DockError, notFound } from "../../client/errors.ts";
import type { Session, TaskRequest } from "../../client/wire.ts";
import { errorResponse, mount } from "../../core/http.ts";
import { assertEquals } from "../../tests/assert.ts";
import { sessionRoutes, type SessionRoutesBackend } from "./sessions.ts";
import { STDERR_LOG } from "../../core/log.ts";

const SESSION: Session = {
  name: "s1",
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

/** The session routes in memory; the gate refuses any prompt that says "refuse", and any such command. */
function sessionsApp() {
  const calls: string[] = [];
  const targets: Record<string, unknown>[] = [];
  const backend = {
    bus: { publish: () => ({ type: "", time: "", data: {} }) },
    worktrees: { target: () => ({ location: "app", name: "feat" }) },
    sessions: {
      program: (_location: string, request: { agent?: string; command?: string }) => {
        if (request.agent === "ghost") throw new DockError("unknown_agent", "agent", { status: 422 });
        return Promise.resolve(
          request.agent
            ? { agent: request.agent, command: `${request.agent} --preset` }
            : { agent: null, command: request.command ?? null },
        );
      },
      create: (request: { location: string }) => {
        calls.push(`session ${request.location}`);
        return Promise.resolve(SESSION);
      },
      send: (name: string, text: string, enter: boolean, _origin: string, options: { key?: string }) => {
        calls.push(`send ${name} ${text} ${enter} ${options.key}`);
        return Promise.resolve(SESSION);
      },
    },
    sendLedger: { known: (key: string) => key === "old" },
    tasks: {
      check: (request: TaskRequest) => {
        if (!request.agent && !request.command) {
          throw new DockError("invalid_request", "agent", { status: 400 });
        }
        if (request.location !== "app") throw notFound("location", request.location);
      },
      create: (request: TaskRequest) => {
        calls.push(`task ${request.name}`);
        return Promise.resolve({ worktree: {}, session: SESSION });
      },
    },
    tmux: { socket: "/nowhere" },
  } as unknown as SessionRoutesBackend;
  const app = new Hono();
  app.onError((error) => errorResponse(error, STDERR_LOG));
  mount(app, "/v1", [sessionRoutes(backend)], {
    gate: (action, target, context) => {
      calls.push(`gate ${action} ${context.location ?? "-"}`);
      targets.push(target);
      if (target.text === "refuse") throw new DockError("gate_refused", "refused", { status: 403 });
      if (String(target.command).includes("refuse")) {
        throw new DockError("gate_refused", "refused", { status: 403 });
      }
      return Promise.resolve();
    },
  });
  const post = async (path: string, body: unknown) =>
    (await app.request(new Request(`http://box/v1${path}`, { method: "POST", body: JSON.stringify(body) })))
      .status;
  return { calls, targets, post };
}

Deno.test("tasks route: the worktree gate, the session's, then the first prompt's, then the task", async () => {
  const app = sessionsApp();
  assertEquals(
    await app.post("/tasks", { location: "app", name: "feat", agent: "claude", prompt: "go" }),
    201,
  );
  assertEquals(app.calls, [
    "gate worktree.create app",
    "gate session.create app",
    "gate session.send app",
    "task feat",
  ]);
  // The session gate sees the preset's command, the worktree the task makes, and the prompt.
  assertEquals(app.targets[1], {
    session: null,
    location: "app",
    worktree: "feat",
    agent: "claude",
    command: "claude --preset",
    prompt: "go",
  });
});

Deno.test("sessions route: the session gate, then the first prompt's; a refused command starts nothing", async () => {
  const app = sessionsApp();
  assertEquals(await app.post("/sessions", { location: "app", command: "htop" }), 201);
  assertEquals(await app.post("/sessions", { location: "app", agent: "claude", prompt: "go" }), 201);
  assertEquals(await app.post("/sessions", { location: "app", command: "refuse me" }), 403);
  assertEquals(await app.post("/sessions", { location: "app", agent: "ghost" }), 422);
  assertEquals(app.calls, [
    "gate session.create app",
    "session app",
    "gate session.create app",
    "gate session.send app",
    "session app",
    "gate session.create app",
  ]);
  assertEquals(app.targets[0], {
    session: null,
    location: "app",
    worktree: "feat",
    agent: null,
    command: "htop",
    prompt: undefined,
  });
});

Deno.test("tasks route: no prompt, no send gate; a refused prompt or command makes nothing; a bad request runs no gate", async () => {
  const app = sessionsApp();
  assertEquals(await app.post("/tasks", { location: "app", name: "a", agent: "claude" }), 201);
  assertEquals(
    await app.post("/tasks", { location: "app", name: "b", agent: "claude", prompt: "refuse" }),
    403,
  );
  assertEquals(await app.post("/tasks", { location: "app", name: "c" }), 400);
  assertEquals(await app.post("/tasks", { location: "web", name: "d", agent: "claude" }), 404);
  assertEquals(await app.post("/tasks", { location: "app", name: "e", command: "refuse me" }), 403);
  assertEquals(await app.post("/tasks", { location: "app", name: "f", agent: "ghost" }), 422);
  assertEquals(app.calls, [
    "gate worktree.create app",
    "gate session.create app",
    "task a",
    "gate worktree.create app",
    "gate session.create app",
    "gate session.send app",
    "gate worktree.create app",
    "gate session.create app",
  ]);
});

Deno.test("send route: gated unless its key was sent before (a replay is not a new send)", async () => {
  const app = sessionsApp();
  assertEquals(await app.post("/sessions/s1/send", { text: "hi", key: "new" }), 200);
  assertEquals(await app.post("/sessions/s1/send", { text: "refuse", key: "old" }), 200);
  assertEquals(await app.post("/sessions/s1/send", { text: "refuse", enter: false }), 403);
  assertEquals(app.calls, [
    "gate session.send -",
    "send s1 hi true new",
    "send s1 refuse true old",
    "gate session.send -",
  ]);
});
