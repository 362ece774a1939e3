/**
 * Whole-system tests of flows: a real dockd with real git running the box's `flows.json` and a
 * location's config flows on its events, through real shells, a real local webhook server and the
 * plugin host's sandbox.
 */
import { join } from "node:path";
import { assert, assertEquals, assertRejects, assertStringIncludes } from "./assert.ts";
import { DockError } from "../client/errors.ts";
import type { BoxClient } from "../client/box.ts";
import type { FlowConfig, FlowRun } from "../client/wire.ts";
import { git, makeDirs, makeRepo, startBox, type TestBox } from "./harness.ts";
import { until, untilEvent } from "./wait.ts";

const ROOT = new URL("..", import.meta.url).pathname;

async function writeFlows(box: TestBox, flows: FlowConfig[]): Promise<void> {
  await Deno.mkdir(box.dirs.dockHome, { recursive: true });
  await Deno.writeTextFile(join(box.dirs.dockHome, "flows.json"), JSON.stringify({ flows }));
}

/** A flow that marks the end of what came before: events are matched in order, one at a time. */
const SENTINEL: FlowConfig = {
  id: "sentinel",
  name: "Sentinel",
  enabled: true,
  trigger: { event: "test.sentinel" },
  steps: [{ kind: "run", command: "true" }],
};

/** Announces the sentinel's event and waits for its run to finish: every earlier event was matched. */
async function barrier(client: BoxClient): Promise<void> {
  const sent = await client.emit({ type: "test.sentinel" });
  await untilEvent(
    client,
    (e) => e.type === "flow.finished" && e.data?.flow === "sentinel",
    { after: sent.id },
  );
}

async function runsOf(client: BoxClient, flow: string): Promise<FlowRun[]> {
  return await client.flowRuns({ flow });
}

async function withApp(box: TestBox, files: Record<string, string> = {}): Promise<string> {
  const repo = await makeRepo(join(box.dirs.home, "work"), "app", files);
  await box.client.addLocation({ name: "app", path: repo });
  return repo;
}

Deno.test("flows: an event runs a step in the worktree; on failure a notify carries {{prev.output}}", async () => {
  await using box = await startBox();
  await withApp(box);
  const worktree = await box.client.createWorktree("app", { name: "feat" });
  await writeFlows(box, [{
    id: "tests",
    name: "Tests",
    enabled: true,
    trigger: { event: "ci.*", where: { location: "app", branch: "fe*" } },
    steps: [
      { id: "tests", kind: "run", command: 'pwd; echo {{event.body}}; echo "$DOCK_LOCATION"; exit 3' },
      { kind: "notify", when: "failure", title: "{{worktree.name}} failed", text: "{{prev.output}}" },
      { kind: "notify", title: "runs: the step before it succeeded (spec 3.4 rule 2)" },
    ],
  }]);
  const hostile = "$(touch " + join(box.dirs.root, "pwned") + ") `id`";
  const sent = await box.client.emit({
    type: "ci.finished",
    data: { location: "app", worktree: "feat", body: hostile },
  });
  const notify = await untilEvent(box.client, (e) => e.type === "notify", { after: sent.id });
  assertEquals(notify.origin, "flow:tests");
  assertEquals(notify.data?.title, "feat failed");
  const text = notify.data?.text as string;
  assertStringIncludes(text, await Deno.realPath(worktree.path));
  assertStringIncludes(text, hostile); // printed as text, never run
  assertStringIncludes(text, "app");
  await Deno.stat(join(box.dirs.root, "pwned")).then(
    () => assert(false, "a variable's value ran as shell text"),
    () => {},
  );
  const finished = await untilEvent(
    box.client,
    (e) => e.type === "flow.finished" && e.data?.flow === "tests",
    { after: sent.id },
  );
  assertEquals(finished.origin, "flow:tests");
  const [run] = await runsOf(box.client, "tests");
  assertEquals(run.status, "succeeded"); // the failure step handled it (spec 3.4 rule 4)
  assertEquals(run.trigger, "ci.finished");
  assertEquals(run.location, "app");
  assertEquals(run.worktree, "feat");
  assertEquals(run.steps.map((s) => [s.id, s.status, s.exit_code]), [
    ["tests", "failed", 3],
    ["2", "succeeded", undefined],
    ["3", "succeeded", undefined],
  ]);
  assert(run.end);

  // A branch outside `where` starts nothing.
  await box.client.createWorktree("app", { name: "other" });
  await writeFlows(box, [
    {
      id: "tests",
      name: "Tests",
      enabled: true,
      trigger: { event: "ci.*", where: { branch: "fe*" } },
      steps: [{ kind: "run", command: "true" }],
    },
    SENTINEL,
  ]);
  await box.client.emit({ type: "ci.finished", data: { location: "app", worktree: "other" } });
  await barrier(box.client);
  assertEquals((await runsOf(box.client, "tests")).length, 1);
});

Deno.test("flows: GET lists scope, source and overridden; a box-layer replacement switches a flow off; PUT", async () => {
  await using box = await startBox();
  const repoFlow: FlowConfig = {
    id: "lint",
    name: "Lint",
    enabled: true,
    trigger: { event: "ci.lint" },
    steps: [{ kind: "notify", title: "lint ran" }],
  };
  await withApp(box, { ".dock/config.json": JSON.stringify({ flows: [repoFlow] }) });
  await box.client.putFlows([
    SENTINEL,
    { ...repoFlow, id: "off", enabled: false, trigger: { event: "ci.lint" } },
  ]);
  let listing = await box.client.flows();
  assertEquals(
    listing.flows.map((f) => [f.id, f.scope, f.source, f.overridden]),
    [["sentinel", "box", "box", false], ["off", "box", "box", false], ["lint", "repo:app", "repo", false]],
  );
  // Before the switch-off the repository's flow runs.
  await box.client.emit({ type: "ci.lint", data: { location: "app" } });
  await barrier(box.client);
  assertEquals((await runsOf(box.client, "lint")).length, 1);
  assertEquals((await runsOf(box.client, "off")).length, 0);

  await box.client.putConfig("app", { flows: [{ ...repoFlow, enabled: false }] });
  listing = await box.client.flows();
  assertEquals(
    listing.flows.filter((f) => f.id === "lint").map((f) => [f.source, f.overridden, f.enabled]),
    [["repo", true, true], ["local", false, false]],
  );
  await until(async () => {
    // The config is re-read within a second: until then the old flow may still run.
    const before = (await runsOf(box.client, "lint")).length;
    await box.client.emit({ type: "ci.lint", data: { location: "app" } });
    await barrier(box.client);
    return (await runsOf(box.client, "lint")).length === before;
  });

  // PUT: bad bodies name the field; a before:config.change gate refuses.
  const bad = await assertRejects(
    () => box.client.putFlows([{ ...SENTINEL, steps: [{ kind: "run" }] }]),
    DockError,
  ) as DockError;
  assertEquals(bad.status, 400);
  assertStringIncludes(bad.message, "flows[0].steps[0].command");
  const changed = await box.client.putFlows([SENTINEL]);
  assertEquals(changed.flows.filter((f) => f.source === "box").map((f) => f.id), ["sentinel"]);
  await untilEvent(box.client, (e) => e.type === "config.changed" && e.data?.file === "flows.json");
  await box.client.putHooks([{ on: "before:config.change", run: "echo no flows today >&2; exit 1" }]);
  const refused = await assertRejects(() => box.client.putFlows([]), DockError) as DockError;
  assertEquals([refused.status, refused.code, refused.message], [403, "gate_refused", "no flows today"]);
});

Deno.test("flows: budget, one run per worktree, and a flow's own events never start it", async () => {
  await using box = await startBox();
  await withApp(box);
  const gate = join(box.dirs.root, "go");
  const started = join(box.dirs.root, "started");
  await writeFlows(box, [
    SENTINEL,
    {
      id: "budget",
      name: "Budget",
      enabled: true,
      trigger: { event: "ci.budget" },
      steps: [{ kind: "run", command: "true" }],
      max_runs_per_hour: 2,
    },
    {
      id: "slow",
      name: "Slow",
      enabled: true,
      trigger: { event: "ci.slow" },
      steps: [{ kind: "run", command: `touch ${started}; while [ ! -e ${gate} ]; do sleep 0.05; done` }],
    },
    {
      id: "loop",
      name: "Loop",
      enabled: true,
      trigger: { event: "notify" },
      steps: [{ kind: "notify", title: "again" }],
    },
  ]);
  // Budget: test runs count; the third in the hour is refused and recorded.
  const first = await box.client.testFlow("budget", { scope: "repo:app" });
  const second = await box.client.testFlow("budget", { scope: "repo:app" });
  assertEquals([first.status, second.status], ["succeeded", "succeeded"]);
  await box.client.emit({ type: "ci.budget", data: { location: "app" } });
  await barrier(box.client);
  const budget = await runsOf(box.client, "budget");
  assertEquals(budget.map((r) => r.status), ["skipped", "succeeded", "succeeded"]);
  assertStringIncludes(budget[0].reason!, "budget of 2 runs per hour");
  assertEquals(budget[0].trigger, "ci.budget");

  // A run in progress in a worktree: the next for the same worktree is skipped.
  await box.client.emit({ type: "ci.slow", data: { location: "app" } });
  await until(() => Deno.stat(started).then(() => true), { watch: started });
  await box.client.emit({ type: "ci.slow", data: { location: "app" } });
  await until(async () => (await runsOf(box.client, "slow")).length === 2, { on: box.client });
  await Deno.writeTextFile(gate, "");
  await until(async () => (await runsOf(box.client, "slow")).every((r) => r.status !== "running"), {
    on: box.client,
  });
  const slow = await runsOf(box.client, "slow");
  assertEquals(slow.map((r) => r.status), ["skipped", "succeeded"]);
  assertEquals(slow[0].reason, "already running there");

  // Its own notify carries origin flow:loop and does not start it again; flow.* never start flows.
  const ping = await box.client.emit({ type: "notify", data: { title: "from a test" } });
  await untilEvent(
    box.client,
    (e) => e.type === "notify" && e.origin === "flow:loop",
    { after: ping.id },
  );
  await barrier(box.client);
  const loops = await runsOf(box.client, "loop");
  assertEquals(loops.map((r) => [r.trigger, r.status]), [["notify", "succeeded"]]);
});

Deno.test("flows: a webhook fails at 300 and passes at 200; a module step returns its output", async () => {
  const bodies: unknown[] = [];
  await using server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen: () => {} }, async (request) => {
    bodies.push(await request.json());
    return new Response("answer", { status: new URL(request.url).pathname === "/ok" ? 200 : 300 });
  });
  await using box = await startBox();
  await withApp(box);
  await Deno.mkdir(join(box.dirs.dockHome, "steps"), { recursive: true });
  await Deno.writeTextFile(
    join(box.dirs.dockHome, "steps", "sum.ts"),
    `export default { step(vars) { return { n: Number(vars["event.n"]) + 1, where: vars.location }; } };`,
  );
  const url = `http://127.0.0.1:${server.addr.port}`;
  await writeFlows(box, [
    { id: "ok", name: "OK", trigger: { event: "ci.ok" }, steps: [{ kind: "webhook", url: `${url}/ok` }] },
    { id: "bad", name: "Bad", trigger: { event: "ci.bad" }, steps: [{ kind: "webhook", url: `${url}/bad` }] },
    {
      id: "mod",
      name: "Module",
      trigger: { event: "ci.mod" },
      steps: [{ kind: "module", module: "steps/sum.ts" }, { kind: "notify", title: "{{prev.output}}" }],
    },
  ]);
  const ok = await box.client.testFlow("ok", { scope: "repo:app", data: { pr: "12" } });
  assertEquals([ok.status, ok.steps[0].exit_code, ok.steps[0].output], ["succeeded", 200, "answer"]);
  const bad = await box.client.testFlow("bad", { scope: "repo:app" });
  assertEquals([bad.status, bad.steps[0].exit_code], ["failed", 300]);
  const sent = bodies[0] as Record<string, string>;
  assertEquals([sent["event.type"], sent["event.pr"], sent.location], ["ci.ok", "12", "app"]);

  const mod = await box.client.testFlow("mod", { scope: "repo:app", data: { n: 41 } });
  assertEquals(mod.status, "succeeded", JSON.stringify(mod));
  assertEquals(JSON.parse(mod.steps[0].output!), { n: 42, where: "app" });
  assertEquals(mod.steps[1].output, "");
});

Deno.test("flows: a run step's request to the box API passes its before:exec gate", async () => {
  await using box = await startBox();
  await withApp(box);
  await box.client.putHooks([{ on: "before:exec", run: "echo exec is off >&2; exit 1" }]);
  const dockd = `${Deno.execPath()} run -A --cached-only ${join(ROOT, "cli/dockd.ts")}`;
  await writeFlows(box, [{
    id: "gated",
    name: "Gated",
    trigger: { event: "ci.gated" },
    steps: [{ kind: "run", command: `${dockd} exec app -- echo ran` }],
  }]);
  const run = await box.client.testFlow("gated", { scope: "repo:app" });
  assertEquals(run.status, "failed");
  assertStringIncludes(run.steps[0].output!, "exec is off");
  const refused = await untilEvent(box.client, (e) => e.type === "gate.refused");
  assertEquals(refused.origin, "flow:gated");
});

Deno.test("flows: a run cut off by kill -9 is interrupted at the next start and never run again", async () => {
  const first = await startBox();
  const dirs = first.dirs;
  await withApp(first);
  const started = join(dirs.root, "started");
  await writeFlows(first, [SENTINEL, {
    id: "long",
    name: "Long",
    enabled: true,
    trigger: { event: "ci.long" },
    steps: [{ kind: "run", command: `echo $$ > ${started}; sleep 600; : ${dirs.root}` }],
  }]);
  await first.client.emit({ type: "ci.long", data: { location: "app" } });
  await until(() => Deno.readTextFile(started).then((text) => text.trim() !== ""), { watch: started });
  await first.stop({ kill: true });
  await using box = await startBox({ dirs });
  await barrier(box.client);
  const runs = await runsOf(box.client, "long");
  assertEquals(runs.map((r) => r.status), ["interrupted"]);
  assert(runs[0].end);
  assertEquals((await box.client.flowRuns()).map((r) => r.flow), ["sentinel", "long"]);
});

Deno.test("flows: runs list newest first with a limit; the test endpoint's 404 and 400", async () => {
  await using box = await startBox();
  await writeFlows(box, [SENTINEL]);
  for (let i = 0; i < 3; i++) await box.client.testFlow("sentinel");
  const runs = await box.client.flowRuns({ limit: 2 });
  assertEquals(runs.length, 2);
  assert(runs[0].id > runs[1].id);
  assertEquals(runs[0].trigger, "test");
  const missing = await assertRejects(() => box.client.testFlow("nope"), DockError) as DockError;
  assertEquals(missing.status, 404);
  const limit = await assertRejects(() => box.client.flowRuns({ limit: 201 }), DockError) as DockError;
  assertEquals(limit.status, 400);
  const scope = await assertRejects(
    () => box.client.testFlow("sentinel", { scope: "nowhere" }),
    DockError,
  ) as DockError;
  assertEquals(scope.status, 400);
});

Deno.test("flows: dockd flow test, list, runs and show", async () => {
  await using box = await startBox();
  await withApp(box);
  await writeFlows(box, [{
    id: "hello",
    name: "Hello",
    trigger: { event: "ci.hello" },
    steps: [{ kind: "run", command: "echo hello {{event.who}} in {{worktree.name}}" }],
  }]);
  const tested = await box.cli(["flow", "test", "app", "hello", "who=you", "--json"]);
  assertEquals(tested.code, 0, tested.stderr);
  const run = JSON.parse(tested.stdout) as FlowRun;
  assertEquals(run.steps[0].output?.trim(), "hello you in app");
  const list = await box.cli(["flow", "list", "app", "--json"]);
  assertEquals(JSON.parse(list.stdout).flows.map((f: FlowConfig) => f.id), ["hello"]);
  const runs = await box.cli(["flow", "runs", "--flow", "hello", "--json"]);
  assertEquals(JSON.parse(runs.stdout).map((r: FlowRun) => r.id), [run.id]);
  const show = await box.cli(["flow", "show", String(run.id)]);
  assertEquals(show.code, 0, show.stderr);
  assertStringIncludes(show.stdout, `run ${run.id} of hello (box): succeeded`);
  assertStringIncludes(show.stdout, "hello you in app");
  await writeFlows(box, [{
    id: "no",
    name: "No",
    trigger: { event: "ci.no" },
    steps: [{ kind: "run", command: "exit 4" }],
  }]);
  const failed = await box.cli(["flow", "test", "app", "no"]);
  assertEquals(failed.code, 1);
  assertStringIncludes(failed.stderr, "failed: step 1 (run) failed: exited with 4");
});

Deno.test("flows: agent.finished → a failing run → prompt the agent with its output → wait → notify", async () => {
  const fake = new URL("./fixtures/fake_agent.ts", import.meta.url).pathname;
  const agent = {
    id: "fake",
    name: "Fake agent",
    command: `'${Deno.execPath()}' run -A --cached-only '${fake}'`,
    prompt_flag: "",
  };
  const log = await Deno.makeTempFile({ prefix: "dock-fake-agent-" });
  await using box = await startBox({ env: { FAKE_AGENT_LOG: log, FAKE_AGENT_WORK_MS: "200" } });
  try {
    await withApp(box, {
      ".dock/config.json": JSON.stringify({
        agents: [agent],
        flows: [{
          id: "fix",
          name: "Fix the tests",
          enabled: true,
          // One run an hour: the prompted agent's own agent.finished (origin claude) would start it again.
          max_runs_per_hour: 1,
          trigger: { event: "agent.finished", where: { agent: "fake" } },
          steps: [
            { id: "tests", kind: "run", command: "echo tests broke in {{worktree.name}}; exit 1" },
            { kind: "prompt", when: "failure", text: "fix: {{steps.tests.output}}" },
            { kind: "wait", timeout: "30s" }, // after the prompt, which ran only when the tests failed
            { kind: "notify", when: "always", title: "{{agent.state}}", text: "{{prev.output}}" },
          ],
        }],
      }),
    });
    await box.client.createSession({ location: "app", agent: "fake", name: "agent-1" });
    await box.client.wait("agent-1", { states: ["idle"], timeout: "20s" });
    await box.client.send("agent-1", "write the code");
    const notify = await untilEvent(
      box.client,
      (e) => e.type === "notify" && e.origin === "flow:fix",
      { after: 0, timeoutMs: 30_000 },
    );
    assertEquals([notify.data?.title, notify.data?.text], ["finished", "finished"]);
    const run = await until(async () => {
      const runs = await runsOf(box.client, "fix");
      return runs.find((r) => r.status !== "running" && r.status !== "skipped");
    }, { on: box.client });
    assertEquals(run.status, "succeeded");
    assertEquals(run.steps.map((s) => [s.kind, s.status]), [
      ["run", "failed"],
      ["prompt", "succeeded"],
      ["wait", "succeeded"],
      ["notify", "succeeded"],
    ]);
    const prompts = (await Deno.readTextFile(log)).split("\n").filter(Boolean).map((l) => JSON.parse(l));
    assertEquals(prompts.length, 2, "the person's prompt and the flow's");
    assertEquals(prompts[1].length, `fix: ${run.steps[0].output}`.length);
  } finally {
    await Deno.remove(log);
  }
});

Deno.test("flows: start_agent in a new worktree from the run's branch, then prompt and wait address it; no gate applies", async () => {
  const fake = new URL("./fixtures/fake_agent.ts", import.meta.url).pathname;
  // In a folder of its own, watched for the agent's writes.
  const logDir = await Deno.makeTempDir({ prefix: "dock-fake-agent-" });
  const log = join(logDir, "prompts.log");
  await using box = await startBox({ env: { FAKE_AGENT_LOG: log, FAKE_AGENT_WORK_MS: "50" } });
  try {
    await withApp(box, {
      ".dock/config.json": JSON.stringify({
        agents: [{
          id: "fake",
          name: "Fake",
          command: `'${Deno.execPath()}' run -A --cached-only '${fake}'`,
        }],
        flows: [{
          id: "spawn",
          name: "Spawn a fixer",
          enabled: true,
          trigger: { event: "ci.review" },
          steps: [
            {
              id: "agent",
              kind: "start_agent",
              agent: "fake",
              new_worktree: true,
              name: "fix-{{event.n}}",
              text: "first",
            },
            { kind: "wait", for: ["finished"], timeout: "30s" },
            { kind: "prompt", text: "second" },
            { kind: "wait", timeout: "30s" },
            { kind: "notify", title: "{{steps.agent.output}}" },
          ],
        }],
      }),
    });
    const feat = await box.client.createWorktree("app", { name: "feat" });
    await Deno.writeTextFile(join(feat.path, "feat.txt"), "on feat\n");
    await git(feat.path, "add", "feat.txt");
    await git(feat.path, "commit", "-q", "-m", "feat");
    // The flow's own steps pass no gate: these refuse every worktree and session the API is asked for.
    await box.client.putHooks([
      { on: "before:worktree.create", run: "echo no >&2; exit 1" },
      { on: "before:session.create", run: "echo no >&2; exit 1" },
    ]);
    const sent = await box.client.emit({
      type: "ci.review",
      data: { location: "app", worktree: "feat", n: 7 },
    });
    const finished = await untilEvent(
      box.client,
      (e) => e.type === "flow.finished" && e.data?.flow === "spawn",
      { after: sent.id, timeoutMs: 60_000 },
    );
    const [run] = await runsOf(box.client, "spawn");
    assertEquals(finished.data?.status, "succeeded", JSON.stringify(run));
    assertEquals(run.worktree, "feat"); // the run itself stays where its event happened
    const session = run.steps[0].output!;
    assertEquals(run.steps.map((s) => [s.kind, s.status]), [
      ["start_agent", "succeeded"],
      ["wait", "succeeded"],
      ["prompt", "succeeded"],
      ["wait", "succeeded"],
      ["notify", "succeeded"],
    ]);
    const started = (await box.client.sessions()).find((s) => s.name === session);
    assertEquals([started?.location, started?.worktree, started?.agent], ["app", "fix-7", "fake"]);
    const made = await box.client.worktree("app", "fix-7");
    assertEquals([made.branch, made.base], ["fix-7", "feat"]);
    assertEquals(await Deno.readTextFile(join(made.path, "feat.txt")), "on feat\n");
    const caused = await Array.fromAsync(
      (async function* () {
        for await (const event of box.client.events({ after: sent.id, signal: AbortSignal.timeout(5000) })) {
          if (event.type === "worktree.created" || event.type === "session.created") yield event;
          if ((event.id ?? 0) >= finished.id!) return;
        }
      })(),
    );
    assertEquals(caused.map((e) => [e.type, e.origin]), [
      ["worktree.created", "flow:spawn"],
      ["session.created", "flow:spawn"],
    ]);
    const prompts = await until(async () => {
      const lines = (await Deno.readTextFile(log)).split("\n").filter(Boolean);
      return lines.length === 2 && lines.map((l) => JSON.parse(l) as { length: number });
    }, { watch: log });
    assertEquals(prompts.map((p) => p.length), ["first".length, "second".length]);
  } finally {
    await Deno.remove(logDir, { recursive: true });
  }
});

Deno.test("flows: dockd flow disable switches a repository's flow off in the box layer; enable brings it back", async () => {
  await using box = await startBox();
  const lint: FlowConfig = {
    id: "lint",
    name: "Lint",
    enabled: true,
    trigger: { event: "ci.lint" },
    steps: [{ kind: "run", command: "true" }],
  };
  const repo = await withApp(box, { ".dock/config.json": JSON.stringify({ flows: [lint] }) });
  await writeFlows(box, [SENTINEL, { ...lint, id: "mine" }]);
  const lintRuns = async () => {
    await box.client.emit({ type: "ci.lint", data: { location: "app" } });
    await barrier(box.client);
    return (await runsOf(box.client, "lint")).length;
  };
  assertEquals(await lintRuns(), 1);

  const off = await box.cli(["flow", "disable", "lint"]);
  assertEquals(off.code, 0, off.stderr);
  assertStringIncludes(off.stdout, "lint (repo:app): disabled in the location's box layer");
  const changed = await untilEvent(
    box.client,
    (e) => e.type === "config.changed" && e.data?.layer === "local",
  );
  assertEquals(changed.data?.location, "app");
  assertEquals((await box.client.config("app")).local?.flows, [{ ...lint, enabled: false }]);
  assertEquals(JSON.parse(await Deno.readTextFile(join(repo, ".dock/config.json"))).flows, [lint]);
  assertEquals(await lintRuns(), 1, "a flow switched off in the box layer never runs");
  assertEquals(
    (await box.cli(["flow", "disable", "lint", "app"])).stdout.trim(),
    "lint (repo:app) is already disabled",
  );

  const on = await box.cli(["flow", "enable", "lint"]);
  assertEquals(on.code, 0, on.stderr);
  // The replacement only switched it off: it goes, and the repository's own flow is in force again.
  assertEquals((await box.client.config("app")).local, null);
  assertEquals(await lintRuns(), 2);

  // A box flow is switched in flows.json; the before:config.change gates apply to both.
  const mine = await box.cli(["flow", "disable", "mine"]);
  assertEquals(mine.code, 0, mine.stderr);
  const file = JSON.parse(await Deno.readTextFile(join(box.dirs.dockHome, "flows.json")));
  assertEquals(file.flows.map((f: FlowConfig) => [f.id, f.enabled]), [["sentinel", true], ["mine", false]]);
  await box.client.putHooks([{ on: "before:config.change", run: "echo not today >&2; exit 1" }]);
  const refused = await box.cli(["flow", "disable", "lint"]);
  assertEquals(refused.code, 1);
  assertStringIncludes(refused.stderr, "not today");
  assertEquals(await lintRuns(), 3);
  const missing = await box.cli(["flow", "enable", "nope"]);
  assertEquals(missing.code, 1);
  assertStringIncludes(missing.stderr, "no flow 'nope' in force");
});

Deno.test("flows: a hostile event value reaches run steps as data in every context; webhook origins take no variable", async () => {
  await using box = await startBox();
  await withApp(box);
  const canary = join(box.dirs.root, "pwned");
  const hostile = `hi; touch ${canary}\n$(touch ${canary}) \`touch ${canary}\` ' " * $HOME -n`;
  const contexts = [
    "printf '[%s]' {{event.x}}",
    `printf '[%s]' "<{{event.x}}>"`,
    `bash -c 'printf "[%s]" {{event.x}}'`, // issue 29: once pasted into the inner shell's code
    `sh -c 'printf "[%s]" "{{event.x}}"'`,
    `printf '[%s]' "$(printf '%s' {{event.x}})"`,
    "cat <<EOF\n[{{event.x}}]\nEOF",
    "# it's a comment\nprintf '[%s]' {{event.x}}",
    `a={{event.x}}; printf '[%s]' "$a"`,
  ];
  await writeFlows(box, [{
    id: "hostile",
    name: "Hostile",
    enabled: true,
    trigger: { event: "forge.comment", where: { location: "app" } },
    steps: [
      ...contexts.map((command) => ({ kind: "run", command, when: "always" as const })),
      { kind: "run", command: `bash -c "printf %s {{event.x}}"`, when: "always" },
    ],
  }]);
  const sent = await box.client.emit({ type: "forge.comment", data: { location: "app", x: hostile } });
  await untilEvent(
    box.client,
    (e) => e.type === "flow.finished" && e.data?.flow === "hostile",
    { after: sent.id },
  );
  const [run] = await runsOf(box.client, "hostile");
  for (const [i, command] of contexts.entries()) {
    const expected = command.startsWith("cat")
      ? `[${hostile}]\n`
      : `[${command.includes("<{{") ? `<${hostile}>` : hostile}]`;
    assertEquals([run.steps[i].status, run.steps[i].output], ["succeeded", expected], command);
  }
  // The outer shell would expand it into bash's code: refused with a way out, nothing run.
  const last = run.steps[contexts.length];
  assertEquals([last.status, last.exit_code], ["failed", undefined]);
  assertStringIncludes(last.error ?? "", "single quotes");
  await Deno.stat(canary).then(() => assert(false, "a variable's value ran as shell code"), () => {});

  const bad = await assertRejects(
    () =>
      box.client.putFlows([{
        ...SENTINEL,
        steps: [{ kind: "webhook", url: "https://{{event.host}}/hook" }],
      }]),
    DockError,
  ) as DockError;
  assertEquals(bad.status, 400);
  assertStringIncludes(bad.message, "flows[0].steps[0].url");
  assertStringIncludes(bad.message, "never in its scheme, host or port");
});

Deno.test("flows: a prompt step never types into a permission prompt (the text would answer it for the person)", async () => {
  const dirs = await makeDirs();
  const log = join(dirs.root, "prompts.log");
  await using box = await startBox({
    dirs,
    env: { FAKE_AGENT_WORK_MS: "100", FAKE_AGENT_LOG: log, FAKE_AGENT_LOG_TEXT: "1" },
  });
  const fake = join(ROOT, "tests", "fixtures", "fake_agent.ts");
  await withApp(box, {
    ".dock/config.json": JSON.stringify({
      agents: [{ id: "fake", name: "Fake", command: `'${Deno.execPath()}' run -A --cached-only '${fake}'` }],
    }),
  });
  await writeFlows(box, [{
    id: "nudge",
    name: "Nudge the agent",
    enabled: true,
    trigger: { event: "ci.nudge" },
    steps: [{ kind: "prompt", session: "s1", text: "{{event.text}}" }],
  }]);
  await box.client.createSession({ location: "app", agent: "fake", name: "s1" });
  await box.client.wait("s1", { states: ["idle"], timeout: "30s" });
  await box.client.send("s1", "ASK-PERMISSION");
  await box.client.wait("s1", { states: ["waiting"], timeout: "30s" });

  const sent = await box.client.emit({ type: "ci.nudge", data: { text: "y" } });
  const finished = await untilEvent(
    box.client,
    (e) => e.type === "flow.finished" && e.data?.flow === "nudge",
    { after: sent.id, timeoutMs: 60_000 },
  );
  const [run] = await runsOf(box.client, "nudge");
  assertEquals(finished.data?.status, "failed", JSON.stringify(run));
  assertStringIncludes(run.steps[0].error ?? "", "permission prompt");
  const now = await box.client.session("s1");
  assertEquals([now.agent_state, now.reason], ["waiting", "permission"]);
  const prompts = (await Deno.readTextFile(log)).trim().split("\n").map((l) => JSON.parse(l).text);
  assertEquals(prompts, ["ASK-PERMISSION"]);
});
