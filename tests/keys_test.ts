/**
 * Keystrokes as a route of their own (issue 30 item 1), whole: a real `dockd` (and `dock agent` for the
 * relay) on loopback, a private tmux, and two programs in sessions. One prints the bytes it reads in raw
 * mode (tests/fixtures/key_echo.ts): each named key and character of `POST sessions/{name}/keys` reaches
 * it as a keystroke, never as a paste. The other is the fake agent drawing Claude Code's permission menu
 * (`ASK-MENU`), which, like the real one, ignores pasted text: `POST sessions/{name}/answer` answers it
 * yes, no and always, refuses when it waits on nothing, and an answer sent from the CLI, MCP, the app
 * and the phone reaches it 20 times out of 20.
 */
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { AgentClient } from "../client/agent.ts";
import type { BoxClient } from "../client/box.ts";
import { DockError } from "../client/errors.ts";
import type { DockEvent, PhonePairCode, PhoneState } from "../client/wire.ts";
import { dockMcpServer, laptopDock } from "../core/mcp.ts";
import { assert, assertEquals, assertMatch, assertRejects, assertStringIncludes } from "./assert.ts";
import { CHROMIUM_MISSING, launchChromium } from "./browser.ts";
import {
  laptopEnv,
  makeDirs,
  makeRepo,
  runCli,
  slowTmux,
  startAgent,
  startBox,
  type TestBox,
} from "./harness.ts";
import { until, untilEvent } from "./wait.ts";

const DENO = Deno.execPath();
const FAKE = new URL("./fixtures/fake_agent.ts", import.meta.url).pathname;
const ECHO = new URL("./fixtures/key_echo.ts", import.meta.url).pathname;
const AGENT = {
  id: "fake",
  name: "Fake agent",
  command: `'${DENO}' run -A --cached-only '${FAKE}'`,
  prompt_flag: "",
};
/** How many answers each client must deliver in a row (the "Done when"). */
const ROUNDS = 20;

// What runs in the page: this file is type-checked without the DOM's types.
// deno-lint-ignore no-explicit-any
declare const document: any;

/** The file the fake agent writes its menu picks to, one JSON line each. */
const answersLog = (dirs: { root: string }) => join(dirs.root, "answers.log");

/** A box with a location `app` whose config has the fake agent; its menu picks go to `answers`. */
async function keysBox(dirs?: Awaited<ReturnType<typeof makeDirs>>) {
  dirs ??= await makeDirs();
  const answers = answersLog(dirs);
  const box = await startBox({ dirs, env: { FAKE_AGENT_WORK_MS: "100", FAKE_AGENT_ANSWERS: answers } });
  const repo = await makeRepo(join(dirs.home, "work"), "app", {
    ".dock/config.json": JSON.stringify({ agents: [AGENT] }),
  });
  await box.client.addLocation({ name: "app", path: repo });
  /** The fake agent's menu picks so far. */
  const picks = async () =>
    (await Deno.readTextFile(answers).catch(() => "")).split("\n").filter(Boolean).map((line) =>
      JSON.parse(line).choice as string
    );
  return { box, dirs, picks };
}

/** Starts the key echo in session `name`; answers what it has read since, as hex bytes. */
async function echoSession(box: TestBox, name: string) {
  const log = join(box.dirs.root, `${name}.keys`);
  await box.client.createSession({
    location: "app",
    name,
    command: `'${DENO}' run --cached-only --allow-write='${log}' '${ECHO}' '${log}'`,
  });
  const read = async () => (await Deno.readTextFile(log).catch(() => "")).split("\n");
  await until(async () => (await read())[0] === "ready" || undefined, { watch: log, timeoutMs: 30_000 });
  return {
    /** The file it writes what it reads to. */
    log,
    /** Every byte read so far, as hex, separated by spaces. */
    bytes: async () => (await read()).slice(1).join(" ").trim(),
  };
}

/** Starts the fake agent in session `name` and waits until it reports it is ready. */
async function agentSession(box: TestBox, name: string) {
  const session = await box.client.createSession({ location: "app", agent: "fake", name });
  await box.client.wait(name, { states: ["idle"], after: session.created, timeout: "30s" });
}

/** Raw `POST /v1/sessions/{name}/{route}` on the box's socket: status and JSON body. */
async function post(box: TestBox, path: string, body: unknown) {
  const client = Deno.createHttpClient({ proxy: { transport: "unix", path: box.dirs.socket } });
  try {
    const response = await fetch(`http://localhost/v1/${path}`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      client,
    });
    return { status: response.status, body: await response.json() };
  } finally {
    client.close();
  }
}

/**
 * Prompts `name` into the fake agent's menu and waits until the box says it waits on a permission
 * prompt.
 */
async function ask(box: TestBox, name: string, n: number): Promise<void> {
  const sent = await box.client.send(name, `round ${n} ASK-MENU`);
  const waited = await box.client.wait(name, {
    states: ["waiting"],
    after: sent.state_time ?? undefined,
    timeout: "30s",
  });
  const now = await box.client.session(name);
  if (now.agent_state === "waiting" && now.reason === "permission") return;
  // What the session went through and what its pane shows, to tell a lost prompt from a lost report.
  const history = (now.history ?? []).slice(-6).map((h) => `${h.state}:${h.cause}`).join(" > ");
  const screen = (await box.client.screen(name)).screen.trimEnd().split("\n").slice(-8).join(" | ");
  throw new Error(
    `round ${n}: ${now.agent_state}/${now.reason} after ${
      JSON.stringify(waited)
    }; ${history}; screen: ${screen}`,
  );
}

/**
 * `ROUNDS` times: the agent asks, `answer` answers yes, and the agent's menu must have taken it (its
 * picks log grows by one "yes") and the turn must finish.
 */
async function twentyOfTwenty(
  box: TestBox,
  name: string,
  picks: () => Promise<string[]>,
  answer: (round: number) => Promise<void>,
): Promise<void> {
  const before = (await picks()).length;
  for (let round = 1; round <= ROUNDS; round++) {
    await ask(box, name, round);
    await answer(round);
    const taken = await until(async () => {
      const all = await picks();
      return all.length === before + round ? all : undefined;
    }, { watch: answersLog(box.dirs), timeoutMs: 30_000 });
    assertEquals(taken[taken.length - 1], "yes", `round ${round}`);
    await box.client.wait(name, { states: ["finished"], timeout: "30s" });
  }
  assertEquals((await picks()).slice(before), Array(ROUNDS).fill("yes"));
}

Deno.test("keys: each named key and character reaches the program as a keystroke, never a paste", async () => {
  const { box } = await keysBox();
  await using _ = box;
  const echo = await echoSession(box, "keys");
  const start = (await box.client.emit({ type: "test.mark" })).id!;
  const keys = ["a", ";", "-", "\\", "é", " ", "Enter", "Escape", "Tab", "Up", "Down", "Left", "Right"];
  const typed = await box.client.keys("keys", [...keys, "C-c", "C-d", "Space", "BSpace"]);
  assertEquals([typed.typed, typed.session.name], [17, "keys"]);
  assertMatch(typed.at, /^\d{4}-\d{2}-\d{2}T/);
  // No `ESC [200~`: the program turned bracketed paste on, and nothing came as a paste.
  const expected = "61 3b 2d 5c c3 a9 20 0d 1b 09 1b 5b 41 1b 5b 42 1b 5b 44 1b 5b 43 03 04 20 7f";
  assertEquals(
    await until(async () => (await echo.bytes()) === expected ? expected : undefined, { watch: echo.log }),
    expected,
  );
  // Announced with how many, never which: keys are input.
  const event = await untilEvent(box.client, (e) => e.type === "session.keys", { after: start });
  assertEquals(event.data, { session: "keys", typed: 17 });
});

Deno.test("keys: a strict body, 1 to 64 entries, no control characters in literals; nothing typed when refused", async () => {
  const { box } = await keysBox();
  await using _ = box;
  const echo = await echoSession(box, "keys");
  const refused = async (body: unknown, status: number, field?: string, says?: string) => {
    const answer = await post(box, "sessions/keys/keys", body);
    assertEquals(answer.status, status, JSON.stringify({ body, answer: answer.body }));
    if (field) assertEquals(answer.body.error.field?.split(/[.[]/)[0], field, JSON.stringify(answer.body));
    if (says) assertStringIncludes(answer.body.error.message, says);
  };
  await refused({ keys: ["1"], enter: true }, 400, undefined, "enter");
  await refused({ kyes: ["1"] }, 400, undefined, "keys");
  await refused({ keys: [] }, 400, "keys");
  await refused({ keys: Array(65).fill("x") }, 400, "keys");
  for (const bad of ["\u0000", "\x1b", "\r", "\x03", "\x7f", "\u009b", "ab", "", "F1", "enter"]) {
    await refused({ keys: ["x", bad] }, 400, "keys");
  }
  await refused({ keys: "1" }, 400, "keys");
  await refused({ keys: ["1"], key: "has space" }, 400, "key");
  await refused({ keys: ["1"] }, 200);
  const missing = await post(box, "sessions/nobody/keys", { keys: ["1"] });
  assertEquals([missing.status, missing.body.error.code], [404, "not_found"]);
  const exact = Array(64).fill("z");
  assertEquals((await post(box, "sessions/keys/keys", { keys: exact })).status, 200);
  const want = ["31", ...Array(64).fill("7a")].join(" ");
  assertEquals(
    await until(async () => (await echo.bytes()) === want ? want : undefined, { watch: echo.log }),
    want,
  );
  // A session whose program has exited reads no keys.
  await box.client.createSession({ location: "app", name: "gone", command: "true" });
  await until(async () => (await box.client.session("gone")).exited || undefined, {
    on: box,
    timeoutMs: 30_000,
  });
  const exited = await post(box, "sessions/gone/keys", { keys: ["1"] });
  assertEquals([exited.status, exited.body.error.code], [409, "exited"]);
});

Deno.test("keys: the before:session.send gate sees the keys on stdin and can refuse them; a key types once", async () => {
  const { box } = await keysBox();
  await using _ = box;
  const echo = await echoSession(box, "keys");
  const other = await echoSession(box, "other");
  const input = join(box.dirs.root, "gate.json");
  await box.client.putHooks([{
    on: "before:session.send",
    run:
      `cat > ${input}; env > ${input}.env; grep -q '"C-c"' ${input} && { echo "no interrupts" >&2; exit 1; }; exit 0`,
  }]);
  const refused = await assertRejects(() => box.client.keys("keys", ["C-c"]), DockError) as DockError;
  assertEquals([refused.status, refused.code, refused.message], [403, "gate_refused", "no interrupts"]);
  await box.client.keys("keys", ["q"]);
  const gate = JSON.parse(await Deno.readTextFile(input));
  assertEquals([gate.action, gate.target], ["session.send", { session: "keys", keys: ["q"] }]);
  // The keys are on stdin only: no variable holds them.
  assert(!/^DOCK_KEYS=/m.test(await Deno.readTextFile(`${input}.env`)));
  await until(async () => (await echo.bytes()) === "71" || undefined, { watch: echo.log });

  // Keyed: typed once, a repeat answers the first outcome (and passes no gate again).
  const first = await box.client.keys("keys", ["k"], { key: "k-1" });
  await box.client.putHooks([{ on: "before:session.send", run: "echo closed >&2; exit 1" }]);
  const again = await box.client.keys("keys", ["k"], { key: "k-1" });
  assertEquals([again.at, again.typed], [first.at, 1]);
  const conflict = await assertRejects(() => box.client.keys("other", ["k"], { key: "k-1" }), DockError);
  assertEquals([(conflict as DockError).status, (conflict as DockError).code], [409, "key_conflict"]);
  await box.client.putHooks([]);
  // A send's key of the same name is another send's: the routes' keys do not meet.
  await box.client.send("other", "s", { key: "k-1", enter: false });
  await until(async () => (await other.bytes()).includes("73") || undefined, { watch: other.log });
  assertEquals(await echo.bytes(), "71 6b");
});

Deno.test("keys cut short by a kill -9 of the box are asked again with their key and typed once", async () => {
  const dirs = await makeDirs();
  // A tmux that waits before typing (and says so): the daemon is killed while the keys are on their way.
  const typing = join(dirs.root, "typing");
  const env = { PATH: await slowTmux(dirs, "send-keys", 2, typing) };
  let box = await startBox({ dirs, env });
  await using agent = await startAgent(dirs);
  const laptop = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  try {
    await laptop.addLocal("devbox");
    const repo = await makeRepo(join(dirs.home, "work"), "app");
    await box.client.addLocation({ name: "app", path: repo });
    const echo = await echoSession(box, "keys");
    const typed = laptop.box("devbox").keys("keys", ["z"], { retries: 30, delayMs: 200 });
    await until(() => Deno.stat(typing).then(() => true), { watch: typing });
    await box.stop({ kill: true }); // the killed daemon's tmux goes on without it
    box = await startBox({ dirs, env });
    // The new daemon finds the key recorded and not settled: it types the keys unless the killed one's
    // tmux claimed their slot first (then it finds them typed). Either way, once.
    assertEquals((await typed).typed, 1);
    // The killed daemon's line has reached tmux (its slow tmux handed it on, or its spawn ended): a key
    // typed after it through the new daemon comes after whatever that line typed.
    await until(() => Deno.stat(`${typing}.done`).then(() => true), {
      watch: `${typing}.done`,
      timeoutMs: 20_000,
    });
    await box.client.keys("keys", ["y"]);
    const bytes = await until(async () => {
      const now = await echo.bytes();
      return now.endsWith("79") ? now : undefined;
    }, { watch: echo.log });
    assertEquals(bytes, "7a 79");
  } finally {
    laptop.close();
    await box[Symbol.asyncDispose]();
  }
});

Deno.test("answer: yes, no and always on the fake agent's menu, which ignores a pasted answer; 409 when it waits on nothing", async () => {
  const { box, picks } = await keysBox();
  await using _ = box;
  await agentSession(box, "agent");
  const idle = await post(box, "sessions/agent/answer", { answer: "yes", key: "early" });
  assertEquals([idle.status, idle.body.error.code], [409, "not_waiting_permission"]);
  assertEquals((await post(box, "sessions/agent/answer", { answer: "maybe" })).status, 400);
  assertEquals((await post(box, "sessions/nobody/answer", { answer: "yes" })).status, 404);

  await ask(box, "agent", 1);
  // A paste is not a keystroke: the menu (like Claude Code's) ignores a pasted "1".
  await box.client.send("agent", "1", { enter: false });
  const still = await box.client.session("agent");
  assertEquals([still.agent_state, still.reason, await picks()], ["waiting", "permission", []]);
  const start = (await box.client.emit({ type: "test.mark" })).id!;
  const yes = await box.client.answer("agent", "yes", { key: "early" }); // a refused key is not spent
  assertEquals([yes.answer, yes.keys, yes.typed], ["yes", ["1"], 1]);
  await until(async () => (await picks()).length === 1 || undefined, {
    watch: answersLog(box.dirs),
    timeoutMs: 30_000,
  });
  await box.client.wait("agent", { states: ["finished"], timeout: "30s" });
  const event: DockEvent = await untilEvent(box.client, (e) => e.type === "session.answered", {
    after: start,
  });
  assertEquals(event.data, { session: "agent", answer: "yes" });
  // Done: a repeat of the key answers the same, and nothing is typed.
  assertEquals((await box.client.answer("agent", "yes", { key: "early" })).at, yes.at);

  await ask(box, "agent", 2);
  assertEquals((await box.client.answer("agent", "no")).keys, ["Escape"]);
  await until(async () => (await picks()).length === 2 || undefined, {
    watch: answersLog(box.dirs),
    timeoutMs: 30_000,
  });
  // No hook says a denial ended the turn: the box sees the pane settle (cause `interrupt`).
  await box.client.wait("agent", { states: ["waiting"], timeout: "30s" });
  assertEquals((await box.client.session("agent")).reason, "input");
  assertStringIncludes((await box.client.screen("agent")).screen, "What should Claude do instead?");

  await ask(box, "agent", 3);
  assertEquals((await box.client.answer("agent", "always")).keys, ["2"]);
  await box.client.wait("agent", { states: ["finished"], timeout: "30s" });
  assertEquals(await picks(), ["yes", "no", "always"]);
  // Allowed for good: the next one does not ask, and an answer finds nothing to answer.
  const sent = await box.client.send("agent", "round 4 ASK-MENU");
  await box.client.wait("agent", { states: ["finished"], after: sent.state_time!, timeout: "30s" });
  const nothing = await assertRejects(() => box.client.answer("agent", "yes"), DockError) as DockError;
  assertEquals([nothing.status, nothing.code], [409, "not_waiting_permission"]);
  assertEquals(await picks(), ["yes", "no", "always"]);
});

Deno.test("keys and answer through the laptop's relay; the CLI and MCP answer 20 times out of 20", async () => {
  const { box, dirs, picks } = await keysBox();
  await using _ = box;
  await using agent = await startAgent(dirs);
  const laptop = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  try {
    await laptop.addLocal("devbox");
    const relayed: BoxClient = laptop.box("devbox");
    const echo = await echoSession(box, "keys");
    assertEquals((await relayed.keys("keys", ["r", "Enter"])).typed, 2);
    await until(async () => (await echo.bytes()) === "72 0d" || undefined, { watch: echo.log });
    const env = laptopEnv(dirs, agent);
    const cli = await runCli("dock", ["session", "keys", "devbox/keys", "hi", "Escape"], {
      env,
      cwd: dirs.home,
    });
    assertEquals([cli.code, cli.stdout.trim()], [0, "typed 3 keys into devbox/keys"], cli.stderr);
    assertEquals(
      await until(async () => (await echo.bytes()).endsWith("1b") && echo.bytes(), { watch: echo.log }),
      "72 0d 68 69 1b",
    );

    await agentSession(box, "agent");
    const notWaiting = await runCli("dock", ["session", "answer", "devbox/agent", "yes"], {
      env,
      cwd: dirs.home,
    });
    assert(notWaiting.code !== 0);
    assertStringIncludes(notWaiting.stderr, "not waiting on a permission prompt");
    await twentyOfTwenty(box, "agent", picks, async (round) => {
      const answered = await runCli("dock", ["session", "answer", "devbox/agent", "yes"], {
        env,
        cwd: dirs.home,
      });
      assertEquals(answered.code, 0, `round ${round}: ${answered.stderr}`);
      assertStringIncludes(answered.stdout, "answered yes to devbox/agent");
    });

    // MCP: the person's allow-list governs it, as it does a prompt typed into a waiting agent.
    const server = dockMcpServer(laptopDock(laptop));
    const [ours, theirs] = InMemoryTransport.createLinkedPair();
    const mcp = new Client({ name: "dock-test-keys", version: "1.0.0" });
    await server.connect(theirs);
    await mcp.connect(ours);
    try {
      const call = async (args: Record<string, unknown>) => {
        const result = await mcp.callTool({ name: "answer_prompt", arguments: args }) as {
          content: { text: string }[];
          isError?: boolean;
        };
        return { error: result.isError === true, text: result.content.map((c) => c.text).join("\n") };
      };
      await ask(box, "agent", 0);
      const refused = await call({ box: "devbox", session: "agent", answer: "yes" });
      assertEquals(refused.error, true, refused.text);
      assertStringIncludes(refused.text, "dock mcp allow devbox/agent");
      await laptop.putAppDocument("mcp", { answer_permissions: ["devbox/agent"] });
      const first = await call({ box: "devbox", session: "agent", answer: "yes" });
      assertEquals(first.error, false, first.text);
      assertEquals(JSON.parse(first.text).keys, ["1"]);
      await box.client.wait("agent", { states: ["finished"], timeout: "30s" });
      await twentyOfTwenty(box, "agent", picks, async (round) => {
        const answered = await call({ box: "devbox", session: "agent", answer: "yes" });
        assertEquals(answered.error, false, `round ${round}: ${answered.text}`);
      });
    } finally {
      await mcp.close();
      await server.close();
    }
  } finally {
    laptop.close();
  }
});

Deno.test({
  name:
    "the app's and the phone's Yes reach the agent 20 times out of 20, shown as answered only when the box says so",
  ignore: CHROMIUM_MISSING,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const { box, dirs, picks } = await keysBox();
    await using _ = box;
    await using agent = await startAgent(dirs);
    const laptop = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
    const browser = await launchChromium();
    try {
      await laptop.addLocal("devbox");
      await agentSession(box, "agent");

      // The app on the laptop: Needs you's Yes goes through the agent's relay to the answer route.
      const open = await runCli("dock", ["open", "--print"], { env: laptopEnv(dirs, agent), cwd: dirs.home });
      assertEquals(open.code, 0, open.stderr);
      const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
      await page.goto(open.stdout.trim());
      await page.locator('[data-view="needs"]').click();
      const need = page.locator('.need[data-session="devbox/agent"]');
      // A refused answer shows the box's error, not "answered".
      await ask(box, "agent", 0);
      await box.client.putHooks([{
        on: "before:session.send",
        run: "echo 'answers are closed' >&2; exit 1",
      }]);
      await need.locator('button.answer[data-answer="yes"]').click();
      await need.locator(".outcome-error", { hasText: "answers are closed" }).waitFor();
      assertEquals(await need.locator(".outcome-sent").count(), 0);
      assertEquals(await picks(), []);
      await box.client.putHooks([]);
      await need.locator('button.answer[data-answer="yes"]').click();
      await until(async () => (await picks()).length === 1 || undefined, {
        watch: answersLog(box.dirs),
        timeoutMs: 30_000,
      });
      await box.client.wait("agent", { states: ["finished"], timeout: "30s" });
      await twentyOfTwenty(box, "agent", picks, async () => {
        await need.locator('button.answer[data-answer="yes"]').click({ timeout: 30_000 });
      });
      await page.close();

      // The phone: the same bundle in box mode, straight to the box's phone listener.
      const phone = async <T>(args: string[]) => {
        const out = await box.cli(["phone", ...args, "--json"]);
        assertEquals(out.code, 0, out.stderr);
        return JSON.parse(out.stdout) as T;
      };
      await phone<PhoneState>(["on", "--listen", "127.0.0.1:0"]);
      const { link } = await phone<PhonePairCode>(["pair", "--host", "127.0.0.1"]);
      const name = (await box.client.info()).name;
      const context = await browser.newContext({
        viewport: { width: 360, height: 800 },
        ignoreHTTPSErrors: true,
      });
      const mobile = await context.newPage();
      await mobile.goto(link);
      await mobile.waitForURL((url) => url.pathname === "/app/");
      await mobile.locator('[data-view="needs"]').click();
      const card = mobile.locator(`.need[data-session="${name}/agent"]`);
      await twentyOfTwenty(box, "agent", picks, async () => {
        await card.locator('button.answer[data-answer="yes"]').click({ timeout: 30_000 });
      });
      assertEquals(await mobile.evaluate(() => document.cookie), "");
    } finally {
      await browser.close();
      laptop.close();
    }
  },
});
