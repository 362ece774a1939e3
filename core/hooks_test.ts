import { assert, assertEquals } from "../tests/assert.ts";
import {
  DOCK_SETTINGS,
  eventVariables,
  fieldVariable,
  firstLine,
  gatesFor,
  type HookJob,
  hookMatches,
  type HookOutcome,
  HookRunner,
  hooksBody,
  hooksFor,
  hookTimeoutMs,
} from "./hooks.ts";
import { HooksFileWatcher } from "./hooks_file.ts";
import { SYSTEM_CLOCK } from "./clock.ts";
import type { EventBus } from "./events.ts";
import { MemoryLog } from "./log.ts";
import { FakeClock } from "../tests/fake_clock.ts";
import { DockError } from "../client/errors.ts";

Deno.test("hookMatches: exact, prefix, star; gates never match events", () => {
  assert(hookMatches("worktree.created", "worktree.created"));
  assert(!hookMatches("worktree.created", "worktree.removed"));
  assert(hookMatches("worktree.*", "worktree.removed"));
  assert(!hookMatches("worktree.*", "worktrees.x"));
  assert(!hookMatches("worktree.*", "worktree"));
  assert(hookMatches("*", "anything.at.all"));
  assert(!hookMatches("before:exec", "exec"));
  assert(!hookMatches("before:*", "exec"));
});

Deno.test("hooksFor skips a hook whose tool is the event's origin; gatesFor picks the action", () => {
  const hooks = [
    { on: "agent.*", run: "a" },
    { on: "agent.finished", run: "b", tool: "claude" },
    { on: "before:exec", run: "g" },
    { on: "before:exec", run: "h", tool: "ci" },
    { on: "before:session.send", run: "s" },
  ];
  assertEquals(hooksFor(hooks, { type: "agent.finished", origin: "claude" }).map((h) => h.run), ["a"]);
  assertEquals(hooksFor(hooks, { type: "agent.finished", origin: "codex" }).map((h) => h.run), ["a", "b"]);
  assertEquals(gatesFor(hooks, "exec", "api").map((h) => h.run), ["g", "h"]);
  assertEquals(gatesFor(hooks, "exec", "ci").map((h) => h.run), ["g"]);
});

Deno.test("hookTimeoutMs: 1m for hooks, 30s for gates, else the hook's own", () => {
  assertEquals(hookTimeoutMs({ on: "x", run: "" }), 60_000);
  assertEquals(hookTimeoutMs({ on: "before:exec", run: "" }), 30_000);
  assertEquals(hookTimeoutMs({ on: "x", run: "", timeout: "2s" }), 2000);
});

Deno.test("eventVariables: envelope, scalar fields, kept names stay", () => {
  const vars = eventVariables({
    id: 7,
    type: "agent.finished",
    time: "2026-01-01T00:00:00.000Z",
    origin: "claude",
    data: { path: "/w/a", agent: "claude", session_id: "s1", nested: { a: 1 }, "odd-key": 3, location: "x" },
  }, { box: "b1", keep: { DOCK_LOCATION: "app" } });
  assertEquals(vars.DOCK_EVENT_TYPE, "agent.finished");
  assertEquals(vars.DOCK_EVENT_ORIGIN, "claude");
  assertEquals(vars.DOCK_EVENT_ID, "7");
  assertEquals(vars.DOCK_EVENT_BOX, "b1");
  assertEquals(vars.DOCK_PATH, "/w/a");
  assertEquals(vars.DOCK_AGENT, "claude");
  assertEquals(vars.DOCK_SESSION_ID, "s1");
  assertEquals(vars.DOCK_ODD_KEY, "3");
  assertEquals(vars.DOCK_NESTED, undefined);
  assertEquals(vars.DOCK_LOCATION, undefined);
  assertEquals(JSON.parse(vars.DOCK_EVENT_DATA).nested, { a: 1 });
  assertEquals(fieldVariable("a.b"), "DOCK_A_B");
});

Deno.test("eventVariables: a data field never sets a variable dock reads as its settings", () => {
  const vars = eventVariables({
    id: 1,
    type: "x.y",
    time: "2026-01-01T00:00:00.000Z",
    data: {
      state_dir: "/tmp/evil",
      home: "/tmp/evil",
      bin: "/tmp/evil",
      agent_port: 1,
      event_type: "z",
      ok: 1,
    },
  });
  for (const name of ["DOCK_STATE_DIR", "DOCK_HOME", "DOCK_BIN", "DOCK_AGENT_PORT"]) {
    assertEquals(vars[name], undefined, name);
  }
  assertEquals(vars.DOCK_EVENT_TYPE, "x.y");
  assertEquals(vars.DOCK_OK, "1");
  assertEquals(JSON.parse(vars.DOCK_EVENT_DATA).state_dir, "/tmp/evil");
});

Deno.test("DOCK_SETTINGS: every DOCK_ variable the sources read is one, but those naming what an event is about", async () => {
  const about = new Set(["DOCK_LOCATION", "DOCK_WORKTREE_NAME", "DOCK_WORKTREE_PATH", "DOCK_SESSION"]);
  const read = new Set<string>();
  const root = new URL("../", import.meta.url);
  for (const dir of ["core", "daemon", "agent", "cli", "client", "plugins", "package"]) {
    for await (const entry of Deno.readDir(new URL(`${dir}/`, root))) {
      if (!entry.isFile || !entry.name.endsWith(".ts") || entry.name.endsWith("_test.ts")) continue;
      const text = await Deno.readTextFile(new URL(`${dir}/${entry.name}`, root));
      for (const match of text.matchAll(/(?:env\.get|FromEnv|env)\(\s*"(DOCK_[A-Z0-9_]+)"/g)) {
        read.add(match[1]);
      }
    }
  }
  assert(read.has("DOCK_STATE_DIR"), "the scan found the settings it must find");
  const missing = [...read].filter((name) => !DOCK_SETTINGS.has(name) && !about.has(name));
  assertEquals(missing, []);
});

Deno.test("firstLine: first non-empty line, trimmed and cut", () => {
  assertEquals(firstLine("\n  no exec on main  \nmore"), "no exec on main");
  assertEquals(firstLine(""), "");
  assertEquals(firstLine("x".repeat(400)).length, 300);
});

Deno.test("hooksBody: a wrong field is a 400 naming it", () => {
  assertEquals(hooksBody({ hooks: [{ on: "worktree.*", run: "true" }] }).hooks.length, 1);
  for (
    const bad of [{ hooks: [{ on: "nope nope", run: "x" }] }, { hooks: [{ on: "x" }] }, { hooks: 3 }, null]
  ) {
    try {
      hooksBody(bad);
      throw new Error("accepted");
    } catch (error) {
      assert(error instanceof DockError, String(error));
      assertEquals(error.status, 400);
      assertEquals(error.code, "invalid_hooks");
    }
  }
});

Deno.test("HooksFileWatcher: picks up edits, keeps the last good hooks when the file breaks", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/hooks.json`;
  const log = new MemoryLog();
  const watcher = new HooksFileWatcher(path, { checkMs: 0, clock: SYSTEM_CLOCK, log });
  assertEquals(watcher.current(), []);
  await Deno.writeTextFile(path, `{ // comments are fine\n "hooks": [{ "on": "*", "run": "true" }] }`);
  assertEquals(watcher.current().length, 1);
  await Deno.writeTextFile(path, `{ "hooks": [{ "on": "*" }] }`);
  assertEquals(watcher.current().length, 1);
  const state = watcher.state();
  assert(state.error?.includes(path), state.error);
  assert(state.error?.includes("run"), state.error);
  // Said once in the process's log, as a warning, naming the file.
  assertEquals(log.records.map((r) => [r.level, r.message.includes(path)]), [["warn", true]]);
  await watcher.write({ hooks: [{ on: "a", run: "1" }, { on: "b", run: "2" }] });
  assertEquals(watcher.current().map((h) => h.on), ["a", "b"]);
  assertEquals(watcher.state().error, undefined);
  await Deno.remove(path);
  assertEquals(watcher.current(), []);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("HooksFileWatcher: an edit by hand is announced at the next tick of its clock, not before", async () => {
  const dir = await Deno.makeTempDir();
  const path = `${dir}/hooks.json`;
  const published: string[] = [];
  const bus = { publish: (event: { type: string }) => published.push(event.type) } as unknown as EventBus;
  const clock = new FakeClock(0);
  // checkMs on the same clock: a use before it has passed reads no file.
  const watcher = new HooksFileWatcher(path, { checkMs: 1000, bus, clock, log: new MemoryLog() });
  watcher.watch(1000);
  try {
    await Deno.writeTextFile(path, `{ "hooks": [{ "on": "*", "run": "true" }] }`);
    assertEquals(watcher.current(), [], "not read again before checkMs");
    clock.advance(999);
    assertEquals(published, []);
    clock.advance(1);
    assertEquals(published, ["hooks.changed"]);
    assertEquals(watcher.current().length, 1);
    clock.advance(5000);
    assertEquals(published, ["hooks.changed"], "announced once");
    watcher.close();
    await Deno.writeTextFile(path, `{ "hooks": [] }`);
    clock.advance(5000);
    assertEquals(published, ["hooks.changed"], "a closed watch announces nothing");
  } finally {
    watcher.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("HookRunner: event on stdin, bounded concurrency, timeout kills the group, failures reported", async () => {
  const dir = await Deno.makeTempDir();
  const failures: { job: HookJob; outcome: HookOutcome }[] = [];
  let started = 0;
  const runner = new HookRunner({
    log: new MemoryLog(),
    concurrency: 2,
    onStart: () => started++,
    onFailure: (job, outcome) => failures.push({ job, outcome }),
  });
  const event = { id: 1, type: "t.x", time: new Date().toISOString(), data: { n: 1 } };
  const env = { PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin", OUT: dir };
  for (let i = 0; i < 5; i++) {
    runner.submit({
      hook: { on: "t.*", run: `cat > "$OUT/in-${i}.json"; echo $$ > "$OUT/pid-${i}"` },
      source: "test",
      event,
      env,
    });
  }
  assert(runner.stats().running <= 2);
  runner.submit({ hook: { on: "t.*", run: "exit 3" }, source: "test", event, env });
  runner.submit({
    hook: { on: "t.*", run: `sleep 30 & echo $! > "$OUT/child"; wait`, timeout: "300ms" },
    source: "test",
    event,
    env,
  });
  await runner.idle();
  assertEquals(started, 7);
  for (let i = 0; i < 5; i++) {
    assertEquals(JSON.parse(await Deno.readTextFile(`${dir}/in-${i}.json`)).type, "t.x");
  }
  assertEquals(failures.length, 2);
  const exit = failures.find((f) => !f.outcome.timedOut)!;
  assertEquals(exit.outcome.exitCode, 3);
  const timedOut = failures.find((f) => f.outcome.timedOut)!;
  assert(timedOut, "the sleeping hook timed out");
  // The shell's child went with the group.
  const child = Number(await Deno.readTextFile(`${dir}/child`));
  let alive = true;
  for (let i = 0; i < 50 && alive; i++) {
    try {
      const stat = await Deno.readTextFile(`/proc/${child}/stat`);
      alive = !/\) Z /.test(stat);
    } catch {
      alive = false;
    }
    if (alive) await new Promise((r) => setTimeout(r, 20));
  }
  assert(!alive, "the hook's child was killed with its group");
  assertEquals(runner.stats().failed, 2);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("HookRunner: the backlog is bounded (oldest dropped, counted)", async () => {
  const log = new MemoryLog();
  const runner = new HookRunner({ concurrency: 1, backlog: 3, log });
  const event = { type: "x", time: "" };
  for (let i = 0; i < 10; i++) runner.submit({ hook: { on: "x", run: "true" }, source: "t", event, env: {} });
  const stats = runner.stats();
  assertEquals(stats.queued, 3);
  assertEquals(stats.dropped, 6);
  // Said once, when it starts dropping, not once per run dropped.
  assertEquals(log.records, [{
    level: "warn",
    message: "hooks: more than 3 waiting; dropping the oldest",
    fields: undefined,
  }]);
  await runner.idle();
  assertEquals(runner.stats().started, 4);
  runner.close();
});

Deno.test("HookRunner: queued runs of a hook no longer wanted (removed from its file) are dropped", async () => {
  let wanted = true;
  const runner = new HookRunner({
    log: new MemoryLog(),
    concurrency: 1,
    // The file loses the hook as soon as its first run starts.
    onStart: () => wanted = false,
    stillWanted: () => wanted,
  });
  const event = { type: "x", time: "" };
  for (let i = 0; i < 5; i++) runner.submit({ hook: { on: "x", run: "true" }, source: "t", event, env: {} });
  await runner.idle();
  assertEquals([runner.stats().started, runner.stats().dropped], [1, 4]);
  runner.close();
});

Deno.test("HookRunner: the ten hooks one event matches all start at once by default (none waits for a slot)", async () => {
  const release: (() => void)[] = [];
  const started: string[] = [];
  const runner = new HookRunner({
    log: new MemoryLog(),
    // Each run lasts until the test lets it end: a slot frees only then.
    executor: {
      run: (hook) =>
        new Promise((resolve) => {
          started.push(hook.run!);
          release.push(() => resolve({ code: 0, timedOut: false, durationMs: 0, stderr: "" }));
        }),
    },
  });
  const event = { type: "x", time: "" };
  for (let i = 0; i < 10; i++) {
    runner.submit({ hook: { on: "x", run: `h${i}` }, source: "t", event, env: {} });
  }
  assertEquals(started, Array.from({ length: 10 }, (_, i) => `h${i}`), "started in their order, none queued");
  assertEquals([runner.stats().running, runner.stats().queued], [10, 0]);
  for (const end of release) end();
  await runner.idle();
  runner.close();
});
