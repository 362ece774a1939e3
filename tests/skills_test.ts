/**
 * Whole-system tests of skills (spec 1 "Skills", 4.2): the box API installs, lists and removes dock's
 * skills for the daemon's user and in locations' repositories, announces what changed, and the
 * `dockd skills` and `dock skills BOX` commands drive it. Every home the tools read (`HOME`,
 * `CLAUDE_CONFIG_DIR`, `CODEX_HOME`) is a temporary folder.
 */
import { exists } from "../core/files.ts";
import { join } from "node:path";
import { BoxClient } from "../client/box.ts";
import { AgentClient } from "../client/agent.ts";
import { DockError } from "../client/errors.ts";
import type { DockEvent, SkillCopy, SkillsResult } from "../client/wire.ts";
import { SKILLS } from "../skills/mod.ts";
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { git, makeDirs, makeRepo, runCli, startAgent, startBox, type TestAgent } from "./harness.ts";
import { untilEvent } from "./wait.ts";

const IDS = SKILLS.map((skill) => skill.id);

/** The DockError a failing call throws. */
async function refusal(call: () => Promise<unknown>): Promise<DockError> {
  try {
    await call();
  } catch (error) {
    if (error instanceof DockError) return error;
    throw error;
  }
  throw new Error("expected the call to fail");
}

/** `[skill, agent, target, state]` of each copy, for comparing listings. */
function states(copies: SkillCopy[]): string[][] {
  return copies.map((c) => [c.skill, c.agent, c.target, c.state]);
}

function actions(result: SkillsResult): string[][] {
  return result.changes.map((c) => [c.skill, c.agent, c.target, c.action]);
}

Deno.test("skills API: user installs honour CLAUDE_CONFIG_DIR and CODEX_HOME, list shows states, uninstall keeps foreign copies", async () => {
  const dirs = await makeDirs();
  const claudeDir = join(dirs.home, "claude-config");
  const codexHome = join(dirs.home, "codex-home");
  await using box = await startBox({ dirs, env: { CLAUDE_CONFIG_DIR: claudeDir, CODEX_HOME: codexHome } });
  const tool = new BoxClient({ socket: dirs.socket, origin: "my-tool" });
  try {
    const mark = (await box.client.emit({ type: "test.mark" })).id!;

    const first = await tool.installSkills({ skills: ["dock"], agent: "claude" });
    assertEquals(actions(first), [["dock", "claude", "user", "created"]]);
    assertEquals(first.changes[0].path, join(claudeDir, "skills", "dock"));
    assertEquals(await Deno.readTextFile(join(claudeDir, "skills/dock/SKILL.md")), SKILLS[0].text);
    assert(!await exists(join(dirs.home, ".claude")), "CLAUDE_CONFIG_DIR replaces ~/.claude");

    const installed = await untilEvent(box.client, (e) => e.type === "skills.installed", { after: mark });
    assertEquals(installed.origin, "my-tool");
    assertEquals(installed.data, {
      skills: ["dock"],
      agent: "claude",
      target: "user",
      changed: [{ skill: "dock", agent: "claude", path: join(claudeDir, "skills/dock"), action: "created" }],
      files: [],
    });

    // Everything, for both agents: Codex's copies go to ~/.agents/skills, never into CODEX_HOME.
    const all = await box.client.installSkills();
    assertEquals(all.changes.filter((c) => c.action === "unchanged").map((c) => [c.skill, c.agent]), [[
      "dock",
      "claude",
    ]]);
    assertEquals(all.changes.filter((c) => c.action === "created").length, IDS.length * 2 - 1);
    for (const id of IDS) assert(await exists(join(dirs.home, ".agents/skills", id, "SKILL.md")));
    assert(!await exists(join(codexHome, "skills")));
    // Nothing changed the second time: nothing to announce.
    const again = await box.client.installSkills();
    assert(again.changes.every((c) => c.action === "unchanged"));

    const listed = await box.client.skills();
    assertEquals(listed.length, IDS.length * 2);
    assert(listed.every((c) => c.state === "installed" && c.target === "user" && c.version === c.latest));

    // An older copy (someone's edit, or an older dock) is outdated until installed again.
    const older = join(claudeDir, "skills/dock-preview/SKILL.md");
    await Deno.writeTextFile(older, SKILLS[2].text.replace(/version: "\d+"/, 'version: "0"'));
    const preview = (await box.client.skills()).find((c) =>
      c.skill === "dock-preview" && c.agent === "claude"
    )!;
    assertEquals([preview.state, preview.version], ["outdated", 0]);
    const updated = await box.client.installSkills({ skills: ["dock-preview"], agent: "claude" });
    assertEquals(actions(updated), [["dock-preview", "claude", "user", "updated"]]);

    // A folder of the same name that is not dock's is reported foreign and survives uninstall.
    const codexHooks = join(dirs.home, ".agents/skills/dock-hooks");
    const removedCodex = await box.client.uninstallSkills({ skills: ["dock-hooks"], agent: "codex" });
    assertEquals(actions(removedCodex), [["dock-hooks", "codex", "user", "removed"]]);
    await Deno.mkdir(codexHooks, { recursive: true });
    const foreign = "---\nname: dock-hooks\ndescription: my own hooks notes\n---\n\nMine.\n";
    await Deno.writeTextFile(join(codexHooks, "SKILL.md"), foreign);
    const hooksCopies = (await box.client.skills()).filter((c) => c.skill === "dock-hooks");
    assertEquals(states(hooksCopies), [
      ["dock-hooks", "claude", "user", "installed"],
      ["dock-hooks", "codex", "user", "foreign"],
    ]);
    const before = (await box.client.emit({ type: "test.mark" })).id!;
    const removed = await tool.uninstallSkills({ skills: ["dock-hooks"] });
    assertEquals(actions(removed), [
      ["dock-hooks", "claude", "user", "removed"],
      ["dock-hooks", "codex", "user", "skipped"],
    ]);
    assertEquals(await Deno.readTextFile(join(codexHooks, "SKILL.md")), foreign, "the foreign copy stays");
    assert(!await exists(join(claudeDir, "skills/dock-hooks")));
    const removedEvent = await untilEvent(box.client, (e) => e.type === "skills.removed", {
      after: before,
    });
    assertEquals(removedEvent.origin, "my-tool");
    assertEquals(removedEvent.data?.changed, [
      { skill: "dock-hooks", agent: "claude", path: join(claudeDir, "skills/dock-hooks"), action: "removed" },
    ]);
    const announced = (await collect(box.client, mark)).filter((e) => e.type.startsWith("skills."));
    assertEquals(
      announced.map((e) => e.type),
      ["skills.installed", "skills.installed", "skills.installed", "skills.removed", "skills.removed"],
      "one event per request that changed something",
    );
  } finally {
    tool.close();
  }
});

Deno.test("skills API: the project target excludes its folders unless commit, in a location or one of its worktrees", async () => {
  await using box = await startBox();
  const repo = await makeRepo(join(box.dirs.home, "work"), "app");
  await box.client.addLocation({ name: "app", path: repo });
  const exclude = join(repo, ".git/info/exclude");
  const excludeLines = async () =>
    (await Deno.readTextFile(exclude)).split("\n").filter((line) => line.startsWith("/"));

  const installed = await box.client.installSkills({ skills: ["dock"], target: "project", location: "app" });
  assertEquals(actions(installed), [
    ["dock", "claude", "project", "created"],
    ["dock", "codex", "project", "created"],
  ]);
  assertEquals(installed.files, [{ path: exclude, action: "updated" }]);
  assertEquals(await excludeLines(), ["/.claude/skills/dock/", "/.agents/skills/dock/"]);
  assertEquals(await git(repo, "status", "--porcelain"), "", "excluded: git does not see them");

  // `location` alone means the project target; `commit` leaves them visible to git.
  const committed = await box.client.installSkills({
    skills: ["dock-preview"],
    location: "app",
    commit: true,
  });
  assertEquals(actions(committed).map((a) => a[3]), ["created", "created"]);
  assertEquals(await excludeLines(), ["/.claude/skills/dock/", "/.agents/skills/dock/"]);
  assertEquals(await git(repo, "status", "--porcelain"), "?? .agents/\n?? .claude/\n");

  const listed = await box.client.skills({ location: "app" });
  assertEquals(listed.length, IDS.length * 2 * 2, "user and project copies");
  const project = listed.filter((c) => c.target === "project" && c.state !== "missing");
  assertEquals(project.map((c) => [c.skill, c.agent, c.state, c.location]), [
    ["dock", "claude", "installed", "app"],
    ["dock", "codex", "installed", "app"],
    ["dock-preview", "claude", "installed", "app"],
    ["dock-preview", "codex", "installed", "app"],
  ]);
  assert(listed.filter((c) => c.target === "user").every((c) => c.state === "missing"));

  // A worktree's copies are its own; their exclude lines go to the main repository's git folder.
  const feat = await box.client.createWorktree("app", { name: "feat" });
  const inTree = await box.client.installSkills({
    skills: ["dock-orchestrate"],
    agent: "claude",
    location: "app/feat",
  });
  assertEquals(inTree.changes[0].path, join(feat.path, ".claude/skills/dock-orchestrate"));
  assert((await excludeLines()).includes("/.claude/skills/dock-orchestrate/"));
  assertEquals(await git(feat.path, "status", "--porcelain"), "");

  const removed = await box.client.uninstallSkills({ skills: ["dock"], location: "app" });
  assertEquals(actions(removed), [
    ["dock", "claude", "project", "removed"],
    ["dock", "codex", "project", "removed"],
  ]);
  assertEquals(await excludeLines(), ["/.claude/skills/dock-orchestrate/"]);
  assert(!await exists(join(repo, ".claude/skills/dock")));
  assert(await exists(join(repo, ".claude/skills/dock-preview")));
});

/** Every path under `dir`, relative, sorted (empty when it does not exist). */
async function tree(dir: string): Promise<string[]> {
  const found: string[] = [];
  const walk = async (at: string, prefix: string) => {
    for await (const entry of Deno.readDir(at)) {
      found.push(prefix + entry.name);
      if (entry.isDirectory) await walk(join(at, entry.name), `${prefix}${entry.name}/`);
    }
  };
  await walk(dir, "").catch((error) => {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  });
  return found.sort();
}

Deno.test("skills API: a project's skills never follow a symlink out of the repository, to write or to delete", async () => {
  await using box = await startBox();
  const repo = await makeRepo(join(box.dirs.home, "work"), "app");
  await box.client.addLocation({ name: "app", path: repo });
  // The person's own Claude folder, which the repository's `.claude` links to, holding one of dock's skills.
  const outside = join(box.dirs.root, "elsewhere", "claude");
  await Deno.mkdir(join(outside, "skills", "dock"), { recursive: true });
  await Deno.writeTextFile(join(outside, "skills", "dock", "SKILL.md"), SKILLS[0].text);
  const before = await tree(outside);
  await Deno.symlink(outside, join(repo, ".claude"));
  const exclude = join(repo, ".git/info/exclude");
  const excludeBefore = await Deno.readTextFile(exclude);

  const install = await refusal(() => box.client.installSkills({ location: "app" }));
  assertEquals([install.status, install.code], [409, "outside_repository"], install.message);
  assertStringIncludes(install.message, "'.claude'");
  assertStringIncludes(install.message, outside);
  const one = await refusal(() =>
    box.client.installSkills({ skills: ["dock-hooks"], agent: "claude", location: "app" })
  );
  assertEquals([one.status, one.code], [409, "outside_repository"]);
  const uninstall = await refusal(() => box.client.uninstallSkills({ skills: ["dock"], location: "app" }));
  assertEquals([uninstall.status, uninstall.code], [409, "outside_repository"]);
  assertEquals(await tree(outside), before, "nothing written or removed outside");
  assertEquals(await Deno.readTextFile(join(outside, "skills", "dock", "SKILL.md")), SKILLS[0].text);
  assert(!await exists(join(repo, ".agents")), "a refused request writes nothing, inside either");
  assertEquals(await Deno.readTextFile(exclude), excludeBefore);

  // Deeper in the path, and a link that leads nowhere, are refused too.
  await Deno.remove(join(repo, ".claude"));
  await Deno.mkdir(join(repo, ".agents"));
  await Deno.symlink(join(outside, "skills"), join(repo, ".agents", "skills"));
  const deep = await refusal(() =>
    box.client.installSkills({ skills: ["dock"], agent: "codex", location: "app" })
  );
  assertEquals([deep.status, deep.code], [409, "outside_repository"]);
  assertStringIncludes(deep.message, "'.agents/skills'");
  await Deno.symlink(join(box.dirs.root, "nowhere"), join(repo, ".claude"));
  const dangling = await refusal(() =>
    box.client.installSkills({ skills: ["dock"], agent: "claude", location: "app" })
  );
  assertEquals([dangling.status, dangling.code], [409, "outside_repository"]);
  assert(!await exists(join(box.dirs.root, "nowhere")));
  assertEquals(await tree(outside), before);

  // A link that stays inside the repository is followed.
  await Deno.remove(join(repo, ".claude"));
  await Deno.remove(join(repo, ".agents"), { recursive: true });
  await Deno.mkdir(join(repo, "config", "claude"), { recursive: true });
  await Deno.symlink(join("config", "claude"), join(repo, ".claude"));
  const inside = await box.client.installSkills({ skills: ["dock"], agent: "claude", location: "app" });
  assertEquals(actions(inside), [["dock", "claude", "project", "created"]]);
  assertEquals(await Deno.readTextFile(join(repo, "config/claude/skills/dock/SKILL.md")), SKILLS[0].text);
  const removed = await box.client.uninstallSkills({ skills: ["dock"], agent: "claude", location: "app" });
  assertEquals(actions(removed), [["dock", "claude", "project", "removed"]]);
  assert(!await exists(join(repo, "config/claude/skills/dock")));
  assertEquals(await tree(outside), before);
});

Deno.test("skills API: bad input is a JSON 4xx naming the field, before anything is written", async () => {
  await using box = await startBox();
  const repo = await makeRepo(join(box.dirs.home, "work"), "app");
  await box.client.addLocation({ name: "app", path: repo });
  using socket = Deno.createHttpClient({ proxy: { transport: "unix", path: box.dirs.socket } });
  const post = (path: string, body: unknown) =>
    fetch(`http://box/v1/skills/${path}`, { method: "POST", body: JSON.stringify(body), client: socket });
  const cases: [string, unknown, number, string, string][] = [
    ["install", { skills: ["dock", "nope"] }, 400, "skills[1]", '"nope"'],
    ["install", { skill: "dock" }, 400, "skill", "unknown field"],
    ["install", { agent: "cursor" }, 400, "agent", "claude"],
    ["install", { target: "project" }, 400, "location", "needs a location"],
    ["install", { target: "user", location: "app" }, 400, "location", "only the project target"],
    ["install", { commit: true }, 400, "commit", "project"],
    ["install", { location: "app/a/b" }, 400, "location", "LOC/WT"],
    ["uninstall", { skills: ["dock"], target: "user", commit: true }, 400, "commit", "project"],
    ["uninstall", { skills: "dock" }, 400, "skills", "array"],
  ];
  for (const [path, body, status, field, words] of cases) {
    const response = await post(path, body);
    const answer = await response.json();
    assertEquals([response.status, answer.error?.field], [status, field], JSON.stringify(body));
    assertStringIncludes(answer.error.message, `${field}: `);
    assertStringIncludes(answer.error.message, words);
  }
  const ghost = await post("install", { location: "ghost" });
  assertEquals(ghost.status, 404);
  assertStringIncludes((await ghost.json()).error.message, "ghost");
  const ghostTree = await refusal(() => box.client.installSkills({ location: "app/ghost" }));
  assertEquals(ghostTree.status, 404);
  assertStringIncludes(ghostTree.message, "ghost");
  const listing = await refusal(() => box.client.skills({ location: "ghost" }));
  assertEquals(listing.status, 404);
  assert(!await exists(join(box.dirs.home, ".claude")), "nothing written");
  assert(!await exists(join(box.dirs.home, ".agents")), "nothing written");
  assertEquals(await git(repo, "status", "--porcelain"), "");
});

Deno.test("skills API: before:skills.install and before:skills.uninstall gates see the request and can refuse it", async () => {
  await using box = await startBox();
  const repo = await makeRepo(join(box.dirs.home, "work"), "app");
  await box.client.addLocation({ name: "app", path: repo });
  const seen = join(box.dirs.root, "gate-input.json");
  await box.client.putHooks([
    {
      on: "before:skills.install",
      run:
        `cat > ${seen}; [ "$DOCK_TARGET" = project ] && { echo "no project skills here" >&2; exit 1; }; exit 0`,
    },
    { on: "before:skills.uninstall", run: "echo keep them >&2; exit 1" },
  ]);
  const mark = (await box.client.emit({ type: "test.mark" })).id!;

  const refused = await refusal(() => box.client.installSkills({ skills: ["dock"], location: "app" }));
  assertEquals([refused.status, refused.code, refused.message], [
    403,
    "gate_refused",
    "no project skills here",
  ]);
  const input = JSON.parse(await Deno.readTextFile(seen));
  assertEquals([input.action, input.origin, input.location], ["skills.install", "test", "app"]);
  assertEquals(input.target, {
    skills: ["dock"],
    agent: "all",
    target: "project",
    location: "app",
    commit: false,
  });
  assert(!await exists(join(repo, ".claude")), "refused before writing");

  const allowed = await box.client.installSkills({ skills: ["dock"], agent: "claude" });
  assertEquals(actions(allowed), [["dock", "claude", "user", "created"]]);
  const kept = await refusal(() => box.client.uninstallSkills({ skills: ["dock"] }));
  assertEquals([kept.status, kept.message], [403, "keep them"]);
  assert(await exists(join(box.dirs.home, ".claude/skills/dock/SKILL.md")));
  const announced = (await collect(box.client, mark)).filter((e) => e.type.startsWith("skills."));
  assertEquals(announced.map((e) => e.type), ["skills.installed"], "refused requests announce nothing");
});

Deno.test("dockd skills and dock skills BOX drive the API", async () => {
  const dirs = await makeDirs();
  await using box = await startBox({ dirs });
  const repo = await makeRepo(join(dirs.home, "work"), "app");
  await box.client.addLocation({ name: "app", path: repo });
  const mark = (await box.client.emit({ type: "test.mark" })).id!;

  const install = await box.cli(["skills", "install", "dock", "--agent", "codex"]);
  assertEquals(install.code, 0, install.stderr);
  assertStringIncludes(install.stdout, "created");
  assert(await exists(join(dirs.home, ".agents/skills/dock/SKILL.md")));
  const event = await untilEvent(box.client, (e) => e.type === "skills.installed", { after: mark });
  assertEquals(event.origin, "cli");

  const table = await box.cli(["skills"]);
  assertEquals(table.code, 0, table.stderr);
  assertStringIncludes(table.stdout, "STATE");
  assert(/dock\s+codex\s+user\s+installed/.test(table.stdout), table.stdout);
  const json: SkillCopy[] = JSON.parse((await box.cli(["skills", "--json", "--location", "app"])).stdout);
  assertEquals(json.length, IDS.length * 4);

  const project = await box.cli([
    "skills",
    "install",
    "dock-preview",
    "--location",
    repo,
    "--commit",
    "--json",
  ]);
  assertEquals(project.code, 0, project.stderr);
  const result: SkillsResult = JSON.parse(project.stdout);
  assertEquals(actions(result).map((a) => a[2]), ["project", "project"], "a folder names its location");
  assert(await exists(join(repo, ".claude/skills/dock-preview/SKILL.md")));

  const unknown = await box.cli(["skills", "install", "nope"]);
  assertEquals(unknown.code, 2);
  assertStringIncludes(unknown.stderr, '"nope"');

  const removed = await box.cli(["skills", "uninstall", "dock"]);
  assertEquals(removed.code, 0, removed.stderr);
  assert(!await exists(join(dirs.home, ".agents/skills/dock")));

  // From the laptop: the box first, then the same subcommands, through the agent's relay.
  await using agent = await startAgent(dirs);
  const client = new AgentClient({ url: agent.url, token: agent.token });
  try {
    assertEquals((await client.addLocal("devbox")).online, true);
  } finally {
    client.close();
  }
  const run = (...args: string[]) => dock(agent, dirs.home, box.env, args);
  const before = (await box.client.emit({ type: "test.mark" })).id!;
  const laptopInstall = await run("skills", "devbox", "install", "dock-hooks", "--agent", "claude", "--json");
  assertEquals(laptopInstall.code, 0, laptopInstall.stderr);
  assertEquals(actions(JSON.parse(laptopInstall.stdout)), [["dock-hooks", "claude", "user", "created"]]);
  assert(await exists(join(dirs.home, ".claude/skills/dock-hooks/SKILL.md")));
  const relayed = await untilEvent(box.client, (e) => e.type === "skills.installed", { after: before });
  assertEquals(relayed.origin, "cli");

  const laptopList = await run("skills", "devbox");
  assertEquals(laptopList.code, 0, laptopList.stderr);
  assert(/dock-hooks\s+claude\s+user\s+installed/.test(laptopList.stdout), laptopList.stdout);
  const everyBox: (SkillCopy & { box: string })[] = JSON.parse((await run("skills", "--json")).stdout);
  assert(everyBox.length === IDS.length * 2 && everyBox.every((c) => c.box === "devbox"));

  const laptopRemove = await run("skills", "devbox", "uninstall", "dock-hooks");
  assertEquals(laptopRemove.code, 0, laptopRemove.stderr);
  assertStringIncludes(laptopRemove.stdout, "removed");
  assert(!await exists(join(dirs.home, ".claude/skills/dock-hooks")));
  const badTarget = await run("skills", "devbox", "install", "--target", "project");
  assertEquals(badTarget.code, 2);
  assertStringIncludes(badTarget.stderr, "location");
});

/** Runs `dock ARGS` against the agent and returns its exit code and output. */
function dock(agent: TestAgent, home: string, env: Record<string, string>, args: string[]) {
  return runCli("dock", args, { env: { ...env, DOCK_AGENT_PORT: String(agent.port) }, cwd: home });
}

/** The journaled events after `after`, up to a marker announced now (no waiting for quiet). */
async function collect(client: BoxClient, after: number): Promise<DockEvent[]> {
  const end = (await client.emit({ type: "test.end" })).id!;
  const events: DockEvent[] = [];
  const controller = new AbortController();
  for await (const event of client.events({ after, signal: controller.signal })) {
    if (event.id === end) break;
    events.push(event);
  }
  controller.abort();
  return events;
}
