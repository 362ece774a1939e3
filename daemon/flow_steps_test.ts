import { assertEquals } from "../tests/assert.ts";
import type { FlowConfig } from "../client/wire.ts";
import {
  eventTypeMatches,
  flowStarts,
  flowVariables,
  OUTPUT_CHARS,
  runsPerHour,
  shellCommand,
  stepName,
  stepRuns,
  stepTimeoutMs,
  substitute,
  tail,
  whereMatches,
} from "./flow_steps.ts";

function flow(overrides: Partial<FlowConfig> = {}): FlowConfig {
  return {
    id: "f",
    name: "F",
    enabled: true,
    trigger: { event: "agent.finished" },
    steps: [{ kind: "run", command: "true" }],
    ...overrides,
  };
}

Deno.test("flow steps: substitution; an unknown variable is empty", () => {
  const vars = { "event.pr": "7", "prev.output": "boom" };
  assertEquals(substitute("PR {{event.pr}}: {{ prev.output }} {{nope}}.", vars), "PR 7: boom .");
  assertEquals(substitute("{{constructor}}{{__proto__}}", vars), "");
});

Deno.test("flow steps: a run command references variables, never holds their text", () => {
  const vars = { "event.body": "$(rm -rf ~); `x`", "location": "app" };
  const { command, env } = shellCommand("echo {{event.body}} {{location}} {{event.body}} {{none}}", vars);
  assertEquals(
    command,
    'echo "${DOCK_FLOW_VAR_1}" "${DOCK_FLOW_VAR_2}" "${DOCK_FLOW_VAR_1}" "${DOCK_FLOW_VAR_3}"',
  );
  assertEquals(env, { DOCK_FLOW_VAR_1: "$(rm -rf ~); `x`", DOCK_FLOW_VAR_2: "app", DOCK_FLOW_VAR_3: "" });
});

Deno.test("flow steps: a variable inside quotes stays one word and expands nothing, as sh runs it", async () => {
  const value = "a  b * $(echo no) `x` \\ ' \" $HOME";
  const vars = { "event.body": value, "location": "app" };
  const cases: [string, string[]][] = [
    ["printf '%s\\n' {{event.body}}", [value]],
    ["printf '%s\\n' \"said: {{event.body}} in {{location}}\"", [`said: ${value} in app`]],
    ["printf '%s\\n' 'said: {{event.body}}!'", [`said: ${value}!`]],
    ['printf \'%s\\n\' "\\"{{location}}\\"" x{{location}}y', ['"app"', "xappy"]],
  ];
  for (const [template, lines] of cases) {
    const { command, env } = shellCommand(template, vars);
    const output = await new Deno.Command("/bin/sh", { args: ["-c", command], env, stdout: "piped" })
      .output();
    assertEquals(
      new TextDecoder().decode(output.stdout),
      lines.map((line) => `${line}\n`).join(""),
      template,
    );
  }
});

Deno.test("flow steps: when selects steps by whether the flow has failed", () => {
  assertEquals(stepRuns(undefined, false), true);
  assertEquals(stepRuns(undefined, true), false);
  assertEquals(stepRuns("success", true), false);
  assertEquals(stepRuns("failure", false), false);
  assertEquals(stepRuns("failure", true), true);
  assertEquals(stepRuns("always", true), true);
  assertEquals(stepRuns("always", false), true);
});

Deno.test("flow steps: event matching: type, prefix, *; never before: or flow.*", () => {
  assertEquals(eventTypeMatches("agent.finished", "agent.finished"), true);
  assertEquals(eventTypeMatches("agent.finished", "agent.finishedx"), false);
  assertEquals(eventTypeMatches("agent.*", "agent.waiting"), true);
  assertEquals(eventTypeMatches("agent.*", "agents.x"), false);
  assertEquals(eventTypeMatches("*", "worktree.created"), true);
  assertEquals(eventTypeMatches("*", "flow.started"), false);
  assertEquals(eventTypeMatches("*", "before:exec"), false);
});

Deno.test("flow steps: where matches location, agent and branch (trailing * a prefix)", () => {
  const place = { location: "app", branch: "feat/x", agent: "claude" };
  assertEquals(whereMatches(undefined, place), true);
  assertEquals(whereMatches({ location: "app", branch: "feat/*" }, place), true);
  assertEquals(whereMatches({ branch: "feat" }, place), false);
  assertEquals(whereMatches({ agent: "codex" }, place), false);
  assertEquals(whereMatches({ location: "ap*" }, place), true);
  assertEquals(whereMatches({ location: "app" }, {}), false);
});

Deno.test("flow steps: a flow starts only enabled, matching, and not for its own events", () => {
  const event = { type: "agent.finished", origin: "claude" };
  assertEquals(flowStarts(flow(), event, {}), true);
  assertEquals(flowStarts(flow({ enabled: false }), event, {}), false);
  assertEquals(flowStarts(flow({ enabled: undefined }), event, {}), false);
  assertEquals(flowStarts(flow(), { ...event, origin: "flow:f" }, {}), false);
  assertEquals(flowStarts(flow(), { ...event, origin: "flow:other" }, {}), true);
  assertEquals(flowStarts(flow({ trigger: { schedule: "* * * * *" } }), event, {}), false);
  assertEquals(
    flowStarts(flow({ trigger: { event: "agent.*", where: { location: "web" } } }), event, {
      location: "app",
    }),
    false,
  );
});

Deno.test("flow steps: names, timeouts, budget, output tail", () => {
  assertEquals(stepName({ kind: "run" }, 0), "1");
  assertEquals(stepName({ kind: "run", id: "tests" }, 3), "tests");
  assertEquals(stepTimeoutMs({ kind: "run" }), 600_000);
  assertEquals(stepTimeoutMs({ kind: "wait" }), 1_800_000);
  assertEquals(stepTimeoutMs({ kind: "webhook" }), 15_000);
  assertEquals(stepTimeoutMs({ kind: "module" }), 60_000);
  assertEquals(stepTimeoutMs({ kind: "run", timeout: "5s" }), 5_000);
  assertEquals(stepTimeoutMs({ kind: "run", timeout: "3h" }), 7_200_000);
  assertEquals(runsPerHour(flow()), 20);
  assertEquals(runsPerHour(flow({ max_runs_per_hour: 0 })), 20);
  assertEquals(runsPerHour(flow({ max_runs_per_hour: 2 })), 2);
  assertEquals(tail("x".repeat(OUTPUT_CHARS) + "end").length, OUTPUT_CHARS);
  assertEquals(tail("x".repeat(OUTPUT_CHARS) + "end").endsWith("end"), true);
});

Deno.test("flow steps: variables of event, place, steps and prev", () => {
  const vars = flowVariables({
    event: { type: "agent.finished", time: "t", origin: "claude", data: { session: "s1", n: 3 } },
    box: "box1",
    location: "app",
    worktree: { name: "feat", path: "/w/feat", branch: "feat" },
    agentState: "finished",
    steps: [{ name: "1", exit_code: 2, output: "bad" }, { name: "notify", output: "ok" }],
    now: new Date("2026-01-01T00:00:00Z"),
  });
  assertEquals(vars["event.type"], "agent.finished");
  assertEquals(vars["event.box"], "box1");
  assertEquals(vars["event.origin"], "claude");
  assertEquals(vars["event.session"], "s1");
  assertEquals(vars["event.n"], "3");
  assertEquals(vars["worktree.path"], "/w/feat");
  assertEquals(vars["location"], "app");
  assertEquals(vars["agent.state"], "finished");
  assertEquals(vars["steps.1.exit_code"], "2");
  assertEquals(vars["steps.1.output"], "bad");
  assertEquals(vars["prev.output"], "ok");
  assertEquals(vars["prev.exit_code"], "");
  assertEquals(vars["now"], "2026-01-01T00:00:00.000Z");
});
