/**
 * Whole-system test of dock's MCP server (core/mcp.ts): the SDK's own client drives `dock mcp` over
 * stdio against a real agent and box with a fake agent in a real worktree: a task is made, prompted,
 * waited on and its screen read; a bad call is an MCP tool error with a clear message; a session waiting
 * on a permission prompt is refused until the person allows it; shell (`exec`, a session without an
 * agent) is refused until the person allows it for the box, and no tool can allow either; a prompt for a
 * box that cannot be reached goes to the offline queue. The same tools answer on `/v1/mcp` (Streamable
 * HTTP) with the token, and not without it. What either causes carries the origin `mcp`.
 *
 * The permission check is the box's, in the step that types (`POST sessions/{name}/send` with
 * `unless_waiting`): a prompt raised after `send_prompt` looked is not answered either, and the route
 * itself refuses, strictly, without recording a keyed send it did not type.
 */
import { join } from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { AgentClient } from "../client/agent.ts";
import type { BoxClient } from "../client/box.ts";
import { boxDock, dockMcpServer } from "../core/mcp.ts";
import { laptopEnv, makeDirs, makeRepo, runCli, startAgent, startBox } from "./harness.ts";
import { until, untilEvent } from "./wait.ts";

const DENO = Deno.execPath();
const FAKE = new URL("./fixtures/fake_agent.ts", import.meta.url).pathname;
const DOCK = new URL("../cli/dock.ts", import.meta.url).pathname;
const AGENT = {
  id: "fake",
  name: "Fake agent",
  command: `'${DENO}' run -A --cached-only '${FAKE}'`,
  prompt_flag: "",
};

type ToolResult = { content: { type: string; text: string }[]; isError?: boolean };

/** Calls a tool; answers its text and whether it was an error. */
async function call(client: Client, name: string, args: Record<string, unknown> = {}) {
  const result = await client.callTool({ name, arguments: args }) as ToolResult;
  const text = result.content.map((c) => c.text).join("\n");
  return { text, error: result.isError === true, json: () => JSON.parse(text) };
}

Deno.test("dock mcp: tools make a task, prompt it, wait, read its screen; errors are clear; permission prompts are the person's; an unreachable box's prompt is queued", async () => {
  const dirs = await makeDirs();
  await using box = await startBox({ dirs, env: { FAKE_AGENT_WORK_MS: "300" } });
  await using agent = await startAgent(dirs);
  const laptop = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  const repo = await makeRepo(join(dirs.home, "work"), "app", {
    ".dock/config.json": JSON.stringify({ agents: [AGENT] }),
  });
  await box.client.addLocation({ name: "app", path: repo });
  await laptop.addLocal("devbox");
  const mcp = new Client({ name: "dock-test", version: "1.0.0" });
  const env = laptopEnv(dirs, agent);
  await mcp.connect(
    new StdioClientTransport({
      command: DENO,
      args: ["run", "-A", "--cached-only", DOCK, "mcp"],
      env,
      cwd: dirs.home,
      stderr: "pipe",
    }),
  );
  try {
    type Tool = { name: string; inputSchema: { required?: string[] } };
    const listed = (await mcp.listTools()).tools as Tool[];
    // Exactly these: none reads or writes the person's settings, so no client allows itself anything.
    assertEquals(listed.map((t) => t.name).sort(), [
      "answer_prompt",
      "create_session",
      "create_task",
      "emit_event",
      "exec",
      "list_boxes",
      "list_flow_runs",
      "list_locations",
      "list_sessions",
      "list_worktrees",
      "read_screen",
      "send_prompt",
      "wait",
    ]);
    const schema = listed.find((t) => t.name === "send_prompt")!.inputSchema;
    assertEquals(schema.required?.sort(), ["box", "session", "text"]);

    assertEquals((await call(mcp, "list_boxes")).json().map((b: { name: string }) => b.name), ["devbox"]);
    const start = (await box.client.emit({ type: "test.mark" })).id!;
    const task =
      (await call(mcp, "create_task", { box: "devbox", location: "app", name: "mcp-task", agent: "fake" }))
        .json();
    const session = task.session.session as string;
    assertEquals(task.worktree.name, "mcp-task");
    await box.client.wait(session, { states: ["idle"], timeout: "30s" });

    const turn = await call(mcp, "send_prompt", {
      box: "devbox",
      session,
      text: "hello from mcp",
      wait: true,
    });
    assertEquals(turn.error, false, turn.text);
    assertEquals(turn.json().state, "finished");
    assertStringIncludes(
      (await call(mcp, "read_screen", { box: "devbox", session, lines: 20 })).text,
      "Done with prompt 1",
    );
    const sessions = (await call(mcp, "list_sessions", { box: "devbox" })).json();
    assertEquals(sessions.map((s: { session: string; agent_state: string }) => [s.session, s.agent_state]), [
      [session, "finished"],
    ]);
    // Shell is off until the person allows it for the box: exec, and a session that is no agent.
    const execArgs = { box: "devbox", location: "app/mcp-task", command: "git branch --show-current" };
    const shellOff = await call(mcp, "exec", execArgs);
    assertEquals(shellOff.error, true, shellOff.text);
    assertStringIncludes(shellOff.text, "dock mcp allow-exec devbox");
    const shellSession = await call(mcp, "create_session", {
      box: "devbox",
      location: "app/mcp-task",
      command: "sh",
    });
    assertEquals(shellSession.error, true, shellSession.text);
    assertStringIncludes(shellSession.text, "runs shell commands");
    const loginShell = await call(mcp, "create_session", { box: "devbox", location: "app/mcp-task" });
    assertEquals(loginShell.error, true, loginShell.text);
    assertEquals((await box.client.sessions()).map((s) => s.name), [session], "no session was made");
    const execAllowed = await runCli("dock", ["mcp", "allow-exec", "devbox"], { env, cwd: dirs.home });
    assertEquals(execAllowed.code, 0, execAllowed.stderr);
    const ran = (await call(mcp, "exec", execArgs)).json();
    assertEquals([ran.exit_code, ran.output.trim()], [0, "mcp-task"]);
    // What it caused says so.
    const sent = await untilEvent(box.client, (e) => e.type === "session.sent", { after: start });
    assertEquals(sent.origin, "mcp");
    const emitted = (await call(mcp, "emit_event", { type: "mcp.test", data: { n: 1 } })).json();
    assertEquals([emitted.type, emitted.origin, emitted.data], ["mcp.test", "mcp", { n: 1 }]);

    // A bad call: an MCP tool error that says what is wrong, and the server goes on.
    const missing = await call(mcp, "list_locations", { box: "nowhere" });
    assertEquals(missing.error, true);
    assertStringIncludes(missing.text, "nowhere");
    const invalid = await call(mcp, "wait", { box: "devbox", session, timeout: "soon" });
    assertEquals(invalid.error, true);
    assertStringIncludes(invalid.text, "timeout");

    // A permission prompt is the person's: refused, until they allow it for this session.
    const asked = await call(mcp, "send_prompt", {
      box: "devbox",
      session,
      text: "ASK-PERMISSION",
      wait: true,
    });
    assertEquals(asked.json().state, "waiting");
    assertEquals((await call(mcp, "list_sessions", {})).json()[0].reason, "permission");
    const refused = await call(mcp, "send_prompt", { box: "devbox", session, text: "y" });
    assertEquals(refused.error, true);
    assertStringIncludes(refused.text, "only the person answers those");
    assertStringIncludes(refused.text, `dock mcp allow devbox/${session}`);
    const allowed = await runCli("dock", ["mcp", "allow", `devbox/${session}`], { env, cwd: dirs.home });
    assertEquals(allowed.code, 0, allowed.stderr);
    const allowList = await runCli("dock", ["mcp", "allowed", "--json"], { env, cwd: dirs.home });
    assertEquals(JSON.parse(allowList.stdout), {
      answer_permissions: [`devbox/${session}`],
      exec: ["devbox"],
    });
    const malformed = await runCli("dock", ["mcp", "allow", "no-slash"], { env, cwd: dirs.home });
    assertEquals(malformed.code === 0, false);
    assertStringIncludes(malformed.stderr, "BOX/SESSION");
    const answered = await call(mcp, "send_prompt", { box: "devbox", session, text: "y", wait: true });
    assertEquals(answered.error, false, answered.text);
    assertEquals(answered.json().state, "finished");
    assertEquals(
      (await runCli("dock", ["mcp", "deny", `devbox/${session}`], { env, cwd: dirs.home })).code,
      0,
    );
    assertEquals(
      (await runCli("dock", ["mcp", "deny-exec", "devbox"], { env, cwd: dirs.home })).code,
      0,
    );
    const after = await runCli("dock", ["mcp", "allowed", "--json"], { env, cwd: dirs.home });
    assertEquals(JSON.parse(after.stdout), { answer_permissions: [], exec: [] });
    assertEquals((await call(mcp, "exec", execArgs)).error, true, "off again");

    // The agent's own endpoint: the same tools over Streamable HTTP, with the token only.
    const overHttp = new Client({ name: "dock-test-http", version: "1.0.0" });
    await overHttp.connect(
      new StreamableHTTPClientTransport(new URL(`${agent.url}/v1/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${agent.token}` } },
      }),
    );
    try {
      assertEquals((await call(overHttp, "list_boxes")).json()[0].name, "devbox");
      const overHttpEvent = (await call(overHttp, "emit_event", { type: "mcp.http" })).json();
      assertEquals([overHttpEvent.type, overHttpEvent.origin], ["mcp.http", "mcp"]);
    } finally {
      await overHttp.close();
    }
    const anonymous = await fetch(`${agent.url}/v1/mcp`, {
      method: "POST",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
    });
    assertEquals(anonymous.status, 401);
    await anonymous.body?.cancel();

    // A box that cannot be reached: the prompt waits in the laptop's offline queue, not lost.
    await box.stop();
    const queued = await call(mcp, "send_prompt", { box: "devbox", session, text: "when you are back" });
    assertEquals(queued.error, false, queued.text);
    const item = await laptop.queueItem(queued.json().queued);
    assertEquals([item.box, item.session, item.text], ["devbox", session, "when you are back"]);
  } finally {
    await mcp.close();
    laptop.close();
  }
});

Deno.test("dockd mcp: an agent on a box reaches that box alone; shell only with --allow-exec", async () => {
  const dirs = await makeDirs();
  await using box = await startBox({ dirs });
  const repo = await makeRepo(join(dirs.home, "work"), "app");
  await box.client.addLocation({ name: "app", path: repo });
  const name = (await box.client.info()).name;
  const serve = async (...flags: string[]) => {
    const client = new Client({ name: "dock-test-box", version: "1.0.0" });
    await client.connect(
      new StdioClientTransport({
        command: DENO,
        args: [
          "run",
          "-A",
          "--cached-only",
          new URL("../cli/dockd.ts", import.meta.url).pathname,
          "mcp",
          ...flags,
        ],
        env: box.env,
        cwd: dirs.home,
        stderr: "pipe",
      }),
    );
    return client;
  };
  const plain = await serve();
  try {
    const refused = await call(plain, "create_session", { box: name, location: "app", command: "sh" });
    assertEquals(refused.error, true, refused.text);
    assertStringIncludes(refused.text, "dockd mcp --allow-exec");
    const exec = await call(plain, "exec", { box: name, location: "app", command: "true" });
    assertEquals(exec.error, true, exec.text);
    assertEquals(await box.client.sessions(), []);
  } finally {
    await plain.close();
  }
  const mcp = await serve("--allow-exec");
  try {
    assertEquals((await call(mcp, "list_boxes")).json(), [{ name, online: true }]);
    assertEquals(
      (await call(mcp, "exec", { box: name, location: "app", command: "echo hi" })).json().output,
      "hi\n",
    );
    const made =
      (await call(mcp, "create_session", { box: name, location: "app", command: "sh", name: "s1" }))
        .json();
    assertEquals([made.session, made.exited], ["s1", false]);
    const elsewhere = await call(mcp, "list_sessions", { box: "another" });
    assertEquals(elsewhere.error, true);
    assertStringIncludes(elsewhere.text, `this box is '${name}'`);
  } finally {
    await mcp.close();
  }
});

Deno.test("dock mcp: a prompt queued while its box is away waits out a permission prompt when the box is back", async () => {
  const dirs = await makeDirs();
  const log = join(dirs.root, "prompts.log");
  const first = await startBox({
    dirs,
    env: { FAKE_AGENT_WORK_MS: "100", FAKE_AGENT_LOG: log, FAKE_AGENT_LOG_TEXT: "1" },
  });
  let box = first;
  await using agent = await startAgent(dirs, { env: { DOCK_AGENT_HEALTH_MS: "200" } });
  const laptop = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  const repo = await makeRepo(join(dirs.home, "work"), "app", {
    ".dock/config.json": JSON.stringify({ agents: [AGENT] }),
  });
  await box.client.addLocation({ name: "app", path: repo });
  await laptop.addLocal("devbox");
  const mcp = new Client({ name: "dock-test-queue", version: "1.0.0" });
  await mcp.connect(
    new StdioClientTransport({
      command: DENO,
      args: ["run", "-A", "--cached-only", DOCK, "mcp"],
      env: laptopEnv(dirs, agent),
      cwd: dirs.home,
      stderr: "pipe",
    }),
  );
  try {
    const { session } = await box.client.createTask({ location: "app", name: "held", agent: "fake" });
    await box.client.wait(session.name, { states: ["idle"], timeout: "30s" });
    await box.client.send(session.name, "ASK-PERMISSION");
    const asked = await box.client.wait(session.name, { states: ["waiting"], timeout: "30s" });
    assertEquals(asked.state, "waiting");

    await box.stop();
    const queued = await call(mcp, "send_prompt", {
      box: "devbox",
      session: session.name,
      text: "when back",
    });
    assertEquals(queued.error, false, queued.text);
    const id = queued.json().queued as string;

    box = await startBox({ dirs, env: first.env });
    assertEquals((await box.client.session(session.name)).reason, "permission");
    // Back, and held: the agent's turn has not ended while it waits on the person.
    await until(async () => (await laptop.queueItem(id)).state === "waiting", {
      on: laptop,
      timeoutMs: 30_000,
    });
    await box.client.send(session.name, "y");
    await until(async () => (await laptop.queueItem(id)).state === "delivered", {
      on: laptop,
      timeoutMs: 30_000,
    });
    await box.client.wait(session.name, { states: ["finished"], timeout: "30s" });
    // The queued prompt was a turn of its own, never the answer to the permission prompt.
    const prompts = await until(async () => {
      const lines = (await Deno.readTextFile(log)).trim().split("\n").map((l) => JSON.parse(l).text);
      return lines.length >= 2 ? lines : undefined;
    }, { watch: log, timeoutMs: 30_000 });
    assertEquals(prompts, ["ASK-PERMISSION", "when back"]);
  } finally {
    await mcp.close();
    laptop.close();
    await box[Symbol.asyncDispose]();
    await first[Symbol.asyncDispose]();
  }
});

/** Starts a box with a fake agent session made and at rest; `log` gets each prompt the agent reads. */
async function restingAgent(session: string) {
  const dirs = await makeDirs();
  const log = join(dirs.root, "prompts.log");
  const box = await startBox({
    dirs,
    env: { FAKE_AGENT_WORK_MS: "100", FAKE_AGENT_LOG: log, FAKE_AGENT_LOG_TEXT: "1" },
  });
  const repo = await makeRepo(join(dirs.home, "work"), "app", {
    ".dock/config.json": JSON.stringify({ agents: [AGENT] }),
  });
  await box.client.addLocation({ name: "app", path: repo });
  await box.client.createSession({ location: "app", agent: "fake", name: session });
  await box.client.wait(session, { states: ["idle"], timeout: "30s" });
  const prompts = async () =>
    (await Deno.readTextFile(log).catch(() => "")).trim().split("\n").filter(Boolean).map((l) =>
      JSON.parse(l).text as string
    );
  return { box, dirs, log, prompts };
}

Deno.test("send_prompt: a permission prompt raised after it looked is not answered (the box checks as it types)", async () => {
  const { box, prompts } = await restingAgent("s1");
  await using _box = box;
  const name = (await box.client.info()).name;
  // The race, made certain: send_prompt looks (the agent is idle), then the agent asks for permission
  // before the text reaches the box. A check made before the send cannot see it.
  let raced = false;
  const racing = new Proxy(box.client, {
    get(target, property) {
      if (property === "sendOnce") {
        return async (session: string, text: string, options?: Parameters<BoxClient["sendOnce"]>[2]) => {
          raced = true;
          await target.send(session, "ASK-PERMISSION");
          await target.wait(session, { states: ["waiting"], timeout: "30s" });
          return await target.sendOnce(session, text, options);
        };
      }
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  const server = dockMcpServer(boxDock(racing, name));
  const [ours, theirs] = InMemoryTransport.createLinkedPair();
  const mcp = new Client({ name: "dock-test-race", version: "1.0.0" });
  await server.connect(theirs);
  await mcp.connect(ours);
  try {
    const refused = await call(mcp, "send_prompt", { box: name, session: "s1", text: "y" });
    assert(raced, "the prompt was raised between the look and the send");
    assertEquals(refused.error, true, refused.text);
    assertStringIncludes(refused.text, "only the person answers those");
    const now = await box.client.session("s1");
    assertEquals([now.agent_state, now.reason], ["waiting", "permission"]);
    await box.client.screen("s1").then(({ screen }) => {
      assert(!screen.includes("allowed"), `the prompt is unanswered:\n${screen}`);
      assertEquals(screen.match(/\(y\/n\) *y/g), null, "no 'y' typed into it");
    });
    assertEquals(await prompts(), ["ASK-PERMISSION"]);
  } finally {
    await mcp.close();
    await server.close();
  }
});

Deno.test("POST sessions/{name}/send with unless_waiting: 409 while the agent waits on a permission prompt, strict, a refused key not spent", async () => {
  const { box, log, prompts } = await restingAgent("s1");
  await using _box = box;
  const socket = Deno.createHttpClient({ proxy: { transport: "unix", path: box.dirs.socket } });
  const send = async (body: unknown) => {
    const response = await fetch("http://localhost/v1/sessions/s1/send", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(body),
      client: socket,
    });
    return { status: response.status, body: await response.json() };
  };
  try {
    // Strict: only `permission`, and a misspelt field is named.
    const other = await send({ text: "x", unless_waiting: "question" });
    assertEquals([other.status, other.body.error.code, other.body.error.field], [
      400,
      "invalid_request",
      "unless_waiting",
    ]);
    const misspelt = await send({ text: "x", unless_wating: "permission" });
    assertEquals(misspelt.status, 400);
    assertStringIncludes(misspelt.body.error.message, "unless_waiting");
    assertEquals(await prompts(), []);

    // At rest: typed as any send.
    const first = await send({ text: "ASK-PERMISSION", unless_waiting: "permission" });
    assertEquals(first.status, 200, JSON.stringify(first.body));
    await box.client.wait("s1", { states: ["waiting"], timeout: "30s" });

    // Waiting on the person: refused, keyed or not, and nothing typed.
    const refused = await send({ text: "y", unless_waiting: "permission" });
    assertEquals([refused.status, refused.body.error.code], [409, "permission_prompt"]);
    assertStringIncludes(refused.body.error.message, "permission prompt");
    const keyed = await send({ text: "after you", unless_waiting: "permission", key: "k-1" });
    assertEquals([keyed.status, keyed.body.error.code], [409, "permission_prompt"]);
    const held = await box.client.session("s1");
    assertEquals([held.agent_state, held.reason], ["waiting", "permission"]);
    const { screen } = await box.client.screen("s1");
    assert(!screen.includes("after you") && !/\(y\/n\) *y/.test(screen), `nothing typed:\n${screen}`);

    // The person answers (a send without the field); the refused key was never spent: it types now.
    assertEquals((await send({ text: "y" })).status, 200);
    await box.client.wait("s1", { states: ["finished"], timeout: "30s" });
    const retried = await send({ text: "after you", unless_waiting: "permission", key: "k-1" });
    assertEquals(retried.status, 200, JSON.stringify(retried.body));
    await until(async () => (await prompts()).length === 2 ? true : undefined, {
      watch: log,
      timeoutMs: 30_000,
    });
    assertEquals(await prompts(), ["ASK-PERMISSION", "after you"]);
  } finally {
    socket.close();
  }
});
