/**
 * Whole-system tests of the places issue 31 found dock answering otherwise than `SPEC.md`, each
 * written from the spec's wording: real `dockd` (and `dock agent`) processes, real git, real HTTP.
 */
import { join } from "node:path";
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import type { FlowConfig } from "../client/wire.ts";
import { git, makeDirs, makeRepo, startAgent, startBox, type TestBox } from "./harness.ts";
import { until, untilEvent } from "./wait.ts";
import { AgentClient } from "../client/agent.ts";

async function writeFlows(box: TestBox, flows: FlowConfig[]): Promise<void> {
  await Deno.mkdir(box.dirs.dockHome, { recursive: true });
  await Deno.writeTextFile(join(box.dirs.dockHome, "flows.json"), JSON.stringify({ flows }));
}

Deno.test("spec 3.4 rule 2: each step's when is judged on the previous step, not on the run so far", async () => {
  await using box = await startBox();
  const flow = (id: string, steps: FlowConfig["steps"]): FlowConfig => ({
    id,
    name: id,
    enabled: true,
    trigger: { event: "test.never" },
    steps,
  });
  await writeFlows(box, [
    // "After a failed step handled by a `failure` step, the next `success` step" runs: the step
    // before it succeeded.
    flow("handled", [
      { kind: "run", command: "exit 1" },
      { kind: "run", command: "true", when: "failure" },
      { kind: "run", command: "true", when: "success" },
    ]),
    // "a `failure` step after a successful `always` step" does not run: the step before it succeeded.
    flow("always", [
      { kind: "run", command: "exit 1" },
      { kind: "run", command: "true", when: "always" },
      { kind: "run", command: "true", when: "failure" },
    ]),
    // `always` regardless, after a failure and after a skip.
    flow("chain", [
      { kind: "run", command: "true" },
      { kind: "run", command: "true", when: "failure" },
      { kind: "run", command: "true", when: "always" },
      { kind: "run", command: "exit 2" },
      { kind: "run", command: "true", when: "always" },
    ]),
  ]);
  const statuses = async (id: string) => {
    const run = await box.client.testFlow(id);
    return { run: run.status, steps: run.steps.map((s) => s.status) };
  };
  assertEquals(await statuses("handled"), {
    run: "succeeded", // rule 4: the failure step handled the failure
    steps: ["failed", "succeeded", "succeeded"],
  });
  assertEquals(await statuses("always"), {
    run: "failed", // rule 4: no later step handled the failure
    steps: ["failed", "succeeded", "skipped"],
  });
  assertEquals(await statuses("chain"), {
    run: "failed",
    steps: ["succeeded", "skipped", "succeeded", "failed", "succeeded"],
  });
});

Deno.test("spec 4.2: install and uninstall take { skills, agent, target, location, commit }", async () => {
  await using box = await startBox();
  const repo = await makeRepo(join(box.dirs.home, "work"), "app");
  await box.client.addLocation({ name: "app", path: repo });
  using socket = Deno.createHttpClient({ proxy: { transport: "unix", path: box.dirs.socket } });
  const post = async (path: string, body: unknown) => {
    const response = await fetch(`http://box/v1/${path}`, {
      method: "POST",
      body: JSON.stringify(body),
      client: socket,
    });
    return { status: response.status, body: await response.json() };
  };
  const fields = { skills: ["dock"], agent: "claude", target: "project", location: "app", commit: true };
  const installed = await post("skills/install", fields);
  assertEquals(installed.status, 200, JSON.stringify(installed.body));
  // The person commits the addition, as `commit` meant.
  await git(repo, "add", ".claude");
  await git(repo, "commit", "-q", "-m", "skills");
  const removed = await post("skills/uninstall", fields);
  assertEquals(removed.status, 200, JSON.stringify(removed.body));
  assertEquals(removed.body.changes.map((c: { action: string }) => c.action), ["removed"]);
  // The removal is there for git to commit, as the addition was.
  assertEquals(await git(repo, "status", "--porcelain"), " D .claude/skills/dock/SKILL.md\n");
  const exclude = await Deno.readTextFile(join(repo, ".git/info/exclude"));
  assert(!exclude.includes("/.claude/skills/dock/"), exclude);
  await untilEvent(box.client, (e) => e.type === "skills.removed", { after: 0 });
});

Deno.test("spec 4.1: a bare POST /v1/plugins/{id}/enable turns on a plugin that asks for nothing; else 409", async () => {
  const dirs = await makeDirs();
  await using agent = await startAgent(dirs, { env: { DOCK_PLUGIN_SCAN_MS: "100" } });
  const client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  const write = async (id: string, permissions?: Record<string, string[]>) => {
    const dir = join(dirs.dockHome, "plugins", id);
    await Deno.mkdir(dir, { recursive: true });
    const manifest = { id, name: id, version: "1.0.0", ...(permissions ? { permissions } : {}) };
    await Deno.writeTextFile(join(dir, "dock-plugin.json"), JSON.stringify(manifest));
  };
  await write("plain");
  await write("asking", { scopes: ["sessions:read"], net: ["example.com"] });
  await until(async () => {
    const ids = (await client.plugins()).map((p) => p.id);
    return ids.includes("plain") && ids.includes("asking") ? ids : undefined;
  }, { on: client });
  // "POST /v1/plugins/{id}/enable | Turn a plugin on": no body.
  const enable = async (id: string) => {
    const response = await fetch(`${agent.url}/v1/plugins/${id}/enable`, {
      method: "POST",
      headers: { authorization: `Bearer ${agent.token}` },
    });
    return { status: response.status, body: await response.json() };
  };
  const plain = await enable("plain");
  assertEquals([plain.status, plain.body.id, plain.body.enabled], [200, "plain", true]);
  // One that asks for more keeps its confirmation: 409 naming what must be confirmed, and stays off.
  const asking = await enable("asking");
  assertEquals([asking.status, asking.body.error.code], [409, "permissions_required"]);
  assertStringIncludes(asking.body.error.message, "example.com");
  assertStringIncludes(asking.body.error.message, "sessions:read");
  assertEquals([asking.body.error.permissions.scopes, asking.body.error.permissions.net], [
    ["sessions:read"],
    ["example.com"],
  ]);
  const listed = (await client.plugins()).find((p) => p.id === "asking" && p.where === "laptop");
  assertEquals(listed?.enabled, false);
  // Confirming exactly what it asks for enables it, as before.
  const confirmed = await client.enablePlugin("asking", { scopes: ["sessions:read"], net: ["example.com"] });
  assertEquals(confirmed.enabled, true);
});
