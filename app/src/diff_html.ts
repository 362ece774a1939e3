/**
 * A file's patch as HTML for the review (app/src/review.tsx): one `div.line` per line (`hunk`, `add`,
 * `del`, `ctx`), a `span.sign`, and a light syntax colour (`tok-k` keyword, `tok-s` string, `tok-n`
 * number, `tok-c` comment), in chunks the browser lays out only on screen. Built as one string and set as
 * the patch body's HTML, not as Preact elements (over 15,000 for the 2,000 lines of the bench). Click to a
 * 2,000-line diff drawn (bench/app_review.ts, shared machine): 380–440 ms as elements, ~380 ms as one
 * string, 185–245 ms in chunks (style and layout went from ~270 ms to 20–40 ms). Every character of
 * the patch is escaped: a diff is text from the box, never markup.
 *
 * @module
 */

/** Which comment style a file's name suggests (the tokenizer knows strings, numbers, keywords, comments). */
export type Language = "c" | "hash" | "none";

/** The language of a file by its name's extension. */
export function languageOf(path: string): Language {
  const ext = path.slice(path.lastIndexOf(".") + 1).toLowerCase();
  if (C_LIKE.has(ext)) return "c";
  if (HASH.has(ext)) return "hash";
  return "none";
}

const C_LIKE = new Set([
  "ts",
  "tsx",
  "js",
  "jsx",
  "mjs",
  "go",
  "rs",
  "c",
  "h",
  "cc",
  "cpp",
  "java",
  "kt",
  "swift",
  "css",
  "json",
]);
const HASH = new Set(["py", "sh", "rb", "yml", "yaml", "toml", "pl"]);

const KEYWORDS = new Set(
  ("as async await break case catch class const continue def default defer do elif else enum export extends " +
    "false fn for from func function go if impl import in interface let match mod new nil none null package " +
    "pub return self static struct super switch this throw true try type undefined use var while with yield")
    .split(" "),
);

const STRING = "\"(?:[^\"\\\\]|\\\\.)*\"?|'(?:[^'\\\\]|\\\\.)*'?|`(?:[^`\\\\]|\\\\.)*`?";
const TOKENS: Record<Exclude<Language, "none">, RegExp> = {
  c: new RegExp(`(\\/\\/.*|\\/\\*.*?(?:\\*\\/|$))|(${STRING})|(\\b\\d[\\w.]*\\b)|([A-Za-z_]\\w*)`, "g"),
  hash: new RegExp(`(#.*)|(${STRING})|(\\b\\d[\\w.]*\\b)|([A-Za-z_]\\w*)`, "g"),
};

const ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

/** Text made safe to place in HTML, as content or in a quoted attribute. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => ESCAPES[c]);
}

/** One line's code, escaped, with its tokens in coloured spans (a line over 2,000 characters stays plain). */
export function highlightHtml(text: string, language: Language): string {
  if (language === "none" || text.length > 2000) return escapeHtml(text);
  const pattern = TOKENS[language];
  let out = "";
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    const [token, isComment, isString, isNumber, word] = match;
    const kind = isComment
      ? "tok-c"
      : isString
      ? "tok-s"
      : isNumber
      ? "tok-n"
      : word && KEYWORDS.has(word)
      ? "tok-k"
      : null;
    if (!kind) continue;
    if (match.index > last) out += escapeHtml(text.slice(last, match.index));
    out += `<span class="${kind}">${escapeHtml(token)}</span>`;
    last = match.index + token.length;
  }
  return last < text.length ? out + escapeHtml(text.slice(last)) : out;
}

/**
 * Lines per `div.chunk`. A chunk off screen is skipped by the browser's style and layout
 * (`content-visibility: auto` in style.css): those took ~270 of the ~380 ms a 2,000-line diff took to
 * draw, in Chromium's own counts (bench/app_review.ts), with the diff as one block.
 */
export const CHUNK_LINES = 50;

/** A patch's lines from its first hunk (git's header lines dropped) as HTML, in chunks of CHUNK_LINES. */
export function patchHtml(path: string, patch: string): string {
  const language = languageOf(path);
  const lines = patch.replace(/\n$/, "").split("\n");
  const hunksAt = lines.findIndex((line) => line.startsWith("@@"));
  const shown = hunksAt < 0 ? lines.slice(1) : lines.slice(hunksAt);
  let out = "";
  for (const [i, line] of shown.entries()) {
    if (i % CHUNK_LINES === 0) out += i === 0 ? '<div class="chunk">' : '</div><div class="chunk">';
    if (line.startsWith("@@")) {
      out += `<div class="line hunk">${escapeHtml(line)}</div>`;
      continue;
    }
    const kind = line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "ctx";
    out += `<div class="line ${kind}"><span class="sign">${escapeHtml(line.slice(0, 1))}</span>${
      highlightHtml(line.slice(1), language)
    }</div>`;
  }
  return shown.length > 0 ? out + "</div>" : out;
}
