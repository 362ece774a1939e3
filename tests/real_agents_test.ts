/**
 * The real-agent suite (issue 30 item 2): the real Claude Code, Codex and Gemini CLI (pinned and
 * installed once by `real_agents/install.ts`) in dock sessions, hooks from `dockd integrations install`,
 * against scripted model servers on loopback; every scenario of `real_agents/scenarios.ts` with the
 * state checked at every step. Skipped, with the reason, only when npm cannot reach its registry.
 *
 * Run only it: `deno test -A tests/real_agents_test.ts` (`--filter claude` for one tool).
 */
import { assert, assertEquals } from "./assert.ts";
import { installTools } from "./real_agents/install.ts";
import { type Check, RealBox, runScenario, scenariosOf } from "./real_agents/scenarios.ts";
import { REAL_TOOLS } from "./real_agents/tools.ts";

const installed = await installTools();
if (!installed.ok) console.warn(`real agents skipped: ${installed.reason}`);

for (const tool of Object.values(REAL_TOOLS)) {
  Deno.test({
    name: `real ${tool.id}: every scenario, state right at every step`,
    ignore: !installed.ok,
    async fn() {
      if (!installed.ok) return;
      await using t = await RealBox.start(tool, installed.tools);
      const checks: Check[] = [];
      for (const scenario of scenariosOf(tool)) {
        let result = await runScenario(t, scenario);
        const missed = result.filter((c) => !c.ok);
        if (missed.length && !tool.scoredOnly) {
          // The real tools are not ours: under a loaded CI machine a tool now and then takes a prompt late
          // (seen once in a full parallel run: Claude Code's first prompt after a denied permission). A
          // scenario that misses runs once more, in new sessions, and only its second run counts; the
          // first is printed, so a miss that repeats still fails and one that does not is still seen.
          for (const miss of missed) {
            console.warn(
              `real ${tool.id}: ${scenario.name}: ${miss.step}: expected ${miss.expected}, got ${
                miss.actual.slice(0, 200)
              }; running the scenario once more`,
            );
          }
          result = await runScenario(t, scenario);
        }
        checks.push(...result);
      }
      const wrong = checks.filter((c) => !c.ok).map((c) =>
        `${c.scenario}: ${c.step}: expected ${c.expected}, got ${c.actual}`
      );
      if (tool.scoredOnly) {
        // Run and scored (`deno task bench truth`), not asserted: see the reason.
        console.log(
          `real ${tool.id}: ${
            checks.length - wrong.length
          }/${checks.length} checks right, not asserted: ${tool.scoredOnly}`,
        );
        for (const miss of wrong) console.log(`  missed: ${miss.slice(0, 300)}`);
        assert(checks.length > 20, `only ${checks.length} checks ran`);
        return;
      }
      assertEquals(wrong, []);
    },
  });
}
