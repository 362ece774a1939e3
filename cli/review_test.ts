import { assertEquals, assertStringIncludes } from "../tests/assert.ts";
import type { WorktreeCommits, WorktreeDiff } from "../client/wire.ts";
import { diffText } from "./review.ts";

const COMMITS: WorktreeCommits = {
  location: "app",
  worktree: "topic",
  branch: "topic",
  base: "main",
  ahead: [{
    hash: "0123456789abcdef",
    author: "A",
    email: "a@x",
    time: "2026-01-01T00:00:00Z",
    subject: "edit",
  }],
  behind: 0,
  upstream: null,
  ahead_upstream: null,
  behind_upstream: null,
};
const DIFF: WorktreeDiff = {
  location: "app",
  worktree: "topic",
  base: "main",
  from: "abc",
  files: [{ path: "a.txt", status: "modified", additions: 1, deletions: 1, binary: false }],
  additions: 1,
  deletions: 1,
  offset: 0,
  patches: [{
    path: "a.txt",
    patch: "diff --git a/a.txt b/a.txt\n@@ -1 +1 @@\n-old\n+new\n",
    truncated: false,
  }],
  next_offset: null,
  untracked: ["b.txt"],
};

Deno.test("dock diff: coloured lines for a terminal, the same text plain for a pipe", () => {
  const colour = diffText(COMMITS, DIFF, { colour: true });
  assertStringIncludes(colour, "\x1b[32m+new\x1b[0m");
  assertStringIncludes(colour, "\x1b[31m-old\x1b[0m");
  assertStringIncludes(colour, "\x1b[36m@@ -1 +1 @@\x1b[0m");
  const plain = diffText(COMMITS, DIFF, { colour: false });
  // deno-lint-ignore no-control-regex
  assertEquals(colour.replace(/\x1b\[[0-9;]*m/g, ""), plain);
  assertStringIncludes(plain, "topic on topic: 1 ahead of main, 0 behind; no upstream\n");
  assertStringIncludes(plain, "  0123456789 edit\n");
  assertStringIncludes(plain, "1 untracked:\n  b.txt\n");
  assertEquals(diffText(COMMITS, DIFF, { colour: false, stat: true }).includes("+new"), false);
});
