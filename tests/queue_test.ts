/**
 * Whole-system tests of the offline prompt queue (spec 2.2, 3.1, 4.1, 7) on a real agent and a real
 * box, with sessions running a program that logs every line it receives: exactly once and in order
 * per session across kill -9 of the agent, a box that goes away and comes back, the 409s, `wait`,
 * blocked items, the box's idempotency keys, events without the text, and the CLI.
 */
import { DatabaseSync } from "node:sqlite";
import { join } from "node:path";
import { assert, assertEquals, assertRejects, assertStringIncludes } from "./assert.ts";
import { AgentClient } from "../client/agent.ts";
import { DockError } from "../client/errors.ts";
import type { DockEvent, QueueItem } from "../client/wire.ts";
import {
  type BoxDirs,
  killProcessesUnder,
  laptopEnv,
  makeDirs,
  makeRepo,
  runCli,
  slowTmux,
  startAgent,
  startBox,
  type TestAgent,
  type TestBox,
} from "./harness.ts";
import { until } from "./wait.ts";
import { paneOutput } from "./tmux_watch.ts";

const DENO = Deno.execPath();
const LOGGER = new URL("./fixtures/prompt_logger.ts", import.meta.url).pathname;

/** A box with a location `app`, an agent with the box added as `devbox`, and the agent's client. */
async function setup(options: { agentEnv?: Record<string, string> } = {}) {
  const dirs = await makeDirs();
  const box = await startBox({ dirs });
  const agentEnv = { DOCK_AGENT_HEALTH_MS: "200", ...options.agentEnv };
  const agent = await startAgent(dirs, { env: agentEnv });
  const client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  assertEquals((await client.addLocal("devbox")).online, true);
  const repo = await makeRepo(join(dirs.home, "work"), "app");
  await box.client.addLocation({ name: "app", path: repo });
  return { dirs, box, agent, client, agentEnv };
}

/** Starts session `name` running the prompt logger; returns its log file once it reads. */
async function logger(box: TestBox, name: string): Promise<string> {
  const log = join(box.dirs.root, `${name}.log`);
  await box.client.createSession({
    location: "app",
    name,
    command: `'${DENO}' run -A --cached-only '${LOGGER}' '${log}'`,
  });
  const printed = await paneOutput(box, name);
  await until(async () => (await box.client.screen(name)).screen.includes("logger ready"), {
    watch: printed,
    timeoutMs: 20_000,
  });
  return log;
}

/**
 * The log's lines, once it holds at least `count`: the logger writes a line a moment after the box
 * typed it (and answered `delivered`), later still on a loaded machine.
 */
async function lines(log: string, count = 0): Promise<string[]> {
  const read = async () => (await Deno.readTextFile(log).catch(() => "")).split("\n").filter(Boolean);
  return await until(async () => {
    const found = await read();
    return found.length >= count ? found : undefined;
  }, { watch: log, timeoutMs: 20_000 });
}

async function item(
  client: AgentClient,
  id: string,
  check: (item: QueueItem) => boolean,
  // Generous: on a loaded 2-core machine a health check can miss, and the box is retried after a backoff.
  timeoutMs = 30_000,
) {
  return await until(async () => {
    const found = await client.queueItem(id);
    return check(found) ? found : undefined;
  }, { on: client, timeoutMs: timeoutMs });
}

/** Every event of the agent's journal up to a mark emitted now. */
async function journal(client: AgentClient): Promise<DockEvent[]> {
  const mark = await client.emit({ type: "test.mark", data: { at: crypto.randomUUID() } });
  const events: DockEvent[] = [];
  for await (const event of client.events({ after: 0, signal: AbortSignal.timeout(10_000) })) {
    events.push(event);
    if (event.id === mark.id) break;
  }
  return events;
}

/** Posts an agent report for a session to the box, as `dock hook` does. */
async function report(box: TestBox, type: string, session: string): Promise<void> {
  await box.client.transport.json("/v1/events", {
    body: {
      type,
      origin: "claude",
      session,
      data: { path: box.dirs.home, agent: "claude", session_id: "t" },
    },
  });
}

async function status(client: AgentClient, online: boolean): Promise<void> {
  await until(async () => (await client.refresh()).boxes.every((b) => b.online === online), {
    on: client,
    timeoutMs: 15_000,
  });
}

/** Stops everything a test started (the tmux server of its sessions too) and removes its folders. */
async function cleanup(dirs: BoxDirs, box: TestBox | undefined, agent: TestAgent, client: AgentClient) {
  client.close();
  await agent.stop();
  await box?.stop();
  killProcessesUnder(dirs.root);
  await Deno.remove(dirs.root, { recursive: true }).catch(() => {});
}

Deno.test("kill -9 of the agent while 1,000 prompts drain: every prompt arrives once, in order per session", async () => {
  const { box, agent: first, client: firstClient, dirs, agentEnv } = await setup();
  let agent = first;
  let client = firstClient;
  try {
    const sessions = ["s0", "s1", "s2"];
    const logs = await Promise.all(sessions.map((name) => logger(box, name)));
    const expected = new Map(sessions.map((name) => [name, [] as string[]]));
    for (let i = 0; i < 1000; i++) {
      const session = sessions[i % 3];
      expected.get(session)!.push(`${session}-${String(i).padStart(4, "0")}`);
    }
    // Each session's prompts are queued in order; the sessions' streams run side by side.
    await Promise.all(sessions.map(async (session) => {
      for (const text of expected.get(session)!) await client.enqueue({ box: "devbox", session, text });
    }));
    const received = async () => (await Promise.all(logs.map(lines))).reduce((n, l) => n + l.length, 0);
    // Kill points spread over the drain, one of them right after a restart.
    const points = Array.from({ length: 5 }, () => 50 + Math.floor(Math.random() * 900)).sort((a, b) =>
      a - b
    );
    for (const [n, point] of points.entries()) {
      await until(async () => (await received()) >= point, { watch: logs, timeoutMs: 60_000 });
      await agent.stop({ kill: true });
      client.close();
      agent = await startAgent(dirs, { port: agent.port, env: agentEnv });
      client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
      if (n === 2) {
        await agent.stop({ kill: true });
        agent = await startAgent(dirs, { port: agent.port, env: agentEnv });
        client.close();
        client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
      }
    }
    await until(async () => (await client.queue()).every((i) => i.state === "delivered"), {
      on: client,
      timeoutMs: 60_000,
    });
    for (const [index, session] of sessions.entries()) {
      const want = expected.get(session)!;
      assertEquals(await lines(logs[index], want.length), want, `${session}: once each, in order`);
    }
    const items = await client.queue();
    assertEquals(items.length, 1000);
    assertEquals(items.map((i) => i.seq), [...items.map((i) => i.seq)].sort((a, b) => a - b));
  } finally {
    await cleanup(dirs, box, agent, client);
  }
});

for (const [step, when] of [["paste-buffer", "before its paste"], ["send-keys", "before its Enter"]]) {
  Deno.test(`kill -9 of the box ${when}: the prompt arrives once and its session's line goes on`, async () => {
    // Found by bench/queue_soak.ts: the daemon restarted refused the repeat as interrupted, the item
    // failed and every later prompt of its session stayed queued behind it.
    const dirs = await makeDirs();
    const cue = join(dirs.root, "typing");
    const slow = { PATH: await slowTmux(dirs, step, 2, cue) };
    let box: TestBox | undefined = await startBox({ dirs, env: slow });
    const agentEnv = { DOCK_AGENT_HEALTH_MS: "200" };
    const agent = await startAgent(dirs, { env: agentEnv });
    const client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
    try {
      assertEquals((await client.addLocal("devbox")).online, true);
      await box.client.addLocation({ name: "app", path: await makeRepo(join(dirs.home, "work"), "app") });
      const log = await logger(box, "s1");
      const first = await client.enqueue({ box: "devbox", session: "s1", text: "cut-short" });
      await until(() => Deno.stat(cue).then(() => true), { watch: cue, timeoutMs: 20_000 });
      // tmux goes on with the step the killed daemon started; the new daemon must not repeat it.
      await box.stop({ kill: true });
      box = await startBox({ dirs });
      const second = await client.enqueue({ box: "devbox", session: "s1", text: "after-it" });
      await item(client, first.id, (i) => i.state === "delivered");
      await item(client, second.id, (i) => i.state === "delivered");
      // Once the killed daemon's tmux step has ended, a last prompt: whatever that step typed is in
      // the log before it.
      await until(() => Deno.stat(`${cue}.done`).then(() => true), {
        watch: `${cue}.done`,
        timeoutMs: 20_000,
      });
      const last = await client.enqueue({ box: "devbox", session: "s1", text: "last" });
      await item(client, last.id, (i) => i.state === "delivered");
      await until(async () => (await lines(log)).at(-1) === "last", { watch: log, timeoutMs: 20_000 });
      assertEquals(await lines(log), ["cut-short", "after-it", "last"]);
    } finally {
      await cleanup(dirs, box, agent, client);
    }
  });
}

Deno.test("a box offline for a while: items stay queued, send answers 409, and they drain when it is back", async () => {
  const { box: first, agent, client, dirs } = await setup();
  let box: TestBox | undefined = first;
  try {
    const log = await logger(first, "s1");
    await first.stop();
    box = undefined;
    await status(client, false);
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push((await client.enqueue({ box: "devbox", session: "s1", text: `later-${i}` })).id);
    }
    const offline = await assertRejects(() => client.sendQueued(ids[0]), DockError);
    assertEquals([(offline as DockError).status, (offline as DockError).code], [409, "box_offline"]);
    // Another health check finds it still gone: nothing moved.
    await status(client, false);
    assertEquals((await client.queue()).map((i) => `${i.state} ${i.attempts}`), ids.map(() => "queued 0"));

    box = await startBox({ dirs });
    await status(client, true);
    await until(async () => (await client.queue()).every((i) => i.state === "delivered"), {
      on: client,
      timeoutMs: 20_000,
    });
    assertEquals(await lines(log, ids.length), ids.map((_, i) => `later-${i}`));
  } finally {
    await cleanup(dirs, box, agent, client);
  }
});

Deno.test("409 only while sending for DELETE (and edit); bad input is 400, unknown ids 404", async () => {
  const { box, agent, client, dirs } = await setup({ agentEnv: { DOCK_QUEUE_TEST_SEND_DELAY_MS: "2000" } });
  try {
    const log = await logger(box, "s1");
    const created = await client.enqueue({ id: "slow-1", box: "devbox", session: "s1", text: "slow one" });
    assertEquals([created.id, created.enter, created.wait], ["slow-1", true, true]);
    const again = await client.enqueue({ id: "slow-1", box: "devbox", session: "s1", text: "different" });
    assertEquals(again.text, "slow one", "the same id returns the existing item");
    await item(client, "slow-1", (i) => i.state === "sending");
    const busy = await assertRejects(() => client.removeQueued("slow-1"), DockError);
    assertEquals([(busy as DockError).status, (busy as DockError).code], [409, "sending"]);
    const editing = await assertRejects(() => client.editQueued("slow-1", { text: "x" }), DockError);
    assertEquals((editing as DockError).status, 409);
    const delivered = await item(client, "slow-1", (i) => i.state === "delivered");
    assertEquals([delivered.attempts, await lines(log, 1)], [1, ["slow one"]]);
    const notFailed = await assertRejects(() => client.retryQueued("slow-1"), DockError);
    assertEquals((notFailed as DockError).status, 409);
    assertEquals((await client.removeQueued("slow-1")).state, "delivered");

    for (
      const call of [
        () => client.queueItem("nope"),
        () => client.editQueued("nope", { text: "x" }),
        () => client.retryQueued("nope"),
        () => client.sendQueued("nope"),
        () => client.removeQueued("nope"),
        () => client.enqueue({ box: "nobox", session: "s1", text: "x" }),
      ]
    ) {
      assertEquals(((await assertRejects(call, DockError)) as DockError).status, 404);
    }
    const raw = (method: string, path: string, body: string) =>
      fetch(`${agent.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${agent.token}`, "content-type": "application/json" },
        body: body || undefined,
      }).then(async (r) => ({ status: r.status, body: await r.json() }));
    for (
      const [body, field] of [
        ["{", "body"],
        ["{}", "box"],
        [JSON.stringify({ box: "devbox", session: "a.b", text: "x" }), "session"],
        [JSON.stringify({ box: "devbox", session: "s1", text: 5 }), "text"],
        [JSON.stringify({ box: "devbox", session: "s1", text: "x", wait: "yes" }), "wait"],
        [JSON.stringify({ box: "devbox", session: "s1", text: "x", state: "delivered" }), ""],
        [JSON.stringify({ id: "bad id", box: "devbox", session: "s1", text: "x" }), "id"],
      ]
    ) {
      const answer = await raw("POST", "/v1/queue", body);
      assertEquals(answer.status, 400, body);
      assertStringIncludes(answer.body.error.message, field, body);
    }
    const queued = await client.enqueue({ box: "devbox", session: "s1", text: "edit me", wait: false });
    assertEquals((await raw("PATCH", `/v1/queue/${queued.id}`, JSON.stringify({ wait: false }))).status, 400);
    assertEquals((await raw("GET", "/v1/queue/x/send", "")).status, 405);
  } finally {
    await cleanup(dirs, box, agent, client);
  }
});

Deno.test("wait: a prompt to a running agent waits until its turn ends", async () => {
  const { box, agent, client, dirs } = await setup();
  try {
    const busyLog = await logger(box, "busy");
    const idleLog = await logger(box, "idle");
    await report(box, "agent.started", "busy");
    assertEquals((await box.client.session("busy")).agent_state, "running");
    const held = await client.enqueue({ box: "devbox", session: "busy", text: "after the turn" });
    const other = await client.enqueue({ box: "devbox", session: "idle", text: "at once" });
    // Both wait for their turn: the idle one going proves the queue has read the sessions.
    await item(client, other.id, (i) => i.state === "delivered");
    assertEquals((await client.queueItem(held.id)).state, "waiting");
    assertEquals([await lines(busyLog), await lines(idleLog, 1)], [[], ["at once"]]);

    await report(box, "agent.finished", "busy");
    await item(client, held.id, (i) => i.state === "delivered");
    assertEquals(await lines(busyLog, 1), ["after the turn"]);

    // Without wait it goes mid-turn.
    await report(box, "agent.started", "busy");
    const now = await client.enqueue({ box: "devbox", session: "busy", text: "now", wait: false });
    await item(client, now.id, (i) => i.state === "delivered");
    // send skips the wait.
    await report(box, "agent.started", "busy");
    const skip = await client.enqueue({ box: "devbox", session: "busy", text: "skip" });
    await item(client, skip.id, (i) => i.state === "waiting");
    assertEquals((await client.sendQueued(skip.id)).state, "delivered");
    assertEquals(await lines(busyLog, 3), ["after the turn", "now", "skip"]);
  } finally {
    await cleanup(dirs, box, agent, client);
  }
});

Deno.test("blocked behind a failed prompt until it is retried, edited or removed; events never carry the text", async () => {
  const { box, agent, client, dirs } = await setup();
  const secret = (n: string) => `SECRET-PROMPT-${n}`;
  try {
    const s1 = await logger(box, "s1");
    const add = (id: string, session: string) =>
      client.enqueue({ id, box: "devbox", session, text: secret(id), wait: false });
    const failThenBlock = async (session: string) => {
      await add(`${session}-a`, session);
      await add(`${session}-b`, session);
      const failed = await item(client, `${session}-a`, (i) => i.state === "failed");
      assertStringIncludes(failed.error!, `session '${session}' not found`);
      assertEquals(failed.attempts, 1);
      const blocked = await client.queueItem(`${session}-b`);
      assertEquals([blocked.state, blocked.blocked, blocked.attempts], ["queued", true, 0]);
      return await logger(box, session);
    };

    // Edited: back in line (to another session), and the one behind goes.
    const edited = await failThenBlock("later");
    const moved = await client.editQueued("later-a", { session: "s1" });
    assertEquals([moved.state, moved.error, moved.seq > (await client.queueItem("later-b")).seq], [
      "queued",
      undefined,
      true,
    ]);
    await item(client, "later-b", (i) => i.state === "delivered");
    await item(client, "later-a", (i) => i.state === "delivered");
    assertEquals([await lines(edited, 1), await lines(s1, 1)], [[secret("later-b")], [secret("later-a")]]);

    // Retried: it goes first, then the one behind it.
    const retried = await failThenBlock("nope");
    assertEquals((await client.retryQueued("nope-a")).state, "queued");
    await item(client, "nope-b", (i) => i.state === "delivered");
    assertEquals(await lines(retried, 2), [secret("nope-a"), secret("nope-b")]);

    // Removed: the one behind goes.
    const removedLog = await failThenBlock("gone");
    const removed = await client.removeQueued("gone-a");
    assertEquals([removed.id, removed.state, removed.text], ["gone-a", "failed", secret("gone-a")]);
    await item(client, "gone-b", (i) => i.state === "delivered");
    assertEquals(await lines(removedLog, 1), [secret("gone-b")]);

    const events = await journal(client);
    const queueEvents = events.filter((e) => e.type.startsWith("queue."));
    assertEquals(
      [...new Set(queueEvents.map((e) => e.type))].sort(),
      ["queue.added", "queue.changed", "queue.delivered", "queue.failed", "queue.removed"],
    );
    for (const event of queueEvents) {
      assertEquals(Object.keys(event.data!).filter((k) => k !== "error").sort(), [
        "box",
        "id",
        "session",
        "state",
      ]);
      assertEquals(event.data!.box, "devbox");
    }
    assert(queueEvents.some((e) => e.type === "queue.failed" && String(e.data!.error).includes("not found")));
    const everything = JSON.stringify(events);
    assert(!everything.includes("SECRET-PROMPT"), "no event carries a prompt's text");
    assert(everything.includes('"session.sent"'), "the box's events were merged too");
  } finally {
    await cleanup(dirs, box, agent, client);
  }
});

Deno.test("a before:session.send gate's refusal fails the item with its message, the prompt redacted", async () => {
  const { box, agent, client, dirs } = await setup();
  try {
    const log = await logger(box, "s1");
    // The gate quotes the prompt back: the queue must not pass that on into its events.
    await box.client.putHooks([{
      on: "before:session.send",
      run: `sed -n 's/.*"text":"\\([^"]*\\)".*/refused: \\1/p' >&2; exit 1`,
    }]);
    const queued = await client.enqueue({ box: "devbox", session: "s1", text: "GATED-PROMPT-1" });
    const failed = await item(client, queued.id, (i) => i.state === "failed");
    assertEquals(failed.error, "refused: ‹prompt›");
    const events = await journal(client);
    const refusal = events.find((e) => e.type === "queue.failed" && e.data?.id === queued.id);
    assertEquals(refusal?.data?.error, "refused: ‹prompt›");
    assert(!JSON.stringify(events).includes("GATED-PROMPT"), "no event carries the prompt");

    await box.client.putHooks([]);
    await client.retryQueued(queued.id);
    await item(client, queued.id, (i) => i.state === "delivered");
    assertEquals(await lines(log, 1), ["GATED-PROMPT-1"]);
  } finally {
    await cleanup(dirs, box, agent, client);
  }
});

Deno.test("the box types a keyed send once: repeats, concurrent repeats, and a send cut short by a restart", async () => {
  const dirs = await makeDirs();
  await using box = await startBox({ dirs });
  const repo = await makeRepo(join(dirs.home, "work"), "app");
  await box.client.addLocation({ name: "app", path: repo });
  const log = await logger(box, "s1");
  await logger(box, "s2");

  const first = await box.client.send("s1", "keyed once", { key: "k-1" });
  const repeat = await box.client.send("s1", "keyed once", { key: "k-1" });
  assertEquals(repeat, first, "the earlier outcome");
  const both = await Promise.all([1, 2, 3].map(() => box.client.send("s1", "concurrent", { key: "k-2" })));
  assertEquals(both.length, 3);
  await box.client.send("s1", "keyed once", { key: "k-3" });
  await box.client.send("s1", "unkeyed");
  await box.client.send("s1", "unkeyed");
  await until(async () => (await lines(log)).length === 5, { watch: log });
  assertEquals(await lines(log), ["keyed once", "concurrent", "keyed once", "unkeyed", "unkeyed"]);

  // A gate added after a keyed send was typed does not turn its repeat into a refusal: the repeat
  // only replays the outcome. A new key is a new send, and the gate holds for it.
  await box.client.putHooks([{ on: "before:session.send", run: "echo 'sends are closed' >&2; exit 1" }]);
  assertEquals(await box.client.send("s1", "keyed once", { key: "k-1" }), first);
  const gated = await assertRejects(() => box.client.send("s1", "new", { key: "k-new" }), DockError);
  assertEquals([(gated as DockError).status, (gated as DockError).code], [403, "gate_refused"]);
  await box.client.putHooks([]);

  const conflict = await assertRejects(() => box.client.send("s2", "keyed once", { key: "k-1" }), DockError);
  assertEquals([(conflict as DockError).status, (conflict as DockError).code], [409, "key_conflict"]);
  const missing = await assertRejects(() => box.client.send("nosuch", "x", { key: "k-4" }), DockError);
  assertEquals((missing as DockError).status, 404);
  const bad = await assertRejects(() => box.client.send("s1", "x", { key: "with space" }), DockError);
  assertEquals((bad as DockError).status, 400);

  // A key recorded but never settled: the daemon stopped while typing it. Never typed again.
  const db = new DatabaseSync(join(dirs.state, "box", "dockd.db"), { timeout: 5000 });
  try {
    db.prepare("INSERT INTO send_keys (key, session, state, created) VALUES (?, 's1', 'typing', ?)")
      .run("k-cut", new Date().toISOString());
  } finally {
    db.close();
  }
  const cut = await assertRejects(() => box.client.send("s1", "cut short", { key: "k-cut" }), DockError);
  assertEquals([(cut as DockError).status, (cut as DockError).code], [409, "send_interrupted"]);
  assertEquals((await lines(log)).includes("cut short"), false);
  await box.client.removeSession("s1");
  await box.client.removeSession("s2");
});

Deno.test("dock session send --queue queues when the box cannot be reached; dock queue list/edit/send/rm", async () => {
  const { box: first, agent, client, dirs } = await setup();
  let box: TestBox | undefined = first;
  const env = laptopEnv(dirs, agent);
  const dock = (...args: string[]) => runCli("dock", args, { env, cwd: dirs.home });
  try {
    const log = await logger(first, "s1");
    const direct = await dock("session", "send", "devbox/s1", "typed at once", "--queue");
    assertEquals(direct.code, 0, direct.stderr);
    await until(async () => (await lines(log)).includes("typed at once"), { watch: log });
    assertEquals(await client.queue(), [], "a reachable box is sent to as usual");

    await first.stop();
    box = undefined;
    await status(client, false);
    const refused = await dock("session", "send", "devbox/s1", "not queued");
    assertEquals(refused.code, 1);
    assertStringIncludes(refused.stderr, "cannot be reached");
    const queued = await dock("session", "send", "devbox/s1", "draft", "--queue");
    assertEquals(queued.code, 0, queued.stderr);
    assertStringIncludes(queued.stdout, "devbox cannot be reached; queued as ");
    const listed = await dock("queue", "list", "--json");
    assertEquals(listed.code, 0, listed.stderr);
    const [entry] = JSON.parse(listed.stdout) as QueueItem[];
    assertEquals([entry.box, entry.session, entry.text, entry.state], ["devbox", "s1", "draft", "queued"]);
    const table = await dock("queue", "list");
    assertStringIncludes(table.stdout, `${entry.id}  devbox/s1  queued`);

    const offline = await dock("queue", "send", entry.id);
    assertEquals(offline.code, 1);
    assertStringIncludes(offline.stderr, "offline");
    const edited = await dock("queue", "edit", entry.id, "--text", "final");
    assertEquals(edited.code, 0, edited.stderr);
    const extra = await dock("session", "send", "devbox/s1", "discard me", "--queue");
    const extraId = /queued as (\S+):/.exec(extra.stdout)![1];
    const removed = await dock("queue", "rm", extraId);
    assertEquals(removed.code, 0, removed.stderr);
    assertStringIncludes(removed.stdout, `removed ${extraId}`);
    const missing = await dock("queue", "retry", "nope");
    assertEquals(missing.code, 1);

    box = await startBox({ dirs });
    await status(client, true);
    await item(client, entry.id, (i) => i.state === "delivered", 20_000);
    const after = JSON.parse((await dock("queue", "list", "--json")).stdout) as QueueItem[];
    assertEquals(after.map((i) => [i.id, i.text, i.state]), [[entry.id, "final", "delivered"]]);
    assertEquals(await lines(log, 2), ["typed at once", "final"]);
  } finally {
    await cleanup(dirs, box, agent, client);
  }
});
