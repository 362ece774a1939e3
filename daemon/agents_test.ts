import { assertEquals } from "../tests/assert.ts";
import { agentArgs, availableAgents, BUILTIN_AGENTS, program } from "./agents.ts";

Deno.test("built-ins are offered only when installed; config adds and replaces by id", () => {
  const installed = new Set(["claude", "gemini", "my-agent"]);
  const offered = availableAgents({
    agents: [{ id: "claude", name: "Claude (yolo)", command: "claude --dangerously-skip-permissions" }, {
      id: "mine",
      command: "my-agent --fast",
      prompt_flag: "-p",
    }],
  }, (cmd) => installed.has(cmd));
  assertEquals(offered.map((a) => a.id), ["claude", "gemini", "mine"]);
  assertEquals(offered[0].command, "claude --dangerously-skip-permissions");
  assertEquals(availableAgents({}, () => true).length, BUILTIN_AGENTS.length);
  assertEquals(availableAgents({}, () => false), []);
});

Deno.test("the first prompt goes through the flag, or last", () => {
  const opencode = BUILTIN_AGENTS.find((a) => a.id === "opencode")!;
  const claude = BUILTIN_AGENTS.find((a) => a.id === "claude")!;
  assertEquals(agentArgs(opencode, "fix it"), ["--prompt", "fix it"]);
  assertEquals(agentArgs(claude, "fix it"), ["fix it"]);
  assertEquals(agentArgs(claude, undefined), []);
  assertEquals(BUILTIN_AGENTS.find((a) => a.id === "gemini")?.prompt_flag, "-i");
  assertEquals(BUILTIN_AGENTS.find((a) => a.id === "cursor")?.command, "cursor-agent");
});

Deno.test("program finds the command a line runs", () => {
  assertEquals(program("FOO=1 npx claude --x"), "npx");
  assertEquals(program('"/opt/my agent"'), "/opt/my");
  assertEquals(program("  claude  "), "claude");
});
