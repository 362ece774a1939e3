/**
 * POSIX path helpers, used instead of `node:path` by everything dock runs. The first `node:` import of
 * a process loads Deno's Node compatibility layer, which costs more than everything else a command
 * loads (measured: an empty `deno run` 58 ms, with `import "node:path"` 90 ms; issue #10 asks for a
 * command in ≤ 1.5× the empty run), and ~6 ms of a daemon's start, which a fresh box and an upgrade
 * wait for. These functions give the same answers for the absolute and relative POSIX paths dock
 * handles (tested against `node:path` beside this module). Windows is not a dock target.
 *
 * @module
 */

/** Collapses `.`, `..` and repeated slashes, as `node:path`'s `normalize` does. */
export function normalize(path: string): string {
  if (path === "") return ".";
  const absolute = path.startsWith("/");
  const trailing = path.endsWith("/");
  const parts: string[] = [];
  for (const part of path.split("/")) {
    if (part === "" || part === ".") continue;
    if (part === "..") {
      if (parts.length > 0 && parts[parts.length - 1] !== "..") parts.pop();
      else if (!absolute) parts.push("..");
      continue;
    }
    parts.push(part);
  }
  let out = parts.join("/");
  if (absolute) out = `/${out}`;
  if (out === "") return absolute ? "/" : ".";
  return trailing && out !== "/" ? `${out}/` : out;
}

/** Joins the non-empty segments with `/` and normalizes the result. */
export function join(...segments: string[]): string {
  const joined = segments.filter((segment) => segment !== "").join("/");
  return joined === "" ? "." : normalize(joined);
}

/** The separator of path segments. */
export const sep = "/";

/** Whether `path` starts at the root. */
export function isAbsolute(path: string): boolean {
  return path.startsWith("/");
}

/** The absolute path of `segments` taken from the current directory, right to left as `node:path` does. */
export function resolve(...segments: string[]): string {
  let resolved = "";
  for (let i = segments.length - 1; i >= 0 && !resolved.startsWith("/"); i--) {
    if (segments[i] === "") continue;
    resolved = resolved === "" ? segments[i] : `${segments[i]}/${resolved}`;
  }
  if (!resolved.startsWith("/")) resolved = `${Deno.cwd()}/${resolved}`;
  const out = normalize(resolved);
  return out.length > 1 && out.endsWith("/") ? out.slice(0, -1) : out;
}

/** The path from `from` to `to` (both resolved first), as `node:path`'s `relative` gives it; "" when the same. */
export function relative(from: string, to: string): string {
  const start = resolve(from).split("/").filter(Boolean);
  const end = resolve(to).split("/").filter(Boolean);
  let common = 0;
  while (common < start.length && common < end.length && start[common] === end[common]) common++;
  return [...start.slice(common).map(() => ".."), ...end.slice(common)].join("/");
}

/** `path` without its last segment and the slash before it (trailing slashes ignored), as `node:path` does. */
export function dirname(path: string): string {
  if (path === "") return ".";
  const hasRoot = path.startsWith("/");
  let end = -1;
  let inTrailingSlashes = true;
  for (let i = path.length - 1; i >= 1; i--) {
    if (path[i] !== "/") inTrailingSlashes = false;
    else if (!inTrailingSlashes) {
      end = i;
      break;
    }
  }
  if (end === -1) return hasRoot ? "/" : ".";
  if (hasRoot && end === 1) return "//";
  return path.slice(0, end);
}

/** The last segment of `path`, without `suffix` when it ends with it (and is not all of it). */
export function basename(path: string, suffix?: string): string {
  const trimmed = path.replace(/\/+$/, "");
  const base = trimmed.slice(trimmed.lastIndexOf("/") + 1);
  if (suffix && base !== suffix && base.endsWith(suffix)) return base.slice(0, -suffix.length);
  return base;
}

/** The extension of the last segment, from its last `.` (none for dot-files such as `.env`, nor `..`). */
export function extname(path: string): string {
  const base = basename(path);
  const dot = base.lastIndexOf(".");
  return dot <= 0 || base === ".." ? "" : base.slice(dot);
}

/** The file path of a `file:` URL. */
export function fromFileUrl(url: string | URL): string {
  const parsed = url instanceof URL ? url : new URL(url);
  if (parsed.protocol !== "file:") throw new TypeError(`not a file URL: ${parsed.href}`);
  return decodeURIComponent(parsed.pathname);
}
