import {
  assert,
  assertEquals,
  assertMatch,
  assertRejects,
  assertStringIncludes,
  assertThrows,
} from "../tests/assert.ts";
import { DockError } from "../client/errors.ts";
import type { ConfigProblem, DockConfig, FlowConfig } from "../client/wire.ts";
import { ConfigError } from "./user_files.ts";
import {
  configJsonSchema,
  kitJsonSchema,
  mergeConfigs,
  parseConfigText,
  parseKitText,
  readRepoConfig,
  validateConfig,
  validateKit,
} from "./config.ts";

const FILE = "/repo/.dock/config.json";

/** The value at a dotted path of a JSON Schema object. */
function dig(value: unknown, path: string): unknown {
  return path.split(".").reduce<unknown>(
    (node, key) => (node as Record<string, unknown> | undefined)?.[key],
    value,
  );
}

/** The ConfigError validating `value` throws. */
function refused(value: unknown, file = FILE): ConfigError {
  return assertThrows(() => validateConfig(value, file), ConfigError) as ConfigError;
}

/** Asserts that `value` is refused with exactly this problem among its problems. */
function assertProblem(value: unknown, field: string, message: string): void {
  const error = refused(value);
  const found = error.problems.some((problem) => problem.field === field && problem.message === message);
  assert(
    found,
    `expected problem ${field}: ${message}; got ${
      JSON.stringify(error.problems.map((problem) => `${problem.field}: ${problem.message}`))
    }`,
  );
}

/** Asserts that `value` is refused and its first problem is this one, word for word. */
function assertFirst(value: unknown, expected: string): void {
  const error = refused(value);
  assertEquals(error.message.replace(/ \(and \d+ more problems?\)$/, ""), expected);
}

function flow(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    id: "review",
    name: "Review",
    trigger: { event: "agent.finished" },
    steps: [{ kind: "run", command: "make test" }],
    ...overrides,
  };
}

function withFlow(overrides: Record<string, unknown>): unknown {
  return { flows: [flow(overrides)] };
}

function withTrigger(trigger: Record<string, unknown>): unknown {
  return withFlow({ trigger });
}

function withStep(step: Record<string, unknown>): unknown {
  return withFlow({ steps: [step] });
}

const FULL: DockConfig = {
  setup: "npm ci",
  archive: "docker compose down",
  ports: 3,
  env: { DATABASE_URL: "postgres://localhost:$DOCK_PORT_1/app", _private: "env://TOKEN" },
  services: [{ name: "web", run: "npm run dev", autostart: true }, { name: "db-1", run: "postgres" }],
  agents: [{ id: "mine", name: "Mine", command: "mine --yolo", prompt_flag: "" }],
  hooks: [
    { on: "worktree.*", run: "echo hi", timeout: "30s", tool: "editor" },
    { on: "before:exec", run: "exit 0" },
    { on: "*", run: "true" },
  ],
  flows: [
    {
      id: "nightly",
      name: "Nightly",
      enabled: true,
      trigger: { schedule: "0 3 * * 1-5", each_worktree: true, where: { branch: "feature/*" } },
      steps: [
        { id: "test", kind: "run", command: "make test", timeout: "20m" },
        { kind: "prompt", text: "Fix: {{prev.output}}", when: "failure" },
        { kind: "wait", for: ["finished"], timeout: "2h" },
        { kind: "start_agent", agent: "mine", new_worktree: true, name: "fix-1", text: "go" },
        { kind: "notify", title: "Done", text: "{{steps.test.exit_code}}", when: "always" },
        { kind: "webhook", url: "https://example.com/hook/{{event.pr}}", text: "{}" },
      ],
      max_runs_per_hour: 0,
    },
    {
      id: "on-review",
      name: "On review",
      trigger: { forge: { on: "review_comment", poll: "1m" }, where: { location: "app", agent: "mine" } },
      steps: [{ kind: "prompt", text: "{{event.body}}", session: "main" }],
    },
  ],
};

// ---------------------------------------------------------------------------------------------------
// Accepting

Deno.test("validateConfig accepts every field and returns the config as written", () => {
  assertEquals(validateConfig(structuredClone(FULL), FILE), FULL);
  assertEquals(validateConfig({}, FILE), {});
});

Deno.test("validateConfig accepts $schema for editors and leaves it out of the result", () => {
  assertEquals(validateConfig({ $schema: "../schemas/config.schema.json", ports: 2 }, FILE), { ports: 2 });
});

Deno.test("setup and archive may be empty (a later layer switching them off)", () => {
  assertEquals(validateConfig({ setup: "", archive: "" }, FILE), { setup: "", archive: "" });
});

// ---------------------------------------------------------------------------------------------------
// Refusing: the rules of spec 2.5, one by one

Deno.test("the error names file, field and value; the spec's example word for word", () => {
  const value = {
    services: [{ name: "web", run: "a" }, { name: "api", run: "b" }, { name: "Web", run: "c" }],
  };
  const error = refused(value);
  assertEquals(error.message, `${FILE}: services[2].name: must match [a-z0-9][a-z0-9-]*, got "Web"`);
  assert(error instanceof DockError);
  assertEquals(error.name, "ConfigError");
  assertEquals(error.code, "invalid_config");
  assertEquals(error.status, 422);
  assertEquals(error.detail?.file, FILE);
  assertEquals(error.detail?.field, "services[2].name");
  assertEquals(error.problems, [{
    file: FILE,
    field: "services[2].name",
    message: error.problems[0].message,
  }]);
  assertEquals(error.toBody().error.code, "invalid_config");
});

Deno.test("the top level must be an object", () => {
  assertEquals(refused([]).message, `${FILE}: must be an object, got []`);
  assertEquals(refused(null).message, `${FILE}: must be an object, got null`);
});

Deno.test("setup and archive must be strings", () => {
  assertFirst({ setup: 3 }, `${FILE}: setup: must be a string, got 3`);
  assertFirst({ archive: ["a"] }, `${FILE}: archive: must be a string, got ["a"]`);
});

Deno.test("ports is a whole number from 0 to 10", () => {
  for (const ports of [0, 1, 10]) assertEquals(validateConfig({ ports }, FILE), { ports });
  assertFirst({ ports: 11 }, `${FILE}: ports: must be a whole number from 0 to 10, got 11`);
  assertFirst({ ports: -1 }, `${FILE}: ports: must be a whole number from 0 to 10, got -1`);
  assertFirst({ ports: 1.5 }, `${FILE}: ports: must be a whole number from 0 to 10, got 1.5`);
  assertFirst({ ports: "3" }, `${FILE}: ports: must be a number, got "3"`);
});

Deno.test("env keys match [A-Za-z_][A-Za-z0-9_]* and values are strings", () => {
  assertFirst({ env: { "1ABC": "x" } }, `${FILE}: env.1ABC: must match [A-Za-z_][A-Za-z0-9_]*, got "1ABC"`);
  assertFirst({ env: { "A-B": "x" } }, `${FILE}: env.A-B: must match [A-Za-z_][A-Za-z0-9_]*, got "A-B"`);
  assertFirst({ env: { "A B": "x" } }, `${FILE}: env["A B"]: must match [A-Za-z_][A-Za-z0-9_]*, got "A B"`);
  assertFirst({ env: { FOO: 5 } }, `${FILE}: env.FOO: must be a string, got 5`);
  assertFirst({ env: ["FOO=1"] }, `${FILE}: env: must be an object, got ["FOO=1"]`);
});

Deno.test("services: name rule, at most 32 characters, unique; run required; autostart boolean", () => {
  const name32 = "a".repeat(32);
  assertEquals(validateConfig({ services: [{ name: name32, run: "x" }] }, FILE).services?.[0].name, name32);
  assertFirst(
    { services: [{ name: "a".repeat(33), run: "x" }] },
    `${FILE}: services[0].name: must be at most 32 characters, got "${"a".repeat(33)}"`,
  );
  assertFirst(
    { services: [{ name: "-web", run: "x" }] },
    `${FILE}: services[0].name: must match [a-z0-9][a-z0-9-]*, got "-web"`,
  );
  assertFirst(
    { services: [{ name: "web", run: "x" }, { name: "web", run: "y" }] },
    `${FILE}: services[1].name: "web" is already used by services[0].name`,
  );
  assertFirst({ services: [{ name: "web" }] }, `${FILE}: services[0].run: required`);
  assertFirst({ services: [{ run: "x" }] }, `${FILE}: services[0].name: required`);
  assertFirst(
    { services: [{ name: "web", run: "  " }] },
    `${FILE}: services[0].run: must not be empty, got "  "`,
  );
  assertFirst(
    { services: [{ name: "web", run: "x", autostart: "yes" }] },
    `${FILE}: services[0].autostart: must be true or false, got "yes"`,
  );
  assertFirst({ services: { web: "x" } }, `${FILE}: services: must be an array, got {"web":"x"}`);
});

Deno.test("agents: id and command required, id unique", () => {
  assertFirst({ agents: [{ command: "x" }] }, `${FILE}: agents[0].id: required`);
  assertFirst({ agents: [{ id: "x" }] }, `${FILE}: agents[0].command: required`);
  assertFirst(
    { agents: [{ id: "x", command: "a" }, { id: "x", command: "b" }] },
    `${FILE}: agents[1].id: "x" is already used by agents[0].id`,
  );
  assertFirst(
    { agents: [{ id: "my agent", command: "a" }] },
    `${FILE}: agents[0].id: must be one word of letters, digits, '.', '_' or '-', got "my agent"`,
  );
  assertFirst(
    { agents: [{ id: "x", command: "a", prompt_flag: 1 }] },
    `${FILE}: agents[0].prompt_flag: must be a string, got 1`,
  );
});

Deno.test("hooks: on is an event type, a prefix, * or before:<action>; run or module; timeout a duration", () => {
  for (
    const on of [
      "worktree.created",
      "worktree.*",
      "*",
      "before:exec",
      "before:skills.install",
      "forge.pr_merged",
    ]
  ) {
    assertEquals(validateConfig({ hooks: [{ on, run: "x" }] }, FILE).hooks?.[0].on, on);
  }
  for (const on of ["Worktree", "worktree*", "worktree.", "before:", "after:exec", ""]) {
    assertProblem(
      { hooks: [{ on, run: "x" }] },
      "hooks[0].on",
      `must be an event type (worktree.created), a prefix (worktree.*), * or before:<action>, got ${
        JSON.stringify(on)
      }`,
    );
  }
  assertFirst({ hooks: [{ run: "x" }] }, `${FILE}: hooks[0].on: required`);
  assertFirst(
    { hooks: [{ on: "*" }] },
    `${FILE}: hooks[0].run: a hook has either run (a shell command) or module`,
  );
  assertFirst(
    { hooks: [{ on: "*", run: "x", module: "hooks/a.ts" }] },
    `${FILE}: hooks[0].run: a hook has either run (a shell command) or module, got "x"`,
  );
  assertEquals(
    validateConfig({ hooks: [{ on: "*", module: "hooks/a.ts" }] }, FILE).hooks?.[0].module,
    "hooks/a.ts",
  );
  for (const module of ["../a.ts", "/etc/a.ts", "https://x.test/a.ts", "a/../../b.ts", "a.sh"]) {
    assertProblem(
      { hooks: [{ on: "*", module }] },
      "hooks[0].module",
      `must be a relative path to a .ts or .js file inside its folder, without .., got ${
        JSON.stringify(module)
      }`,
    );
  }
  assertFirst(
    { hooks: [{ on: "*", run: "x", timeout: "soon" }] },
    `${FILE}: hooks[0].timeout: must be a duration such as 30s, 10m or 1h, got "soon"`,
  );
  assertFirst(
    { hooks: [{ on: "*", run: "x", timeout: "0s" }] },
    `${FILE}: hooks[0].timeout: must be longer than zero, got "0s"`,
  );
  assertFirst(
    { hooks: [{ on: "*", run: "x", timeout: 30 }] },
    `${FILE}: hooks[0].timeout: must be a string, got 30`,
  );
  assertFirst(
    { hooks: [{ on: "*", run: "x", tool: "" }] },
    `${FILE}: hooks[0].tool: must not be empty, got ""`,
  );
});

Deno.test("flows: id rule (at most 48), unique; name, trigger, steps required", () => {
  assertEquals(validateConfig(withFlow({ id: "a".repeat(48) }), FILE).flows?.[0].id, "a".repeat(48));
  assertProblem(
    withFlow({ id: "a".repeat(49) }),
    "flows[0].id",
    `must be at most 48 characters, got "${"a".repeat(49)}"`,
  );
  assertFirst(
    withFlow({ id: "Nightly" }),
    `${FILE}: flows[0].id: must match [a-z0-9][a-z0-9-]*, got "Nightly"`,
  );
  assertFirst({ flows: [flow(), flow()] }, `${FILE}: flows[1].id: "review" is already used by flows[0].id`);
  const { name: _, ...noName } = flow();
  assertFirst({ flows: [noName] }, `${FILE}: flows[0].name: required`);
  assertFirst(withFlow({ trigger: undefined }), `${FILE}: flows[0].trigger: required`);
  assertFirst(withFlow({ steps: undefined }), `${FILE}: flows[0].steps: required`);
  assertFirst(withFlow({ enabled: "yes" }), `${FILE}: flows[0].enabled: must be true or false, got "yes"`);
});

Deno.test("flows: max_runs_per_hour is a whole number of at least 0", () => {
  assertEquals(validateConfig(withFlow({ max_runs_per_hour: 0 }), FILE).flows?.[0].max_runs_per_hour, 0);
  assertEquals(validateConfig(withFlow({ max_runs_per_hour: 50 }), FILE).flows?.[0].max_runs_per_hour, 50);
  assertFirst(
    withFlow({ max_runs_per_hour: -1 }),
    `${FILE}: flows[0].max_runs_per_hour: must be a whole number of at least 0, got -1`,
  );
  assertFirst(
    withFlow({ max_runs_per_hour: 2.5 }),
    `${FILE}: flows[0].max_runs_per_hour: must be a whole number of at least 0, got 2.5`,
  );
});

Deno.test("trigger: exactly one of event, schedule, forge", () => {
  assertFirst(
    withTrigger({}),
    `${FILE}: flows[0].trigger: needs exactly one of event, schedule, forge; found none`,
  );
  assertFirst(
    withTrigger({ event: "agent.finished", schedule: "@daily" }),
    `${FILE}: flows[0].trigger: needs exactly one of event, schedule, forge; found event and schedule`,
  );
  assertFirst(
    withTrigger({ where: { branch: "main" } }),
    `${FILE}: flows[0].trigger: needs exactly one of event, schedule, forge; found none`,
  );
  assertFirst(
    withFlow({ trigger: "agent.finished" }),
    `${FILE}: flows[0].trigger: must be an object, got "agent.finished"`,
  );
});

Deno.test("trigger.event: an event type or prefix, never a before: gate, never flow.*", () => {
  for (const event of ["agent.finished", "worktree.*", "*", "forge.review_comment"]) {
    assertEquals(
      (validateConfig(withTrigger({ event }), FILE).flows?.[0] as FlowConfig).trigger.event,
      event,
    );
  }
  assertFirst(
    withTrigger({ event: "before:exec" }),
    `${FILE}: flows[0].trigger.event: a before: gate cannot start a flow, got "before:exec"`,
  );
  assertFirst(
    withTrigger({ event: "flow.finished" }),
    `${FILE}: flows[0].trigger.event: flow.* events never start flows, got "flow.finished"`,
  );
  assertFirst(
    withTrigger({ event: "flow.*" }),
    `${FILE}: flows[0].trigger.event: flow.* events never start flows, got "flow.*"`,
  );
  assertFirst(
    withTrigger({ event: "Agent Finished" }),
    `${FILE}: flows[0].trigger.event: must be an event type (worktree.created), a prefix (worktree.*) or *, got "Agent Finished"`,
  );
});

Deno.test("trigger.schedule: five cron fields with *, */N, ranges, lists, or an @ nickname", () => {
  const good = [
    "* * * * *",
    "*/15 * * * *",
    "0 9 * * 1-5",
    "0,30 8-18 * * *",
    "5 4 1,15 */2 0,7",
    "0 0 31 * *",
    "0 0 30 2 1", // both day fields restricted: Mondays still match
    "  0 12 * * *  ",
    "@hourly",
    "@daily",
    "@midnight",
    "@weekly",
    "@monthly",
    "@yearly",
    "@annually",
  ];
  for (const schedule of good) validateConfig(withTrigger({ schedule }), FILE);
  const bad: [string, string][] = [
    [
      "* * * *",
      "must have 5 fields (minute hour day-of-month month day-of-week) or be one of @hourly, @daily, @midnight, @weekly, @monthly, @yearly, @annually; found 4",
    ],
    [
      "0 * * * * *",
      "must have 5 fields (minute hour day-of-month month day-of-week) or be one of @hourly, @daily, @midnight, @weekly, @monthly, @yearly, @annually; found 6",
    ],
    ["61 * * * *", `minute field "61": values must be from 0 to 59`],
    ["0 24 * * *", `hour field "24": values must be from 0 to 23`],
    ["0 0 0 * *", `day-of-month field "0": values must be from 1 to 31`],
    ["0 0 * 13 *", `month field "13": values must be from 1 to 12`],
    ["0 0 * * 8", `day-of-week field "8": values must be from 0 to 7`],
    ["*/0 * * * *", `minute field "*/0": the step must be from 1 to 59`],
    ["0 5-1 * * *", `hour field "5-1": a range must go from low to high`],
    ["0 0 * * MON", `day-of-week field "MON": use *, */N, a number, a range a-b or a list of those`],
    ["1-5/2 * * * *", `minute field "1-5/2": use *, */N, a number, a range a-b or a list of those`],
    ["0 0 L * *", `day-of-month field "L": use *, */N, a number, a range a-b or a list of those`],
    ["0,,5 * * * *", `minute field "0,,5": use *, */N, a number, a range a-b or a list of those`],
    ["0 0 30 2 *", "never matches a real date"],
    ["0 0 31 4,6,9,11 *", "never matches a real date"],
    ["@every", "must be one of @hourly, @daily, @midnight, @weekly, @monthly, @yearly, @annually"],
    [
      "",
      "must have 5 fields (minute hour day-of-month month day-of-week) or be one of @hourly, @daily, @midnight, @weekly, @monthly, @yearly, @annually; found 0",
    ],
  ];
  for (const [schedule, message] of bad) {
    assertFirst(
      withTrigger({ schedule }),
      `${FILE}: flows[0].trigger.schedule: ${message}, got ${JSON.stringify(schedule)}`,
    );
  }
});

Deno.test("trigger.each_worktree only with schedule", () => {
  validateConfig(withTrigger({ schedule: "@daily", each_worktree: true }), FILE);
  assertFirst(
    withTrigger({ event: "agent.finished", each_worktree: true }),
    `${FILE}: flows[0].trigger.each_worktree: is only allowed with schedule, got true`,
  );
  assertFirst(
    withTrigger({ schedule: "@daily", each_worktree: "yes" }),
    `${FILE}: flows[0].trigger.each_worktree: must be true or false, got "yes"`,
  );
});

Deno.test("trigger.forge: on is one of four, poll a duration of at least 1m", () => {
  for (const on of ["review_comment", "pr_review", "check_failed", "pr_merged"]) {
    validateConfig(withTrigger({ forge: { on } }), FILE);
  }
  validateConfig(withTrigger({ forge: { on: "pr_merged", poll: "5m" } }), FILE);
  assertFirst(
    withTrigger({ forge: { on: "push" } }),
    `${FILE}: flows[0].trigger.forge.on: must be one of review_comment, pr_review, check_failed, pr_merged, got "push"`,
  );
  assertFirst(withTrigger({ forge: {} }), `${FILE}: flows[0].trigger.forge.on: required`);
  assertFirst(
    withTrigger({ forge: { on: "pr_review", poll: "30s" } }),
    `${FILE}: flows[0].trigger.forge.poll: must be at least 1m, got "30s"`,
  );
  assertFirst(
    withTrigger({ forge: { on: "pr_review", poll: "often" } }),
    `${FILE}: flows[0].trigger.forge.poll: must be a duration such as 30s, 10m or 1h, got "often"`,
  );
});

Deno.test("trigger.where: location, agent, branch with a trailing * only", () => {
  validateConfig(withTrigger({ event: "*", where: {} }), FILE);
  validateConfig(
    withTrigger({ event: "*", where: { location: "app", agent: "mine", branch: "fix/*" } }),
    FILE,
  );
  assertFirst(
    withTrigger({ event: "*", where: { branch: "fix*/x" } }),
    `${FILE}: flows[0].trigger.where.branch: may only end with *, as a prefix, got "fix*/x"`,
  );
  assertFirst(
    withTrigger({ event: "*", where: { repo: "x" } }),
    `${FILE}: flows[0].trigger.where.repo: unknown field; known fields: location, agent, branch`,
  );
});

Deno.test("steps: at least one; kind one of seven; when one of three", () => {
  assertFirst(withFlow({ steps: [] }), `${FILE}: flows[0].steps: must have at least one step, got []`);
  assertFirst(
    withStep({ kind: "shell", command: "x" }),
    `${FILE}: flows[0].steps[0].kind: must be one of run, prompt, wait, start_agent, notify, webhook, module, got "shell"`,
  );
  assertFirst(withStep({ command: "x" }), `${FILE}: flows[0].steps[0].kind: required`);
  assertFirst(
    withStep({ kind: "run", command: "x", when: "never" }),
    `${FILE}: flows[0].steps[0].when: must be one of success, failure, always, got "never"`,
  );
});

Deno.test("steps: each kind's required field", () => {
  const cases: [Record<string, unknown>, string][] = [
    [{ kind: "run" }, `flows[0].steps[0].command: is required for a run step`],
    [{ kind: "prompt" }, `flows[0].steps[0].text: is required for a prompt step`],
    [{ kind: "start_agent" }, `flows[0].steps[0].agent: is required for a start_agent step`],
    [{ kind: "notify", text: "body" }, `flows[0].steps[0].title: is required for a notify step`],
    [{ kind: "webhook" }, `flows[0].steps[0].url: is required for a webhook step`],
    [{ kind: "module" }, `flows[0].steps[0].module: is required for a module step`],
    [
      { kind: "module", module: "../x.ts" },
      `flows[0].steps[0].module: must be a relative path to a .ts or .js file inside its folder, without .., got "../x.ts"`,
    ],
  ];
  for (const [step, message] of cases) assertFirst(withStep(step), `${FILE}: ${message}`);
  validateConfig(withStep({ kind: "wait" }), FILE);
});

Deno.test("steps: a field another kind uses is refused", () => {
  assertFirst(
    withStep({ kind: "prompt", text: "hi", command: "make" }),
    `${FILE}: flows[0].steps[0].command: is not used by a prompt step, got "make"`,
  );
  assertFirst(
    withStep({ kind: "run", command: "make", for: ["finished"] }),
    `${FILE}: flows[0].steps[0].for: is not used by a run step, got ["finished"]`,
  );
});

Deno.test("steps: url is http or https; timeout at most 2h; for lists agent states", () => {
  for (const url of ["http://localhost:8080/x", "https://example.com", "HTTPS://example.com/{{event.pr}}"]) {
    validateConfig(withStep({ kind: "webhook", url }), FILE);
  }
  for (const url of ["ftp://example.com", "example.com", "https://", "javascript:alert(1)"]) {
    assertFirst(
      withStep({ kind: "webhook", url }),
      `${FILE}: flows[0].steps[0].url: must be an http or https URL, got ${JSON.stringify(url)}`,
    );
  }
  validateConfig(withStep({ kind: "run", command: "x", timeout: "2h" }), FILE);
  validateConfig(withStep({ kind: "run", command: "x", timeout: "1h59m" }), FILE);
  assertFirst(
    withStep({ kind: "run", command: "x", timeout: "2h1s" }),
    `${FILE}: flows[0].steps[0].timeout: must be at most 2h, got "2h1s"`,
  );
  assertFirst(
    withStep({ kind: "wait", for: ["done"] }),
    `${FILE}: flows[0].steps[0].for[0]: must be one of idle, running, waiting, finished, got "done"`,
  );
  assertFirst(
    withStep({ kind: "wait", for: [] }),
    `${FILE}: flows[0].steps[0].for: must list at least one state, got []`,
  );
});

Deno.test("steps: ids unique in the flow and never a number", () => {
  assertFirst(
    withFlow({ steps: [{ id: "a", kind: "run", command: "x" }, { id: "a", kind: "run", command: "y" }] }),
    `${FILE}: flows[0].steps[1].id: "a" is already used by flows[0].steps[0].id`,
  );
  assertFirst(
    withStep({ id: "2", kind: "run", command: "x" }),
    `${FILE}: flows[0].steps[0].id: must start with a letter or _ and hold only letters, digits, _ and -, got "2"`,
  );
  // The same id in two flows is fine.
  validateConfig({
    flows: [
      flow({ steps: [{ id: "a", kind: "run", command: "x" }] }),
      flow({ id: "other", steps: [{ id: "a", kind: "run", command: "x" }] }),
    ],
  }, FILE);
});

Deno.test("unknown keys are refused at every level, with a suggestion when close", () => {
  assertFirst({ servics: [] }, `${FILE}: servics: unknown field (did you mean "services"?)`);
  assertFirst({ port: 2 }, `${FILE}: port: unknown field (did you mean "ports"?)`);
  assertFirst(
    { colour: "red" },
    `${FILE}: colour: unknown field; known fields: setup, archive, ports, env, services, agents, hooks, flows`,
  );
  assertFirst(
    { services: [{ name: "web", run: "x", autostrat: true }] },
    `${FILE}: services[0].autostrat: unknown field (did you mean "autostart"?)`,
  );
  assertFirst(
    withStep({ kind: "run", command: "x", timout: "1m" }),
    `${FILE}: flows[0].steps[0].timout: unknown field (did you mean "timeout"?)`,
  );
});

Deno.test("every problem is listed in document order; the message counts the rest", () => {
  const error = refused({
    ports: 20,
    services: [{ name: "Web", run: "x", autostrat: true }],
    env: { "bad-key": "1" },
  });
  assertEquals(error.problems.map((problem) => problem.field), [
    "ports",
    "services[0].name",
    "services[0].autostrat",
    "env.bad-key",
  ]);
  assertEquals(
    error.message,
    `${FILE}: ports: must be a whole number from 0 to 10, got 20 (and 3 more problems)`,
  );
  assertEquals(error.detail?.problems, error.problems);
  assertStringIncludes(refused({ ports: 20, setup: 1 }).message, "(and 1 more problem)");
});

Deno.test("a long offending value is cut short in the message", () => {
  const long = "X".repeat(500);
  const error = refused({ services: [{ name: long, run: "x" }] });
  assert(error.message.length < 300, error.message);
  assertMatch(error.message, /got "X+…"/);
});

// ---------------------------------------------------------------------------------------------------
// JSONC text

Deno.test("parseConfigText accepts comments and trailing commas", () => {
  const text = `{
    // ports for web and db
    "ports": 2,
    /* services */
    "services": [
      { "name": "web", "run": "npm run dev", },
    ],
  }`;
  assertEquals(parseConfigText(text, FILE), { ports: 2, services: [{ name: "web", run: "npm run dev" }] });
});

Deno.test("a syntax error names the file, line and column, and what was expected", () => {
  const error = assertThrows(
    () => parseConfigText(`{\n  "ports": 2\n  "setup": "x"\n}`, FILE),
    ConfigError,
  ) as ConfigError;
  assertEquals(error.message, `${FILE}:3:3: expected ',' or a closing bracket, found "setup"`);
  assertEquals(error.detail?.line, 3);
  assertEquals(error.detail?.column, 3);
  assertEquals(error.problems[0].field, "");

  const cut = assertThrows(() => parseConfigText(`{"ports": `, FILE), ConfigError);
  assertEquals(cut.message, `${FILE}:1:11: expected a value, found the end of the file`);
  assertThrows(() => parseConfigText("", FILE), ConfigError, `${FILE}:1:1: expected a value`);
  assertEquals(
    assertThrows(() => parseConfigText(`{ports: 2}`, FILE), ConfigError).message,
    `${FILE}:1:2: unexpected symbol (names and strings need double quotes), found 'ports'`,
  );
  assertEquals(
    assertThrows(() => parseConfigText(`{"a": 1}}`, FILE), ConfigError).message,
    `${FILE}:1:9: expected the end of the file, found '}'`,
  );
  assertEquals(
    assertThrows(() => parseConfigText(`{\n  "a": 1,\n  "b": [1 2]\n}`, FILE), ConfigError).message,
    `${FILE}:3:11: expected ',' or a closing bracket, found '2'`,
  );
});

Deno.test("parseConfigText validates after parsing", () => {
  assertThrows(
    () => parseConfigText(`{ /* */ "ports": 99, }`, FILE),
    ConfigError,
    `${FILE}: ports: must be a whole number from 0 to 10, got 99`,
  );
});

// ---------------------------------------------------------------------------------------------------
// Merging (spec 2.6)

Deno.test("mergeConfigs: setup, archive, ports: a later layer wins if set", () => {
  assertEquals(mergeConfigs([{ setup: "a", archive: "b", ports: 2 }, { setup: "c" }, { ports: 0 }]), {
    setup: "c",
    archive: "b",
    ports: 0,
  });
  assertEquals(mergeConfigs([{ setup: "a" }, { setup: "" }]).setup, "");
  assertEquals(mergeConfigs([{ setup: "a" }, { setup: undefined }]).setup, "a");
});

Deno.test("mergeConfigs: env key by key, later wins", () => {
  assertEquals(
    mergeConfigs([{ env: { A: "1", B: "2" } }, { env: { B: "3", C: "4" } }, { env: { C: "5" } }]).env,
    { A: "1", B: "3", C: "5" },
  );
});

Deno.test("mergeConfigs: services, agents, flows replace by name or id in place; new ones are appended", () => {
  const merged = mergeConfigs([
    {
      services: [{ name: "web", run: "a" }, { name: "db", run: "b" }],
      agents: [{ id: "x", command: "x1" }],
      flows: [
        {
          id: "f1",
          name: "one",
          enabled: true,
          trigger: { event: "*" },
          steps: [{ kind: "run", command: "a" }],
        },
        {
          id: "f2",
          name: "two",
          enabled: true,
          trigger: { event: "*" },
          steps: [{ kind: "run", command: "b" }],
        },
      ],
    },
    {
      services: [{ name: "web", run: "c", autostart: true }, { name: "cache", run: "d" }],
      agents: [{ id: "y", command: "y1" }, { id: "x", command: "x2" }],
    },
    {
      flows: [{
        id: "f1",
        name: "one",
        enabled: false,
        trigger: { event: "*" },
        steps: [{ kind: "run", command: "a" }],
      }],
    },
  ]);
  assertEquals(merged.services, [
    { name: "web", run: "c", autostart: true },
    { name: "db", run: "b" },
    { name: "cache", run: "d" },
  ]);
  assertEquals(merged.agents, [{ id: "x", command: "x2" }, { id: "y", command: "y1" }]);
  assertEquals(merged.flows?.map((f) => [f.id, f.enabled]), [["f1", false], ["f2", true]]);
});

Deno.test("mergeConfigs: hooks are concatenated in layer order", () => {
  const merged = mergeConfigs([
    { hooks: [{ on: "*", run: "file" }] },
    { hooks: [{ on: "*", run: "kit" }, { on: "*", run: "file" }] },
    null,
    { hooks: [{ on: "*", run: "box" }] },
  ]);
  assertEquals(merged.hooks?.map((hook) => hook.run), ["file", "kit", "file", "box"]);
});

Deno.test("mergeConfigs: missing layers and fields leave nothing behind; layers are not shared or changed", () => {
  assertEquals(mergeConfigs([]), {});
  assertEquals(mergeConfigs([null, undefined, {}]), {});
  const repo: DockConfig = { services: [{ name: "web", run: "a" }], env: { A: "1" } };
  const before = structuredClone(repo);
  const merged = mergeConfigs([repo, null, { env: { B: "2" } }]);
  merged.services![0].run = "changed";
  merged.env!.A = "changed";
  assertEquals(repo, before);
  assertEquals(mergeConfigs([repo]), repo);
});

// ---------------------------------------------------------------------------------------------------
// Reading the repository file

Deno.test("readRepoConfig: missing file is null, a valid one is read, an invalid one names the file", async () => {
  const repo = await Deno.makeTempDir({ prefix: "dock-config-test-" });
  try {
    assertEquals(await readRepoConfig(repo), null);
    await Deno.mkdir(`${repo}/.dock`);
    assertEquals(await readRepoConfig(repo), null);
    await Deno.writeTextFile(`${repo}/.dock/config.json`, `{ "ports": 2, // two\n}`);
    assertEquals(await readRepoConfig(repo), { ports: 2 });
    await Deno.writeTextFile(`${repo}/.dock/config.json`, `{ "services": [{ "name": "Web", "run": "x" }] }`);
    await assertRejects(
      () => readRepoConfig(repo),
      ConfigError,
      `${repo}/.dock/config.json: services[0].name: must match [a-z0-9][a-z0-9-]*, got "Web"`,
    );
    await Deno.remove(`${repo}/.dock/config.json`);
    await Deno.mkdir(`${repo}/.dock/config.json`);
    await assertRejects(() => readRepoConfig(repo), ConfigError, `${repo}/.dock/config.json: cannot be read`);
  } finally {
    await Deno.remove(repo, { recursive: true });
  }
});

// ---------------------------------------------------------------------------------------------------
// kit.json (spec 2.7)

const KIT_FILE = "/kits/web/kit.json";

function kitRefused(value: unknown): ConfigError {
  return assertThrows(() => validateKit(value, KIT_FILE), ConfigError) as ConfigError;
}

Deno.test("validateKit accepts every field", () => {
  const kit = {
    id: "node-web",
    name: "Node web",
    description: "A kit",
    version: "1.2.0",
    match: { slug: "acme/web" },
    requires: [{ tool: "node", hint: "install node 22" }, { tool: "docker" }],
    config: { ports: 2, services: [{ name: "web", run: "$DOCK_KIT_DIR/bin/web" }] },
    files: { "bin/web": "#!/bin/sh\nexec npm start\n", ".env.example": "A=1\n", "a..b/c": "" },
  };
  assertEquals(validateKit(structuredClone(kit), KIT_FILE), kit);
  assertEquals(validateKit({ $schema: "x", id: "k" }, KIT_FILE), { id: "k" });
});

Deno.test("kit id: required, the name rule, at most 48 characters", () => {
  assertEquals(kitRefused({}).message, `${KIT_FILE}: id: required`);
  assertEquals(
    kitRefused({ id: "My Kit" }).message,
    `${KIT_FILE}: id: must match [a-z0-9][a-z0-9-]*, got "My Kit"`,
  );
  validateKit({ id: "k".repeat(48) }, KIT_FILE);
  assertEquals(
    kitRefused({ id: "k".repeat(49) }).message,
    `${KIT_FILE}: id: must be at most 48 characters, got "${"k".repeat(49)}"`,
  );
});

Deno.test("kit files: paths must stay inside the kit", () => {
  const cases: [string, string][] = [
    ["../escape", "must stay inside the kit (no .. segment)"],
    ["bin/../../escape", "must stay inside the kit (no .. segment)"],
    ["..", "must stay inside the kit (no .. segment)"],
    ["bin\\..\\..\\escape", "must stay inside the kit (no .. segment)"],
    ["/etc/passwd", "must be a path relative to the kit, not absolute"],
    ["\\\\server\\share", "must be a path relative to the kit, not absolute"],
    ["C:\\Windows", "must be a path relative to the kit, not absolute"],
    ["", "must be a plain relative path such as bin/setup.sh"],
    ["./bin/x", "must be a plain relative path such as bin/setup.sh"],
    ["bin//x", "must be a plain relative path such as bin/setup.sh"],
    ["bin/", "must be a plain relative path such as bin/setup.sh"],
  ];
  for (const [path, message] of cases) {
    const error = kitRefused({ id: "k", files: { [path]: "x" } });
    assertEquals(error.problems.length, 1, error.message);
    assertEquals(error.problems[0].message, `${message}, got ${JSON.stringify(path)}`);
  }
  assertEquals(
    kitRefused({ id: "k", files: { "../x": "a" } }).message,
    `${KIT_FILE}: files["../x"]: must stay inside the kit (no .. segment), got "../x"`,
  );
  assertEquals(
    kitRefused({ id: "k", files: { "bin/x": 1 } }).message,
    `${KIT_FILE}: files["bin/x"]: must be a string, got 1`,
  );
});

Deno.test("kit config follows the rules of 2.5; other kit fields are checked too", () => {
  assertEquals(
    kitRefused({ id: "k", config: { services: [{ name: "Web", run: "x" }] } }).message,
    `${KIT_FILE}: config.services[0].name: must match [a-z0-9][a-z0-9-]*, got "Web"`,
  );
  assertEquals(
    kitRefused({ id: "k", config: { $schema: "x" } }).message,
    `${KIT_FILE}: config.$schema: unknown field; known fields: setup, archive, ports, env, services, agents, hooks, flows`,
  );
  assertEquals(
    kitRefused({ id: "k", requires: [{ hint: "x" }] }).message,
    `${KIT_FILE}: requires[0].tool: required`,
  );
  assertEquals(
    kitRefused({ id: "k", match: { slug: "web" } }).message,
    `${KIT_FILE}: match.slug: must be owner/repo, got "web"`,
  );
  assertEquals(
    kitRefused({ id: "k", verison: "1" }).message,
    `${KIT_FILE}: verison: unknown field (did you mean "version"?)`,
  );
});

Deno.test("parseKitText reads JSON with comments and names syntax errors", () => {
  assertEquals(parseKitText(`{ "id": "k", // the id\n }`, KIT_FILE), { id: "k" });
  assertThrows(() => parseKitText(`{ "id": "k" "name": "x" }`, KIT_FILE), ConfigError, `${KIT_FILE}:1:13:`);
});

// ---------------------------------------------------------------------------------------------------
// JSON Schemas

Deno.test("the JSON Schemas are draft 2020-12 objects describing the files", () => {
  const config = configJsonSchema();
  assertEquals(dig(config, "$schema"), "https://json-schema.org/draft/2020-12/schema");
  assertEquals(dig(config, "$id"), "urn:dock:schema:config");
  assertEquals(dig(config, "type"), "object");
  assertEquals(dig(config, "additionalProperties"), false);
  assert(dig(config, "properties.services"));
  assertEquals(dig(config, "properties.services.items.required"), ["name", "run"]);
  assertEquals(dig(config, "properties.ports.maximum"), 10);

  const kit = kitJsonSchema();
  assertEquals(dig(kit, "$schema"), "https://json-schema.org/draft/2020-12/schema");
  assertEquals(dig(kit, "$id"), "urn:dock:schema:kit");
  assertEquals(dig(kit, "required"), ["id"]);
  assert(dig(kit, "properties.config.properties.services"));
  assert(dig(kit, "properties.files"));
});

/** True when `check` does not throw. */
function passes(check: () => unknown): boolean {
  try {
    check();
    return true;
  } catch {
    return false;
  }
}

Deno.test("the JSON Schemas' patterns agree with the validators", () => {
  const pathPattern = new RegExp(dig(kitJsonSchema(), "properties.files.propertyNames.pattern") as string);
  const paths = [
    "a",
    "bin/setup.sh",
    ".env",
    "a/.b",
    "...",
    "a..b",
    "..",
    "../x",
    "a/../b",
    "a/..",
    "/etc",
    "\\x",
  ];
  for (const path of [...paths, "C:/x", "a//b", "a/", "./a", "a/./b", "a\\..\\b", ""]) {
    const valid = passes(() => validateKit({ id: "k", files: { [path]: "" } }, KIT_FILE));
    assertEquals(pathPattern.test(path), valid, `path ${JSON.stringify(path)}`);
  }

  const config = configJsonSchema();
  const timeout = new RegExp(dig(config, "properties.hooks.items.properties.timeout.pattern") as string);
  for (const duration of ["30s", "1m", "1h30m", "500ms", "2", "1.5h", "soon", "1x", "m", "30 s"]) {
    const valid = passes(() => validateConfig({ hooks: [{ on: "*", run: "x", timeout: duration }] }, FILE));
    assertEquals(timeout.test(duration), valid, `duration ${JSON.stringify(duration)}`);
  }

  const on = new RegExp(dig(config, "properties.hooks.items.properties.on.pattern") as string);
  for (const value of ["*", "worktree.*", "before:exec", "Worktree", "worktree*", "before:"]) {
    const valid = passes(() => validateConfig({ hooks: [{ on: value, run: "x" }] }, FILE));
    assertEquals(on.test(value), valid, `on ${JSON.stringify(value)}`);
  }
});

Deno.test("schemas/*.schema.json are the generated schemas (regenerate: deno task schemas)", async () => {
  const files = [["config.schema.json", configJsonSchema()], ["kit.schema.json", kitJsonSchema()]] as const;
  for (const [name, schema] of files) {
    const committed = await Deno.readTextFile(new URL(`../schemas/${name}`, import.meta.url));
    assertEquals(committed, JSON.stringify(schema, null, 2) + "\n", `schemas/${name} is stale`);
  }
});

Deno.test("kit files: a name past 255 bytes a segment, or a path past 1,024, is refused naming it", () => {
  const cases: [string, string][] = [
    ["a".repeat(256), "each name in the path must be at most 255 bytes long, got 256"],
    [`bin/${"é".repeat(128)}`, "each name in the path must be at most 255 bytes long, got 256"],
    [`${"d".repeat(200)}/`.repeat(6) + "f", "must be at most 1024 bytes long, got 1207"],
  ];
  for (const [path, message] of cases) {
    const error = kitRefused({ id: "k", files: { [path]: "x" } });
    assertEquals(error.problems.length, 1, error.message);
    assert(error.problems[0].message.startsWith(message), error.problems[0].message);
    assert(error.message.startsWith(`${KIT_FILE}: files`), error.message);
  }
  // At the limits, and multi-byte names counted in bytes.
  const fits = {
    ["a".repeat(255)]: "x",
    [`bin/${"é".repeat(127)}`]: "x",
    [`${"d".repeat(200)}/`.repeat(5) + "f".repeat(19)]: "x",
  };
  assertEquals(Object.keys(validateKit({ id: "k", files: fits }, KIT_FILE).files!).length, 3);
});

Deno.test("readRepoConfig: a NUL in an env value drops that variable, reported; elsewhere it refuses the file", async () => {
  const repo = await Deno.makeTempDir();
  try {
    await Deno.mkdir(`${repo}/.dock`);
    const file = `${repo}/.dock/config.json`;
    await Deno.writeTextFile(file, '{ "ports": 3, "env": { "A": "1", "B": "x\\u0000", "C": "\\ud800" } }');
    const dropped: ConfigProblem[] = [];
    const config = await readRepoConfig(repo, { onDropped: (problems) => dropped.push(...problems) });
    assertEquals(config, { ports: 3, env: { A: "1" } });
    assertEquals(dropped.map((p) => [p.file, p.field]), [[file, "env.B"], [file, "env.C"]]);
    assert(dropped[0].message.includes("NUL"), dropped[0].message);
    assert(dropped[1].message.includes("unpaired surrogate"), dropped[1].message);
    // Without a listener, or with the NUL in a command, the file is refused naming the field.
    await assertRejects(() => readRepoConfig(repo), ConfigError, `${file}: env.B: must not contain a NUL`);
    await Deno.writeTextFile(
      file,
      '{ "env": { "A": "1" }, "services": [{ "name": "web", "run": "a\\u0000" }] }',
    );
    await assertRejects(
      () => readRepoConfig(repo, { onDropped: () => {} }),
      ConfigError,
      `${file}: services[0].run: must not contain a NUL`,
    );
  } finally {
    await Deno.remove(repo, { recursive: true });
  }
});

Deno.test("a kit or config file with a NUL in a command, an env value or a file's text is refused naming it", () => {
  for (
    const [kit, field] of [
      [{ id: "k", config: { env: { A: "x\0" } } }, "config.env.A"],
      [{ id: "k", config: { services: [{ name: "web", run: "serve\0" }] } }, "config.services[0].run"],
      [{ id: "k", files: { "bin/run": "#!/bin/sh\n\0" } }, 'files["bin/run"]'],
    ] as const
  ) {
    const error = kitRefused(kit);
    assertEquals(error.problems.map((p) => p.field), [field]);
    assertStringIncludes(error.problems[0].message, "NUL");
  }
  assertThrows(
    () => validateConfig({ setup: "make\0", agents: [{ id: "a", command: "\ud800" }] }, "config.json"),
    ConfigError,
    "config.json: setup: must not contain a NUL",
  );
});

Deno.test("mergeConfigs: the effective config shares no object with its layers (it is edited by its users)", () => {
  const repo: DockConfig = { env: { A: "1" }, services: [{ name: "web", run: "serve" }], hooks: [] };
  const local: DockConfig = { env: { B: "2" }, services: [{ name: "db", run: "db" }] };
  const effective = mergeConfigs([repo, null, local]);
  assertEquals(effective, {
    env: { A: "1", B: "2" },
    services: [{ name: "web", run: "serve" }, { name: "db", run: "db" }],
    hooks: [],
  });
  effective.env!.A = "changed";
  effective.services![0].run = "changed";
  effective.hooks!.push({ on: "worktree.created", run: "true" });
  assertEquals(repo, { env: { A: "1" }, services: [{ name: "web", run: "serve" }], hooks: [] });
  assertEquals(local, { env: { B: "2" }, services: [{ name: "db", run: "db" }] });
});
