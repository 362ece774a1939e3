/**
 * What enabling a plugin grants, said and held (issue 29, items 2 and 3): a plugin's shell hooks run
 * outside the sandbox only once their exact commands were confirmed, with the user they run as named; and
 * every scope is classed by what its routes can lead to, checked route by route against the box's and the
 * laptop's real route tables, with the generated table in the docs kept true.
 */
import { join } from "node:path";
import { userInfo } from "node:os";
import { assert, assertEquals, assertRejects, assertStringIncludes } from "./assert.ts";
import { DockError } from "../client/errors.ts";
import type { PluginInfo, ScopeClass } from "../client/wire.ts";
import { AgentClient } from "../client/agent.ts";
import { laptopEnv, makeDirs, makeRepo, runCli, startAgent, startBox, type TestBox } from "./harness.ts";
import { until } from "./wait.ts";
import { apiRoutes, routeScope, SCOPE_TABLE_FILE, scopeTableMarkdown } from "../cli/write_scope_table.ts";
import { SCOPE_CLASS_ORDER, SCOPE_CLASSES } from "../plugins/scopes.ts";

const FAST = { DOCK_PLUGIN_SCAN_MS: "100" };

/** Writes plugin `id`'s manifest whole (made aside and renamed in: a scan never sees half a file). */
async function writeManifest(
  box: Pick<TestBox, "dirs">,
  id: string,
  manifest: Record<string, unknown>,
): Promise<void> {
  const dir = join(box.dirs.dockHome, "plugins", id);
  await Deno.mkdir(dir, { recursive: true });
  const aside = join(dir, `.manifest-${crypto.randomUUID()}`);
  await Deno.writeTextFile(aside, JSON.stringify({ id, name: id, version: "1.0.0", ...manifest }));
  await Deno.rename(aside, join(dir, "dock-plugin.json"));
}

async function plugin(box: TestBox, id: string, check: (p: PluginInfo) => boolean = () => true) {
  return await until(async () => {
    const found = (await box.client.plugins()).find((p) => p.id === id);
    return found && check(found) ? found : undefined;
  }, { on: box });
}

async function readOrEmpty(path: string): Promise<string> {
  return await Deno.readTextFile(path).catch(() => "");
}

Deno.test("plugin shell hooks: none runs before its exact command is confirmed; the consent names it and its user; a changed command turns the plugin off", async () => {
  await using box = await startBox({ env: FAST });
  await box.client.addLocation({ name: "app", path: await makeRepo(join(box.dirs.home, "work")) });
  const user = userInfo().username;
  // A `before:exec` gate that allows and leaves a trace: it runs inside the exec request, so the answer
  // of an exec says for certain whether it ran.
  const first = join(box.dirs.root, "first-ran");
  const firstRun = `printf '%s\\n' "$DOCK_COMMAND" >> ${first}`;
  await writeManifest(box, "shelly", {
    hooks: [{ on: "before:exec", run: firstRun }],
    permissions: { scopes: ["locations:write", "sessions:read"] },
  });

  // The listing asks for the command, says who runs it, and classes each scope.
  const listed = await plugin(box, "shelly");
  assertEquals(listed.permissions?.commands, [firstRun]);
  assertEquals(listed.runs_as, user);
  assertEquals(listed.scope_classes, { "locations:write": "runs commands", "sessions:read": "read" });
  assertEquals(listed.state, "off");
  assertEquals((await box.client.exec({ location: "app", command: "echo off" })).exit_code, 0);
  assertEquals(await readOrEmpty(first), "", "a plugin that is off ran its shell hook");

  // The CLI's consent lists the command, quoted exactly, with its user, and each scope's class.
  const cli = await box.cli(["plugin", "enable", "shelly"]);
  assert(cli.code !== 0, "enabled without --yes or a terminal");
  assertStringIncludes(
    cli.stdout,
    `shell commands run outside the sandbox, as ${user}: ${JSON.stringify(firstRun)}`,
  );
  assertStringIncludes(cli.stdout, "locations:write (runs commands)");
  assertStringIncludes(cli.stdout, "sessions:read (read)");

  // Enabling without confirming the command (what the consent used to ask), or a command not exactly
  // its own, is refused: 409, naming the command and its user.
  for (const commands of [undefined, [`${firstRun} `], [firstRun, "true"]]) {
    const refused = await assertRejects(
      () => box.client.enablePlugin("shelly", { scopes: ["locations:write", "sessions:read"], commands }),
      DockError,
    ) as DockError;
    assertEquals([refused.status, refused.code], [409, "permissions_changed"], refused.message);
    assertStringIncludes(refused.message, `as ${user}: ${JSON.stringify(firstRun)}`);
  }
  assertEquals((await box.client.exec({ location: "app", command: "echo refused" })).exit_code, 0);
  assertEquals(await readOrEmpty(first), "", "a plugin enabled without its commands ran one");

  // Confirmed exactly: it runs.
  const enabled = await box.client.enablePlugin("shelly", listed.permissions!);
  assertEquals(enabled.granted?.commands, [firstRun]);
  assertEquals((await box.client.exec({ location: "app", command: "echo granted" })).exit_code, 0);
  assertEquals(await readOrEmpty(first), "echo granted\n");

  // The manifest's command changes: the plugin is off, saying what it now asks for, and neither runs.
  const second = join(box.dirs.root, "second-ran");
  const secondRun = `printf '%s\\n' "$DOCK_COMMAND" >> ${second}`;
  await writeManifest(box, "shelly", {
    hooks: [{ on: "before:exec", run: secondRun }],
    permissions: { scopes: ["locations:write", "sessions:read"] },
  });
  const changed = await plugin(box, "shelly", (p) => p.state === "off" && p.error !== undefined);
  assertStringIncludes(changed.error!, JSON.stringify(secondRun));
  assertEquals(changed.enabled, true, "its old grant is kept, and no longer covers it");
  assertEquals((await box.client.exec({ location: "app", command: "echo changed" })).exit_code, 0);
  assertEquals(await readOrEmpty(first), "echo granted\n");
  assertEquals(await readOrEmpty(second), "", "a changed command ran before it was confirmed");

  // The old confirmation no longer fits; the new one does.
  await assertRejects(
    () => box.client.enablePlugin("shelly", listed.permissions!),
    DockError,
    "confirm exactly",
  );
  await box.client.enablePlugin("shelly", changed.permissions!);
  assertEquals((await box.client.exec({ location: "app", command: "echo again" })).exit_code, 0);
  assertEquals(await readOrEmpty(second), "echo again\n");
});

Deno.test("plugin shell hooks on the laptop: the consent names the agent's user, and only a confirmed command runs", async () => {
  const dirs = await makeDirs();
  const env = { DOCK_PLUGIN_SCAN_MS: "100" };
  await using agent = await startAgent(dirs, { env });
  const client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  try {
    const user = userInfo().username;
    const ran = join(dirs.root, "laptop-ran");
    const run = `printf '%s\\n' "$DOCK_EVENT_TYPE" >> ${ran}`;
    await writeManifest({ dirs }, "lshell", { hooks: [{ on: "test.*", run }] });
    const listed = await until(async () => (await client.plugins()).find((p) => p.id === "lshell"), {
      on: client,
    });
    assertEquals([listed.permissions?.commands, listed.runs_as], [[run], user]);

    const cli = await runCli("dock", ["plugin", "enable", "lshell"], {
      env: laptopEnv(dirs, agent, env),
      cwd: dirs.home,
    });
    assert(cli.code !== 0, "enabled without --yes or a terminal");
    assertStringIncludes(
      cli.stdout,
      `shell commands run outside the sandbox, as ${user}: ${JSON.stringify(run)}`,
    );
    await assertRejects(() => client.enablePlugin("lshell", {}), DockError, JSON.stringify(run));

    await client.enablePlugin("lshell", listed.permissions!);
    await client.emit({ type: "test.granted", data: {} });
    await until(async () => (await readOrEmpty(ran)) === "test.granted\n", { watch: ran });
  } finally {
    client.close();
  }
});

/**
 * What each box and laptop route a plugin scope opens can lead to, decided here by reading what the route
 * does (not by reading plugins/scopes.ts): a route added to a scope fails until it is decided here.
 */
const DECIDED: Record<string, ScopeClass> = {
  // Box: reads.
  "box GET /locations": "read",
  "box GET /locations/:name": "read",
  "box GET /locations/:name/branches": "read",
  "box GET /locations/:name/config": "read",
  "box GET /locations/:name/worktrees": "read",
  "box GET /locations/:name/worktrees/:wt": "read",
  "box GET /locations/:name/worktrees/:wt/setup/log": "read",
  "box GET /locations/:name/worktrees/:wt/log": "read",
  "box GET /locations/:name/worktrees/:wt/commits": "read",
  "box GET /locations/:name/worktrees/:wt/diff": "read",
  "box GET /locations/:name/worktrees/:wt/untracked": "read",
  // `gh pr view`: a fixed command of dock's choosing, reading only.
  "box GET /locations/:name/worktrees/:wt/pr": "read",
  "box GET /locations/:name/worktrees/:wt/services": "read",
  "box GET /locations/:name/worktrees/:wt/services/:service/log": "read",
  "box GET /hooks": "read",
  "box GET /info": "read",
  "box GET /stats": "read",
  "box GET /doctor": "read",
  "box GET /ports": "read",
  "box GET /services": "read",
  "box GET /sessions": "read",
  "box GET /sessions/:name": "read",
  "box GET /sessions/:name/screen": "read",
  "box GET /sessions/:name/wait": "read",
  // Box: registering a folder or cloning a repository makes its `.dock/config.json` (setup and archive
  // scripts, hooks, services) the location's: the plugin picks the code that runs.
  "box POST /locations": "runs commands",
  "box POST /locations/clone": "runs commands",
  "box POST /locations/new": "runs commands",
  // Forgetting a location stops its services and sessions, and starts nothing.
  "box DELETE /locations/:name": "write",
  // Scripts, a config, a kit (its hooks and scripts), the hooks file: commands written by the caller.
  "box PUT /locations/:name/scripts": "runs commands",
  "box PUT /locations/:name/config": "runs commands",
  "box PUT /locations/:name/kit": "runs commands",
  "box PUT /hooks": "runs commands",
  "box DELETE /locations/:name/kit": "write",
  // A new worktree runs setup; removing one runs archive; sync runs git in the checkout (its hooks);
  // resume starts its services; pause only stops them.
  "box POST /locations/:name/worktrees": "runs commands",
  "box DELETE /locations/:name/worktrees/:wt": "runs commands",
  "box POST /locations/:name/worktrees/:wt/sync": "runs commands",
  // git push runs the checkout's pre-push hook; gh pr create may push too.
  "box POST /locations/:name/worktrees/:wt/push": "runs commands",
  "box POST /locations/:name/worktrees/:wt/pr": "runs commands",
  "box POST /locations/:name/worktrees/:wt/resume": "runs commands",
  "box POST /locations/:name/worktrees/:wt/pause": "write",
  "box POST /locations/:name/worktrees/:wt/services/:service/start": "runs commands",
  "box POST /locations/:name/worktrees/:wt/services/:service/restart": "runs commands",
  "box POST /locations/:name/worktrees/:wt/services/:service/stop": "write",
  "box POST /exec": "runs commands",
  // A session runs its command; text sent to one is typed into a shell or given to an agent.
  "box POST /sessions": "runs commands",
  "box POST /tasks": "runs commands",
  "box POST /sessions/:name/answer": "runs commands",
  "box POST /sessions/:name/keys": "runs commands",
  "box POST /sessions/:name/send": "runs commands",
  "box DELETE /sessions/:name": "write",
  // Laptop: a queued prompt is typed into its session when its box is back.
  "laptop GET /status": "read",
  "laptop GET /sessions": "read",
  "laptop GET /queue": "read",
  "laptop POST /queue": "runs commands",
  "laptop PATCH /queue/:id": "runs commands",
  "laptop POST /queue/:id/retry": "runs commands",
  "laptop POST /queue/:id/send": "runs commands",
  "laptop DELETE /queue/:id": "write",
};

Deno.test("plugin scopes: each route a scope opens, in the real route tables, leads where it was decided, and its scope is classed at least that high", async () => {
  const opened: Record<string, ScopeClass> = {};
  const tooLow: string[] = [];
  for (const route of await apiRoutes()) {
    const scoped = routeScope(route);
    if (!scoped) continue;
    const key = `${route.side} ${route.method} ${route.path}`;
    opened[key] = scoped.leads;
    const decided = DECIDED[key];
    const scopeClass = SCOPE_CLASSES[scoped.scope as keyof typeof SCOPE_CLASSES];
    if (decided && SCOPE_CLASS_ORDER.indexOf(scopeClass) < SCOPE_CLASS_ORDER.indexOf(decided)) {
      tooLow.push(`${key}: ${decided}, but ${scoped.scope} is classed ${scopeClass}`);
    }
  }
  // Every opened route is decided here, and classed in plugins/scopes.ts as decided.
  assertEquals(opened, DECIDED);
  assertEquals(tooLow, []);
  // The hole of issue 29: scripts and kits are commands, whatever the scope's name says.
  assertEquals(SCOPE_CLASSES["locations:write"], "runs commands");
});

Deno.test("docs/plugin-scopes.md is generated from the route tables (regenerate: deno run -A cli/write_scope_table.ts)", async () => {
  const file = await Deno.readTextFile(new URL(`../${SCOPE_TABLE_FILE}`, import.meta.url));
  assertEquals(file, scopeTableMarkdown(await apiRoutes()));
});
