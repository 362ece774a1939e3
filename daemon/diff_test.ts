import { assertEquals } from "../tests/assert.ts";
import { pagePatches, parsePatch, unquote } from "./diff.ts";

// Captured from git 2.39 (`git -c core.quotePath=false diff -M`), with a name git must quote.
const PATCH = `diff --git a/a b/c.txt b/a b/c.txt
index 5626abf..f719efd 100644
--- a/a b/c.txt
+++ b/a b/c.txt
@@ -1 +1,2 @@
-one
+uno
+dos
diff --git "a/tab\\there" "b/tab\\there"
new file mode 100644
index 0000000..e69de29
diff --git a/old.txt b/new.txt
similarity 100%
rename from old.txt
rename to new.txt
diff --git a/logo.bin b/logo.bin
deleted file mode 100644
index 8b1a994..0000000
Binary files a/logo.bin and /dev/null differ
`;

Deno.test("parsePatch: one chunk per file with its path, status, counts", () => {
  const chunks = parsePatch(PATCH);
  assertEquals(chunks.map((c) => c.file), [
    { path: "a b/c.txt", status: "modified", additions: 2, deletions: 1, binary: false },
    { path: "tab\there", status: "added", additions: 0, deletions: 0, binary: false },
    { path: "new.txt", old_path: "old.txt", status: "renamed", additions: 0, deletions: 0, binary: false },
    { path: "logo.bin", status: "deleted", additions: 0, deletions: 0, binary: true },
  ]);
  assertEquals(chunks.map((c) => c.patch).join(""), PATCH);
  assertEquals(parsePatch(""), []);
});

Deno.test("unquote: C escapes and octal UTF-8 bytes", () => {
  assertEquals(unquote('"caf\\303\\251 \\"x\\"\\\\"'), 'café "x"\\');
  assertEquals(unquote("plain name"), "plain name");
});

Deno.test("pagePatches: whole files within the bytes, a lone large file cut at a line", () => {
  const chunks = parsePatch(PATCH);
  const sizes = chunks.map((c) => new TextEncoder().encode(c.patch).length);
  const page = pagePatches(chunks, 0, sizes[0] + sizes[1]);
  assertEquals([page.patches.map((p) => p.path), page.next_offset], [["a b/c.txt", "tab\there"], 2]);
  assertEquals(pagePatches(chunks, 2, 10_000).next_offset, null);
  const cut = pagePatches(chunks, 0, 60);
  assertEquals([cut.patches.length, cut.patches[0].truncated, cut.next_offset], [1, true, 1]);
  assertEquals(cut.patches[0].patch, "diff --git a/a b/c.txt b/a b/c.txt\n");
});
