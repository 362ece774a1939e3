import { DockError } from "../../client/errors.ts";
import { assertEquals } from "../../tests/assert.ts";
import { boxTables } from "../../tests/route_tables.ts";
import { sessionRoutes, type SessionRoutesBackend } from "./sessions.ts";

// sessions_test.ts holds the gate order of the creating routes; this file walks every route of the
// table once to its success, and through the refusals each answers before the backend acts.

/** The session routes over a fake session set with one session, `s1`; the gate refuses the text `no`. */
function sessionsApp() {
  const calls: string[] = [];
  const session = { name: "s1", agent: "claude", agent_state: "idle" };
  const known = (name: string) => {
    if (name !== "s1") throw new DockError("not_found", `no session ${name}`, { status: 404 });
    return session;
  };
  const backend = {
    bus: { publish: () => ({}) },
    worktrees: { target: () => ({ location: "app", name: "main" }) },
    sessions: {
      list: () => [session],
      get: known,
      explain: (name: string) => ({ ...known(name), why: "idle since the last turn" }),
      program: () => Promise.resolve({ agent: null, command: "htop" }),
      create: (request: { location: string }) => {
        calls.push(`create ${request.location}`);
        return Promise.resolve(session);
      },
      remove: (name: string, origin: string) => {
        calls.push(`remove ${known(name).name} ${origin}`);
        return Promise.resolve(session);
      },
      screen: (name: string, history: number) => Promise.resolve(`${known(name).name} screen ${history}`),
      send: (name: string, text: string, enter: boolean) => {
        calls.push(`send ${known(name).name} ${text} ${enter}`);
        return Promise.resolve(session);
      },
      keys: (name: string, keys: string[]) => {
        calls.push(`keys ${known(name).name} ${keys.join(",")}`);
        return Promise.resolve(session);
      },
      answer: (name: string, answer: string) => {
        calls.push(`answer ${name} ${answer}`);
        return Promise.resolve(session);
      },
      wait: (name: string, options: { states: string[]; timeoutMs: number; after?: Date }) => {
        calls.push(`wait ${name} ${options.states} ${options.timeoutMs} ${options.after?.toISOString()}`);
        return Promise.resolve({ ...session, agent_state: "finished" });
      },
      looked: () => {},
      typed: () => {},
      interrupted: () => {},
    },
    sendLedger: { known: () => false },
    tasks: {
      check: () => {},
      create: () => Promise.resolve({ worktree: {}, session }),
    },
    tmux: { socket: "/nowhere" },
  } as unknown as SessionRoutesBackend;
  const tables = boxTables([sessionRoutes(backend)], {
    refuse: (_action, target) => target.text === "no" || target.answer === "always",
  });
  return { ...tables, calls };
}

Deno.test("session routes: every route to its success (attach: its refusal of a plain request)", async () => {
  const { app, gates, calls } = sessionsApp();
  assertEquals((await app.call("GET", "/sessions")).body.length, 1);
  assertEquals(
    (await app.call("POST", "/sessions", { json: { location: "app", command: "htop" } })).status,
    201,
  );
  assertEquals(
    (await app.call("POST", "/tasks", { json: { location: "app", name: "feat", command: "htop" } })).status,
    201,
  );
  assertEquals((await app.call("GET", "/sessions/s1")).body.why, "idle since the last turn");
  assertEquals((await app.call("GET", "/sessions/s1/screen?history=10")).body, { screen: "s1 screen 10" });
  assertEquals(
    (await app.call("POST", "/sessions/s1/send", { json: { text: "go", enter: false } })).status,
    200,
  );
  assertEquals(
    (await app.call("POST", "/sessions/s1/keys", { json: { keys: ["Escape", "y"] } })).status,
    200,
  );
  assertEquals((await app.call("POST", "/sessions/s1/answer", { json: { answer: "yes" } })).status, 200);
  const waited = await app.call(
    "GET",
    "/sessions/s1/wait?for=finished&timeout=5s&after=2030-01-01T00:00:00Z",
  );
  assertEquals(waited.body.agent_state, "finished");
  assertEquals((await app.call("DELETE", "/sessions/s1")).status, 200);
  // Only a real listener upgrades a WebSocket (tests/cli_attach_test.ts): in memory, a plain GET is refused.
  const attach = await app.call("GET", "/sessions/s1/attach");
  assertEquals(attach.status >= 400 && attach.status < 500, true);
  assertEquals(calls, [
    "create app",
    "send s1 go false",
    "keys s1 Escape,y",
    "answer s1 yes",
    "wait s1 finished 5000 2030-01-01T00:00:00.000Z",
    "remove s1 api",
  ]);
  assertEquals(gates.map((g) => g.split(" ")[0]), [
    "session.create",
    "worktree.create",
    "session.create",
    "session.send",
    "session.send",
    "session.send",
  ]);
  app.assertEveryRouteSucceeded(["GET /sessions/:name/attach"]);
});

Deno.test("session routes: refusals (gates, strict bodies, keys, wait's query, unknown sessions)", async () => {
  const { app, calls } = sessionsApp();
  assertEquals(
    (await app.refused("POST", "/sessions/s1/send", 403, "gate_refused", { json: { text: "no" } })).entered,
    0,
  );
  assertEquals(
    (await app.refused("POST", "/sessions/s1/answer", 403, "gate_refused", { json: { answer: "always" } }))
      .entered,
    0,
  );
  assertEquals(
    (await app.refused("POST", "/sessions/s9/answer", 404, "not_found", { json: { answer: "yes" } })).entered,
    0,
  );
  await app.refusesUnknownField("POST", "/sessions", { location: "app", command: "htop" });
  await app.refusesUnknownField("POST", "/sessions/s1/send", { text: "go" });
  await app.refusesUnknownField("POST", "/sessions/s1/keys", { keys: ["y"] });
  await app.refusesUnknownField("POST", "/sessions/s1/answer", { answer: "yes" });
  for (const keys of [[], ["\u0003"], ["NotAKey"]]) {
    assertEquals(
      (await app.call("POST", "/sessions/s1/keys", { json: { keys } })).status,
      400,
      JSON.stringify(keys),
    );
  }
  assertEquals(
    (await app.call("POST", "/sessions/s1/send", { json: { text: "go", key: "a b" } })).status,
    400,
  );
  assertEquals((await app.call("POST", "/sessions/s1/answer", { json: { answer: "maybe" } })).status, 400);
  for (const query of ["for=asleep", "timeout=10ms", "timeout=2h", "after=yesterday"]) {
    assertEquals((await app.call("GET", `/sessions/s1/wait?${query}`)).status, 400, query);
  }
  assertEquals((await app.call("GET", "/sessions/s9/wait")).status, 404);
  assertEquals((await app.call("GET", "/sessions/s1/screen?history=50001")).status, 400);
  assertEquals((await app.call("GET", "/sessions/s9")).status, 404);
  assertEquals((await app.call("GET", "/sessions/s9/attach")).status, 404);
  assertEquals(calls, []);
});
