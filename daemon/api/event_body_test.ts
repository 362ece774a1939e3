import { BOX_EVENT, isAgentReport } from "../../client/schemas.ts";
import { assert, assertEquals } from "../../tests/assert.ts";
import { agentReport, handChecked, plainAnnounce } from "./event_body.ts";

/**
 * Bodies as a stranger may send them, parsed from JSON as `body()` parses them: every combination of
 * these fields' values, and then some.
 */
function corpus(): unknown[] {
  const types: unknown[] = [
    "bench.load",
    "a",
    "build.finished",
    "x_y-z.a1.b-2",
    "a".repeat(100),
    "a".repeat(101),
    "",
    "Build.finished",
    "1abc",
    "a..b",
    "a.",
    ".a",
    "a b",
    "é.x",
    "agent.started",
    "agent.ready",
    "agent.waiting",
    "agent.finished",
    "agent.other",
    5,
    null,
    ["a"],
    undefined,
  ];
  const origins: unknown[] = [undefined, "cli", "", "o".repeat(64), "o".repeat(65), 7, null, { a: 1 }];
  const datas: unknown[] = [
    undefined,
    {},
    { run: "x", box: 0, seq: 1, t: 1.5 },
    { nested: { deep: [1, 2, { a: null }] } },
    JSON.parse('{"__proto__": {"polluted": true}, "a": 1}'),
    JSON.parse('{"constructor": 5}'),
    null,
    [],
    [1],
    "text",
    0,
    true,
  ];
  const bodies: unknown[] = [];
  for (const type of types) {
    for (const origin of origins) {
      for (const data of datas) {
        const body: Record<string, unknown> = {};
        if (type !== undefined) body.type = type;
        if (origin !== undefined) body.origin = origin;
        if (data !== undefined) body.data = data;
        bodies.push(body);
      }
    }
  }
  bodies.push(
    null,
    [],
    "bench.load",
    42,
    { type: "a", extra: 1 },
    { type: "a", session: "s" },
    { type: "a", time: "2026-01-02T03:04:05Z" },
    JSON.parse('{"type": "a", "__proto__": {"x": 1}}'),
    { type: "agent.started", origin: "hook", data: { path: "/x", agent: "claude", session_id: null } },
  );
  return bodies.map((body) => JSON.parse(JSON.stringify(body)));
}

Deno.test("plainAnnounce accepts exactly the plain announces BOX_EVENT accepts, with the same value", () => {
  let accepted = 0;
  let declinedProto = 0;
  for (const body of corpus()) {
    const fast = plainAnnounce(body);
    const parsed = BOX_EVENT.safeParse(body);
    const plain = parsed.success && !isAgentReport(parsed.data);
    const label = JSON.stringify(body);
    if (fast !== undefined) {
      accepted++;
      assert(plain, `the hand check took what the schema refuses (or a report): ${label}`);
      assertEquals(fast, parsed.data, `a different value for ${label}`);
      continue;
    }
    // Declined: the schema decides. It may only accept what the hand check leaves to it on purpose, a
    // `__proto__` key inside data, which the schema drops from its copy.
    const data = (body as { data?: unknown } | null)?.data;
    const protoInData = typeof data === "object" && data !== null && Object.hasOwn(data, "__proto__");
    if (plain && protoInData) declinedProto++;
    else assert(!plain, `the hand check declined a plain announce the schema accepts: ${label}`);
  }
  // The corpus holds both sides: the comparison above is not vacuous.
  assert(accepted > 50, `only ${accepted} accepted`);
  assert(declinedProto > 0);
});

Deno.test("plainAnnounce leaves agent reports, unknown fields and bad values to the schema", () => {
  assertEquals(plainAnnounce({ type: "bench.load", data: { seq: 1 } }), {
    type: "bench.load",
    data: { seq: 1 },
  });
  assertEquals(
    plainAnnounce({ type: "agent.ready", origin: "h", data: { path: "/", agent: "a", session_id: null } }),
    undefined,
  );
  assertEquals(plainAnnounce({ type: "bench.load", dataa: {} }), undefined);
  assertEquals(plainAnnounce({ type: "Bench" }), undefined);
  assertEquals(plainAnnounce({ type: "a", data: [] }), undefined);
});

/** Agent reports as a stranger may send them: every field at and past its limit, missing, mistyped. */
function reportCorpus(): unknown[] {
  const base = {
    type: "agent.finished",
    origin: "claude",
    data: { path: "/home/u/app", agent: "claude", session_id: "abc" },
  };
  const variants: Record<string, unknown>[] = [base];
  const set = (path: string[], value: unknown) => {
    const copy = JSON.parse(JSON.stringify(base));
    let at = copy;
    for (const key of path.slice(0, -1)) at = at[key];
    if (value === undefined) delete at[path[path.length - 1]];
    else at[path[path.length - 1]] = value;
    variants.push(copy);
  };
  for (
    const type of ["agent.started", "agent.ready", "agent.waiting", "agent.other", "bench.load", 5, null]
  ) {
    set(["type"], type);
  }
  for (const origin of [undefined, "", "o".repeat(64), "o".repeat(65), 7, null]) set(["origin"], origin);
  for (const data of [undefined, null, [], "x", {}, { path: "/", agent: "a" }]) set(["data"], data);
  for (const path of [undefined, "", "p".repeat(4096), "p".repeat(4097), 1, null]) {
    set(["data", "path"], path);
  }
  for (const agent of [undefined, "", "a".repeat(64), "a".repeat(65), false]) set(["data", "agent"], agent);
  for (const id of [undefined, null, "", "s".repeat(256), "s".repeat(257), 3]) {
    set(["data", "session_id"], id);
  }
  for (
    const hook of [
      "Stop",
      "agent-turn-complete",
      "a.b_c",
      "1Stop",
      "Sto p",
      "",
      "h".repeat(64),
      "h".repeat(65),
      null,
      4,
    ]
  ) {
    set(["data", "hook"], hook);
  }
  for (const reason of ["permission", "question", "input", "other", "", null]) {
    set(["data", "reason"], reason);
  }
  for (const session of ["s1", "", "s".repeat(64), "s".repeat(65), null, 1]) set(["session"], session);
  for (
    const time of [
      "2026-01-02T03:04:05Z",
      "2026-01-02T03:04:05.123456789+02:00",
      "2026-01-02T03:04:05.1234567890Z",
      "2026-01-02 03:04:05Z",
      "garbage-time",
      "",
      null,
      12,
    ]
  ) set(["time"], time);
  set(["extra"], 1);
  set(["data", "extra"], 1);
  variants.push(
    {
      ...base,
      data: { ...base.data, hook: "Stop", reason: "input" },
      session: "s",
      time: "2026-01-02T03:04:05Z",
    },
    JSON.parse(
      '{"type":"agent.ready","origin":"o","data":{"path":"/","agent":"a","session_id":null},"__proto__":{}}',
    ),
    JSON.parse(
      '{"type":"agent.ready","origin":"o","data":{"path":"/","agent":"a","session_id":null,"__proto__":{}}}',
    ),
  );
  return variants.map((body) => JSON.parse(JSON.stringify(body)));
}

Deno.test("agentReport accepts exactly the agent reports BOX_EVENT accepts, with the same value", () => {
  let accepted = 0;
  let refused = 0;
  const bodies = [...reportCorpus(), ...corpus()];
  for (const body of bodies) {
    const fast = agentReport(body);
    const parsed = BOX_EVENT.safeParse(body);
    const report = parsed.success && isAgentReport(parsed.data);
    const label = JSON.stringify(body);
    if (fast !== undefined) {
      accepted++;
      assert(report, `the hand check took what the schema refuses (or a plain announce): ${label}`);
      assertEquals(fast, parsed.data, `a different value for ${label}`);
      continue;
    }
    refused++;
    // Declined: the schema decides, and it may accept no report the hand check declined, except one with
    // an own `__proto__` key, which the schema drops from its copy.
    const proto = (value: unknown) =>
      typeof value === "object" && value !== null && Object.hasOwn(value, "__proto__");
    if (report && (proto(body) || proto((body as { data?: unknown }).data))) continue;
    assert(!report, `the hand check declined an agent report the schema accepts: ${label}`);
  }
  // Both sides are in the corpus: the comparison above is not vacuous.
  assert(accepted > 20, `only ${accepted} accepted`);
  assert(refused > 50, `only ${refused} refused`);
});

Deno.test("handChecked, what POST events uses, gives each body's own shape's answer, by its type", () => {
  let reports = 0;
  let plain = 0;
  for (const body of [...corpus(), ...reportCorpus()]) {
    const checked = handChecked(body);
    assertEquals(checked, plainAnnounce(body) ?? agentReport(body), JSON.stringify(body));
    if (checked && isAgentReport(checked)) reports++;
    else if (checked) plain++;
  }
  assert(reports > 20 && plain > 50, `reports ${reports}, plain announces ${plain}`);
});
