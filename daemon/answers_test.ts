/**
 * The permission-answer table: which tool a session runs (a preset's id, or the program of a config's
 * own preset), the keys of each answer, "always" typed only where the prompt shows that option, and a
 * tool the table does not know refused.
 */
import { DockError } from "../client/errors.ts";
import { isKeyEntry } from "../client/schemas.ts";
import { assert, assertEquals, assertThrows } from "../tests/assert.ts";
import { answerKeys, ANSWERS, answerTool } from "./answers.ts";

const CLAUDE_MENU = ` Bash command
   rm -rf build
 Do you want to proceed?
 ❯ 1. Yes
   2. Yes, and don't ask again for: rm:*
   3. No, and tell Claude what to do differently (esc)
`;
const CLAUDE_SHORT_MENU = ` Do you want to make this edit to a.ts?
 ❯ 1. Yes
   2. No, and tell Claude what to do differently (esc)
`;

function session(agent: string | null, command = "") {
  return { name: "s1", agent, command };
}

Deno.test("answerTool: the preset's id, else the program its command runs; none for a shell", () => {
  assertEquals(answerTool(session("claude", "claude")), "claude");
  assertEquals(answerTool(session("opus", "claude --model opus")), "claude");
  assertEquals(answerTool(session("my-codex", "/usr/local/bin/codex --profile x")), "codex");
  assertEquals(answerTool(session("g", "'/opt/bin/gemini' -m pro")), "gemini");
  assertEquals(
    answerTool(session("fake", "'/usr/bin/deno' run -A '/x/tests/fixtures/fake_agent.ts'")),
    "fake",
  );
  assertEquals(answerTool(session("aider", "aider --yes")), null);
  // A shell's command may name a tool (`sh -c claude`): without an agent nothing waits on a prompt.
  assertEquals(answerTool(session(null, "claude")), null);
});

Deno.test("answerKeys: yes, always and no per tool; every key is one the keys route takes", () => {
  assertEquals(answerKeys(session("claude"), "yes", CLAUDE_MENU), ["1"]);
  assertEquals(answerKeys(session("claude"), "always", CLAUDE_MENU), ["2"]);
  assertEquals(answerKeys(session("claude"), "no", CLAUDE_MENU), ["Escape"]);
  assertEquals(answerKeys(session("codex"), "yes"), ["y"]);
  for (const [tool, table] of Object.entries(ANSWERS)) {
    for (const keys of Object.values(table.keys)) {
      assert(keys.length > 0 && keys.every(isKeyEntry), `${tool}: ${JSON.stringify(keys)}`);
    }
  }
});

Deno.test("answerKeys: 'always' on a menu without that option is refused, not typed as its number", () => {
  // On Claude's two-option menu, 2 is No: typing it for "always" would deny.
  const error = assertThrows(() => answerKeys(session("claude"), "always", CLAUDE_SHORT_MENU), DockError);
  assertEquals([(error as DockError).status, (error as DockError).code], [409, "answer_not_offered"]);
  // Yes and No mean the same on both shapes.
  assertEquals(answerKeys(session("claude"), "yes", CLAUDE_SHORT_MENU), ["1"]);
  assertEquals(answerKeys(session("claude"), "no", CLAUDE_SHORT_MENU), ["Escape"]);
});

Deno.test("answerKeys: a tool the table does not know is 422, naming the keys route", () => {
  const error = assertThrows(() => answerKeys(session("aider", "aider"), "yes"), DockError) as DockError;
  assertEquals([error.status, error.code], [422, "answer_unknown"]);
  assert(error.message.includes("session keys"), error.message);
});
