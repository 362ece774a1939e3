/**
 * The real-agent suite's scenarios (issue 30 item 2), shared by `tests/real_agents_test.ts` and the
 * bench's `truth` section: a real `dockd` (tests/harness.ts, private tmux socket), a real agent tool in
 * its sessions with the hooks `dockd integrations install <tool>` wrote, a scripted model server on
 * loopback (`model_server.ts`), and `agent_state` with its reason checked at every step through
 * `GET sessions/{name}` and `wait`, never a fixed sleep.
 *
 * @module
 */
import { join } from "node:path";
import type { AgentState, PermissionAnswer, Session } from "../../client/wire.ts";
import { makeDirs, makeRepo, startBox, type TestBox } from "../harness.ts";
import { until } from "../wait.ts";
import { paneOutput } from "../tmux_watch.ts";
import { connectUnixWebSocket } from "../ws_unix.ts";
import type { Installed } from "./install.ts";
import { type ModelServer, startModelServer } from "./model_server.ts";
import type { RealTool } from "./tools.ts";
import { inputBoxText } from "../../daemon/restored_input.ts";
import { Client as McpClient } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { boxDock, dockMcpServer } from "../../core/mcp.ts";

/** One state (or outcome) checked. */
export interface Check {
  scenario: string;
  step: string;
  expected: string;
  actual: string;
  ok: boolean;
}

/** A box running one real tool, its model server and its location `app`. */
export class RealBox {
  box: TestBox;
  readonly tool: RealTool;
  readonly model: ModelServer;
  readonly repo: string;
  readonly checks: Check[] = [];
  scenario = "";

  private constructor(box: TestBox, tool: RealTool, model: ModelServer, repo: string) {
    this.box = box;
    this.tool = tool;
    this.model = model;
    this.repo = repo;
  }

  /** Starts the box, writes the tool's HOME, runs `dockd integrations install <tool>`. */
  static async start(tool: RealTool, tools: Installed): Promise<RealBox> {
    const model = startModelServer();
    const dirs = await makeDirs();
    const box = await startBox({ dirs });
    const repo = join(dirs.home, "work", "app");
    await tool.prepareHome(dirs.home, repo, model.url);
    await makeRepo(join(dirs.home, "work"), "app", {
      ".dock/config.json": JSON.stringify({ agents: [tool.preset(tools, model.url)] }),
    });
    await box.client.addLocation({ name: "app", path: repo });
    const installed = await box.cli(["integrations", "install", tool.id, "--json"]);
    if (installed.code !== 0) throw new Error(`integrations install ${tool.id}: ${installed.stderr}`);
    const [result] = JSON.parse(installed.stdout) as { notify?: string }[];
    await tool.afterInstall?.(dirs.home, result.notify);
    return new RealBox(box, tool, model, repo);
  }

  get client() {
    return this.box.client;
  }

  /** Kills the daemon with SIGKILL, runs `between`, starts it again on the same folders. */
  async restart(between: () => Promise<unknown>): Promise<void> {
    const old = this.box;
    await old.stop({ kill: true });
    await between();
    this.box = await startBox({ dirs: old.dirs, env: old.env });
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.box[Symbol.asyncDispose]();
    await this.model[Symbol.asyncDispose]();
  }

  /** Starts a session of the tool and waits for its prompt. */
  async create(name: string): Promise<Session> {
    const session = await this.client.createSession({ location: "app", agent: this.tool.id, name });
    await this.shows(name, this.tool.ready, 60_000);
    // Done starting (Gemini CLI draws its prompt while it still runs its start-up hooks).
    await this.settled(name);
    return session;
  }

  async screen(name: string): Promise<string> {
    return (await this.client.screen(name)).screen;
  }

  /** The file of what the pane prints from now on (a wait on the screen watches it); none for a pane gone. */
  #printed(name: string): Promise<string | undefined> {
    return paneOutput(this.box, name).catch(() => undefined);
  }

  /** Waits until the pane shows `pattern`. */
  async shows(name: string, pattern: RegExp | string, timeoutMs = 30_000): Promise<void> {
    const test = (screen: string) =>
      typeof pattern === "string" ? screen.includes(pattern) : pattern.test(screen);
    let last = "";
    const printed = await this.#printed(name);
    try {
      await until(async () => test(last = await this.screen(name)), { timeoutMs: timeoutMs, watch: printed });
    } catch {
      throw new Error(`${name} never showed ${pattern}; screen:\n${last}`);
    }
  }

  /** `send` as an orchestrator does. */
  send(name: string, text: string): Promise<Session> {
    return this.client.send(name, text);
  }

  /** `POST sessions/{name}/keys`. */
  async keys(name: string, keys: string[]): Promise<void> {
    await this.client.keys(name, keys);
  }

  /** `POST sessions/{name}/answer`. */
  async answer(name: string, answer: PermissionAnswer): Promise<void> {
    try {
      await this.client.answer(name, answer);
    } catch (error) {
      // What changed the state, to tell a missing hook from a wrong one.
      const history = (await this.client.session(name)).history ?? [];
      const causes = history.slice(-6).map((h) => `${h.state}:${h.cause}`).join(" > ");
      throw new Error(`${(error as Error).message} [${causes}]`);
    }
  }

  /** `dockd session answer NAME ANSWER`, the CLI a person on the box types. */
  async cliAnswer(name: string, answer: PermissionAnswer): Promise<void> {
    const result = await this.box.cli(["session", "answer", name, answer, "--json"]);
    if (result.code !== 0) throw new Error(`dockd session answer ${name} ${answer}: ${result.stderr}`);
  }

  /**
   * dock's MCP server over this box, with the person's allow-list saying yes for every session (the
   * allow-list itself is tests/mcp_test.ts's): `answer` calls its `answer_prompt` tool with the SDK's client.
   */
  async mcp(): Promise<{ answer(name: string, answer: PermissionAnswer): Promise<void> } & AsyncDisposable> {
    const server = dockMcpServer({
      ...boxDock(this.client, "box"),
      answersPermissions: () => Promise.resolve(true),
    });
    const client = new McpClient({ name: "dock-real-agents", version: "1.0.0" });
    const [ours, theirs] = InMemoryTransport.createLinkedPair();
    await server.connect(theirs);
    await client.connect(ours);
    return {
      async answer(name, answer) {
        const result = await client.callTool({
          name: "answer_prompt",
          arguments: { box: "box", session: name, answer },
        }) as {
          content: { text: string }[];
          isError?: boolean;
        };
        if (result.isError) throw new Error(`answer_prompt: ${result.content.map((c) => c.text).join(" ")}`);
      },
      async [Symbol.asyncDispose]() {
        await client.close();
        await server.close();
      },
    };
  }

  /** Waits until the pane stays the same for a second (the tool is done redrawing). */
  async settled(name: string): Promise<void> {
    let last = "";
    let since = Date.now();
    await until(async () => {
      const now = await this.screen(name);
      if (now !== last) [last, since] = [now, Date.now()];
      return Date.now() - since >= 1000;
    }, { timeoutMs: 30_000 });
  }

  /** Keys straight into tmux on dock's socket, dock not involved (a person in `tmux attach`). */
  async tmuxKeys(name: string, ...keys: string[]): Promise<void> {
    const socket = join(this.box.dirs.state, "box", "tmux.sock");
    const output = await new Deno.Command("tmux", {
      args: ["-S", socket, "send-keys", "-t", `=${name}:`, ...keys],
    })
      .output();
    if (!output.success) throw new Error(`tmux send-keys: ${new TextDecoder().decode(output.stderr)}`);
  }

  /** The pid of the session's program (its pane's). */
  async panePid(name: string): Promise<number> {
    const socket = join(this.box.dirs.state, "box", "tmux.sock");
    const out = await new Deno.Command("tmux", {
      args: ["-S", socket, "display-message", "-p", "-t", `=${name}:`, "#{pane_pid}"],
    }).output();
    return Number(new TextDecoder().decode(out.stdout).trim());
  }

  /** Bytes typed into the terminal attached through dock (the app, `dock attach`), as a person types. */
  async attachType(name: string, bytes: string): Promise<void> {
    const ws = await connectUnixWebSocket(this.box.dirs.socket, `/v1/sessions/${name}/attach`);
    try {
      await ws.sendBinary(new TextEncoder().encode(bytes));
      // The socket stays open until the tool took the key: its screen changes away from what it was.
      const printed = await this.#printed(name);
      const before = await this.screen(name);
      await until(async () => (await this.screen(name)) !== before, { timeoutMs: 10_000, watch: printed })
        .catch(() => {});
    } finally {
      await ws.close();
    }
  }

  /**
   * Checks that `name` reaches `expected` (reported after `after`, when given; with `reason`, why it
   * waits; with `exited`, whether its program ended), through `wait` with a timeout.
   */
  async expect(
    step: string,
    name: string,
    expected: AgentState,
    options: { after?: string; reason?: string; exited?: boolean } = {},
  ): Promise<boolean> {
    if (options.exited) {
      await until(async () => (await this.client.session(name)).exited, {
        on: this.client,
        timeoutMs: 30_000,
      }).catch(() => {});
    }
    const waited = await this.client.wait(name, { states: [expected], after: options.after, timeout: "45s" });
    const session = await this.client.session(name);
    const fresh = !options.after || (session.state_time ?? "") > options.after;
    let actual: string = fresh || session.agent_state !== expected ? session.agent_state : "(not reported)";
    let wanted: string = expected;
    if (options.reason !== undefined) {
      actual += `/${session.reason}`;
      wanted += `/${options.reason}`;
    }
    if (options.exited !== undefined) {
      actual += session.exited ? " exited" : "";
      wanted += options.exited ? " exited" : "";
    }
    if (!waited.timed_out && !waited.exited && waited.state !== expected) {
      actual += ` (wait said ${waited.state})`;
    }
    if (actual !== wanted) {
      // What changed the state, to tell a missing hook from a wrong one.
      const causes = (session.history ?? []).slice(-6).map((h) => `${h.state}:${h.cause}`).join(" > ");
      return this.record(step, wanted, `${actual} [${causes}]`);
    }
    return this.record(step, wanted, actual);
  }

  /** Records a check that is not a state. */
  record(step: string, expected: string, actual: string): boolean {
    const ok = expected === actual;
    this.checks.push({ scenario: this.scenario, step, expected, actual, ok });
    return ok;
  }

  /** The file the scripted `touch` made exists (the tool really ran it), or not. */
  async made(step: string, file: string, expected: boolean): Promise<void> {
    const there = await Deno.stat(join(this.repo, file)).then(() => true, () => false);
    this.record(step, expected ? "file made" : "no file", there ? "file made" : "no file");
  }

  /** Sends a prompt that takes its time: running, then finished after the model answered. */
  async turn(name: string, label: string, slowMs = 1500): Promise<void> {
    const before = justBefore();
    const mark = `${name}-${++marks}`;
    const sent = await this.send(name, `${label} [[slow:${slowMs}]] [[mark:${mark}]]`);
    await this.expect(`${label}: sent`, name, "running", { after: before });
    await this.expect(`${label}: ended`, name, "finished", { after: sent.state_time ?? before });
    // The prompt was submitted on its own: typed but not submitted, it would ride with the next one.
    const reached = this.model.seen.some((s) => s.script.mark === mark);
    this.record(`${label}: reached the model`, "yes", reached ? "yes" : "no");
  }

  /** Asks for a shell command (a permission prompt) and checks `waiting`/`permission` with the menu up. */
  async ask(name: string, label: string, file: string): Promise<string> {
    const before = justBefore();
    await this.send(name, `${label} [[bash:touch ${file}]]`);
    await this.expect(`${label}: asked`, name, "waiting", { after: before, reason: "permission" });
    await this.shows(name, this.tool.permission);
    return before;
  }
}

/** A moment just before now: a state set from now on is reported after it. */
export function justBefore(): string {
  return new Date(Date.now() - 1).toISOString();
}

/** A named scenario of the suite. */
export interface Scenario {
  name: string;
  /** Claude Code only (the MCP server, the 20 answers). */
  only?: RealTool["id"];
  run(t: RealBox): Promise<void>;
}

let counter = 0;
let marks = 0;
function unique(base: string): string {
  return `${base}-${++counter}`;
}

/** Every scenario, in the order they run. The daemon kill comes last: it replaces the box's daemon. */
export const SCENARIOS: Scenario[] = [
  {
    name: "starts idle, one turn, two turns",
    async run(t) {
      const name = unique("turns");
      await t.create(name);
      // Codex reports SessionStart with the first prompt, not at start: idle is the state dock starts with.
      await t.expect("started", name, "idle");
      await t.turn(name, "first");
      await t.turn(name, "second");
    },
  },
  {
    name: "permission answered yes through keys",
    async run(t) {
      const name = unique("yes");
      await t.create(name);
      await t.ask(name, "permission", "yes-keys.txt");
      const before = justBefore();
      await t.keys(name, t.tool.yesKeys);
      await t.expect("answered yes: ended", name, "finished", { after: before });
      await t.made("answered yes: command ran", "yes-keys.txt", true);
    },
  },
  {
    name: "permission answered yes through answer, no through answer",
    async run(t) {
      const name = unique("answer");
      await t.create(name);
      await t.ask(name, "yes", "yes-answer.txt");
      let before = justBefore();
      await t.answer(name, "yes");
      await t.expect("answered yes: ended", name, "finished", { after: before });
      await t.made("answered yes: command ran", "yes-answer.txt", true);
      await t.ask(name, "no", "no-answer.txt");
      before = justBefore();
      await t.answer(name, "no");
      // Claude Code reports nothing on a denial; dock's check of the settled pane decides.
      await t.expect("answered no: back at the prompt", name, "waiting", { after: before, reason: "input" });
      await t.made("answered no: command not run", "no-answer.txt", false);
      await t.turn(name, "after no");
    },
  },
  {
    name: "permission answered through attach",
    async run(t) {
      const name = unique("attach");
      await t.create(name);
      await t.ask(name, "permission", "yes-attach.txt");
      const before = justBefore();
      await t.attachType(name, t.tool.yesKeys.join(""));
      await t.expect("answered in the terminal: ended", name, "finished", { after: before });
      await t.made("answered in the terminal: command ran", "yes-attach.txt", true);
    },
  },
  {
    name: "Esc mid-turn through attach and through keys",
    async run(t) {
      const name = unique("esc");
      await t.create(name);
      for (const how of ["attach", "keys"] as const) {
        let before = justBefore();
        const asked = t.model.seen.length;
        await t.send(name, `long ${how} [[slow:120000]]`);
        await t.expect(`${how}: running`, name, "running", { after: before });
        // The model was asked (the prompt was submitted, not just typed) and is taking its time.
        const reached = await until(
          () => t.model.seen.slice(asked).some((s) => s.script.slowMs === 120000),
          { timeoutMs: 30_000 },
        ).catch(() => false);
        t.record(`${how}: prompt reached the model`, "yes", reached ? "yes" : "no");
        before = justBefore();
        if (how === "attach") await t.attachType(name, "\x1b");
        else await t.keys(name, ["Escape"]);
        const { state, reason } = { reason: undefined, ...t.tool.interrupted };
        await t.expect(`${how}: Esc`, name, state, { after: before, reason });
        // As a person would: the next prompt once the tool is back at rest (Claude Code puts the
        // interrupted prompt back in its input, and an Enter typed while it redraws was seen lost).
        await t.settled(name);
      }
      await t.turn(name, "after Esc");
    },
  },
  {
    name: "a prompt typed in tmux directly",
    async run(t) {
      const name = unique("tmux");
      await t.create(name);
      const before = justBefore();
      await t.tmuxKeys(name, "typed in tmux [[slow:1500]]");
      if (t.tool.enterApart) await t.shows(name, "typed in tmux").then(() => t.settled(name));
      await t.tmuxKeys(name, "Enter");
      await t.expect("typed: running", name, "running", { after: before });
      await t.expect("typed: ended", name, "finished", { after: before });
    },
  },
  {
    name: "send --wait and session wait",
    async run(t) {
      const name = unique("wait");
      await t.create(name);
      const sent = await t.box.cli([
        "session",
        "send",
        name,
        "waited [[slow:1500]]",
        "--wait",
        "--timeout",
        "60s",
      ]);
      t.record("send --wait: exit code", "0", String(sent.code));
      await t.expect("send --wait: finished", name, "finished");
      const before = justBefore();
      await t.send(name, "again [[slow:1500]]");
      await t.expect("session wait: running", name, "running", { after: before });
      const waited = await t.box.cli(["session", "wait", name, "--timeout", "60s"]);
      t.record("session wait: exit code", "0", String(waited.code));
      await t.expect("session wait: finished", name, "finished", { after: before });
    },
  },
  {
    name: "/exit and a kill",
    async run(t) {
      const quit = unique("exit");
      await t.create(quit);
      await t.turn(quit, "before exit", 200);
      await t.tmuxKeys(quit, "/exit");
      if (t.tool.enterApart) await t.shows(quit, "/exit").then(() => t.settled(quit));
      await t.tmuxKeys(quit, "Enter");
      await t.expect("/exit: exited", quit, "finished", { exited: true });
      const killed = unique("kill");
      await t.create(killed);
      const before = justBefore();
      await t.send(killed, "long [[slow:120000]]");
      await t.expect("kill: running", killed, "running", { after: before });
      Deno.kill(await t.panePid(killed), "SIGKILL");
      await t.expect("kill: exited", killed, "finished", { exited: true });
    },
  },
  {
    name: "two sessions in one worktree",
    async run(t) {
      const left = unique("left");
      const right = unique("right");
      await t.create(left);
      await t.create(right);
      await t.expect("right started", right, "idle");
      await t.turn(left, "only left");
      await t.expect("right untouched by left's turn", right, "idle");
      await t.turn(right, "only right");
      await t.expect("left untouched by right's turn", left, "finished");
    },
  },
  {
    name: "dock's MCP server listed and called",
    only: "claude",
    async run(t) {
      const name = unique("mcp");
      await t.create(name);
      const seen = t.model.seen.length;
      const before = justBefore();
      await t.send(name, "list them [[tool:mcp__dock__list_sessions]]");
      // Claude Code asks before an MCP tool too.
      await t.expect("asked", name, "waiting", { after: before, reason: "permission" });
      await t.answer(name, "yes");
      await t.expect("ended", name, "finished", { after: before });
      // Claude Code defers MCP tools behind its ToolSearch: the call by name is what proves it listed it.
      const result = t.model.seen.slice(seen).findLast((s) => s.toolResult !== undefined)?.toolResult;
      t.record("called, its result sent back", "called", result === undefined ? "not called" : "called");
      t.record("result names this session", "yes", result?.includes(name) ? "yes" : `no: ${result}`);
    },
  },
  {
    // The app's and the phone's 20 are tests/app_real_claude_test.ts (clicked in Chromium).
    name: "20 answers from the CLI and 20 from MCP reach the agent",
    only: "claude",
    async run(t) {
      const name = unique("twenty");
      await t.create(name);
      await using mcp = await t.mcp();
      const channels = {
        cli: (answer: PermissionAnswer) => t.cliAnswer(name, answer),
        mcp: (answer: PermissionAnswer) => mcp.answer(name, answer),
      };
      for (const [channel, answerBy] of Object.entries(channels)) {
        let reached = 0;
        for (let i = 0; i < 20; i++) {
          const file = `answer-${channel}-${i}.txt`;
          const before = justBefore();
          await t.send(name, `ask ${channel} ${i} [[bash:touch ${file}]]`);
          await t.client.wait(name, { states: ["waiting"], after: before, timeout: "45s" });
          await t.shows(name, t.tool.permission);
          await answerBy("yes");
          await t.client.wait(name, { states: ["finished"], after: before, timeout: "45s" });
          if (await Deno.stat(join(t.repo, file)).then(() => true, () => false)) reached++;
        }
        t.record(
          `answers from the ${channel.toUpperCase()} that reached Claude Code`,
          "20/20",
          `${reached}/20`,
        );
      }
    },
  },
  {
    name: "the prompt after an Esc arrives alone",
    only: "claude",
    async run(t) {
      const name = unique("alone");
      await t.create(name);
      const interrupted = "interrupted [[slow:120000]]";
      let before = justBefore();
      const asked = t.model.seen.length;
      await t.send(name, interrupted);
      await t.expect("running", name, "running", { after: before });
      await until(
        () => t.model.seen.slice(asked).some((s) => s.script.slowMs === 120000),
        { timeoutMs: 30_000 },
      );
      before = justBefore();
      await t.keys(name, ["Escape"]);
      await t.expect("Esc", name, "waiting", { after: before, reason: "input" });
      // Esc before the model answered: Claude Code puts the prompt back in its input box.
      const box = inputBoxText("claude", await t.screen(name));
      t.record("the interrupted prompt is put back", interrupted, box ?? "(no input box)");
      const sent = t.model.seen.length;
      await t.turn(name, "alone");
      // The next send reached the model alone, not typed after the prompt put back.
      const prompts = t.model.seen.slice(sent).filter((s) => s.script.marks.length > 0);
      t.record(
        "the next prompt arrived alone",
        "alone [[slow:1500]]",
        prompts.map((s) => `${s.script.head.replace(/ \[\[mark:.*$/, "")}`).join(" | "),
      );
    },
  },
  {
    name: "daemon kill -9 mid-turn",
    async run(t) {
      const name = unique("survivor");
      await t.create(name);
      const before = justBefore();
      await t.send(name, "long [[slow:5000]]");
      await t.expect("running", name, "running", { after: before });
      const spool = join(t.box.dirs.state, "box", "spool");
      // The turn ends while the daemon is down: its Stop hook spools the report.
      await t.restart(() =>
        until(() => {
          try {
            return Promise.resolve(
              [...Deno.readDirSync(spool)].some((e) =>
                e.name.endsWith(".json") &&
                Deno.readTextFileSync(join(spool, e.name)).includes("agent.finished")
              ),
            );
          } catch {
            return Promise.resolve(false);
          }
        }, { timeoutMs: 60_000 })
      );
      await t.expect("after restart: replayed", name, "finished");
      await t.turn(name, "after restart");
    },
  },
];

/** Runs one scenario; one that throws records a failed check naming the error. */
export async function runScenario(t: RealBox, scenario: Scenario): Promise<Check[]> {
  t.scenario = scenario.name;
  const start = t.checks.length;
  try {
    await scenario.run(t);
  } catch (error) {
    t.checks.push({
      scenario: scenario.name,
      step: "(scenario failed)",
      expected: "completes",
      actual: (error as Error).message.slice(0, 2000),
      ok: false,
    });
  }
  return t.checks.slice(start);
}

/** The scenarios `tool` runs, and the ones it skips with why. */
export function scenariosOf(tool: RealTool): Scenario[] {
  // DOCK_REAL_SCENARIOS=word runs only the scenarios whose name holds it (while working on one).
  const only = Deno.env.get("DOCK_REAL_SCENARIOS");
  return SCENARIOS.filter((s) =>
    (!s.only || s.only === tool.id) && !tool.skip?.[s.name] && (!only || s.name.includes(only))
  );
}
