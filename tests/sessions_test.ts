/**
 * Whole-system tests of sessions on tmux with a fake agent that behaves like Claude Code: turns seen by
 * `wait`, a 100 KB prompt pasted intact, permission prompts, crashes, a kill -9 of the daemon mid-turn
 * (hook events spooled and replayed in order), `loop`, tasks, and ending sessions.
 */
import { join } from "node:path";
import { assert, assertEquals, assertRejects, assertStringIncludes } from "./assert.ts";
import { DockError } from "../client/errors.ts";
import type { DockEvent } from "../client/wire.ts";
import { makeDirs, makeRepo, slowTmux, startBox, type TestBox } from "./harness.ts";
import { clientChanges, paneOutput } from "./tmux_watch.ts";
import { until, untilEvent } from "./wait.ts";
import { connectUnixWebSocket } from "./ws_unix.ts";
import { openWebSocket } from "../core/ws_client.ts";
import { WebSocketHandshakeError } from "../core/websocket.ts";
import { webSocketsSocket } from "../core/paths.ts";

const DENO = Deno.execPath();
const FAKE = new URL("./fixtures/fake_agent.ts", import.meta.url).pathname;
const AGENT = {
  id: "fake",
  name: "Fake agent",
  command: `'${DENO}' run -A --cached-only '${FAKE}'`,
  prompt_flag: "",
};

async function agentBox(env: Record<string, string> = {}, config: Record<string, unknown> = {}) {
  const dirs = await makeDirs();
  const log = join(dirs.root, "agent.log");
  const box = await startBox({ dirs, env: { FAKE_AGENT_LOG: log, FAKE_AGENT_WORK_MS: "300", ...env } });
  const repo = await makeRepo(join(dirs.home, "work"), "app", {
    ".dock/config.json": JSON.stringify({ agents: [AGENT], ...config }),
  });
  await box.client.addLocation({ name: "app", path: repo });
  return { box, repo, log };
}

async function prompts(log: string): Promise<{ n: number; length: number; sha256: string }[]> {
  const text = await Deno.readTextFile(log).catch(() => "");
  return text.split("\n").filter(Boolean).map((line) => JSON.parse(line));
}

async function sha256(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
}

async function journal(box: TestBox, after = 0): Promise<DockEvent[]> {
  const events: DockEvent[] = [];
  for await (const event of box.client.events({ after, signal: AbortSignal.timeout(400) })) {
    events.push(event);
  }
  return events;
}

/** Sends a prompt and waits for the turn it starts to end, as `session send --wait` does. */
async function turn(box: TestBox, name: string, text: string, timeout = "30s") {
  const sent = await box.client.send(name, text);
  return await box.client.wait(name, { after: sent.state_time!, timeout });
}

Deno.test("a shell session: screen, send, exit status, names, and ending it ends its processes", async () => {
  const { box } = await agentBox();
  await using _ = box;
  const session = await box.client.createSession({ location: "app", command: "sh", name: "shell-1" });
  assertEquals([session.name, session.worktree, session.agent, session.exited], [
    "shell-1",
    "app",
    null,
    false,
  ]);
  const printed = await paneOutput(box, "shell-1");
  await box.client.send("shell-1", 'echo "hello-$((6*7)) $DOCK_SESSION $DOCK_WORKTREE_NAME"');
  await until(async () => (await box.client.screen("shell-1")).screen.includes("hello-42 shell-1 app"), {
    watch: printed,
  });
  // A cooked terminal takes lines of at most 4 KiB (agents read raw; the 100 KB test covers them).
  await box.client.send("shell-1", `echo ${"x".repeat(3000)} | wc -c`);
  await until(async () => (await box.client.screen("shell-1")).screen.includes("3001"), { watch: printed });

  const dup = await assertRejects(
    () => box.client.createSession({ location: "app", command: "sh", name: "shell-1" }),
    DockError,
  );
  assertEquals((dup as DockError).status, 409);
  const bad = await assertRejects(
    () => box.client.createSession({ location: "app", command: "sh", name: "a.b" }),
    DockError,
    "name",
  );
  assertEquals((bad as DockError).status, 400);
  const missing = await assertRejects(
    () => box.client.createSession({ location: "nope", command: "sh" }),
    DockError,
  );
  assertEquals((missing as DockError).status, 404);
  const unknown = await assertRejects(
    () => box.client.createSession({ location: "app", agent: "nope" }),
    DockError,
    "agent",
  );
  assertEquals((unknown as DockError).status, 422);

  await box.client.createSession({ location: "app", command: "exit 7", name: "short" });
  const exited = await until(async () => {
    const s = await box.client.session("short");
    return s.exited ? s : undefined;
  }, { on: box });
  assertEquals(exited.exit_code, 7);
  const waited = await box.client.wait("short", { timeout: "5s" });
  assertEquals([waited.exited, waited.timed_out], [true, false]);
  // A program a signal ends has its exit told as a shell says it (128 + the signal), not left unknown.
  await box.client.createSession({ location: "app", command: "kill -9 $$", name: "killed" });
  const killed = await until(async () => {
    const s = await box.client.session("killed");
    return s.exited ? s : undefined;
  }, { on: box });
  assertEquals(killed.exit_code, 137);
  await box.client.removeSession("killed");

  const marker = `${Date.now() % 1000000}`;
  await box.client.createSession({
    location: "app",
    command: `sleep 9${marker} & sleep 8${marker}`,
    name: "tree",
  });
  const sleeping = () =>
    [...Deno.readDirSync("/proc")].filter((e) => {
      try {
        return /^\d+$/.test(e.name) &&
          Deno.readTextFileSync(`/proc/${e.name}/cmdline`).startsWith("sleep\0") &&
          Deno.readTextFileSync(`/proc/${e.name}/cmdline`).includes(marker) &&
          Deno.readTextFileSync(`/proc/${e.name}/stat`).split(") ")[1][0] !== "Z";
      } catch {
        return false;
      }
    }).length;
  await until(() => sleeping() === 2);
  await box.client.removeSession("tree");
  assertEquals(sleeping(), 0);
  assertEquals((await box.client.sessions()).map((s) => s.name).sort(), ["shell-1", "short"]);
  // With every session gone the tmux server stays up, empty; new sessions still start.
  await box.client.removeSession("shell-1");
  await box.client.removeSession("short");
  assertEquals(await box.client.sessions(), []);
  const next = await box.client.createSession({ location: "app", command: "sh", name: "after-empty" });
  assertEquals(next.exited, false);
});

Deno.test("an agent turn: send → running → finished, seen by wait; hooks keep no prompt text", async () => {
  const { box, repo } = await agentBox();
  await using _ = box;
  const start = (await box.client.emit({ type: "test.mark" })).id!;
  await box.client.createSession({ location: "app", agent: "fake", name: "agent-1" });
  const printed = await paneOutput(box, "agent-1");
  await until(async () => (await box.client.screen("agent-1")).screen.includes("> "), { watch: printed });
  const ready = await box.client.wait("agent-1", { states: ["idle"], timeout: "20s" });
  assertEquals(ready.state, "idle");

  const secret = "please refactor the frobnicator ZX81-unique";
  const result = await turn(box, "agent-1", secret);
  assertEquals([result.state, result.timed_out, result.exited], ["finished", false, false]);
  const session = await box.client.session("agent-1");
  assertEquals([session.agent, session.agent_state], ["fake", "finished"]);
  // `wait` without `after` counts the state the agent is in now.
  assertEquals((await box.client.wait("agent-1", { timeout: "1s" })).state, "finished");

  const events = await journal(box, start);
  const agentEvents = events.filter((e) => e.type.startsWith("agent."));
  assertEquals(agentEvents.map((e) => e.type), ["agent.ready", "agent.started", "agent.finished"]);
  for (const event of agentEvents) {
    assertEquals(event.origin, "claude");
    assertEquals(Object.keys(event.data ?? {}).sort(), ["agent", "hook", "path", "session", "session_id"]);
    assertEquals(event.data?.path, repo);
    assertEquals(event.data?.session, "agent-1", "the dock session the report was matched to");
  }
  assert(events.some((e) => e.type === "session.sent" && e.data?.session === "agent-1"));
  const everything = JSON.stringify(events);
  assertEquals(everything.includes("ZX81-unique"), false, "the prompt appears in no event");
  const logs = [];
  for await (const entry of Deno.readDir(join(box.dirs.state, "box"))) logs.push(entry.name);
  assert(!logs.includes("spool") || [...Deno.readDirSync(join(box.dirs.state, "box", "spool"))].length === 0);
});

Deno.test("a multi-line 100 KB prompt arrives intact as one paste", async () => {
  const { box, log } = await agentBox();
  await using _ = box;
  await box.client.createSession({ location: "app", agent: "fake", name: "big" });
  await box.client.wait("big", { states: ["idle"], timeout: "20s" });
  const lines = Array.from(
    { length: 1600 },
    (_, i) => `line ${i}: ${"lorem ipsum 'quoted' \"double\" $HOME `tick` ".repeat(1)}`,
  );
  let text = lines.join("\n");
  text = text + "\n" + "z".repeat(100 * 1024 - text.length - 1);
  assertEquals(text.length, 100 * 1024);
  const result = await turn(box, "big", text, "60s");
  assertEquals(result.state, "finished");
  const received = await prompts(log);
  assertEquals(received.length, 1, "one prompt, not one per line");
  assertEquals(received[0].length, text.length);
  assertEquals(received[0].sha256, await sha256(text));
});

Deno.test("a permission prompt is waiting; a crash or exit ends the wait", async () => {
  const { box } = await agentBox();
  await using _ = box;
  await box.client.createSession({ location: "app", agent: "fake", name: "asker" });
  await box.client.wait("asker", { states: ["idle"], timeout: "20s" });
  const asked = await turn(box, "asker", "do it ASK-PERMISSION");
  assertEquals(asked.state, "waiting");
  const answered = await turn(box, "asker", "y");
  assertEquals(answered.state, "finished");

  await box.client.createSession({ location: "app", agent: "fake", name: "crasher" });
  await box.client.wait("crasher", { states: ["idle"], timeout: "20s" });
  const crashed = await turn(box, "crasher", "please CRASH");
  assertEquals(crashed.exited, true);
  assertEquals(crashed.timed_out, false);
  const session = await until(async () => {
    const s = await box.client.session("crasher");
    return s.exit_code !== null ? s : undefined;
  }, { on: box });
  assertEquals([session.exited, session.exit_code], [true, 3]);
  const refused = await assertRejects(() => box.client.send("crasher", "hello"), DockError);
  assertEquals((refused as DockError).status, 409);

  const timedOut = await box.client.wait("asker", {
    states: ["waiting"],
    after: new Date().toISOString(),
    timeout: "1s",
  });
  // Spec 4.2: the timeout is 1s to 1h, `after` an RFC 3339 time.
  for (const options of [{ timeout: "2h" }, { timeout: "500ms" }, { after: "yesterday" }]) {
    const error = await assertRejects(() => box.client.wait("asker", options), DockError);
    assertEquals((error as DockError).status, 400, JSON.stringify(options));
  }
  assertEquals(timedOut.timed_out, true);
});

Deno.test("kill -9 of dockd mid-turn keeps the session; hook events fired meanwhile arrive in order", async () => {
  const { box: first, log } = await agentBox();
  const steady = await first.client.createSession({ location: "app", agent: "fake", name: "steady" });
  // Ready, as the agent reported it (not the idle state a new session starts in).
  await first.client.wait("steady", { states: ["idle"], after: steady.created, timeout: "20s" });
  const start = (await first.client.emit({ type: "test.mark" })).id!;
  await first.stop({ kill: true });

  // While the daemon is down, a person types into the agent directly through tmux.
  const socket = join(first.dirs.state, "box", "tmux.sock");
  const tmux = (...args: string[]) => new Deno.Command("tmux", { args: ["-S", socket, ...args] }).output();
  await tmux("send-keys", "-t", "=steady:", "hello while down", "Enter");
  await until(async () => (await prompts(log)).length === 1, { watch: log, timeoutMs: 20_000 });
  const spool = join(first.dirs.state, "box", "spool");
  // The turn ends while the daemon is down: its Stop report is spooled after the others.
  const spooled = async () => {
    const types = [];
    for (
      const entry of [...Deno.readDirSync(spool)].filter((e) => e.name.endsWith(".json")).sort((a, b) =>
        a.name < b.name ? -1 : 1
      )
    ) {
      types.push(JSON.parse(await Deno.readTextFile(join(spool, entry.name))).type);
    }
    return types;
  };
  await until(async () => (await spooled()).includes("agent.finished"), {
    watch: `${spool}/`,
    timeoutMs: 20_000,
  });
  assertEquals(await spooled(), ["agent.started", "agent.finished"]);
  await using box = await startBox({ dirs: first.dirs, env: first.env });
  const session = await box.client.session("steady");
  assertEquals([session.exited, session.agent_state], [false, "finished"]);
  const replayed = (await journal(box, start)).filter((e) => e.type.startsWith("agent."));
  assertEquals(replayed.map((e) => e.type), ["agent.started", "agent.finished"]);
  assertEquals([...Deno.readDirSync(spool)].filter((e) => e.name.endsWith(".json")).length, 0);
  // And the session goes on working with the new daemon.
  assertEquals((await turn(box, "steady", "and now")).state, "finished");
});

Deno.test("loop converges on a check that passes on round 3, and stops at --max", async () => {
  const { box } = await agentBox({ FAKE_AGENT_WORK_MS: "50" });
  await using _ = box;
  await box.client.createSession({ location: "app", agent: "fake", name: "looper" });
  await box.client.wait("looper", { states: ["idle"], timeout: "20s" });
  const check =
    'n=$(cat .rounds 2>/dev/null || echo 0); n=$((n+1)); echo $n > .rounds; echo "round $n"; [ $n -ge 3 ]';
  const passing = await box.cli(["loop", "looper", "--check", check, "--prompt", "make the check pass"]);
  assertEquals(passing.code, 0, passing.stderr);
  assertStringIncludes(passing.stderr, "the check passed on round 3");

  await box.client.exec({ location: "app", command: "rm -f .rounds" });
  const capped = await box.cli(["loop", "looper", "--check", check, "--prompt", "again", "--max", "2"]);
  assertEquals(capped.code, 1);
  assertStringIncludes(capped.stderr, "still fails after 2 rounds");

  const asking = await box.cli(["loop", "looper", "--check", "false", "--prompt", "ASK-PERMISSION first"]);
  assertEquals(asking.code, 3);
  assertStringIncludes(asking.stderr, "waiting for a human");

  // --max is a positive whole number: anything else is a usage error before any prompt is sent.
  const sentBefore = (await box.client.screen("looper")).screen;
  for (const max of ["0", "abc", "2.5"]) {
    const bad = await box.cli(["loop", "looper", "--check", "true", "--prompt", "never sent", "--max", max]);
    assert(bad.code !== 0, `--max ${max} accepted`);
    assertStringIncludes(bad.stderr, "positive whole number");
  }
  assertEquals((await box.client.screen("looper")).screen.includes("never sent"), false, sentBefore);
});

Deno.test("a task creates the worktree and starts the agent in it", async () => {
  const { box } = await agentBox();
  await using _ = box;
  const start = (await box.client.emit({ type: "test.mark" })).id!;
  const task = await box.client.createTask({
    location: "app",
    name: "feature-t",
    agent: "fake",
    prompt: "build it",
  });
  assertEquals(task.worktree.name, "feature-t");
  assertEquals([task.session.location, task.session.worktree, task.session.agent], [
    "app",
    "feature-t",
    "fake",
  ]);
  const done = await box.client.wait(task.session.name, { timeout: "30s" });
  assertEquals(done.state, "finished");
  const created = (await journal(box, start)).find((e) => e.type === "task.created");
  assertEquals(created?.data?.session, task.session.name);

  const cli = await box.cli(["task", "new", "app/feature-u", "--agent", "fake", "--prompt", "x", "--json"]);
  assertEquals(cli.code, 0, cli.stderr);
  assertEquals(JSON.parse(cli.stdout).worktree.name, "feature-u");
  // Removing the worktree ends its sessions.
  await box.client.removeWorktree("app", "feature-t", { force: true });
  assertEquals((await box.client.sessions()).some((s) => s.name === task.session.name), false);
  const noAgent = await assertRejects(
    () => box.client.createTask({ location: "app", name: "x" }),
    DockError,
    "agent",
  );
  assertEquals((noAgent as DockError).status, 400);
});

Deno.test("attach over the box API: shows the screen, types, resizes, and redraws on reattach", async () => {
  const { box } = await agentBox();
  await using _ = box;
  await box.client.createSession({ location: "app", command: "sh", name: "term" });
  const printed = await paneOutput(box, "term");
  await box.client.send("term", "echo first-$((2+3))");
  await until(async () => (await box.client.screen("term")).screen.includes("first-5"), { watch: printed });

  // Each client attached or resized, and each window size change, adds a line to `changes`.
  const socket = join(box.dirs.state, "box", "tmux.sock");
  const changes = await clientChanges(socket, box.dirs.root);
  const ws = await connectUnixWebSocket(box.dirs.socket, "/v1/sessions/term/attach?cols=90&rows=30");
  await ws.readUntil((text) => text.includes("first-5"));
  await ws.sendBinary(new TextEncoder().encode("echo typed-$((6*7))\r"));
  await ws.readUntil((text) => text.includes("typed-42"));
  await ws.sendText(JSON.stringify({ type: "resize", cols: 100, rows: 33 }));
  await until(async () => {
    const out = await new Deno.Command("tmux", {
      args: ["-S", socket, "display-message", "-p", "-t", "=term:", "#{window_width}x#{window_height}"],
    }).output();
    return new TextDecoder().decode(out.stdout).trim() === "100x33";
  }, { watch: changes });
  await ws.close();
  // Detached, not ended: the session runs on, and a new attach redraws what is on screen.
  assertEquals((await box.client.session("term")).exited, false);
  const again = await connectUnixWebSocket(box.dirs.socket, "/v1/sessions/term/attach");
  await again.readUntil((text) => text.includes("typed-42"));
  await again.close();

  const refused = await assertRejects(() =>
    connectUnixWebSocket(box.dirs.socket, "/v1/sessions/nope/attach")
  );
  assertStringIncludes(refused.message, "404");
  const badSize = await assertRejects(() =>
    connectUnixWebSocket(box.dirs.socket, "/v1/sessions/term/attach?cols=0")
  );
  assertStringIncludes(badSize.message, "400");

  // Attach went to the socket beside the API's (connectUnixWebSocket dials it): the API socket's own
  // server cannot carry a WebSocket, and says where they are; both are the box user's alone.
  const webSockets = webSocketsSocket(box.dirs.socket);
  assertEquals(webSockets, join(box.dirs.state, "box", "dockd-ws.sock"));
  for (const path of [box.dirs.socket, webSockets]) {
    assertEquals((await Deno.stat(path)).mode! & 0o777, 0o600);
  }
  const onApiSocket = await assertRejects(
    async () =>
      await openWebSocket(await Deno.connect({ transport: "unix", path: box.dirs.socket }), {
        path: "/v1/sessions/term/attach",
      }),
    WebSocketHandshakeError,
  );
  assertEquals((onApiSocket as WebSocketHandshakeError).status, 400);
  const { error } = JSON.parse(new TextDecoder().decode((onApiSocket as WebSocketHandshakeError).body));
  assertEquals([error.code, error.message.includes(webSockets)], ["websocket_elsewhere", true]);
});

Deno.test("the CLI: session new, send --wait, wait, screen and list", async () => {
  const { box } = await agentBox();
  await using _ = box;
  const created = await box.cli([
    "session",
    "new",
    "app",
    "--agent",
    "fake",
    "--name",
    "cli-agent",
    "--json",
  ]);
  assertEquals(created.code, 0, created.stderr);
  assertEquals(JSON.parse(created.stdout).agent, "fake");
  const sent = await box.cli([
    "session",
    "send",
    "cli-agent",
    "hello from the cli",
    "--wait",
    "--timeout",
    "30s",
  ]);
  assertEquals([sent.code, sent.stdout.trim()], [0, "finished"]);
  const asked = await box.cli(["session", "send", "cli-agent", "ASK-PERMISSION", "--wait"]);
  assertEquals([asked.code, asked.stdout.trim()], [3, "waiting"]);
  const waited = await box.cli(["session", "wait", "cli-agent", "--for", "waiting", "--json"]);
  assertEquals(JSON.parse(waited.stdout).state, "waiting");
  const timedOut = await box.cli(["session", "wait", "cli-agent", "--for", "finished", "--timeout", "1s"]);
  assertEquals(timedOut.code, 124);
  const screen = await box.cli(["session", "screen", "cli-agent"]);
  assertStringIncludes(screen.stdout, "Allow Bash");
  const list = await box.cli(["session", "list", "--json"]);
  assertEquals(JSON.parse(list.stdout).map((s: { name: string }) => s.name), ["cli-agent"]);
  // Why it waits, and what changed its state: the permission prompt's hook, after the sent prompts.
  const shown = await box.cli(["session", "show", "cli-agent"]);
  assertEquals(shown.code, 0, shown.stderr);
  assertStringIncludes(shown.stdout, "state: waiting (permission)");
  const history = JSON.parse((await box.cli(["session", "show", "cli-agent", "--json"])).stdout).history;
  assertEquals(history.at(-1).cause, "hook:Notification");
  assert(history.some((c: { cause: string }) => c.cause === "input"), JSON.stringify(history));
  assertStringIncludes((await box.cli(["session", "list"])).stdout, "waiting (permission)");
  const badState = await box.cli(["session", "wait", "cli-agent", "--for", "sleeping"]);
  assertEquals(badState.code, 2);
});

Deno.test("a session whose tmux session takes long to make is not taken for exited meanwhile", async () => {
  // A tmux that takes 1.5 s to make a session (a loaded machine): the session watcher polls every
  // 500 ms and must not judge a session by a list taken before tmux made it.
  const dirs = await makeDirs();
  await using box = await startBox({ dirs, env: { PATH: await slowTmux(dirs, "new-session", 1.5) } });
  const repo = await makeRepo(join(dirs.home, "work"), "app");
  await box.client.addLocation({ name: "app", path: repo });
  const after = (await box.client.emit({ type: "marker" })).id!;
  const session = await box.client.createSession({ location: "app", name: "slow", command: "cat" });
  assertEquals(session.exited, false);
  const printed = await paneOutput(box, "slow");
  await box.client.send("slow", "still here");
  await until(async () => (await box.client.screen("slow")).screen.includes("still here"), {
    watch: printed,
  });
  assertEquals((await box.client.session("slow")).exited, false);
  // Let the watcher judge the session twice more: its polls run one at a time, so the third list
  // started from now on means two whole polls after the session was made.
  const calls = join(dirs.root, "bin", "tmux.calls");
  const lists = async () =>
    (await Deno.readTextFile(calls)).split("\n").filter((l) => l.includes("list-panes")).length;
  const from = await lists();
  await until(async () => (await lists()) >= from + 3, { watch: calls });
  const mark = await box.client.emit({ type: "marker" });
  const events: DockEvent[] = [];
  await untilEvent(box.client, (event) => {
    events.push(event);
    return event.id === mark.id;
  }, { after });
  assertEquals(events.filter((e) => e.type === "session.exited"), []);
  await box.client.removeSession("slow");
});

Deno.test("session send --no-enter types without pressing Enter (spec 4.4)", async () => {
  await using box = await startBox();
  const repo = await makeRepo(join(box.dirs.home, "work"), "app");
  await box.client.addLocation({ name: "app", path: repo });
  await box.client.createSession({ location: "app", name: "typing", command: "cat" });
  const printed = await paneOutput(box, "typing");
  const partial = await box.cli(["session", "send", "typing", "first-half-", "--no-enter"]);
  assertEquals(partial.code, 0, partial.stderr);
  await box.cli(["session", "send", "typing", "second-half"]);
  // One line, echoed by the terminal and written back by cat: the first send pressed no Enter.
  await until(async () => {
    const screen = (await box.client.screen("typing")).screen;
    return screen.split("first-half-second-half").length - 1 === 2;
  }, { watch: printed });
  await box.client.removeSession("typing");
});

Deno.test("agent reports: an older one changes nothing, one delivered twice is announced once", async () => {
  await using box = await startBox();
  const repo = await makeRepo(join(box.dirs.home, "work"), "app");
  await box.client.addLocation({ name: "app", path: repo });
  await box.client.createSession({ location: "app", name: "s", command: "cat" });
  const report = (type: string, time: string) =>
    box.client.transport.json<Record<string, unknown>>("/v1/events", {
      body: {
        type,
        origin: "claude",
        data: { path: repo, agent: "claude", session_id: "t1" },
        session: "s",
        time,
      },
    });
  // After the session's state (its creation) and not in the future: a report is never dated later than
  // the daemon's now (a future time is taken as now).
  const created = Date.parse((await box.client.session("s")).state_time!);
  const earlier = new Date(created + 1).toISOString();
  const later = new Date(created + 2).toISOString();
  while (Date.now() <= created + 2) await new Promise((resolve) => queueMicrotask(() => resolve(undefined)));
  const start = (await box.client.emit({ type: "test.mark" })).id!;
  await report("agent.finished", later);
  assertEquals((await box.client.session("s")).agent_state, "finished");
  // Overtaken by the later one: announced (it happened), but the state stays.
  await report("agent.started", earlier);
  assertEquals((await box.client.session("s")).agent_state, "finished");
  assertEquals((await box.client.session("s")).state_time, later);
  // The same report again (a hook that spooled what the daemon did get): dropped.
  const again = await report("agent.finished", later);
  assertEquals(again.duplicate, true);
  const events = await journal(box, start);
  assertEquals(events.filter((e) => e.type.startsWith("agent.")).map((e) => e.type), [
    "agent.finished",
    "agent.started",
  ]);
  await box.client.removeSession("s");
});
