/**
 * Whole-system test of the `dock` command line from the laptop: the box commands of `dockd` with a
 * `BOX/` prefix, through a real agent's relay to a real box (spec 4.4).
 */
import { join } from "node:path";
import { assertEquals, assertStringIncludes } from "./assert.ts";
import { AgentClient } from "../client/agent.ts";
import { readLines } from "../client/http.ts";
import type { Location, Session } from "../client/wire.ts";
import {
  freePort,
  laptopEnv,
  makeDirs,
  makeRepo,
  processesOf,
  runCli,
  startAgent,
  startBox,
  type TestAgent,
} from "./harness.ts";
import { until } from "./wait.ts";
import { untilGone } from "./process_exits.ts";
import { paneOutput } from "./tmux_watch.ts";

/** Runs `dock ARGS` with the agent's environment and returns its exit code and output. */
function dock(agent: TestAgent, home: string, env: Record<string, string>, args: string[]) {
  return runCli("dock", args, { env: { ...env, DOCK_AGENT_PORT: String(agent.port) }, cwd: home });
}

Deno.test("dock runs the box commands with a BOX/ prefix through the agent", async () => {
  const dirs = await makeDirs();
  await using box = await startBox({ dirs });
  await using agent = await startAgent(dirs);
  const client = new AgentClient({ url: agent.url, token: agent.token });
  try {
    assertEquals((await client.addLocal("devbox")).online, true);
  } finally {
    client.close();
  }
  const env = {
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    HOME: dirs.home,
    DOCK_HOME: dirs.dockHome,
    DOCK_STATE_DIR: dirs.state,
    NO_COLOR: "1",
  };
  const run = (...args: string[]) => dock(agent, dirs.home, env, args);
  const repo = await makeRepo(join(dirs.home, "work"), "app");

  const added = await run("location", "add", "devbox/app", repo);
  assertEquals(added.code, 0, added.stderr);
  assertStringIncludes(added.stdout, "added devbox/app");

  const listed = await run("location", "list", "--json");
  assertEquals(listed.code, 0, listed.stderr);
  const locations: (Location & { box: string })[] = JSON.parse(listed.stdout);
  assertEquals(locations.map((l) => [l.box, l.name, l.path]), [["devbox", "app", repo]]);
  const table = await run("location", "list", "devbox");
  assertStringIncludes(table.stdout, "devbox/app");

  const created = await run("worktree", "new", "devbox/app", "feat");
  assertEquals(created.code, 0, created.stderr);
  assertStringIncludes(created.stdout, "created devbox/app/feat");
  assertEquals((await box.client.location("app")).worktrees.map((w) => w.name).sort(), ["app", "feat"]);

  const hi = await run("exec", "devbox/app/feat", "--", "echo hi; pwd");
  assertEquals(hi.code, 0, hi.stderr);
  assertEquals(hi.stdout.split("\n")[0], "hi");
  assertStringIncludes(hi.stdout, "feat");
  const failing = await run("exec", "devbox/app", "--", "exit 7");
  assertEquals(failing.code, 7);

  const config = await run("location", "config", "devbox/app");
  assertEquals(config.code, 0, config.stderr);
  assertStringIncludes(config.stdout, "# effective");

  const session = await run("session", "new", "devbox/app", "--command", "sh", "--name", "s1", "--json");
  assertEquals(session.code, 0, session.stderr);
  assertEquals((JSON.parse(session.stdout) as Session).name, "s1");
  const sent = await run("session", "send", "devbox/s1", "echo x-$((40 + 2))");
  assertEquals(sent.code, 0, sent.stderr);
  const printed = await paneOutput(box, "s1");
  await until(async () => (await box.client.screen("s1")).screen.includes("x-42"), { watch: printed });
  const sessions = await run("session", "list", "devbox", "--json");
  assertEquals(sessions.code, 0, sessions.stderr);
  assertEquals(
    (JSON.parse(sessions.stdout) as (Session & { box: string })[]).map((s) => [s.box, s.name, s.worktree]),
    [["devbox", "s1", "app"]],
  );

  const unprefixed = await run("service", "list", "app/feat");
  assertEquals(unprefixed.code, 2);
  assertStringIncludes(unprefixed.stderr, 'expected BOX/LOCATION/WORKTREE, got "app/feat"');
  const bare = await run("worktree", "new", "app", "other");
  assertEquals(bare.code, 2);
  assertStringIncludes(bare.stderr, 'expected BOX/LOCATION, got "app"');
  const unknown = await run("location", "config", "nobox/app");
  assertEquals(unknown.code, 1);
  assertStringIncludes(unknown.stderr, "nobox");

  await box.client.removeSession("s1");

  // dock emit announces on the laptop; dock events streams the merged events, for people or as JSON.
  const emitted = await run("emit", "build.finished", "ok=true", "note=two words", "--origin", "ci");
  assertEquals(emitted.code, 0, emitted.stderr);
  await box.client.emit({ type: "build.started", data: { n: 1 } });
  const human = await firstLines(env, agent, ["events", "--after", "0", "--type", "build."], 2);
  // The laptop's own event has no box; the box's was announced after it, so it comes after it.
  assertEquals(human.map((line) => line.replace(/^\S+ /, "")), [
    '- build.finished [ci] ok=true note="two words"',
    "devbox build.started [test] n=1",
  ]);
  const json = await firstLines(
    env,
    agent,
    ["events", "--after", "0", "--type", "build.finished", "--json"],
    1,
  );
  const event = JSON.parse(json[0]);
  assertEquals([event.type, event.origin, event.data, event.box], ["build.finished", "ci", {
    ok: true,
    note: "two words",
  }, undefined]);
});

/**
 * Runs `dock ARGS`, a command that streams until stopped (so not through `runCli`, which waits for the
 * end), and returns its first `count` lines.
 */
async function firstLines(env: Record<string, string>, agent: TestAgent, args: string[], count: number) {
  const dock = new URL("../cli/dock.ts", import.meta.url).pathname;
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--cached-only", dock, ...args],
    env: { ...env, DOCK_AGENT_PORT: String(agent.port) },
    clearEnv: true,
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const lines: string[] = [];
  try {
    for await (const line of readLines(child.stdout)) {
      lines.push(line);
      if (lines.length === count) break;
    }
  } finally {
    child.kill();
    await child.status;
  }
  return lines;
}

/** The pids of `dock agent` processes started with the state folder `state`. */
const agentsOf = (state: string) => processesOf(state, "agent");

Deno.test("a dock command that finds no agent starts one in the background, once, and is answered", async () => {
  const dirs = await makeDirs();
  const env = laptopEnv(dirs, { port: freePort() }, { DOCK_PROXY_PORT: String(freePort()) });
  try {
    const first = await runCli("dock", ["status", "--json"], { env, cwd: dirs.home });
    assertEquals(first.code, 0, first.stderr);
    assertEquals(JSON.parse(first.stdout).boxes, []);
    const started = agentsOf(dirs.state);
    assertEquals(started.length, 1);
    const second = await runCli("dock", ["queue", "list", "--json"], { env, cwd: dirs.home });
    assertEquals(second.code, 0, second.stderr);
    assertEquals(agentsOf(dirs.state), started);
  } finally {
    for (const pid of agentsOf(dirs.state)) Deno.kill(pid, "SIGTERM");
    await untilGone(() => agentsOf(dirs.state), { what: "the agents" });
  }
});

Deno.test("dock events follows across the agent going away: it starts it again and goes on from the last event, none twice", async () => {
  const dirs = await makeDirs();
  const env = laptopEnv(dirs, { port: freePort() }, { DOCK_PROXY_PORT: String(freePort()) });
  const dock = new URL("../cli/dock.ts", import.meta.url).pathname;
  // The command itself starts the agent (it finds none), then follows the laptop's test.* events.
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--cached-only", dock, "events", "--after", "0", "--type", "test.", "--json"],
    env,
    clearEnv: true,
    cwd: dirs.home,
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  const lines = readLines(child.stdout)[Symbol.asyncIterator]();
  const next = async () => JSON.parse((await lines.next()).value as string).type;
  /** Emits `type` through whichever agent answers now; false while none does (nothing was sent). */
  const emit = async (type: string) => {
    const token = (await Deno.readTextFile(join(dirs.state, "client", "ui-token")).catch(() => "")).trim();
    const client = new AgentClient({ url: `http://127.0.0.1:${env.DOCK_AGENT_PORT}`, token });
    try {
      return Boolean(token) && await client.emit({ type }).then(() => true, () => false);
    } finally {
      client.close();
    }
  };
  try {
    await until(() => emit("test.one"), { timeoutMs: 30_000 });
    assertEquals(await next(), "test.one");
    // Twice away: each time back, started again by the follower; what is emitted then reaches it, and
    // nothing before it again.
    for (const type of ["test.two", "test.three"]) {
      const [before] = agentsOf(dirs.state);
      Deno.kill(before, "SIGTERM");
      await until(async () => {
        const running = agentsOf(dirs.state);
        return running.length === 1 && running[0] !== before && await emit(type);
      }, { timeoutMs: 30_000 });
      assertEquals(await next(), type);
    }
    assertStringIncludes(await (child.kill(), stderr), "the agent is away");
  } finally {
    try {
      child.kill();
    } catch { /* ended */ }
    await child.status;
    await stderr;
    for (const pid of agentsOf(dirs.state)) Deno.kill(pid, "SIGTERM");
    await untilGone(() => agentsOf(dirs.state), { what: "the agents" });
  }
});
