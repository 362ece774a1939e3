import { assertEquals } from "../tests/assert.ts";
import {
  classifyCall,
  highestClass,
  PLUGIN_SCOPES,
  requiredScope,
  ruleClasses,
  SCOPE_CLASSES,
  scopeClasses,
} from "./scopes.ts";

Deno.test("each box route a plugin may call needs its scope; the rest is closed", () => {
  const cases: [string, string, string | null][] = [
    ["GET", "sessions", "sessions:read"],
    ["GET", "sessions/s1/screen", "sessions:read"],
    ["POST", "sessions/s1/send", "sessions:send"],
    ["POST", "sessions", "sessions:write"],
    ["DELETE", "sessions/s1", "sessions:write"],
    ["POST", "tasks", "sessions:write"],
    ["POST", "exec", "exec"],
    ["GET", "locations/app/worktrees/feat/services", "services:read"],
    ["POST", "locations/app/worktrees/feat/services/web/restart", "services:write"],
    ["POST", "locations/app/worktrees", "locations:write"],
    ["GET", "locations/app/config", "config:read"],
    ["PUT", "hooks", "config:write"],
    ["GET", "info", "system:read"],
    ["POST", "plugins/x/enable", null],
    ["GET", "plugins", null],
    ["GET", "events", null],
    ["POST", "pair/code", null],
    ["GET", "sessions/../exec", null],
    ["PUT", "sessions/s1/send", null],
  ];
  for (const [method, path, scope] of cases) {
    assertEquals(requiredScope("box", method, path), scope, `${method} ${path}`);
  }
});

Deno.test("on the laptop, a relayed call needs what it needs on the box", () => {
  assertEquals(requiredScope("laptop", "POST", "boxes/devbox/api/exec"), "exec");
  assertEquals(requiredScope("laptop", "GET", "boxes/devbox/api/plugins"), null);
  assertEquals(requiredScope("laptop", "GET", "queue"), "queue:read");
  assertEquals(requiredScope("laptop", "POST", "queue/q1/send"), "queue:write");
  assertEquals(requiredScope("laptop", "GET", "status"), "boxes:read");
  assertEquals(requiredScope("laptop", "PUT", "app/layout"), null);
  assertEquals(requiredScope("laptop", "POST", "boxes/pair"), null);
});

Deno.test("a scope is classed as the most dangerous of its routes, and every scope is classed", () => {
  for (const scope of PLUGIN_SCOPES) {
    const rules = ruleClasses().filter((rule) => rule.scope === scope).map((rule) => rule.leads);
    // events:emit opens no route: ctx.emit announces an event, which only the person's hooks and flows act on.
    const expected = scope === "events:emit" ? "write" : highestClass(rules);
    assertEquals(SCOPE_CLASSES[scope], expected, scope);
  }
});

Deno.test("a narrow-looking write that can start a program is classed runs commands", () => {
  const cases: [string, string, string, string][] = [
    ["PUT", "locations/app/scripts", "locations:write", "runs commands"],
    ["PUT", "locations/app/kit", "locations:write", "runs commands"],
    ["POST", "locations/clone", "locations:write", "runs commands"],
    ["POST", "locations/app/worktrees", "locations:write", "runs commands"],
    ["DELETE", "locations/app/worktrees/feat", "locations:write", "runs commands"],
    ["POST", "locations/app/worktrees/feat/resume", "locations:write", "runs commands"],
    ["POST", "locations/app/worktrees/feat/pause", "locations:write", "write"],
    ["DELETE", "locations/app", "locations:write", "write"],
    ["DELETE", "locations/app/kit", "locations:write", "write"],
    ["PUT", "hooks", "config:write", "runs commands"],
    ["POST", "locations/app/worktrees/feat/services/web/stop", "services:write", "write"],
    ["POST", "locations/app/worktrees/feat/services/web/start", "services:write", "runs commands"],
    ["POST", "sessions/s1/send", "sessions:send", "runs commands"],
    ["DELETE", "sessions/s1", "sessions:write", "write"],
    ["GET", "locations/app", "locations:read", "read"],
  ];
  for (const [method, path, scope, leads] of cases) {
    assertEquals(classifyCall("box", method, path), { scope, leads }, `${method} ${path}`);
  }
  assertEquals(classifyCall("laptop", "PUT", "boxes/devbox/api/locations/app/scripts"), {
    scope: "locations:write",
    leads: "runs commands",
  });
  assertEquals(classifyCall("laptop", "DELETE", "queue/q1"), { scope: "queue:write", leads: "write" });
  assertEquals(scopeClasses(["exec", "sessions:read", "nonsense"]), {
    exec: "runs commands",
    "sessions:read": "read",
  });
});
