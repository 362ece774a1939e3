/**
 * Integration installs against temporary homes: what is written, that a second run writes nothing, and
 * that the person's own files and settings survive.
 *
 * @module
 */
import { exists } from "../core/files.ts";
import { shellQuote } from "../core/runner.ts";
import { join } from "node:path";
import { DockError } from "../client/errors.ts";
import { SKILLS } from "../skills/mod.ts";
import { assert, assertEquals, assertRejects, assertStringIncludes } from "../tests/assert.ts";
import { codexNotifyLine, installAll, installIntegration, shellSplit } from "./integrations.ts";
import { tempFolders } from "../tests/temp_dirs.ts";

const HOOK = "/opt/dock/bin/dock hook";

const { tempHome, test } = tempFolders("dock-integrations-");

/** Every file under `dir` with its bytes, so "nothing changed" can be checked byte for byte. */
async function snapshot(dir: string): Promise<Record<string, string>> {
  const files: Record<string, string> = {};
  async function walk(path: string): Promise<void> {
    for await (const entry of Deno.readDir(path)) {
      const full = join(path, entry.name);
      if (entry.isDirectory) await walk(full);
      else files[full] = await Deno.readTextFile(full);
    }
  }
  await walk(dir);
  return files;
}

async function readJson(path: string): Promise<Record<string, unknown>> {
  return JSON.parse(await Deno.readTextFile(path));
}

function claudeGroup(event: string) {
  return { matcher: "", hooks: [{ type: "command", command: `${HOOK} claude ${event}`, timeout: 10 }] };
}

test("claude: a fresh install writes the skills and four hooks; a second run changes nothing", async () => {
  const home = await tempHome();
  const options = { home, env: {}, hookCommand: HOOK };
  const first = await installIntegration("claude", options);
  assertEquals(first.tool, "claude");
  assertEquals(first.files.map((f) => f.action), [
    "created",
    "created",
    "created",
    "created",
    "created",
    "created",
  ]);
  // dock's MCP server beside the hooks, a user-scope server in Claude's own state file.
  assertEquals(await readJson(join(home, ".claude.json")), {
    mcpServers: { dock: { type: "stdio", command: "/opt/dock/bin/dock", args: ["mcp"] } },
  });
  for (const skill of SKILLS) {
    assertEquals(await Deno.readTextFile(join(home, ".claude/skills", skill.id, "SKILL.md")), skill.text);
  }
  const settings = join(home, ".claude/settings.json");
  assertEquals(await readJson(settings), {
    hooks: {
      Stop: [claudeGroup("Stop")],
      Notification: [claudeGroup("Notification")],
      SessionStart: [claudeGroup("SessionStart")],
      UserPromptSubmit: [claudeGroup("UserPromptSubmit")],
    },
  });
  assert(!await exists(`${settings}.dock-backup`), "nothing to back up for a new file");

  const before = await snapshot(home);
  const second = await installIntegration("claude", options);
  assert(second.files.every((f) => f.action === "unchanged"), JSON.stringify(second.files));
  assertEquals(await snapshot(home), before);
});

test("claude: existing keys, other hooks and formatting are kept; the old file is backed up", async () => {
  const home = await tempHome();
  const settings = join(home, ".claude/settings.json");
  await Deno.mkdir(join(home, ".claude"), { recursive: true });
  const original = JSON.stringify(
    {
      model: "opus",
      permissions: { allow: ["Bash(npm test)"] },
      hooks: {
        Stop: [{ matcher: "", hooks: [{ type: "command", command: "say done" }] }],
        PreToolUse: [{ matcher: "Bash", hooks: [{ type: "command", command: "guard.sh" }] }],
      },
    },
    null,
    4,
  ) + "\n";
  await Deno.writeTextFile(settings, original);
  // Claude's state file holds much else, the person's other MCP servers among it.
  const state = join(home, ".claude.json");
  await Deno.writeTextFile(
    state,
    JSON.stringify({
      numStartups: 3,
      mcpServers: { github: { type: "http", url: "https://x.example/mcp" } },
    }),
  );

  const result = await installIntegration("claude", { home, env: {}, hookCommand: HOOK });
  assertEquals(result.files.at(-2), { path: settings, action: "updated" });
  assertEquals(result.files.at(-1), { path: state, action: "updated" });
  assertEquals(await readJson(state), {
    numStartups: 3,
    mcpServers: {
      github: { type: "http", url: "https://x.example/mcp" },
      dock: { type: "stdio", command: "/opt/dock/bin/dock", args: ["mcp"] },
    },
  });
  assertEquals(await Deno.readTextFile(`${settings}.dock-backup`), original);
  const text = await Deno.readTextFile(settings);
  assertStringIncludes(text, '\n    "model": "opus"'); // four-space indentation survived
  const value = await readJson(settings);
  assertEquals(value.model, "opus");
  assertEquals(value.permissions, { allow: ["Bash(npm test)"] });
  const hooks = value.hooks as Record<string, unknown[]>;
  assertEquals(hooks.Stop, [
    { matcher: "", hooks: [{ type: "command", command: "say done" }] },
    claudeGroup("Stop"),
  ]);
  assertEquals(hooks.PreToolUse, [{ matcher: "Bash", hooks: [{ type: "command", command: "guard.sh" }] }]);
  assertEquals(hooks.Notification, [claudeGroup("Notification")]);

  const before = await snapshot(home);
  const again = await installIntegration("claude", { home, env: {}, hookCommand: HOOK });
  assert(again.files.every((f) => f.action === "unchanged"));
  assertEquals(await snapshot(home), before);
});

test("claude: a moved dock updates our hooks in place instead of adding duplicates", async () => {
  const home = await tempHome();
  await installIntegration("claude", { home, env: {}, hookCommand: "/old/dock hook" });
  await installIntegration("claude", { home, env: {}, hookCommand: HOOK });
  const hooks = (await readJson(join(home, ".claude/settings.json"))).hooks as Record<string, unknown[]>;
  assertEquals(hooks.Stop, [claudeGroup("Stop")]);
  assertEquals(hooks.UserPromptSubmit, [claudeGroup("UserPromptSubmit")]);
});

test("claude: CLAUDE_CONFIG_DIR moves both the skills and the settings", async () => {
  const home = await tempHome();
  const config = join(home, "elsewhere/claude");
  await installIntegration("claude", { home, env: { CLAUDE_CONFIG_DIR: config }, hookCommand: HOOK });
  assert(await exists(join(config, "settings.json")));
  assert(await exists(join(config, "skills/dock/SKILL.md")));
  assert(!await exists(join(home, ".claude")));
});

test("claude: a settings file that is not strict JSON is refused and left byte-identical", async () => {
  for (const broken of ['{\n  // a comment\n  "model": "opus"\n}\n', '{"model": "opus",}', "[1, 2]"]) {
    const home = await tempHome();
    const settings = join(home, ".claude/settings.json");
    await Deno.mkdir(join(home, ".claude"), { recursive: true });
    await Deno.writeTextFile(settings, broken);
    const error = await assertRejects(
      () => installIntegration("claude", { home, env: {}, hookCommand: HOOK }),
      DockError,
      settings,
    );
    assertEquals((error as DockError).code, "invalid_settings");
    assertEquals(await Deno.readTextFile(settings), broken);
    assert(!await exists(`${settings}.dock-backup`));
    assert(!await exists(join(home, ".claude/skills")), "refused before writing anything");
  }
});

test("claude: hooks of the wrong type are refused naming the field", async () => {
  const home = await tempHome();
  const settings = join(home, ".claude/settings.json");
  await Deno.mkdir(join(home, ".claude"), { recursive: true });
  await Deno.writeTextFile(settings, '{"hooks": {"Stop": "nope"}}');
  await assertRejects(
    () => installIntegration("claude", { home, env: {}, hookCommand: HOOK }),
    DockError,
    "hooks.Stop: expected an array",
  );
  assertEquals(await Deno.readTextFile(settings), '{"hooks": {"Stop": "nope"}}');
  assert(!await exists(join(home, ".claude/skills")), "refused before writing anything");
});

test("cursor: a fresh install creates hooks.json with one stop hook", async () => {
  const home = await tempHome();
  const result = await installIntegration("cursor", { home, env: {}, hookCommand: HOOK });
  const file = join(home, ".cursor/hooks.json");
  const mcp = join(home, ".cursor/mcp.json");
  assertEquals(result.files, [{ path: file, action: "created" }, { path: mcp, action: "created" }]);
  assertEquals(await readJson(file), {
    version: 1,
    hooks: { stop: [{ command: `${HOOK} cursor stop`, timeout: 10 }] },
  });
  assertEquals(await readJson(mcp), {
    mcpServers: { dock: { command: "/opt/dock/bin/dock", args: ["mcp"] } },
  });
  const before = await snapshot(home);
  const again = await installIntegration("cursor", { home, env: {}, hookCommand: HOOK });
  assertEquals(again.files, [{ path: file, action: "unchanged" }, { path: mcp, action: "unchanged" }]);
  assertEquals(await snapshot(home), before);
});

test("cursor: our hook goes after the existing stop hooks; other keys stay", async () => {
  const home = await tempHome();
  const file = join(home, ".cursor/hooks.json");
  await Deno.mkdir(join(home, ".cursor"), { recursive: true });
  const original = `{
  "version": 1,
  "hooks": {
    "stop": [
      { "command": "./first.sh", "loop_limit": 3 },
      { "command": "./second.sh" }
    ],
    "afterFileEdit": [{ "command": "./format.sh" }]
  },
  "x-custom": true
}
`;
  await Deno.writeTextFile(file, original);
  const result = await installIntegration("cursor", { home, env: {}, hookCommand: HOOK });
  assertEquals(result.files[0], { path: file, action: "updated" });
  assertEquals(await Deno.readTextFile(`${file}.dock-backup`), original);
  assertEquals(await readJson(file), {
    version: 1,
    hooks: {
      stop: [
        { command: "./first.sh", loop_limit: 3 },
        { command: "./second.sh" },
        { command: `${HOOK} cursor stop`, timeout: 10 },
      ],
      afterFileEdit: [{ command: "./format.sh" }],
    },
    "x-custom": true,
  });
  const before = await snapshot(home);
  await installIntegration("cursor", { home, env: {}, hookCommand: HOOK });
  assertEquals(await snapshot(home), before);
});

test("codex: skills in ~/.agents/skills, our old copy in CODEX_HOME removed, a foreign one kept", async () => {
  const home = await tempHome();
  const codexHome = join(home, "codex-home");
  const ours = join(codexHome, "skills/dock");
  const foreign = join(codexHome, "skills/dock-hooks");
  await Deno.mkdir(ours, { recursive: true });
  await Deno.mkdir(foreign, { recursive: true });
  await Deno.writeTextFile(join(ours, "SKILL.md"), SKILLS[0].text.replace('version: "1"', 'version: "0"'));
  const foreignText = "---\nname: dock-hooks\ndescription: my own hooks notes\n---\n\nMine.\n";
  await Deno.writeTextFile(join(foreign, "SKILL.md"), foreignText);
  const config = join(codexHome, "config.toml");
  await Deno.writeTextFile(config, 'model = "o4"\n');

  const hookCommand = `'/opt/my tools/dock' hook`;
  const result = await installIntegration("codex", { home, env: { CODEX_HOME: codexHome }, hookCommand });
  for (const skill of SKILLS) {
    assertEquals(await Deno.readTextFile(join(home, ".agents/skills", skill.id, "SKILL.md")), skill.text);
  }
  assert(!await exists(ours));
  assertEquals(await Deno.readTextFile(join(foreign, "SKILL.md")), foreignText);
  assert(result.files.some((f) => f.path === ours && f.action === "removed"));
  assert(result.notes.some((n) => n.includes(foreign)));
  assertEquals(result.notify, 'notify = ["/opt/my tools/dock", "hook", "codex", "notify"]');
  // dock never edits Codex's TOML: the MCP server's table is handed to the person too.
  assert(
    result.notes.some((n) =>
      n.includes('[mcp_servers.dock]\ncommand = "/opt/my tools/dock"\nargs = ["mcp"]')
    ),
    result.notes.join("\n"),
  );
  assertEquals(await Deno.readTextFile(config), 'model = "o4"\n');

  const before = await snapshot(home);
  const again = await installIntegration("codex", { home, env: { CODEX_HOME: codexHome }, hookCommand });
  assert(again.files.every((f) => f.action === "unchanged"));
  assertEquals(await snapshot(home), before);
});

test("codex: lifecycle hooks in hooks.json, the person's own kept; the note says to trust them", async () => {
  const home = await tempHome();
  const file = join(home, ".codex/hooks.json");
  await Deno.mkdir(join(home, ".codex"));
  const mine = { hooks: [{ type: "command", command: "/usr/bin/true" }] };
  await Deno.writeTextFile(file, JSON.stringify({ hooks: { Stop: [mine] } }, null, 2));
  const result = await installIntegration("codex", { home, env: {}, hookCommand: HOOK });
  const hooks = (await readJson(file)).hooks as Record<string, unknown[]>;
  assertEquals(Object.keys(hooks).sort(), [
    "Interrupt",
    "PermissionRequest",
    "SessionStart",
    "Stop",
    "UserPromptSubmit",
  ]);
  assertEquals(hooks.Stop, [mine, {
    hooks: [{ type: "command", command: `${HOOK} codex Stop`, timeout: 10 }],
  }]);
  assert(result.notes.some((n) => n.includes("/hooks")), result.notes.join("\n"));
  const before = await snapshot(home);
  const again = await installIntegration("codex", { home, env: {}, hookCommand: HOOK });
  // Codex asks to trust a changed hook again: a second install must leave the file byte-identical.
  assertEquals(await snapshot(home), before);
  assert(!again.notes.some((n) => n.includes("/hooks")));
});

test("gemini: four hooks in ~/.gemini/settings.json, timeouts in milliseconds, other settings kept", async () => {
  const home = await tempHome();
  const file = join(home, ".gemini/settings.json");
  await Deno.mkdir(join(home, ".gemini"));
  await Deno.writeTextFile(file, '{\n  "security": { "auth": { "selectedType": "gemini-api-key" } }\n}\n');
  await installIntegration("gemini", { home, env: {}, hookCommand: HOOK });
  const settings = await readJson(file);
  assertEquals(settings.security, { auth: { selectedType: "gemini-api-key" } });
  const hooks = settings.hooks as Record<string, unknown[]>;
  assertEquals(Object.keys(hooks).sort(), ["AfterAgent", "BeforeAgent", "Notification", "SessionStart"]);
  assertEquals(hooks.AfterAgent, [{
    hooks: [{ name: "dock", type: "command", command: `${HOOK} gemini AfterAgent`, timeout: 10_000 }],
  }]);
  const before = await snapshot(home);
  await installIntegration("gemini", { home, env: {}, hookCommand: HOOK });
  assertEquals(await snapshot(home), before);
});

test("mcpCommand: the MCP server registered is the one given, not derived from the hook command", async () => {
  const home = await tempHome();
  await installIntegration("claude", {
    home,
    env: {},
    hookCommand: HOOK,
    mcpCommand: ["/opt/dock/bin/dockd", "mcp"],
  });
  const servers = (await readJson(join(home, ".claude.json"))).mcpServers as Record<string, unknown>;
  assertEquals(servers.dock, { type: "stdio", command: "/opt/dock/bin/dockd", args: ["mcp"] });
});

test("codex: CODEX_HOME defaults to ~/.codex", async () => {
  const home = await tempHome();
  const old = join(home, ".codex/skills/dock-preview");
  await Deno.mkdir(old, { recursive: true });
  await Deno.writeTextFile(join(old, "SKILL.md"), SKILLS[2].text);
  await installIntegration("codex", { home, env: {}, hookCommand: HOOK });
  assert(!await exists(old));
});

test("installAll: installs the tools found here and skips the others", async () => {
  const home = await tempHome();
  await Deno.mkdir(join(home, ".cursor"));
  const bin = join(home, "bin");
  await Deno.mkdir(bin);
  await Deno.writeTextFile(join(bin, "codex"), "#!/bin/sh\n", { mode: 0o755 });
  const results = await installAll({ home, env: { PATH: bin }, hookCommand: HOOK });
  assertEquals(results.map((r) => [r.tool, !!r.skipped]), [["claude", true], ["cursor", false], [
    "codex",
    false,
  ], ["gemini", true]]);
  assert(!await exists(join(home, ".claude")));
  assert(await exists(join(home, ".cursor/hooks.json")));
  assert(await exists(join(home, ".agents/skills/dock/SKILL.md")));
});

test("installAll: a refused file fails only its own tool", async () => {
  const home = await tempHome();
  await Deno.mkdir(join(home, ".claude"));
  await Deno.mkdir(join(home, ".cursor"));
  await Deno.writeTextFile(join(home, ".cursor/hooks.json"), "{oops");
  const results = await installAll({ home, env: {}, hookCommand: HOOK });
  assertEquals(results.map((r) => r.tool), ["claude", "cursor", "codex", "gemini"]);
  assert(!results[0].error && !results[0].skipped);
  assertStringIncludes(results[1].error ?? "", join(home, ".cursor/hooks.json"));
  assert(results[2].skipped);
});

test("shell words: quoting and splitting round-trip; the notify line is TOML", () => {
  const words = ["/usr/bin/deno", "run", "-A", "/home/me/my dock/cli/dock.ts", "it's", 'a "b"', "hook"];
  assertEquals(shellSplit(words.map(shellQuote).join(" ")), words);
  assertEquals(shellSplit(`"/a b/deno" run 'x y' c\\ d`), ["/a b/deno", "run", "x y", "c d"]);
  assertEquals(shellQuote("/usr/local/bin/dock"), "/usr/local/bin/dock");
  assertEquals(
    codexNotifyLine("/usr/local/bin/dock hook"),
    'notify = ["/usr/local/bin/dock", "hook", "codex", "notify"]',
  );
});
