import { Hono } from "hono";
import { z } from "zod";
import { DockError } from "../client/errors.ts";
import { assertEquals, assertThrows } from "../tests/assert.ts";
import type { GateContext } from "./hooks.ts";
import { body, errorResponse, json, mount, RouteTable } from "./http.ts";

const NOTE = z.object({ text: z.string(), secret: z.boolean().optional() });

/** One gated route that records what ran, mounted with a gate that refuses `secret` notes. */
function notesApp() {
  const ran: string[] = [];
  const gated: { action: string; target: Record<string, unknown>; context: GateContext }[] = [];
  const table = new RouteTable("notes").route({
    method: "POST",
    path: "/notes/:book",
    input: async (c) => {
      ran.push("input");
      return await body(c, NOTE);
    },
    gates: [{
      action: "config.change",
      describe: (note, c) => note.text === "" ? null : { target: { ...note }, location: c.req.param("book") },
    }],
    handler: (_c, note) => {
      ran.push("handler");
      return json(note, 201);
    },
  });
  const app = new Hono();
  app.onError((error) => errorResponse(error));
  mount(app, "/v1", [table], {
    gate: (action, target, context) => {
      ran.push("gate");
      gated.push({ action, target, context });
      if (target.secret) throw new DockError("gate_refused", "no secrets", { status: 403 });
      return Promise.resolve();
    },
  });
  const post = async (note: unknown) => {
    const response = await app.request(
      new Request("http://box/v1/notes/app", {
        method: "POST",
        headers: { "x-dock-origin": "my-tool" },
        body: JSON.stringify(note),
      }),
    );
    return { status: response.status, body: await response.json() };
  };
  return { ran, gated, post };
}

Deno.test("mount: a gated route reads its input once, runs its gate, then its handler", async () => {
  const notes = notesApp();
  const answer = await notes.post({ text: "hi" });
  assertEquals(answer, { status: 201, body: { text: "hi" } });
  assertEquals(notes.ran, ["input", "gate", "handler"]);
  assertEquals(notes.gated, [{
    action: "config.change",
    target: { text: "hi" },
    context: { origin: "my-tool", location: "app", worktree: undefined },
  }]);
});

Deno.test("mount: a refusing gate answers and the handler never runs", async () => {
  const notes = notesApp();
  const answer = await notes.post({ text: "hi", secret: true });
  assertEquals([answer.status, answer.body.error.code], [403, "gate_refused"]);
  assertEquals(notes.ran, ["input", "gate"]);
});

Deno.test("mount: a bad body answers 400 before the gate; a request the gate does not concern skips it", async () => {
  const notes = notesApp();
  const bad = await notes.post({ text: 1 });
  assertEquals([bad.status, bad.body.error.code], [400, "invalid_request"]);
  assertEquals(notes.ran, ["input"]);
  notes.ran.length = 0;
  assertEquals((await notes.post({ text: "" })).status, 201);
  assertEquals(notes.ran, ["input", "handler"]);
});

Deno.test("mount: a gated route mounted without a gate runner is a wiring error", () => {
  const table = new RouteTable("exec").route({
    method: "POST",
    path: "/exec",
    input: () => undefined,
    gates: [{ action: "exec", describe: () => ({ target: {} }) }],
    handler: () => json(null),
  });
  assertThrows(() => mount(new Hono(), "/v1", [table]), Error, "POST /exec is gated (exec)");
});

Deno.test("route table: the same method and path twice throws", () => {
  const table = new RouteTable("t").add("GET", "/x", () => json(null));
  assertThrows(
    () => table.route({ method: "GET", path: "/x", input: () => 1, handler: () => json(null) }),
    Error,
    "duplicate route GET /x",
  );
});
