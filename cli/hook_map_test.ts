import { assert, assertEquals } from "../tests/assert.ts";
import { mapHook } from "./hook_map.ts";

const FIXTURES = new URL("../tests/fixtures/hooks/", import.meta.url);
const ENV = { cwd: "/fallback/dir" };
const CLAUDE_SESSION = "7b1d3f5e-2c4a-4e8b-9f60-1a2b3c4d5e6f";
const WORKTREE = "/home/dev/work/shop/fix-login";

function fixture(name: string): Record<string, unknown> {
  return JSON.parse(Deno.readTextFileSync(new URL(`${name}.json`, FIXTURES)));
}

// Every fixture marks its private text with SECRET-; none of it may reach the event.
function assertNoText(result: unknown): void {
  const text = JSON.stringify(result);
  assert(!text.includes("SECRET-"), `private text leaked: ${text}`);
  assert(!text.includes("transcript"), `transcript path leaked: ${text}`);
}

Deno.test("mapHook maps Claude's four installed hooks", () => {
  const cases: [string, string, string | null, Record<string, string>][] = [
    ["SessionStart", "claude_session_start", "agent.ready", {}],
    ["UserPromptSubmit", "claude_user_prompt_submit", "agent.started", {}],
    ["Notification", "claude_notification_permission", "agent.waiting", { reason: "permission" }],
    ["Stop", "claude_stop", "agent.finished", {}],
  ];
  for (const [event, name, type, reason] of cases) {
    const result = mapHook("claude", event, fixture(name), ENV);
    assertEquals(result, {
      type: type as "agent.ready",
      data: { path: WORKTREE, agent: "claude", session_id: CLAUDE_SESSION, hook: event, ...reason },
    }, event);
    assertNoText(result);
  }
});

Deno.test("mapHook drops Claude's prompt, message and last assistant message", () => {
  for (const name of ["claude_user_prompt_submit", "claude_notification_permission", "claude_stop"]) {
    const payload = fixture(name);
    const result = mapHook("claude", String(payload.hook_event_name), payload, ENV);
    assert(result);
    const reason = result.type === "agent.waiting" ? ["reason"] : [];
    assertEquals(Object.keys(result.data).sort(), ["agent", "hook", "path", ...reason, "session_id"]);
    assertNoText(result);
  }
});

Deno.test("mapHook matches event names case-insensitively and in kebab case", () => {
  const payload = fixture("claude_stop");
  for (const event of ["stop", "STOP", "Stop"]) {
    assertEquals(mapHook("claude", event, payload, ENV)?.type, "agent.finished");
  }
  const start = fixture("claude_session_start");
  assertEquals(mapHook("claude", "session-start", start, ENV)?.type, "agent.ready");
  assertEquals(mapHook("Claude", "user_prompt_submit", start, ENV)?.type, "agent.started");
});

Deno.test("mapHook ignores Claude notifications that do not need the human", () => {
  assertEquals(mapHook("claude", "Notification", fixture("claude_notification_idle"), ENV), null);
  const base = fixture("claude_notification_idle");
  assertEquals(mapHook("claude", "Notification", { ...base, notification_type: "auth_success" }, ENV), null);
  const question = mapHook(
    "claude",
    "Notification",
    { ...base, notification_type: "elicitation_dialog" },
    ENV,
  );
  assertEquals([question?.type, question?.data.reason], ["agent.waiting", "question"]);
  const asked = mapHook("claude", "PermissionRequest", base, ENV);
  assertEquals([asked?.type, asked?.data.reason], ["agent.waiting", "permission"]);
  // Older versions sent no notification_type: the message classifies, and is still not kept.
  const old = { ...base, notification_type: undefined, message: "Claude needs your permission to use Bash" };
  const result = mapHook("claude", "Notification", old, ENV);
  assertEquals([result?.type, result?.data.reason], ["agent.waiting", "permission"]);
  assert(!JSON.stringify(result).includes("needs your"));
  // An event name that is not an identifier is not kept either.
  assertEquals(mapHook("claude", "stop ", fixture("claude_stop"), ENV)?.data.hook, undefined);
});

Deno.test("mapHook ignores Claude events that say nothing about the turn", () => {
  const payload = fixture("claude_stop");
  for (const event of ["SessionEnd", "PreToolUse", "PostToolUse", "SubagentStop", "PreCompact", "bogus"]) {
    assertEquals(mapHook("claude", event, payload, ENV), null, event);
  }
});

Deno.test("mapHook maps Cursor's stop with the workspace root and conversation id", () => {
  const result = mapHook("cursor", "stop", fixture("cursor_stop"), ENV);
  assertEquals(result, {
    type: "agent.finished",
    data: {
      path: WORKTREE,
      agent: "cursor",
      session_id: "0f9e8d7c-6b5a-4321-8fed-cba987654321",
      hook: "stop",
    },
  });
  assertNoText(result);
  assert(!JSON.stringify(result).includes("dev@example.com"));
  for (const status of ["aborted", "error"]) {
    assertEquals(
      mapHook("cursor", "stop", { ...fixture("cursor_stop"), status }, ENV)?.type,
      "agent.finished",
    );
  }
  assertEquals(mapHook("cursor", "beforeSubmitPrompt", { prompt: "SECRET-x" }, ENV)?.type, "agent.started");
  assertEquals(mapHook("cursor", "sessionStart", {}, ENV)?.type, "agent.ready");
  assertEquals(mapHook("cursor", "afterAgentResponse", fixture("cursor_stop"), ENV), null);
});

Deno.test("mapHook maps Codex notify and its Claude-style hooks", () => {
  const result = mapHook("codex", "notify", fixture("codex_notify"), ENV);
  assertEquals(result, {
    type: "agent.finished",
    data: {
      path: WORKTREE,
      agent: "codex",
      session_id: "019a7c2e-5b1d-7f30-9c8e-2d4f6a8b0c1e",
      hook: "notify",
    },
  });
  assertNoText(result);
  assertEquals(
    mapHook("codex", "notify", { ...fixture("codex_notify"), type: "approval-requested" }, ENV),
    null,
  );
  const hook = { session_id: "s-1", cwd: WORKTREE, hook_event_name: "UserPromptSubmit", prompt: "SECRET-p" };
  const started = mapHook("codex", "UserPromptSubmit", hook, ENV);
  assertEquals(started?.type, "agent.started");
  assertEquals(started?.data.session_id, "s-1");
  assertNoText(started);
  assertEquals(mapHook("codex", "SessionStart", hook, ENV)?.type, "agent.ready");
  assertEquals(mapHook("codex", "Stop", hook, ENV)?.type, "agent.finished");
  // Codex 0.169's approval prompt and its Esc mid-turn (hooks.json, installed by `integrations install`).
  assertEquals(mapHook("codex", "PermissionRequest", hook, ENV)?.data.reason, "permission");
  assertEquals(mapHook("codex", "Interrupt", hook, ENV)?.type, "agent.waiting");
  assertEquals(mapHook("codex", "Interrupt", hook, ENV)?.data.reason, "input");
});

Deno.test("mapHook maps Gemini's agent loop", () => {
  const payload = {
    session_id: "g-1",
    transcript_path: "/home/dev/.gemini/tmp/x/chats/session.json",
    cwd: WORKTREE,
    hook_event_name: "AfterAgent",
    timestamp: "2026-11-22T10:00:00.000Z",
    prompt: "SECRET-prompt",
    prompt_response: "SECRET-response",
  };
  const result = mapHook("gemini", "AfterAgent", payload, ENV);
  assertEquals(result, {
    type: "agent.finished",
    data: { path: WORKTREE, agent: "gemini", session_id: "g-1", hook: "AfterAgent" },
  });
  assertNoText(result);
  assertEquals(mapHook("gemini", "BeforeAgent", payload, ENV)?.type, "agent.started");
  assertEquals(mapHook("gemini", "SessionStart", payload, ENV)?.type, "agent.ready");
  assertEquals(mapHook("gemini", "Notification", payload, ENV)?.data.reason, "input");
  const tool = { ...payload, notification_type: "ToolPermission" };
  assertEquals(mapHook("gemini", "Notification", tool, ENV)?.data.reason, "permission");
  assertEquals(mapHook("gemini", "BeforeTool", payload, ENV), null);
});

Deno.test("mapHook maps opencode bus events a plugin forwards", () => {
  const idle = { type: "session.idle", properties: { sessionID: "ses_01JX" } };
  assertEquals(mapHook("opencode", "session.idle", idle, ENV), {
    type: "agent.finished",
    data: { path: ENV.cwd, agent: "opencode", session_id: "ses_01JX", hook: "session.idle" },
  });
  const created = {
    type: "session.created",
    properties: { info: { id: "ses_01JX", directory: WORKTREE, title: "SECRET-title" } },
  };
  const ready = mapHook("opencode", "session.created", created, ENV);
  assertEquals(ready?.type, "agent.ready");
  assertEquals(ready?.data.path, WORKTREE);
  assertNoText(ready);
  assertEquals(mapHook("opencode", "session.updated", idle, ENV), null);
});

Deno.test("mapHook falls back to the caller's directory and tolerates any payload", () => {
  for (
    const payload of [undefined, null, "text", 42, [], {}, { cwd: 3, session_id: {} }, { cwd: "relative" }]
  ) {
    assertEquals(mapHook("claude", "Stop", payload, ENV), {
      type: "agent.finished",
      data: { path: ENV.cwd, agent: "claude", session_id: null, hook: "Stop" },
    });
  }
  assertEquals(mapHook("claude", "Stop", { session_id: "x".repeat(1000) }, ENV)?.data.session_id, null);
});

Deno.test("mapHook returns null for tools it does not know", () => {
  assertEquals(mapHook("vim", "Stop", fixture("claude_stop"), ENV), null);
  assertEquals(mapHook("", "", {}, ENV), null);
  assertEquals(mapHook("__proto__", "constructor", {}, ENV), null);
});

Deno.test("mapHook reads event names as its patterns did: separators and white space dropped, the name kept when plain", () => {
  const payload = { session_id: "s", cwd: "/w" };
  const names = [
    "Stop",
    "STOP",
    "s-t_o.p",
    " stop\t",
    "st\u00a0op", // white space beyond ASCII
    "st\u2003op",
    "stöp",
    "Stop\n",
    "a".repeat(64),
    "Stop" + "-".repeat(60), // 64 characters: kept as the hook's name
    "Stop" + "-".repeat(61), // 65: mapped, the name not kept
    "9stop",
    "",
    "Stop!",
    "user-prompt-submit",
    "UserPromptSubmit",
  ];
  for (const name of names) {
    const normalized = name.toLowerCase().replace(/[-_.\s]/g, "");
    const expected = normalized === "stop"
      ? "agent.finished"
      : normalized === "userpromptsubmit"
      ? "agent.started"
      : null;
    const mapped = mapHook("claude", name, payload, { cwd: "/" });
    assertEquals(mapped?.type ?? null, expected, JSON.stringify(name));
    if (mapped) {
      assertEquals(
        mapped.data.hook,
        /^[A-Za-z][A-Za-z0-9._-]{0,63}$/.test(name) ? name : undefined,
        JSON.stringify(name),
      );
    }
  }
});
