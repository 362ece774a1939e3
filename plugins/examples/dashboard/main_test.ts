import assert from "node:assert/strict";
import { callFetch, fakeContext } from "@dock/plugin/testing";
import type { Session } from "@dock/plugin";
import plugin from "./main.ts";

function session(name: string, state: Session["agent_state"], extra: Partial<Session> = {}): Session {
  return {
    name,
    agent: "claude",
    agent_state: state,
    state_time: null,
    reason: null,
    exited: false,
    exit_code: null,
    location: "web",
    worktree: "main",
    path: "/srv/web",
    command: "claude",
    created: "2026-01-01T00:00:00.000Z",
    ...extra,
  };
}

const SESSIONS = [
  session("b-busy", "running"),
  session("a-<script>", "waiting"),
  session("gone", "idle", { exited: true, exit_code: 0 }),
];

Deno.test("dashboard lists live sessions, waiting first, as JSON and as an escaped page", async () => {
  const ctx = fakeContext({ scopes: ["sessions:read"], api: { "GET sessions": SESSIONS } });
  const json = await (await callFetch(plugin, "/sessions", {}, ctx)).json();
  assert.deepEqual(json.map((r: { session: string }) => r.session), ["a-<script>", "b-busy"]);
  const answer = await callFetch(plugin, "/", {}, ctx);
  assert.equal(answer.headers.get("content-type"), "text/html; charset=utf-8");
  const html = await answer.text();
  assert.ok(html.includes("<td>a-&lt;script&gt;</td>"), html);
  assert.ok(!html.includes("<script>"), "a session's name never becomes markup");
  assert.deepEqual(ctx.calls.map((c) => `${c.method} ${c.path} ${c.status}`), [
    "GET sessions 200",
    "GET sessions 200",
  ]);
});

Deno.test("dashboard without its sessions:read scope is refused as dock refuses it", async () => {
  const ctx = fakeContext({ scopes: [], api: { "GET sessions": SESSIONS } });
  await assert.rejects(
    () => callFetch(plugin, "/", {}, ctx),
    (error: Error & { status?: number }) => error.status === 403,
  );
  assert.equal((await callFetch(plugin, "/", { method: "POST" }, ctx)).status, 405);
});
