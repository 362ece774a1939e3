import { assertEquals } from "../../tests/assert.ts";
import { ago, byNeed, type NeedItem, plainError, previewUrl, reasonText } from "./outage.ts";

Deno.test("Needs you orders permission, question, input, finished, then the longest waiting first", () => {
  const items: (NeedItem & { name: string })[] = [
    { name: "done-old", agent_state: "finished", reason: null, since: 1 },
    { name: "input", agent_state: "waiting", reason: "input", since: 5 },
    { name: "perm-new", agent_state: "waiting", reason: "permission", since: 9 },
    { name: "untold", agent_state: "waiting", reason: null, since: 2 },
    { name: "question", agent_state: "waiting", reason: "question", since: 3 },
    { name: "perm-old", agent_state: "waiting", reason: "permission", since: 4 },
  ];
  assertEquals(items.sort(byNeed).map((i) => i.name), [
    "perm-old",
    "perm-new",
    "question",
    "untold",
    "input",
    "done-old",
  ]);
});

Deno.test("ago says seconds, minutes, hours and days, never a negative", () => {
  const now = 1_000_000_000;
  assertEquals(
    [0, 12_000, 180_000, 3_900_000, 7_200_000, 3 * 86_400_000, -5_000].map((d) => ago(now - d, now)),
    ["0 s", "12 s", "3 min", "1 h 5 min", "2 h", "3 d", "0 s"],
  );
});

Deno.test("a network failure is told as a sentence; the API's own messages are kept", () => {
  const refused = plainError(
    "cannot reach dock: error sending request for url (http://x/v1): client error (Connect): tcp connect " +
      "error: Connection refused (os error 111)",
  );
  assertEquals(refused, "The box is not answering: nothing listens at its address (is dock running there?).");
  assertEquals(
    plainError("fetch failed", "the dock agent"),
    "The dock agent cannot be reached right now; dock retries by itself.",
  );
  assertEquals(plainError("session 's1' not found"), "session 's1' not found");
  for (const raw of ["os error 110", "No route to host (os error 113)", "Connection reset by peer"]) {
    const said = plainError(raw);
    assertEquals([said.includes("os error"), said.startsWith("The box")], [false, true], raw);
  }
});

Deno.test("a preview goes through the laptop's proxy under the laptop's name for the box", () => {
  assertEquals(
    previewUrl({ worktree: "feat", location: "app", box: "local", path: "/docs/" }, 1377),
    "http://feat.app.local.localhost:1377/docs/",
  );
  assertEquals(previewUrl({ worktree: "w", location: "l", box: "b" }, 4000), "http://w.l.b.localhost:4000/");
});

Deno.test("each waiting reason reads as a sentence", () => {
  assertEquals(
    [reasonText("permission"), reasonText("question"), reasonText("input"), reasonText(null)],
    ["asks permission to use a tool", "asks you a question", "waits for your next prompt", "waits for you"],
  );
});
