/**
 * The truth suite (issue 15): scripted fake agents replaying Claude Code's, Codex's and Cursor's hook
 * sequences against a real daemon, `agent_state` checked at every step (`state_truth.ts`). Every check
 * is asserted except the known misses listed there with their reason; `deno task bench truth` prints
 * the score with every miss.
 */
import { assert, assertEquals } from "./assert.ts";
import { type Check, KNOWN_MISSES, runScenario, SCENARIOS, truthBox } from "./state_truth.ts";

Deno.test("agent state is right at every step of every scenario but the known misses", async () => {
  await using box = await truthBox();
  const checks: Check[] = [];
  // The daemon kill replaces the box: it runs alone, after the others, which run a few at a time.
  const [kill] = SCENARIOS.filter((s) => s.name.startsWith("daemon kill"));
  const others = SCENARIOS.filter((s) => s !== kill);
  for (let i = 0; i < others.length; i += 4) {
    for (const found of await Promise.all(others.slice(i, i + 4).map((s) => runScenario(box, s)))) {
      checks.push(...found);
    }
  }
  checks.push(...await runScenario(box, kill));
  const asserted = checks.filter((c) => !c.known);
  assert(asserted.length > 50, `only ${asserted.length} checks ran`);
  const wrong = asserted.filter((c) => !c.ok).map((c) =>
    `${c.scenario}: ${c.step}: expected ${c.expected}, got ${c.actual}`
  );
  assertEquals(wrong, []);
  // Every known miss names a check that exists, so a renamed step cannot hide one.
  const keys = new Set(checks.map((c) => `${c.scenario}: ${c.step}`));
  assertEquals(Object.keys(KNOWN_MISSES).filter((key) => !keys.has(key)), []);
});
