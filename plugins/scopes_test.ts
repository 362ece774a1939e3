import { assertEquals } from "../tests/assert.ts";
import { requiredScope } from "./scopes.ts";

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
