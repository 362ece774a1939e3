import { join } from "node:path";
import { assert, assertEquals, assertMatch } from "../tests/assert.ts";
import { spoolDir } from "../daemon/spool.ts";
import { isoTime, type PayloadReader, runHook } from "./hook.ts";

const ROOT = new URL("..", import.meta.url).pathname;
const FIXTURES = join(ROOT, "tests", "fixtures", "hooks");
const CLAUDE_SESSION = "7b1d3f5e-2c4a-4e8b-9f60-1a2b3c4d5e6f";
const WORKTREE = "/home/dev/work/shop/fix-login";

function fixture(name: string): string {
  return Deno.readTextFileSync(join(FIXTURES, `${name}.json`));
}

/** A stdin that yields `text`, then ends, or stays open forever like a tool that never closes it. */
function stdin(text: string, options: { close?: boolean } = {}): PayloadReader {
  let rest = new TextEncoder().encode(text);
  return {
    read(buffer: Uint8Array): Promise<number | null> {
      if (rest.length === 0) return options.close === false ? new Promise(() => {}) : Promise.resolve(null);
      const count = Math.min(buffer.length, rest.length);
      buffer.set(rest.subarray(0, count));
      rest = rest.subarray(count);
      return Promise.resolve(count);
    },
  };
}

/** Runs `fn` with a fresh state directory in DOCK_STATE_DIR and DOCK_SESSION set, then restores both. */
async function withState(fn: (state: string) => Promise<void>): Promise<void> {
  const saved = { state: Deno.env.get("DOCK_STATE_DIR"), session: Deno.env.get("DOCK_SESSION") };
  const state = await Deno.makeTempDir({ prefix: "dock-hook-" });
  Deno.env.set("DOCK_STATE_DIR", state);
  Deno.env.set("DOCK_SESSION", "main");
  try {
    await fn(state);
  } finally {
    for (const [key, value] of [["DOCK_STATE_DIR", saved.state], ["DOCK_SESSION", saved.session]]) {
      if (value === undefined) Deno.env.delete(key!);
      else Deno.env.set(key!, value);
    }
    await Deno.remove(state, { recursive: true });
  }
}

async function spooled(state: string): Promise<{ names: string[]; bodies: Record<string, unknown>[] }> {
  const names: string[] = [];
  try {
    for await (const entry of Deno.readDir(spoolDir(state))) names.push(entry.name);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  names.sort();
  const bodies = names.map((name) => JSON.parse(Deno.readTextFileSync(join(spoolDir(state), name))));
  return { names, bodies };
}

function assertNoText(text: string): void {
  assert(!text.includes("SECRET-"), `private text leaked: ${text}`);
  assert(!text.includes("transcript"), `transcript path leaked: ${text}`);
}

interface Received {
  method: string;
  path: string;
  origin: string | null;
  body: Record<string, unknown>;
}

/** A daemon stand-in on `<state>/box/dockd.sock` that records what it is sent. */
async function fakeDaemon(state: string, status = 201) {
  await Deno.mkdir(join(state, "box"), { recursive: true });
  const received: Received[] = [];
  const { promise: listening, resolve } = Promise.withResolvers<void>();
  const server = Deno.serve(
    { path: join(state, "box", "dockd.sock"), onListen: () => resolve() },
    async (request) => {
      received.push({
        method: request.method,
        path: new URL(request.url).pathname,
        origin: request.headers.get("x-dock-origin"),
        body: await request.json(),
      });
      return Response.json({ id: received.length }, { status });
    },
  );
  await listening;
  return { received, close: () => server.shutdown() };
}

Deno.test("runHook spools the event when no daemon listens, without the prompt", async () => {
  await withState(async (state) => {
    const before = Date.now();
    await runHook(["claude", "UserPromptSubmit"], { stdin: stdin(fixture("claude_user_prompt_submit")) });
    const { names, bodies } = await spooled(state);
    assertEquals(names.length, 1);
    assertMatch(names[0], /^\d{15}-\d+-[a-z0-9]+\.json$/);
    const [body] = bodies;
    assertEquals({ ...body, time: undefined }, {
      type: "agent.started",
      origin: "claude",
      data: { path: WORKTREE, agent: "claude", session_id: CLAUDE_SESSION, hook: "UserPromptSubmit" },
      session: "main",
      time: undefined,
    });
    const time = Date.parse(String(body.time));
    assert(time >= before - 1000 && time <= Date.now() + 1000, `odd time ${body.time}`);
    assertNoText(Deno.readTextFileSync(join(spoolDir(state), names[0])));
    assertEquals((await Deno.stat(spoolDir(state))).mode! & 0o777, 0o700);
  });
});

Deno.test("runHook posts the event to the daemon's socket", async () => {
  await withState(async (state) => {
    const daemon = await fakeDaemon(state);
    try {
      await runHook(["claude", "Stop"], { stdin: stdin(fixture("claude_stop")) });
    } finally {
      await daemon.close();
    }
    assertEquals(daemon.received.length, 1);
    const [request] = daemon.received;
    assertEquals([request.method, request.path, request.origin], ["POST", "/v1/events", "claude"]);
    assertEquals(request.body.type, "agent.finished");
    assertEquals(request.body.origin, "claude");
    assertEquals(request.body.session, "main");
    assertEquals(request.body.data, {
      path: WORKTREE,
      agent: "claude",
      session_id: CLAUDE_SESSION,
      hook: "Stop",
    });
    assertNoText(JSON.stringify(request.body));
    assertEquals((await spooled(state)).names, []);
  });
});

Deno.test("runHook posts a payload beyond ASCII whole (its length counted in bytes)", async () => {
  await withState(async (state) => {
    const daemon = await fakeDaemon(state);
    const path = "/home/dév/wörk/日本-🚀";
    try {
      const payload = JSON.stringify({
        session_id: "s-ü",
        cwd: path,
        hook_event_name: "Stop",
        prompt: "SECRET-ß",
      });
      await runHook(["claude", "Stop"], { stdin: stdin(payload) });
    } finally {
      await daemon.close();
    }
    assertEquals(daemon.received.map((r) => r.body.data), [{
      path,
      agent: "claude",
      session_id: "s-ü",
      hook: "Stop",
    }]);
  });
});

Deno.test("isoTime is Date's toISOString, without a Date", () => {
  const samples = [
    0,
    1,
    999,
    86_399_999,
    951_782_400_000, // 2000-02-29
    951_868_799_999,
    4_107_542_400_000, // 2100-03-01
    253_402_300_799_999, // 9999-12-31T23:59:59.999Z
    -62_167_219_200_000, // 0000-01-01
    Date.now(),
  ];
  for (let i = 0; i < 2000; i++) samples.push(Math.floor(Math.random() * 253_402_300_799_999));
  for (const ms of samples) assertEquals(isoTime(ms), new Date(ms).toISOString(), String(ms));
});

Deno.test("runHook leaves out the session when DOCK_SESSION is unset", async () => {
  await withState(async (state) => {
    Deno.env.delete("DOCK_SESSION");
    const daemon = await fakeDaemon(state);
    try {
      await runHook(["claude", "SessionStart"], { stdin: stdin(fixture("claude_session_start")) });
    } finally {
      await daemon.close();
    }
    assertEquals(daemon.received[0].body.type, "agent.ready");
    assert(!("session" in daemon.received[0].body));
  });
});

Deno.test("runHook spools when the daemon answers with an error", async () => {
  await withState(async (state) => {
    const daemon = await fakeDaemon(state, 500);
    try {
      await runHook(["claude", "Stop"], { stdin: stdin(fixture("claude_stop")) });
    } finally {
      await daemon.close();
    }
    assertEquals(daemon.received.length, 1);
    assertEquals((await spooled(state)).bodies.map((body) => body.type), ["agent.finished"]);
  });
});

Deno.test("runHook gives up on a daemon that never answers and spools", async () => {
  await withState(async (state) => {
    await Deno.mkdir(join(state, "box"), { recursive: true });
    const listener = Deno.listen({ transport: "unix", path: join(state, "box", "dockd.sock") });
    const held: Deno.Conn[] = [];
    const accepting = (async () => {
      for await (const conn of listener) held.push(conn);
    })();
    const started = performance.now();
    try {
      await runHook(["claude", "Stop"], { stdin: stdin(fixture("claude_stop")) });
    } finally {
      listener.close();
      await accepting.catch(() => {});
      for (const conn of held) conn.close();
    }
    const elapsed = performance.now() - started;
    assert(elapsed < 1000, `runHook took ${elapsed.toFixed(0)} ms`);
    assertEquals(held.length, 1);
    assertEquals((await spooled(state)).bodies.map((body) => body.type), ["agent.finished"]);
  });
});

Deno.test("runHook does not wait for a stdin the tool keeps open", async () => {
  await withState(async (state) => {
    let started = performance.now();
    await runHook(["claude", "Stop"], { stdin: stdin(fixture("claude_stop"), { close: false }) });
    assert(performance.now() - started < 150, "a complete payload should end the read");
    started = performance.now();
    await runHook(["claude", "Stop"], { stdin: stdin("", { close: false }) });
    const elapsed = performance.now() - started;
    assert(elapsed < 1000, `runHook took ${elapsed.toFixed(0)} ms`);
    const { bodies } = await spooled(state);
    assertEquals(bodies.map((body) => (body.data as Record<string, unknown>).session_id), [
      CLAUDE_SESSION,
      null,
    ]);
  });
});

Deno.test("runHook keeps the identifiers of a payload cut at the size cap", async () => {
  await withState(async (state) => {
    const payload = JSON.parse(fixture("claude_user_prompt_submit"));
    payload.prompt = "SECRET-" + "x".repeat(1_200_000);
    await runHook(["claude", "UserPromptSubmit"], { stdin: stdin(JSON.stringify(payload)) });
    const { names, bodies } = await spooled(state);
    assertEquals(bodies[0].data, {
      path: WORKTREE,
      agent: "claude",
      session_id: CLAUDE_SESSION,
      hook: "UserPromptSubmit",
    });
    assertNoText(Deno.readTextFileSync(join(spoolDir(state), names[0])));
  });
});

Deno.test("runHook reads Codex's notify payload from the last argument", async () => {
  await withState(async (state) => {
    const never: PayloadReader = { read: () => Promise.reject(new Error("stdin must not be read")) };
    await runHook(["codex", "notify", fixture("codex_notify")], { stdin: never });
    const { names, bodies } = await spooled(state);
    assertEquals(bodies, [{
      type: "agent.finished",
      origin: "codex",
      data: {
        path: WORKTREE,
        agent: "codex",
        session_id: "019a7c2e-5b1d-7f30-9c8e-2d4f6a8b0c1e",
        hook: "notify",
      },
      session: "main",
      time: bodies[0].time,
    }]);
    assertNoText(Deno.readTextFileSync(join(spoolDir(state), names[0])));
  });
});

Deno.test("runHook does nothing for events dock ignores and never throws", async () => {
  await withState(async (state) => {
    await runHook(["claude", "Notification"], { stdin: stdin(fixture("claude_notification_idle")) });
    await runHook(["claude", "SessionEnd"], { stdin: stdin("{") });
    await runHook(["nosuchtool", "Stop"], { stdin: stdin("{}") });
    await runHook([], { stdin: stdin("") });
    await runHook(["claude", "Stop"], { stdin: { read: () => Promise.reject(new Error("EIO")) } });
    assertEquals((await spooled(state)).names, []);
  });
});

Deno.test("runHook never fails when the state directory cannot be written", async () => {
  await withState(async (state) => {
    await Deno.writeTextFile(join(state, "box"), "a file where the folder should be");
    await runHook(["claude", "Stop"], { stdin: stdin(fixture("claude_stop")) });
  });
});

async function runCli(args: string[], input: string, state: string, options: { keepOpen?: boolean } = {}) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--cached-only", join(ROOT, "tests", "fixtures", "hook_cli.ts"), ...args],
    env: { DOCK_STATE_DIR: state, DOCK_SESSION: "main", NO_COLOR: "1" },
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  await writer.write(new TextEncoder().encode(input));
  if (!options.keepOpen) await writer.close();
  const output = await child.output();
  if (options.keepOpen) await writer.close().catch(() => {});
  const decoder = new TextDecoder();
  return { code: output.code, stdout: decoder.decode(output.stdout), stderr: decoder.decode(output.stderr) };
}

Deno.test("dock hook prints {} for Cursor and nothing else", async () => {
  await withState(async (state) => {
    const result = await runCli(["cursor", "stop"], fixture("cursor_stop"), state);
    assertEquals(result.code, 0);
    assertMatch(result.stdout, /^\{\}\n?$/);
    assertEquals(result.stderr, "");
    assertEquals((await spooled(state)).bodies.map((body) => body.origin), ["cursor"]);
  });
});

Deno.test("dock hook prints nothing at all for Claude, even with stdin left open", async () => {
  await withState(async (state) => {
    for (const keepOpen of [false, true]) {
      const started = performance.now();
      const result = await runCli(["claude", "Stop"], fixture("claude_stop"), state, { keepOpen });
      assertEquals(result, { code: 0, stdout: "", stderr: "" });
      const elapsed = performance.now() - started;
      assert(elapsed < 3000, `dock hook took ${elapsed.toFixed(0)} ms`);
    }
    const result = await runCli(["claude", "Stop"], "not json at all", state);
    assertEquals(result, { code: 0, stdout: "", stderr: "" });
    assertEquals((await spooled(state)).names.length, 3);
  });
});
