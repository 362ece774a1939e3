import { assertEquals } from "../../tests/assert.ts";
import { templateProblem } from "./template.ts";
import { toastText } from "./toasts.tsx";

Deno.test("app: a template that no task can come from says why; a working one says nothing", () => {
  assertEquals(templateProblem({ id: "a", agent: "claude", prompt: "Fix {{issue}}" }), null);
  assertEquals(templateProblem({ id: "b", command: "make test" }), null);
  assertEquals(
    templateProblem({ id: "c", command: "make test", prompt: "run it" }),
    "prompt: a first prompt needs an agent: a command takes none",
  );
  assertEquals(
    templateProblem({ id: "d", agent: "claude", command: "make" }),
    "command: give either agent or command, not both",
  );
  assertEquals(
    templateProblem({ id: "e", error: "e.json: variables[0].id: bad" }),
    "e.json: variables[0].id: bad",
  );
});

Deno.test("app: guard, forward and secret events become toasts; others stay in the log", () => {
  const event = (type: string, data: Record<string, unknown>, box?: string) => ({
    id: 1,
    type,
    time: "2026-01-01T00:00:00Z",
    origin: "dockd",
    box,
    data,
  });
  assertEquals(
    toastText(event("guard.acted", {
      stopped: [{ location: "app", worktree: "w", service: "web", rss: 1 }],
      paused: [{ session: "agent-1", rss: 2 }],
    }, "devbox")),
    { text: "Memory guard on devbox: stopped app/w/web; paused agent-1", bad: true },
  );
  assertEquals(
    toastText(event("forward.created", { box: "devbox", local: 3000, remote: 5173 })),
    { text: "Forwarding localhost:3000 to devbox:5173", bad: false },
  );
  const failed = toastText(event("secret.failed", {
    location: "app",
    worktree: "w",
    variable: "TOKEN",
    scheme: "op",
    error: "op is not signed in",
  }, "devbox"));
  assertEquals(failed, {
    text: "Secret TOKEN on devbox (app/w) did not resolve: op is not signed in",
    bad: true,
  });
  assertEquals(toastText(event("session.created", { session: "x" })), null);
});
