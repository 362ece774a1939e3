/**
 * Whole-system tests of hooks and `before:` gates: a real dockd (and a real laptop agent) running the
 * person's hooks files and repository configs with real shells.
 */
import { join } from "node:path";
import { assert, assertEquals, assertRejects, assertStringIncludes } from "./assert.ts";
import { AgentClient } from "../client/agent.ts";
import { DockError } from "../client/errors.ts";
import type { HooksState } from "../client/wire.ts";
import { laptopEnv, makeDirs, makeRepo, runCli, startAgent, startBox } from "./harness.ts";
import { until, untilEvent } from "./wait.ts";
import { untilGone } from "./process_exits.ts";

async function readJson(path: string): Promise<Record<string, unknown>> {
  return JSON.parse(await Deno.readTextFile(path));
}

async function lines(path: string): Promise<string[]> {
  try {
    return (await Deno.readTextFile(path)).split("\n").filter(Boolean);
  } catch {
    return [];
  }
}

Deno.test("box hooks: the event on stdin and in DOCK_*, the worktree environment, run in the worktree", async () => {
  await using box = await startBox();
  const out = join(box.dirs.root, "out");
  await Deno.mkdir(out);
  await Deno.mkdir(box.dirs.dockHome, { recursive: true });
  await Deno.writeTextFile(
    join(box.dirs.dockHome, "hooks.json"),
    JSON.stringify({
      hooks: [{
        on: "worktree.created",
        run: `cat > ${out}/event.json; pwd > ${out}/cwd; env | grep '^DOCK_' | sort > ${out}/env`,
      }],
    }),
  );
  const repo = await makeRepo(join(box.dirs.home, "work"));
  await box.client.addLocation({ name: "app", path: repo });
  const worktree = await box.client.createWorktree("app", { name: "feat" });
  // The hook writes env last: once it is complete, so are the others.
  await until(async () => (await lines(join(out, "env"))).some((l) => l.startsWith("DOCK_WORKTREE_NAME=")), {
    watch: join(out, "env"),
  });
  const event = await readJson(join(out, "event.json"));
  assertEquals(event.type, "worktree.created");
  assertEquals((event.data as Record<string, unknown>).worktree, "feat");
  assertEquals((await Deno.readTextFile(join(out, "cwd"))).trim(), await Deno.realPath(worktree.path));
  const env = Object.fromEntries(
    (await lines(join(out, "env"))).map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
  );
  assertEquals(env.DOCK_EVENT_TYPE, "worktree.created");
  assertEquals(env.DOCK_EVENT_ORIGIN, "test");
  assertEquals(env.DOCK_WORKTREE_NAME, "feat");
  assertEquals(env.DOCK_PORT, String(worktree.ports[0]));
  assertEquals(env.DOCK_LOCATION, "app");
  assertEquals(env.DOCK_BRANCH, "feat");
  assertEquals(JSON.parse(env.DOCK_EVENT_DATA).path, worktree.path);
});

Deno.test("box hooks: an edit takes effect without a restart; a tool's own events skip its hook", async () => {
  await using box = await startBox({ env: { DOCK_HOOK_CONCURRENCY: "1" } });
  const log = join(box.dirs.root, "origins.log");
  const file = join(box.dirs.dockHome, "hooks.json");
  await box.client.emit({ type: "custom.one", origin: "x" }); // no hooks file yet: nothing runs
  const changed = box.client.emit({ type: "marker" }).then((e) => e.id!);
  await Deno.mkdir(box.dirs.dockHome, { recursive: true });
  await Deno.writeTextFile(
    file,
    JSON.stringify({
      hooks: [{ on: "custom.*", run: `echo "$DOCK_EVENT_ORIGIN $DOCK_N" >> ${log}`, tool: "mytool" }],
    }),
  );
  await untilEvent(box.client, (e) => e.type === "hooks.changed" && e.origin === "file", {
    after: await changed,
  });
  await box.client.emit({ type: "custom.two", origin: "mytool", data: { n: 1 } });
  await box.client.emit({ type: "custom.two", origin: "other", data: { n: 2 } });
  await box.client.emit({ type: "other.kind", origin: "other", data: { n: 3 } });
  await box.client.emit({ type: "custom.three", origin: "last", data: { n: 4 } });
  // One hook at a time, in order: once the last has run, the skipped one would have run before it.
  await until(async () => (await lines(log)).includes("last 4"), { watch: log });
  assertEquals(await lines(log), ["other 2", "last 4"]);
  const state = await box.client.hooks();
  assertEquals(state.path, file);
  assertEquals(state.hooks.length, 1);
  assertEquals(state.runs?.started, 2);
  assertEquals(state.runs?.failed, 0);
  const cli = await box.cli(["hooks"]);
  assertEquals(cli.code, 0);
  assertStringIncludes(cli.stdout, file);
  assertStringIncludes(cli.stdout, "custom.*");
  assertStringIncludes(cli.stdout, "2 started, 0 failed");
  await Deno.writeTextFile(file, `{ "hooks": [ { "on": "custom.*" } ] }`);
  const broken = JSON.parse((await box.cli(["hooks", "--json"])).stdout);
  assertStringIncludes(broken.error, "hooks[0].run");
  assertEquals(broken.hooks.length, 1, "the last good hooks stay");
  const check = (await box.client.doctor()).find((c) => c.name === "hooks")!;
  assertEquals(check.ok, false);
  assertStringIncludes(check.detail, "hooks[0].run");
});

Deno.test("box hooks: a hook that sleeps forever is killed at its timeout and reported without output", async () => {
  await using box = await startBox();
  const pidFile = join(box.dirs.root, "hook.pid");
  const after = (await box.client.emit({ type: "marker" })).id!;
  await box.client.putHooks([{
    on: "sleepy",
    run: `echo $$ > ${pidFile}; echo "SECRET-ish output"; sleep 1000 & wait`,
    timeout: "1s",
  }]);
  await box.client.emit({ type: "sleepy" });
  const failed = await untilEvent(box.client, (e) => e.type === "hook.failed", {
    after,
    timeoutMs: 15_000,
  });
  assertEquals(failed.data?.timed_out, true);
  assertEquals(failed.data?.on, "sleepy");
  assertEquals(failed.data?.event, "sleepy");
  assert(!JSON.stringify(failed).includes("SECRET-ish"), "no hook output in the event");
  const pid = Number(await Deno.readTextFile(pidFile));
  await untilGone([pid], { what: "the timed-out hook" });
  const changed = await untilEvent(box.client, (e) => e.type === "hooks.changed", { after });
  assertEquals(changed.origin, "test");
});

Deno.test("box hooks: an event's builtin-only hooks (box file and repository config) start from one shell, a failure still reported alone", async () => {
  await using box = await startBox();
  const out = join(box.dirs.root, "out");
  await Deno.mkdir(out);
  // Each writes its parent's pid, read by the shell itself from its own /proc/self/stat (field 4),
  // and the line it read on stdin.
  const report = (name: string) =>
    `read -r line; read -r stat < /proc/self/stat; set -- $stat; echo "$4 $line" > ${out}/${name}`;
  const repo = await makeRepo(join(box.dirs.home, "work"), "app", {
    ".dock/config.json": JSON.stringify({ hooks: [{ on: "custom.batch", run: report("config") }] }),
  });
  await box.client.addLocation({ name: "app", path: repo });
  const after = (await box.client.emit({ type: "marker" })).id!;
  await box.client.putHooks([
    { on: "custom.batch", run: report("one") },
    { on: "custom.*", run: report("two") },
    { on: "custom.batch", run: "exit 6" },
  ]);
  await box.client.emit({ type: "custom.batch", data: { location: "app", note: "hi" } });
  const failed = await untilEvent(box.client, (e) => e.type === "hook.failed", { after });
  assertEquals([failed.data?.exit_code, failed.data?.on, failed.data?.timed_out], [6, "custom.batch", false]);
  const names = ["one", "two", "config"];
  await until(async () => (await Promise.all(names.map((n) => lines(join(out, n))))).every((l) => l.length), {
    watch: `${out}/`,
  });
  const seen = await Promise.all(names.map(async (n) => (await Deno.readTextFile(join(out, n))).trim()));
  const parents = new Set(seen.map((line) => line.split(" ")[0]));
  assertEquals(parents.size, 1, `one launcher forked all three: ${seen.join(" | ")}`);
  assert(!parents.has(String(box.process.pid)), "not spawned one by one by dockd");
  for (const line of seen) {
    const event = JSON.parse(line.slice(line.indexOf(" ") + 1));
    assertEquals([event.type, event.data.note], ["custom.batch", "hi"]);
  }
});

Deno.test("repository config hooks run for that repository's events only, in its worktree", async () => {
  await using box = await startBox();
  const log = join(box.dirs.root, "repo-hooks.log");
  const config = {
    hooks: [{ on: "worktree.*", run: `echo "$DOCK_EVENT_TYPE $DOCK_WORKTREE_NAME $(pwd)" >> ${log}` }],
  };
  const app = await makeRepo(join(box.dirs.home, "work"), "app", {
    ".dock/config.json": JSON.stringify(config),
  });
  const other = await makeRepo(join(box.dirs.home, "work"), "other");
  await box.client.addLocation({ name: "app", path: app });
  await box.client.addLocation({ name: "other", path: other });
  await box.client.createWorktree("other", { name: "o1" });
  const wt = await box.client.createWorktree("app", { name: "a1" });
  const wtPath = await Deno.realPath(wt.path);
  await until(async () => (await lines(log)).length >= 1, { watch: log });
  await box.client.removeWorktree("app", "a1", { force: true });
  await until(async () => (await lines(log)).some((l) => l.startsWith("worktree.removed")), { watch: log });
  const seen = await lines(log);
  assertEquals(seen[0], `worktree.created a1 ${wtPath}`);
  assert(seen.every((l) => !l.includes("o1")), seen.join("\n"));
});

Deno.test("gates: exec refused with the gate's reason; a hanging gate refuses at its timeout; allowed runs", async () => {
  await using box = await startBox();
  const repo = await makeRepo(join(box.dirs.home, "work"));
  await box.client.addLocation({ name: "app", path: repo });
  const seen = join(box.dirs.root, "gate-input.json");
  await box.client.putHooks([{
    on: "before:exec",
    run:
      `cat > ${seen}; case "$DOCK_COMMAND" in *forbidden*) echo "no forbidden commands here" >&2; echo more >&2; exit 1;; esac`,
  }]);
  const refused = await assertRejects(
    () => box.client.exec({ location: "app", command: "touch ran-forbidden" }),
    DockError,
  ) as DockError;
  assertEquals(refused.status, 403);
  assertEquals(refused.code, "gate_refused");
  assertEquals(refused.message, "no forbidden commands here");
  assertEquals(await Deno.stat(join(repo, "ran-forbidden")).catch(() => null), null);
  const input = await readJson(seen);
  assertEquals(input.action, "exec");
  assertEquals((input.target as Record<string, unknown>).command, "touch ran-forbidden");
  assertEquals(input.origin, "test");
  assertEquals(input.location, "app");

  const allowed = await box.client.exec({ location: "app", command: "echo fine" });
  assertEquals(allowed.output, "fine\n");

  // Through the raw API too: the JSON error body is what any caller sees.
  const cli = await box.cli(["exec", "app", "--", "echo forbidden"]);
  assert(cli.code !== 0);
  assertStringIncludes(cli.stderr, "no forbidden commands here");

  await box.client.putHooks([{ on: "before:exec", run: "sleep 1000", timeout: "1s" }]);
  const timedOut = await assertRejects(
    () => box.client.exec({ location: "app", command: "true" }),
    DockError,
  ) as DockError;
  assertEquals(timedOut.status, 403);
  assertEquals(timedOut.code, "gate_timeout");
  assertStringIncludes(timedOut.message, "1s");
});

Deno.test("gates: config.change guards env, guard, hooks and location config; worktree gates from the repo config", async () => {
  await using box = await startBox();
  const config = {
    hooks: [{
      on: "before:worktree.create",
      run: `[ "$DOCK_NAME" != blocked ] || { echo "not that name" >&2; exit 2; }`,
    }],
  };
  const repo = await makeRepo(join(box.dirs.home, "work"), "app", {
    ".dock/config.json": JSON.stringify(config),
  });
  await box.client.addLocation({ name: "app", path: repo });
  const refused = await assertRejects(
    () => box.client.createWorktree("app", { name: "blocked" }),
    DockError,
  ) as DockError;
  assertEquals([refused.status, refused.code, refused.message], [403, "gate_refused", "not that name"]);
  assertEquals((await box.client.location("app")).worktrees.some((w) => w.name === "blocked"), false);
  await box.client.createWorktree("app", { name: "fine" });

  await box.client.putEnv({ env: { A: "1" } });
  await box.client.putHooks([{ on: "before:config.change", run: `echo "config is frozen" >&2; exit 1` }]);
  for (
    const attempt of [
      () => box.client.putEnv({ env: { A: "2" } }),
      async () => box.client.putGuard({ ...(await box.client.guard()), enabled: true }),
      () => box.client.putConfig("app", { ports: 2 }),
      () => box.client.putHooks([]),
    ]
  ) {
    const error = await assertRejects(attempt, DockError) as DockError;
    assertEquals([error.status, error.code, error.message], [403, "gate_refused", "config is frozen"]);
  }
  assertEquals((await box.client.env()).env, { A: "1" });
  assertEquals((await box.client.hooks()).hooks.length, 1);
  // Bad input is still a 400, whatever the gates say.
  const bad = await assertRejects(() => box.client.putHooks([{ on: "x" } as never]), DockError) as DockError;
  assertEquals(bad.status, 400);
  const refusal = await untilEvent(
    box.client,
    (e) => e.type === "gate.refused" && e.data?.action === "config.change",
  );
  assertEquals(refusal.data?.code, "gate_refused");
});

Deno.test("laptop hooks: GET/PUT /v1/hooks, hooks.changed, run for a box's events (not twice for a shared file)", async () => {
  const dirs = await makeDirs();
  await using box = await startBox({ dirs });
  // The laptop's own DOCK_HOME: this box does not read the laptop's hooks file.
  const laptopHome = join(dirs.root, "laptop-dock");
  await using agent = await startAgent(dirs, { env: { DOCK_HOME: laptopHome } });
  const client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  try {
    await client.addLocal("local");
    const empty = await client.hooks();
    assertEquals(empty.path, join(laptopHome, "hooks.json"));
    assertEquals(empty.hooks, []);
    assertEquals(empty.runs?.started, 0);
    const log = join(dirs.root, "laptop.log");
    const put = await client.putHooks([{
      on: "custom.*",
      run: `echo "$DOCK_EVENT_BOX $DOCK_EVENT_TYPE $(pwd)" >> ${log}`,
    }]);
    assertEquals(put.hooks.length, 1);
    await untilEvent(client, (e) => e.type === "hooks.changed" && !e.box);
    await box.client.emit({ type: "custom.from-box" });
    await client.emit({ type: "custom.from-laptop" });
    await until(async () => (await lines(log)).length >= 2, { watch: log });
    const seen = (await lines(log)).sort();
    assertEquals(seen, [` custom.from-laptop ${dirs.home}`, `local custom.from-box ${dirs.home}`]);
    const bad = await fetch(`${agent.url}/v1/hooks`, {
      method: "PUT",
      headers: { authorization: `Bearer ${agent.token}`, "content-type": "application/json" },
      body: JSON.stringify({ hooks: [{ on: "x", run: 3 }] }),
    });
    assertEquals(bad.status, 400);
    assertEquals((await bad.json()).error.code, "invalid_hooks");
    const env = laptopEnv(dirs, agent, { DOCK_HOME: laptopHome });
    const laptop = JSON.parse((await runCli("dock", ["hooks", "--json"], { env, cwd: dirs.home })).stdout);
    assertEquals([laptop.path, laptop.hooks.length], [join(laptopHome, "hooks.json"), 1]);
    const ofBox = JSON.parse(
      (await runCli("dock", ["hooks", "local", "--json"], { env, cwd: dirs.home })).stdout,
    );
    assertEquals([ofBox.path, ofBox.hooks.length], [join(dirs.dockHome, "hooks.json"), 0]);
  } finally {
    client.close();
  }
});

Deno.test("laptop and box sharing ~/.dock/hooks.json run a box event's hook once", async () => {
  const dirs = await makeDirs();
  await using box = await startBox({ dirs });
  await using agent = await startAgent(dirs);
  const client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  try {
    await client.addLocal("local");
    const log = join(dirs.root, "shared.log");
    await client.putHooks([{ on: "custom.*", run: `echo "$DOCK_EVENT_TYPE" >> ${log}` }]);
    await box.client.emit({ type: "custom.a" });
    await until(async () => (await lines(log)).includes("custom.a"), { watch: log });
    await client.emit({ type: "custom.b" }); // the laptop's own: the box never sees it
    await until(async () => (await lines(log)).includes("custom.b"), { watch: log });
    await box.client.emit({ type: "custom.c" });
    await until(async () => (await lines(log)).includes("custom.c"), { watch: log });
    // The agent's hooks match an event as its bus publishes it, before its stream sends it on: once
    // custom.c came through the agent, a second run of it is queued or running there, or done.
    await untilEvent(client, (e) => e.type === "custom.c" && e.box === "local");
    const idle = (runs: HooksState["runs"]) => runs?.running === 0 && runs.queued === 0;
    await until(async () => idle((await client.hooks()).runs) && idle((await box.client.hooks()).runs));
    assertEquals((await lines(log)).sort(), ["custom.a", "custom.b", "custom.c"]);
  } finally {
    client.close();
  }
});

Deno.test("gates: a first prompt (POST sessions, POST tasks) passes the session.send gates too", async () => {
  await using box = await startBox();
  const repo = await makeRepo(join(box.dirs.home, "work"));
  await box.client.addLocation({ name: "app", path: repo });
  const input = join(box.dirs.root, "send-gate.json");
  await box.client.putHooks([{
    on: "before:session.send",
    run: `cat > ${input}; grep -q forbidden ${input} && { echo "not that prompt" >&2; exit 1; }; exit 0`,
  }]);
  const refused = await assertRejects(
    () => box.client.createSession({ location: "app", command: "sleep 600", prompt: "a forbidden idea" }),
    DockError,
  ) as DockError;
  assertEquals([refused.status, refused.code, refused.message], [403, "gate_refused", "not that prompt"]);
  const gateInput = await readJson(input);
  assertEquals((gateInput.target as Record<string, unknown>).first, true);
  assertEquals(gateInput.location, "app");
  assertEquals(await box.client.sessions(), []);
  const task = await assertRejects(
    () =>
      box.client.createTask({ location: "app", name: "t1", command: "sleep 600", prompt: "forbidden too" }),
    DockError,
  ) as DockError;
  assertEquals(task.status, 403);
  assertEquals((await box.client.location("app")).worktrees.some((w) => w.name === "t1"), false);
  // Without a prompt, or with one the gate allows, sessions start.
  const session = await box.client.createSession({ location: "app", command: "sleep 600" });
  await box.client.removeSession(session.name);
});

/** The names of the sessions on a box's private tmux server (none when it is not running). */
async function tmuxSessions(box: { dirs: { state: string } }): Promise<string[]> {
  const out = await new Deno.Command("tmux", {
    args: ["-S", join(box.dirs.state, "box", "tmux.sock"), "list-sessions", "-F", "#{session_name}"],
    stderr: "null",
  }).output();
  return new TextDecoder().decode(out.stdout).split("\n").filter(Boolean);
}

Deno.test("gates: before:session.create sees every command a session or task would start, the prompt only on stdin", async () => {
  await using box = await startBox();
  const repo = await makeRepo(join(box.dirs.home, "work"), "app", {
    ".dock/config.json": JSON.stringify({
      agents: [
        { id: "sneaky", command: "sh -c 'echo forbidden; sleep 600'" },
        { id: "patient", command: "sh -c 'sleep 600'" },
      ],
    }),
  });
  await box.client.addLocation({ name: "app", path: repo });
  const input = join(box.dirs.root, "create-gate.json");
  const env = join(box.dirs.root, "create-gate.env");
  await box.client.putHooks([{
    on: "before:session.create",
    run: `cat > ${input}; env > ${env}; case "$DOCK_COMMAND" in *forbidden*) ` +
      `echo "no forbidden programs here" >&2; echo more >&2; exit 1;; esac`,
  }]);
  const refusals = [
    () => box.client.createSession({ location: "app", command: "echo forbidden; sleep 600", name: "s1" }),
    // An agent preset is gated by the command it runs, not only by its id.
    () => box.client.createSession({ location: "app", agent: "sneaky", prompt: "a plan" }),
    () => box.client.createTask({ location: "app", name: "t1", command: "sleep 600 # forbidden" }),
  ];
  for (const attempt of refusals) {
    const refused = await assertRejects(attempt, DockError) as DockError;
    assertEquals(
      [refused.status, refused.code, refused.message],
      [403, "gate_refused", "no forbidden programs here"],
    );
  }
  assertEquals(await box.client.sessions(), []);
  assertEquals(await tmuxSessions(box), []);
  assertEquals((await box.client.location("app")).worktrees.some((w) => w.name === "t1"), false);
  const taskInput = await readJson(input);
  assertEquals(taskInput.action, "session.create");
  assertEquals(taskInput.location, "app");
  assertEquals(taskInput.target, {
    session: null,
    location: "app",
    worktree: "t1",
    agent: null,
    command: "sleep 600 # forbidden",
  });
  // From the laptop too: `dock session new` goes through the agent's relay to the same gate.
  await using agent = await startAgent(box.dirs);
  const laptopClient = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  try {
    assertEquals((await laptopClient.addLocal("local")).online, true);
  } finally {
    laptopClient.close();
  }
  const laptop = await runCli("dock", ["session", "new", "local/app", "--command", "echo forbidden"], {
    env: laptopEnv(box.dirs, agent),
    cwd: box.dirs.home,
  });
  assert(laptop.code !== 0, laptop.stdout);
  assertStringIncludes(laptop.stderr, "no forbidden programs here");
  assertEquals(await tmuxSessions(box), []);

  // Allowed: the session starts, and the gate saw the preset's command; its prompt on stdin only.
  const session = await box.client.createSession({
    location: "app",
    agent: "patient",
    prompt: "the-secret-plan",
    name: "ok1",
  });
  assertEquals(session.name, "ok1");
  assertEquals(await tmuxSessions(box), ["ok1"]);
  const allowedInput = await readJson(input);
  assertEquals(allowedInput.target, {
    session: "ok1",
    location: "app",
    worktree: "app",
    agent: "patient",
    command: "sh -c 'sleep 600'",
    prompt: "the-secret-plan",
  });
  const variables = await Deno.readTextFile(env);
  assertStringIncludes(variables, "DOCK_ACTION=session.create");
  assertStringIncludes(variables, "DOCK_AGENT=patient");
  assert(!variables.includes("the-secret-plan"), "the prompt is in no variable");
  const task = await box.client.createTask({ location: "app", name: "t2", command: "sleep 600" });
  assertEquals(task.worktree.name, "t2");
  assertEquals((await tmuxSessions(box)).sort(), ["ok1", task.session.name].sort());
  await box.client.removeSession("ok1");
  await box.client.removeSession(task.session.name);
});

Deno.test("box hooks for agent events get DOCK_AGENT, DOCK_PATH and the worktree's environment", async () => {
  await using box = await startBox();
  const out = join(box.dirs.root, "agent-env");
  await box.client.putHooks([{
    on: "agent.*",
    run: `env | grep '^DOCK_' | sort > ${out}.tmp && mv ${out}.tmp ${out}`,
  }]);
  const repo = await makeRepo(join(box.dirs.home, "work"));
  await box.client.addLocation({ name: "app", path: repo });
  const worktree = await box.client.createWorktree("app", { name: "feat" });
  await box.client.emit({
    type: "agent.finished",
    origin: "claude",
    data: { path: worktree.path, agent: "claude", session_id: "abc" },
  });
  const env = await until(async () => {
    const text = await Deno.readTextFile(out).catch(() => "");
    return text
      ? Object.fromEntries(
        text.trim().split("\n").map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]),
      )
      : undefined;
  }, { watch: out });
  assertEquals(env.DOCK_AGENT, "claude");
  assertEquals(env.DOCK_PATH, worktree.path);
  assertEquals(env.DOCK_SESSION_ID, "abc");
  assertEquals(env.DOCK_EVENT_TYPE, "agent.finished");
  assertEquals(env.DOCK_WORKTREE_NAME, "feat");
  assertEquals(env.DOCK_PORT, String(worktree.ports[0]));
});
