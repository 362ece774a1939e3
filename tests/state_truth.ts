/**
 * The truth suite's scenarios (issue 15), shared by `tests/state_truth_test.ts` and the bench's `truth`
 * section: a real `dockd` with scripted fake agents (`fixtures/fake_agent.ts`, playing Claude Code, Codex
 * or Cursor and firing their hooks through the real `dock hook`), each scenario driving them as a person
 * or an orchestrator would and checking `agent_state` at every step.
 *
 * A check waits for the expected state (with `wait` and a timeout, never a fixed sleep) and records what
 * the daemon holds then. Checks dock is known to get wrong today are listed in {@linkcode KNOWN_MISSES}
 * with the reason: the test asserts every other check, the bench prints the score and every miss. A fix
 * removes its entry, which turns the miss into an asserted check.
 *
 * @module
 */
import { join } from "node:path";
import type { AgentState, Session } from "../client/wire.ts";
import { makeDirs, makeRepo, startBox, type TestBox } from "./harness.ts";
import { paneOutput } from "./tmux_watch.ts";
import { until } from "./wait.ts";
import { connectUnixWebSocket } from "./ws_unix.ts";

const DENO = Deno.execPath();
const FAKE = new URL("./fixtures/fake_agent.ts", import.meta.url).pathname;
const FIXTURES = new URL("./fixtures/hooks/", import.meta.url).pathname;
const DOCK = new URL("../cli/dock.ts", import.meta.url).pathname;
const RUN = `'${DENO}' run -A --cached-only '${FAKE}'`;

/** The agent presets the scenarios run: one fake agent playing each tool. */
const AGENTS = [
  { id: "fake", name: "Claude-like", command: RUN, prompt_flag: "" },
  { id: "resumer", name: "Claude-like, resumed", command: `${RUN} --resume`, prompt_flag: "" },
  { id: "codex", name: "Codex-like", command: `FAKE_AGENT_TOOL=codex ${RUN}`, prompt_flag: "" },
  { id: "cursor", name: "Cursor-like", command: `FAKE_AGENT_TOOL=cursor ${RUN}`, prompt_flag: "" },
];

/**
 * Checks dock gets wrong today, by `scenario: step`, with why. Known misses are still run and scored,
 * with a short wait, and are not asserted by the test.
 */
export const KNOWN_MISSES: Record<string, string> = {};

/** One state checked. */
export interface Check {
  scenario: string;
  step: string;
  expected: string;
  actual: string;
  ok: boolean;
  /** Why it is a known miss, when it is one. */
  known?: string;
}

/** A box for the scenarios, with its location `app` and the fake agents' presets. */
export interface TruthBox {
  box: TestBox;
  /** The box, replaced by a restart. */
  restart(options: { kill: boolean; between?: () => Promise<unknown> }): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

/** Starts a box for the scenarios. */
export async function truthBox(): Promise<TruthBox> {
  const dirs = await makeDirs();
  const first = await startBox({ dirs, env: { FAKE_AGENT_WORK_MS: "300" } });
  const repo = await makeRepo(join(dirs.home, "work"), "app", {
    ".dock/config.json": JSON.stringify({ agents: AGENTS }),
  });
  await first.client.addLocation({ name: "app", path: repo });
  const holder: TruthBox = {
    box: first,
    async restart(options) {
      const old = holder.box;
      await old.stop({ kill: options.kill });
      await options.between?.();
      holder.box = await startBox({ dirs: old.dirs, env: old.env });
    },
    async [Symbol.asyncDispose]() {
      await holder.box[Symbol.asyncDispose]();
    },
  };
  return holder;
}

/** What a scenario drives: its box, and the checks it records. */
export class Truth {
  readonly checks: Check[] = [];
  readonly scenario: string;
  #t: TruthBox;

  constructor(t: TruthBox, scenario: string) {
    this.#t = t;
    this.scenario = scenario;
  }

  get box(): TestBox {
    return this.#t.box;
  }

  restart(options: { kill: boolean; between?: () => Promise<unknown> }): Promise<void> {
    return this.#t.restart(options);
  }

  /** Starts a session of `agent`; its name is unique to the scenario. */
  async create(name: string, agent = "fake"): Promise<Session> {
    const session = await this.box.client.createSession({ location: "app", agent, name });
    await this.shows(name, "> ");
    return session;
  }

  /** `send` as an orchestrator does; returns when the text was typed. */
  async send(name: string, text: string): Promise<Session> {
    return await this.box.client.send(name, text);
  }

  /** A person typing into the attached terminal: keys straight to tmux, dock not involved. */
  async keys(name: string, ...keys: string[]): Promise<void> {
    const socket = join(this.box.dirs.state, "box", "tmux.sock");
    const output = await new Deno.Command("tmux", {
      args: ["-S", socket, "send-keys", "-t", `=${name}:`, ...keys],
    })
      .output();
    if (!output.success) throw new Error(`tmux send-keys: ${new TextDecoder().decode(output.stderr)}`);
  }

  /** A person pressing a key (`\x1b` Esc, `\x03` Ctrl-C) in the terminal attached through dock. */
  async press(name: string, key: string): Promise<void> {
    const ws = await connectUnixWebSocket(this.box.dirs.socket, `/v1/sessions/${name}/attach`);
    try {
      await ws.sendBinary(new TextEncoder().encode(key));
      await this.shows(name, "Interrupted by user");
    } finally {
      await ws.close();
    }
  }

  /** A person typing into the terminal attached through dock (`dock attach`, the app). */
  async typeAttached(name: string, text: string): Promise<void> {
    const ws = await connectUnixWebSocket(this.box.dirs.socket, `/v1/sessions/${name}/attach`);
    try {
      await ws.sendBinary(new TextEncoder().encode(`${text}\r`));
      await this.shows(name, "thinking on prompt");
    } finally {
      await ws.close();
    }
  }

  async screen(name: string): Promise<string> {
    return (await this.box.client.screen(name)).screen;
  }

  /** Waits until the pane shows `text` (the fake agent got that far), re-checking as the pane prints. */
  async shows(name: string, text: string): Promise<void> {
    const printed = await paneOutput(this.box, name);
    await until(async () => (await this.screen(name)).includes(text), { timeoutMs: 30_000, watch: printed });
  }

  /** Runs `dock hook TOOL EVENT` with a fixture payload, as the tool would from inside the session. */
  async hook(name: string, tool: string, event: string, fixture: string): Promise<void> {
    const child = new Deno.Command(DENO, {
      args: ["run", "-A", "--cached-only", DOCK, "hook", tool, event],
      env: { ...this.box.env, DOCK_SESSION: name },
      clearEnv: true,
      stdin: "piped",
      stdout: "null",
      stderr: "null",
    }).spawn();
    const writer = child.stdin.getWriter();
    await writer.write(await Deno.readFile(join(FIXTURES, fixture)));
    await writer.close();
    await child.status;
  }

  /**
   * Checks that session `name` reaches `expected` (reported after `after`, when given) and, with
   * `exited`, that its program ended or not. Waits through `wait` with a timeout.
   */
  async expect(
    step: string,
    name: string,
    expected: AgentState,
    options: { after?: string; exited?: boolean } = {},
  ): Promise<Check> {
    const key = `${this.scenario}: ${step}`;
    const known = KNOWN_MISSES[key];
    // With `exited` the check is for the exit (the state may be right before the program ends).
    if (options.exited) {
      await until(async () => (await this.box.client.session(name)).exited, {
        on: this.box,
        timeoutMs: known ? 3000 : 30_000,
      })
        .catch(() => {});
    }
    const waited = await this.box.client.wait(name, {
      states: [expected],
      after: options.after,
      timeout: known ? "3s" : "30s",
    });
    const session = await this.box.client.session(name);
    const fresh = !options.after || (session.state_time ?? "") > options.after;
    let actual: string = fresh || session.agent_state !== expected ? session.agent_state : "(not reported)";
    let wanted: string = expected;
    if (options.exited !== undefined) {
      actual += session.exited ? " exited" : "";
      wanted += options.exited ? " exited" : "";
    }
    // A wait that returns "not timed out" for a state the session is not in would be a lie.
    if (!waited.timed_out && !waited.exited && waited.state !== expected) {
      actual += ` (wait said ${waited.state})`;
    }
    const check = { scenario: this.scenario, step, expected: wanted, actual, ok: actual === wanted, known };
    this.checks.push(check);
    return check;
  }

  /** Records a check that is not a state (a wait that returned). */
  /** Checks why the session waits, and what its history says caused the last change. */
  async why(step: string, name: string, reason: string, cause: string): Promise<void> {
    const session = await this.box.client.session(name);
    this.record(`${step}: reason`, reason, String(session.reason));
    this.record(`${step}: cause`, cause, String(session.history?.at(-1)?.cause));
  }

  record(step: string, expected: string, actual: string): void {
    const known = KNOWN_MISSES[`${this.scenario}: ${step}`];
    this.checks.push({ scenario: this.scenario, step, expected, actual, ok: expected === actual, known });
  }

  /** Sends a prompt and checks the turn: running, then finished. */
  async turn(name: string, text: string, label = "turn"): Promise<void> {
    const sent = await this.send(name, `${text} SLOW:1200`);
    await this.expect(`${label} sent`, name, "running");
    await this.shows(name, "Done with prompt");
    await this.expect(`${label} ended`, name, "finished", { after: sent.state_time! });
  }
}

/** A named scenario. */
export interface Scenario {
  name: string;
  run(t: Truth): Promise<void>;
}

function now(): string {
  return new Date().toISOString();
}

/** A moment just before now: a state set from now on is reported after it. */
function justBefore(): string {
  return new Date(Date.now() - 1).toISOString();
}

/** Every scenario, in the order they run. The daemon kill comes last: it replaces the box. */
export const SCENARIOS: Scenario[] = [
  {
    name: "normal turn",
    async run(t) {
      const s = await t.create("normal");
      await t.expect("started", "normal", "idle", { after: s.created });
      await t.turn("normal", "fix the bug");
    },
  },
  {
    name: "two turns",
    async run(t) {
      await t.create("two");
      await t.expect("started", "two", "idle");
      const first = await t.send("two", "one SLOW:1200");
      await t.expect("first sent", "two", "running");
      await t.shows("two", "Done with prompt 1");
      await t.expect("first ended", "two", "finished", { after: first.state_time! });
      const before = justBefore();
      const second = await t.send("two", "two SLOW:1200");
      await t.expect("second sent", "two", "running", { after: before });
      await t.shows("two", "Done with prompt 2");
      await t.expect("second ended", "two", "finished", { after: second.state_time! });
    },
  },
  {
    name: "prompt sent while running",
    async run(t) {
      await t.create("busy");
      await t.expect("started", "busy", "idle");
      await t.send("busy", "first SLOW:2500");
      await t.expect("first sent", "busy", "running");
      await t.send("busy", "second SLOW:1200");
      await t.expect("second sent mid-turn", "busy", "running");
      await t.shows("busy", "working on prompt 2 (1/3)");
      await t.expect("second turn working", "busy", "running");
      await t.shows("busy", "Done with prompt 2");
      await t.expect("both ended", "busy", "finished");
    },
  },
  ...(["Esc", "Ctrl-C"] as const).map((key): Scenario => ({
    name: `interrupt with ${key}`,
    async run(t) {
      const name = key === "Esc" ? "esc" : "ctrlc";
      await t.create(name);
      await t.expect("started", name, "idle");
      await t.send(name, "long work SLOW:600000");
      await t.expect("sent", name, "running");
      await t.shows(name, "thinking on prompt 1");
      // In dock's terminal (the app, `dock attach`): keys typed there are the ones dock sees.
      await t.press(name, key === "Esc" ? "\x1b" : "\x03");
      await t.expect(`after ${key}`, name, "waiting");
      await t.why(`after ${key}`, name, "input", "interrupt");
      // `wait` returns on an interrupted turn: with the state, or at its timeout.
      const waited = await t.box.client.wait(name, { states: ["finished", "waiting"], timeout: "1s" });
      t.record("wait returns", "returned", waited ? "returned" : "hung");
      const before = justBefore();
      const next = await t.send(name, "go on SLOW:1200");
      await t.expect("next prompt", name, "running", { after: before });
      await t.shows(name, "Done with prompt 2");
      await t.expect("next ended", name, "finished", { after: next.state_time! });
    },
  })),
  {
    name: "permission answered yes",
    async run(t) {
      await t.create("allow");
      await t.expect("started", "allow", "idle");
      const asked = await t.send("allow", "run it ASK-PERMISSION SLOW:1200");
      await t.expect("asked", "allow", "waiting", { after: asked.state_time! });
      await t.why("asked", "allow", "permission", "hook:Notification");
      const answered = await t.send("allow", "y");
      await t.expect("after y", "allow", "running", { after: asked.state_time! });
      await t.shows("allow", "Done with prompt 1");
      await t.expect("ended", "allow", "finished", { after: answered.state_time! });
    },
  },
  {
    name: "permission answered no",
    async run(t) {
      await t.create("deny");
      await t.expect("started", "deny", "idle");
      const asked = await t.send("deny", "run it ASK-PERMISSION");
      await t.expect("asked", "deny", "waiting", { after: asked.state_time! });
      await t.send("deny", "n");
      await t.shows("deny", "What should Claude do instead?");
      await t.expect("after n", "deny", "waiting");
      await t.why("after n", "deny", "input", "interrupt");
      const next = await t.send("deny", "do it differently SLOW:1200");
      await t.shows("deny", "Done with prompt 2");
      await t.expect("next ended", "deny", "finished", { after: next.state_time! });
    },
  },
  {
    name: "question to the human",
    async run(t) {
      await t.create("question");
      await t.expect("started", "question", "idle");
      const asked = await t.send("question", "ASK-QUESTION SLOW:1200");
      await t.expect("asked", "question", "waiting", { after: asked.state_time! });
      await t.why("asked", "question", "question", "hook:Notification");
      const answered = await t.send("question", "src/app.ts");
      await t.expect("answered", "question", "running", { after: asked.state_time! });
      await t.shows("question", "Done with prompt 1");
      await t.expect("ended", "question", "finished", { after: answered.state_time! });
    },
  },
  {
    name: "subagents finish inside a turn",
    async run(t) {
      await t.create("subagents");
      await t.expect("started", "subagents", "idle");
      const sent = await t.send("subagents", "SUBAGENTS SLOW:1500");
      // The fake agent fires both SubagentStop before it prints step 2.
      await t.shows("subagents", "(2/3)");
      await t.expect("after SubagentStop", "subagents", "running");
      await t.shows("subagents", "Done with prompt 1");
      await t.expect("ended", "subagents", "finished", { after: sent.state_time! });
    },
  },
  {
    name: "compaction",
    async run(t) {
      await t.create("compact");
      await t.expect("started", "compact", "idle");
      const sent = await t.send("compact", "COMPACT SLOW:1500");
      await t.shows("compact", "(2/3)");
      await t.expect("after PreCompact", "compact", "running");
      await t.shows("compact", "Done with prompt 1");
      await t.expect("ended", "compact", "finished", { after: sent.state_time! });
    },
  },
  {
    name: "program exits mid-turn",
    async run(t) {
      await t.create("quitter");
      await t.expect("started", "quitter", "idle");
      // `send --wait` from the command line returns when the program ends.
      const sent = await t.box.cli([
        "session",
        "send",
        "quitter",
        "EXIT-MIDTURN SLOW:1500",
        "--wait",
        "--timeout",
        "60s",
      ]);
      // Exit code 4: the program exited (cli/session.ts).
      t.record("send --wait returns", "returned 4", `returned ${sent.code}`);
      await t.expect("after exit", "quitter", "finished", { exited: true });
      const waited = await t.box.client.wait("quitter", { timeout: "5s" });
      t.record("wait returns", "exited", waited.exited && !waited.timed_out ? "exited" : "timed out");
    },
  },
  {
    name: "program exits at rest",
    async run(t) {
      await t.create("rest");
      await t.expect("started", "rest", "idle");
      await t.turn("rest", "one");
      await t.keys("rest", "C-d");
      await t.expect("after exit", "rest", "finished", { exited: true });
      const waited = await t.box.client.wait("rest", { states: ["running"], timeout: "5s" });
      t.record("wait returns", "exited", waited.exited && !waited.timed_out ? "exited" : "timed out");
    },
  },
  {
    name: "--resume",
    async run(t) {
      const s = await t.create("resumed", "resumer");
      await t.expect("started", "resumed", "idle", { after: s.created });
      await t.turn("resumed", "carry on");
    },
  },
  {
    name: "two sessions in one worktree",
    async run(t) {
      await t.create("left");
      await t.create("right");
      await t.expect("left started", "left", "idle");
      await t.expect("right started", "right", "idle");
      const sent = await t.send("left", "only left SLOW:1200");
      await t.expect("left sent", "left", "running");
      await t.expect("right untouched by left's start", "right", "idle");
      await t.shows("left", "Done with prompt 1");
      await t.expect("left ended", "left", "finished", { after: sent.state_time! });
      await t.expect("right untouched by left's stop", "right", "idle");
    },
  },
  {
    name: "hook burst out of order and twice",
    async run(t) {
      await t.create("burst");
      await t.expect("started", "burst", "idle");
      // Dated after the state held (an older report changes nothing) and before now (a report dated
      // later is taken as of its arrival).
      const held = Date.parse((await t.box.client.session("burst")).state_time!);
      await until(() => Date.now() > held + 10);
      const base = Date.now() - 4;
      const at = (ms: number) => new Date(base + ms).toISOString();
      const report = (type: "agent.started" | "agent.waiting" | "agent.finished", ms: number) =>
        t.box.client.emit({
          type,
          origin: "claude",
          session: "burst",
          time: at(ms),
          data: { agent: "claude", path: "/nowhere", session_id: "burst-1" },
        });
      await report("agent.finished", 3);
      await report("agent.started", 1);
      await report("agent.waiting", 2);
      await t.expect("stop first, start and notification late", "burst", "finished");
      for (
        const [type, ms] of [["agent.started", 1], ["agent.waiting", 2], ["agent.finished", 3]] as const
      ) {
        await report(type, ms);
      }
      await t.expect("all delivered twice", "burst", "finished");
    },
  },
  {
    name: "person types into the terminal",
    async run(t) {
      await t.create("typed");
      await t.expect("started", "typed", "idle");
      let before = now();
      await t.typeAttached("typed", "typed by hand SLOW:1200");
      await t.expect("typed through attach", "typed", "running", { after: before });
      await t.shows("typed", "Done with prompt 1");
      await t.expect("attach turn ended", "typed", "finished");
      // Straight into tmux, dock not involved: the tool's own hook reports the turn.
      before = now();
      await t.keys("typed", "typed into tmux SLOW:1200", "Enter");
      await t.expect("typed into tmux", "typed", "running", { after: before });
      await t.shows("typed", "Done with prompt 2");
      await t.expect("tmux turn ended", "typed", "finished");
    },
  },
  ...(["Codex-like", "Cursor-like"] as const).map((label): Scenario => ({
    name: label,
    async run(t) {
      const name = label === "Codex-like" ? "codex" : "cursor";
      const s = await t.create(name, name);
      await t.expect("started", name, "idle", {});
      // The first prompt typed by a person: these tools report no start of a turn.
      const before = s.created;
      await t.typeAttached(name, "by hand SLOW:1200");
      await t.expect("typed into the terminal", name, "running", { after: before });
      await t.shows(name, "Done with prompt 1");
      await t.expect("typed turn ended", name, "finished", { after: before });
      await t.turn(name, "sent", "sent turn");
    },
  })),
  {
    name: "idle for an hour",
    async run(t) {
      // No hour is waited: the state has no timer. What an idle Claude does send is `idle_prompt`
      // (about 60 s after Stop, then again); it must change nothing.
      await t.create("idle");
      await t.expect("started", "idle", "idle");
      await t.turn("idle", "one");
      await t.hook("idle", "claude", "Notification", "claude_notification_idle.json");
      await t.expect("after idle_prompt", "idle", "finished");
      const waited = await t.box.client.wait("idle", {
        states: ["running", "waiting"],
        after: now(),
        timeout: "1s",
      });
      t.record("no drift", "finished", waited.timed_out ? waited.state : `changed to ${waited.state}`);
    },
  },
  {
    name: "daemon kill -9 mid-turn",
    async run(t) {
      await t.create("survivor");
      await t.expect("started", "survivor", "idle");
      await t.send("survivor", "long SLOW:4000");
      await t.expect("sent", "survivor", "running");
      const spool = join(t.box.dirs.state, "box", "spool");
      await t.restart({
        kill: true,
        // The turn ends while the daemon is down: its Stop is spooled.
        between: () =>
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
          }, { watch: `${spool}/`, timeoutMs: 30_000 }),
      });
      await t.expect("after restart", "survivor", "finished");
      await t.turn("survivor", "again", "turn after restart");
    },
  },
];

/** Runs one scenario on `t`'s box; a scenario that throws records a failed check naming the error. */
export async function runScenario(box: TruthBox, scenario: Scenario): Promise<Check[]> {
  const t = new Truth(box, scenario.name);
  try {
    await scenario.run(t);
  } catch (error) {
    t.checks.push({
      scenario: scenario.name,
      step: "(scenario failed)",
      expected: "completes",
      actual: (error as Error).message.split("\n")[0],
      ok: false,
    });
  }
  return t.checks;
}

/** Score: right states over all checked, and every miss by name. */
export function score(checks: Check[]): { right: number; all: number; misses: string[] } {
  const misses = checks.filter((c) => !c.ok).map((c) =>
    `${c.scenario}: ${c.step}: expected ${c.expected}, got ${c.actual}${
      c.known ? ` (known: ${c.known})` : ""
    }`
  );
  return { right: checks.filter((c) => c.ok).length, all: checks.length, misses };
}
