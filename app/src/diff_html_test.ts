import { assertEquals } from "../../tests/assert.ts";
import { CHUNK_LINES, escapeHtml, highlightHtml, languageOf, patchHtml } from "./diff_html.ts";

Deno.test("patchHtml: header dropped, one line per kind, signs and tokens", () => {
  const patch = [
    "diff --git a/x.ts b/x.ts",
    "--- a/x.ts",
    "+++ b/x.ts",
    "@@ -1,2 +1,2 @@",
    " let a = 1;",
    '-return "old";',
    "+return 'new'; // why",
  ].join("\n") + "\n";
  assertEquals(
    patchHtml("src/x.ts", patch),
    '<div class="chunk"><div class="line hunk">@@ -1,2 +1,2 @@</div>' +
      '<div class="line ctx"><span class="sign"> </span><span class="tok-k">let</span> a = ' +
      '<span class="tok-n">1</span>;</div>' +
      '<div class="line del"><span class="sign">-</span><span class="tok-k">return</span> ' +
      '<span class="tok-s">&quot;old&quot;</span>;</div>' +
      '<div class="line add"><span class="sign">+</span><span class="tok-k">return</span> ' +
      '<span class="tok-s">&#39;new&#39;</span>; <span class="tok-c">// why</span></div></div>',
  );
});

Deno.test("patchHtml: markup in a diff stays text, in code, strings, comments and unknown files", () => {
  const hostile = '+<img src=x onerror="alert(1)"> "<script>" // </div><b>';
  for (const path of ["a.ts", "a.py", "README"]) {
    const html = patchHtml(path, `@@ -0,0 +1 @@\n${hostile}\n`);
    assertEquals(/<(?!\/?(div|span)\b)/.test(html), false, html);
    assertEquals(html.match(/<div/g)?.length, 3);
    assertEquals(html.match(/<\/div>/g)?.length, 3);
  }
  assertEquals(
    escapeHtml(`<a href="x" title='y'>&</a>`),
    "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;",
  );
});

Deno.test("highlightHtml: languages by extension; a very long line stays plain", () => {
  assertEquals(languageOf("a/b.TSX"), "c");
  assertEquals(languageOf("run.sh"), "hash");
  assertEquals(languageOf("Makefile"), "none");
  assertEquals(
    highlightHtml("x = 1 # note", "hash"),
    'x = <span class="tok-n">1</span> <span class="tok-c"># note</span>',
  );
  assertEquals(highlightHtml("return 1", "none"), "return 1");
  const long = "return " + "x".repeat(2001);
  assertEquals(highlightHtml(long, "c"), long);
});

Deno.test("patchHtml: lines in chunks of CHUNK_LINES, every one closed", () => {
  const lines = Array.from({ length: 2 * CHUNK_LINES + 1 }, (_, i) => `+line ${i}`);
  const html = patchHtml("notes.txt", `@@ -0,0 +1,${lines.length} @@\n${lines.join("\n")}\n`);
  assertEquals(html.match(/<div class="chunk">/g)?.length, 3);
  assertEquals(html.match(/<div/g)?.length, html.match(/<\/div>/g)?.length);
  assertEquals(html.match(/class="line add"/g)?.length, lines.length);
  assertEquals(patchHtml("a.ts", ""), "");
});
