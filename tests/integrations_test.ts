/**
 * End to end: `dockd integrations install claude` writes hooks that, run the way Claude Code runs
 * them, report the agent's state to the box daemon.
 */
import { join } from "node:path";
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { makeRepo, startBox } from "./harness.ts";
import { untilEvent } from "./wait.ts";

Deno.test("installed Claude hooks report to the daemon; a second install changes nothing", async () => {
  await using box = await startBox();
  const repo = await makeRepo(join(box.dirs.home, "work"));
  await box.client.addLocation({ name: "app", path: repo });
  const first = await box.cli(["integrations", "install", "claude"]);
  assertEquals(first.code, 0, first.stderr);
  const settingsFile = join(box.dirs.home, ".claude", "settings.json");
  const settings = JSON.parse(await Deno.readTextFile(settingsFile));
  assertEquals(Object.keys(settings.hooks).sort(), [
    "Notification",
    "SessionStart",
    "Stop",
    "UserPromptSubmit",
  ]);
  for (const skill of ["dock", "dock-orchestrate", "dock-preview", "dock-hooks"]) {
    assert((await Deno.stat(join(box.dirs.home, ".claude", "skills", skill, "SKILL.md"))).isFile);
  }
  // The box's own MCP server (`dockd mcp`): `dock mcp` on a box sees no box (it listed no session).
  const servers = JSON.parse(await Deno.readTextFile(join(box.dirs.home, ".claude.json"))).mcpServers;
  assertEquals(servers.dock.args.slice(-2), [new URL("../cli/dockd.ts", import.meta.url).pathname, "mcp"]);
  const before = await Deno.readTextFile(settingsFile);
  const second = await box.cli(["integrations", "install", "claude"]);
  assertEquals(second.code, 0, second.stderr);
  assertEquals(await Deno.readTextFile(settingsFile), before, "idempotent");

  // Run the Stop hook exactly as Claude would: the command through a shell, the payload on stdin.
  const command = settings.hooks.Stop[0].hooks[0].command as string;
  assertStringIncludes(command, "hook claude Stop");
  const start = (await box.client.emit({ type: "test.mark" })).id!;
  const payload = JSON.stringify({
    session_id: "abc-123",
    transcript_path: join(box.dirs.home, ".claude", "t.jsonl"),
    cwd: repo,
    hook_event_name: "Stop",
    stop_hook_active: false,
    last_assistant_message: "PRIVATE-TEXT",
  });
  const hook = new Deno.Command("sh", {
    args: ["-c", command],
    env: box.env,
    clearEnv: true,
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const writer = hook.stdin.getWriter();
  await writer.write(new TextEncoder().encode(payload));
  await writer.close();
  const output = await hook.output();
  assertEquals([output.code, output.stdout.length, output.stderr.length], [0, 0, 0], "silent, exit 0");
  const event = await untilEvent(box.client, (e) => e.type === "agent.finished", { after: start });
  assertEquals(event.origin, "claude");
  assertEquals(event.data, { path: repo, agent: "claude", session_id: "abc-123", hook: "Stop" });

  await Deno.mkdir(join(box.dirs.home, ".cursor"), { recursive: true });
  await Deno.writeTextFile(join(box.dirs.home, ".cursor", "hooks.json"), '{ "hooks": ');
  const broken = await box.cli(["integrations", "install", "cursor"]);
  assertEquals(broken.code, 1);
  assertStringIncludes(broken.stderr, "hooks.json");
  assertEquals(
    await Deno.readTextFile(join(box.dirs.home, ".cursor", "hooks.json")),
    '{ "hooks": ',
    "untouched",
  );
});
