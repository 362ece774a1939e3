import { assertEquals, assertThrows } from "../tests/assert.ts";
import { DockError } from "../client/errors.ts";
import type { FlowConfig } from "../client/wire.ts";
import {
  eventTypeMatches,
  flowStarts,
  type FlowStep,
  flowVariables,
  OUTPUT_CHARS,
  runFailed,
  runsPerHour,
  stepName,
  stepRuns,
  type StepStatus,
  stepTimeoutMs,
  substitute,
  tail,
  templatedOrigin,
  webhookUrl,
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

Deno.test("flow steps: a webhook URL takes values in its path and query, encoded, never in its origin", () => {
  const vars = { "event.pr": "7/../../admin?x=1#y", "event.q": "a&b=c d", "event.host": "evil.example" };
  assertEquals(
    webhookUrl("https://ci.example/hook/{{event.pr}}?q={{event.q}}&n={{none}}", vars),
    "https://ci.example/hook/7%2F..%2F..%2Fadmin%3Fx%3D1%23y?q=a%26b%3Dc%20d&n=",
  );
  assertEquals(
    new URL(webhookUrl("https://ci.example/a/{{event.pr}}/b", vars)).pathname.split("/").length,
    4,
  );
  for (const template of ["https://{{event.host}}/x", "http://ci.example:{{event.pr}}/", "{{event.host}}"]) {
    assertThrows(() => webhookUrl(template, vars), DockError, "scheme, host or port");
  }
  assertThrows(() => webhookUrl("https://ci.example/a/{{x}}/b", { x: ".." }), DockError, "leave its path");
  assertEquals(templatedOrigin("https://user:{{t}}@ci.example/"), true);
  assertEquals(templatedOrigin("https://ci.example/{{t}}"), false);
});

Deno.test("flow steps: when is judged on the previous step (spec 3.4 rule 2), every pair", () => {
  // Spec: "`success` runs when the previous step succeeded, `failure` when it failed, `always`
  // regardless." A skipped previous step neither succeeded nor failed.
  const table: [FlowStep["when"], StepStatus, boolean][] = [
    [undefined, "succeeded", true],
    [undefined, "failed", false],
    [undefined, "skipped", false],
    ["success", "succeeded", true],
    ["success", "failed", false],
    ["success", "skipped", false],
    ["failure", "succeeded", false],
    ["failure", "failed", true],
    ["failure", "skipped", false],
    ["always", "succeeded", true],
    ["always", "failed", true],
    ["always", "skipped", true],
  ];
  for (const [when, previous, runs] of table) {
    assertEquals(stepRuns(when, previous), runs, `when ${when ?? "(default)"} after a step ${previous}`);
  }
});

/** Runs `whens` as the engine does, each step ending as `outcomes` says when it runs. */
function judge(whens: FlowStep["when"][], outcomes: ("succeeded" | "failed")[]) {
  let previous: StepStatus = "succeeded";
  const steps = whens.map((when, i) => {
    previous = stepRuns(when, previous) ? outcomes[i] : "skipped";
    return { when, status: previous };
  });
  return { statuses: steps.map((s) => s.status), failed: runFailed(steps) };
}

Deno.test("flow steps: the issue's cases and the run's status (spec 3.4 rule 4)", () => {
  // A failed step handled by a `failure` step: the next `success` step runs (the step before it succeeded).
  assertEquals(judge([undefined, "failure", "success"], ["failed", "succeeded", "succeeded"]), {
    statuses: ["failed", "succeeded", "succeeded"],
    failed: false,
  });
  // A `failure` step after a successful `always` step does not run, though an earlier step failed.
  assertEquals(judge([undefined, "always", "failure"], ["failed", "succeeded", "succeeded"]), {
    statuses: ["failed", "succeeded", "skipped"],
    failed: true, // no later step handled the failure: `always` is not a handler
  });
  // Nothing failed: the failure step is skipped, and so is the success step right after the skip.
  assertEquals(
    judge([undefined, "failure", "success", "always"], ["succeeded", "succeeded", "succeeded", "succeeded"]),
    {
      statuses: ["succeeded", "skipped", "skipped", "succeeded"],
      failed: false,
    },
  );
  // The first step has no step before it: a first `failure` step never runs.
  assertEquals(judge(["failure", "always"], ["succeeded", "succeeded"]).statuses, ["skipped", "succeeded"]);
  // A handler that fails leaves the run failed; a step failing after a handler fails it again.
  assertEquals(judge([undefined, "failure"], ["failed", "failed"]).failed, true);
  assertEquals(judge([undefined, "failure", "always"], ["failed", "succeeded", "failed"]).failed, true);
  assertEquals(judge([undefined, "failure", "always"], ["failed", "succeeded", "succeeded"]).failed, false);
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
