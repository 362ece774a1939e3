import { Hono } from "hono";
import { z } from "zod";
import { DockError } from "../client/errors.ts";
import { BOX_EVENT } from "../client/schemas.ts";
import { assertEquals, assertRejects, assertThrows } from "../tests/assert.ts";
import type { GateContext } from "./hooks.ts";
import { body, errorResponse, json, mount, readLimited, RouteTable } from "./http.ts";
import { MemoryLog, STDERR_LOG } from "./log.ts";

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
  app.onError((error) => errorResponse(error, STDERR_LOG));
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

/** An app whose one route answers the body it parsed with `schema`. */
function echo(schema: z.ZodType) {
  const app = new Hono();
  app.onError((error) => errorResponse(error, STDERR_LOG));
  app.post("/", async (c) => json(await body(c, schema)));
  return async (value: unknown) => {
    const response = await app.request("/", { method: "POST", body: JSON.stringify(value) });
    return { status: response.status, body: await response.json() };
  };
}

Deno.test("body: an object schema that would drop unknown fields is made strict", async () => {
  const post = echo(z.object({ command: z.string(), timeout: z.string().optional() }));
  assertEquals(await post({ command: "true" }), { status: 200, body: { command: "true" } });
  const answer = await post({ command: "true", timout: "5s" });
  assertEquals(answer.status, 400);
  assertEquals(answer.body.error, {
    code: "invalid_request",
    message: 'timout: unknown field (did you mean "timeout"?)',
    field: "timout",
  });
  const optional = echo(z.object({ mode: z.string() }).optional());
  assertEquals(
    (await optional({ mod: "x" })).body.error.message,
    'mod: unknown field (did you mean "mode"?)',
  );
  // Far from every known field: the known ones are listed instead.
  assertEquals(
    (await post({ command: "x", colour: 1 })).body.error.message,
    "colour: unknown field; known fields: command, timeout",
  );
});

Deno.test("body: the first problem in the document's order, named by its path", async () => {
  const post = echo(z.strictObject({ a: z.string(), b: z.strictObject({ c: z.number() }) }));
  assertEquals((await post({ b: { c: "x" }, a: 1 })).body.error.message, 'b.c: must be a number, got "x"');
  assertEquals(
    (await post({ a: "x", b: { dd: 1 } })).body.error.message,
    "b.dd: unknown field; known fields: c",
  );
  assertEquals((await post(undefined)).body.error, {
    code: "invalid_request",
    message: "body: required",
    field: "body",
  });
});

Deno.test("body: of a union, the option the caller meant is reported", async () => {
  const post = echo(BOX_EVENT);
  const report = {
    type: "agent.finished",
    origin: "claude",
    data: { path: "/w", agent: "claude", session_id: "s" },
  };
  assertEquals((await post(report)).status, 200);
  assertEquals(
    (await post({ ...report, sesion: "main" })).body.error.message,
    'sesion: unknown field (did you mean "session"?)',
  );
  assertEquals(
    (await post({ ...report, data: { path: "/w", agent: "claude", sesion_id: "s" } })).body.error.message,
    'data.sesion_id: unknown field (did you mean "session_id"?)',
  );
  assertEquals((await post({ ...report, data: { path: "/w" } })).body.error.message, "data.agent: required");
  assertEquals(
    (await post({ type: "build.done", dta: {} })).body.error.message,
    'dta: unknown field (did you mean "data"?)',
  );
});

Deno.test("errorResponse: an unexpected error is a 500 said to the given log; a DockError is not logged", async () => {
  const log = new MemoryLog();
  const failed = errorResponse(new Error("disk on fire"), log);
  assertEquals(failed.status, 500);
  assertEquals((await failed.json()).error, { code: "internal", message: "disk on fire" });
  assertEquals(log.records.length, 1);
  assertEquals(log.records[0].level, "error");
  assertEquals(log.records[0].message.startsWith("unexpected error: Error: disk on fire"), true);
  const refused = errorResponse(new DockError("not_found", "no such thing", { status: 404 }), log);
  assertEquals(refused.status, 404);
  await refused.body?.cancel();
  assertEquals(log.records.length, 1, "an answered refusal is not an error of the process");
});

Deno.test("readLimited: a body whole under its limit; past it, refused at the chunk that passes and the rest cancelled", async () => {
  const chunks = (cancelled: string[], parts = 3) => {
    let sent = 0;
    return new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent === parts) return controller.close();
        controller.enqueue(new TextEncoder().encode(`part${sent++};`));
      },
      cancel() {
        cancelled.push(`after ${sent}`);
      },
    });
  };
  const kept: string[] = [];
  const whole = await readLimited(chunks(kept), 100, () => new Error("too large"));
  assertEquals([new TextDecoder().decode(whole), kept], ["part0;part1;part2;", []]);
  assertEquals((await readLimited(null, 100, () => new Error("too large"))).length, 0);

  const cancelled: string[] = [];
  // Six parts of 6 bytes: the third passes 12, and the stream, not yet at its end, is cancelled once.
  await assertRejects(
    () => readLimited(chunks(cancelled, 6), 12, () => new Error("too large")),
    Error,
    "too large",
  );
  assertEquals(cancelled.length, 1);
});

Deno.test("body: past its limit a 413, whether the body declares its length or streams without one", async () => {
  const app = new Hono();
  app.onError((error) => errorResponse(error, STDERR_LOG));
  app.post("/", async (c) => json(await body(c, NOTE, { limit: 64 })));
  const text = JSON.stringify({ text: "x".repeat(100) });
  const streamed = () =>
    new ReadableStream<Uint8Array>({
      start(controller) {
        for (let at = 0; at < text.length; at += 16) {
          controller.enqueue(new TextEncoder().encode(text.slice(at, at + 16)));
        }
        controller.close();
      },
    });
  for (
    const init of [
      { body: text, headers: { "content-length": String(text.length) } },
      { body: streamed(), duplex: "half" },
    ]
  ) {
    const response = await app.request("/", { method: "POST", ...init } as RequestInit);
    assertEquals([response.status, (await response.json()).error.code], [413, "too_large"]);
  }
  const small = await app.request("/", { method: "POST", body: JSON.stringify({ text: "ok" }) });
  assertEquals([small.status, await small.json()], [200, { text: "ok" }]);
});
