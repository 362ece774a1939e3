/**
 * Reading git's unified diff for review (`GET …/worktrees/{wt}/diff`): the patch split into one chunk per
 * file with what each file's header says (path, rename, added or deleted, binary, lines added and
 * removed), and pages of those chunks bounded in bytes, so a large diff reaches the app a page at a
 * time and no answer is larger than the page asked for. Pure: the git call is in `review.ts`.
 *
 * @module
 */
import type { DiffFile, DiffPatch } from "../client/wire.ts";

/** One file of a parsed diff: what the header says, and the file's whole patch. */
export interface DiffChunk {
  file: DiffFile;
  patch: string;
}

/** Splits `git diff` output (with `a/` `b/` prefixes) into one chunk per file. */
export function parsePatch(text: string): DiffChunk[] {
  const chunks: DiffChunk[] = [];
  const starts: number[] = [];
  if (text.startsWith("diff --git ")) starts.push(0);
  for (let at = text.indexOf("\ndiff --git "); at >= 0; at = text.indexOf("\ndiff --git ", at + 1)) {
    starts.push(at + 1);
  }
  for (let i = 0; i < starts.length; i++) {
    const patch = text.slice(starts[i], starts[i + 1] ?? text.length);
    chunks.push({ file: describe(patch), patch });
  }
  return chunks;
}

function describe(patch: string): DiffFile {
  const lines = patch.split("\n");
  let status: DiffFile["status"] = "modified";
  let binary = false;
  let from: string | null = null;
  let to: string | null = null;
  let renameFrom: string | null = null;
  let renameTo: string | null = null;
  let additions = 0;
  let deletions = 0;
  let inHunks = false;
  for (const line of lines.slice(1)) {
    if (inHunks) {
      // In hunks every line starts with ' ', '+', '-' or '\' ("No newline at end of file").
      if (line.startsWith("+")) additions++;
      else if (line.startsWith("-")) deletions++;
      continue;
    }
    if (line.startsWith("@@")) inHunks = true;
    else if (line.startsWith("new file mode")) status = "added";
    else if (line.startsWith("deleted file mode")) status = "deleted";
    else if (line.startsWith("rename from ")) renameFrom = unquote(line.slice("rename from ".length));
    else if (line.startsWith("rename to ")) renameTo = unquote(line.slice("rename to ".length));
    else if (line.startsWith("Binary files ") || line === "GIT binary patch") binary = true;
    else if (line.startsWith("--- ")) from = stripPrefix(unquote(line.slice(4)), "a/");
    else if (line.startsWith("+++ ")) to = stripPrefix(unquote(line.slice(4)), "b/");
  }
  const [headA, headB] = headerPaths(lines[0]);
  const file: DiffFile = {
    path: renameTo ?? (to && to !== "/dev/null" ? to : null) ??
      (from && from !== "/dev/null" ? from : null) ?? headB ?? headA ?? "",
    status: renameTo ? "renamed" : status,
    additions,
    deletions,
    binary,
  };
  if (renameFrom) file.old_path = renameFrom;
  return file;
}

function stripPrefix(path: string, prefix: string): string {
  return path.startsWith(prefix) ? path.slice(prefix.length) : path;
}

/**
 * The two paths of `diff --git a/X b/Y`. Unquoted, the line is ambiguous when a name holds " b/"; git
 * writes both sides the same unless the file was renamed (then `rename to` names it), so the middle is
 * where the two halves are equal.
 */
function headerPaths(line: string): [string | null, string | null] {
  const rest = line.slice("diff --git ".length);
  if (rest.startsWith('"')) {
    const quoted = rest.match(/^("(?:[^"\\]|\\.)*")\s+(.*)$/);
    if (!quoted) return [null, null];
    return [stripPrefix(unquote(quoted[1]), "a/"), stripPrefix(unquote(quoted[2]), "b/")];
  }
  const half = (rest.length - 1) / 2;
  if (Number.isInteger(half) && rest.slice(2, half) === rest.slice(half + 3)) {
    return [rest.slice(2, half), rest.slice(half + 3)];
  }
  const split = rest.indexOf(" b/");
  return split < 0 ? [null, null] : [stripPrefix(rest.slice(0, split), "a/"), rest.slice(split + 3)];
}

const ESCAPES: Record<string, number> = { a: 7, b: 8, t: 9, n: 10, v: 11, f: 12, r: 13, '"': 34, "\\": 92 };

/** A path as git quotes it (C-style, octal bytes of UTF-8) made plain; an unquoted one as it is. */
export function unquote(text: string): string {
  if (!text.startsWith('"') || !text.endsWith('"') || text.length < 2) return text;
  const bytes: number[] = [];
  const encoder = new TextEncoder();
  const body = text.slice(1, -1);
  for (let i = 0; i < body.length; i++) {
    const char = body[i];
    if (char !== "\\") {
      bytes.push(...encoder.encode(char));
      continue;
    }
    const next = body[i + 1] ?? "";
    const octal = body.slice(i + 1, i + 4);
    if (/^[0-7]{3}$/.test(octal)) {
      bytes.push(parseInt(octal, 8));
      i += 3;
    } else {
      bytes.push(ESCAPES[next] ?? next.charCodeAt(0));
      i += 1;
    }
  }
  return new TextDecoder().decode(new Uint8Array(bytes));
}

/** A page of patches and where the next starts. */
export interface DiffPage {
  patches: DiffPatch[];
  next_offset: number | null;
}

/**
 * The patches of `chunks` from `offset` on, as many whole files as fit in `maxBytes` (UTF-8). The first
 * file always comes, cut at a line boundary within `maxBytes` when it alone is larger (`truncated`).
 */
export function pagePatches(chunks: readonly DiffChunk[], offset: number, maxBytes: number): DiffPage {
  const encoder = new TextEncoder();
  const patches: DiffPatch[] = [];
  let used = 0;
  let index = offset;
  for (; index < chunks.length; index++) {
    const chunk = chunks[index];
    const size = encoder.encode(chunk.patch).length;
    if (used + size <= maxBytes) {
      patches.push({ path: chunk.file.path, patch: chunk.patch, truncated: false });
      used += size;
      continue;
    }
    if (patches.length === 0) {
      patches.push({ path: chunk.file.path, patch: cutAtLine(chunk.patch, maxBytes), truncated: true });
      index++;
    }
    break;
  }
  return { patches, next_offset: index < chunks.length ? index : null };
}

/** The longest start of `text` that ends at a line and is at most `maxBytes` in UTF-8. */
function cutAtLine(text: string, maxBytes: number): string {
  const bytes = new TextEncoder().encode(text).subarray(0, maxBytes);
  // A cut in the middle of a character decodes to U+FFFD at the end: the line cut drops it.
  const decoded = new TextDecoder().decode(bytes);
  const end = decoded.lastIndexOf("\n");
  return end < 0 ? "" : decoded.slice(0, end + 1);
}
