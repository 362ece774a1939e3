/**
 * Paths that a route forwards to a box or a plugin (issue 29, item 1): the one place their segments are
 * decoded, checked and encoded again. A route hands in what the request named (the segments its `*`
 * matched, or a parameter hono decoded) and gets back segments that cannot climb, split or be decoded
 * a second time, and an upstream path built from them that starts with the route's own prefix. Every
 * refusal is a 400 `invalid_path`.
 *
 * Why each rule: a decoded `/` or `\` would become a separator upstream (`x%2F..%2Fsessions` climbed out
 * of a plugin's folder into a box's whole API with the laptop's credential); `.` and `..` are resolved
 * by the next URL parser (`%2e%2e` included: WHATWG URLs treat it as `..`); a `%` escape left after one
 * decoding is decoded again by a server that decodes (hono routes on `decodeURI` of the path); `?` and
 * `#` would end the path; NUL and control characters reach file names and logs. Deno hands a handler
 * the request line as it came (measured: `/a/b/../c`, `/a\..\c` and `/a/%2e%2e/c` all reach
 * `request.url` unchanged), so nothing before the route has normalized them.
 *
 * @module
 */
import type { Context } from "hono";
import { routePath } from "hono/route";
import { DockError } from "../client/errors.ts";

/** Options of {@linkcode wildcardSegments} and {@linkcode pathSegments}. */
export interface PathSegmentsOptions {
  /** Whether the path may end with `/` (an empty last segment), as a plugin's `fn/` may. @default {false} */
  trailingSlash?: boolean;
  /** Whether the path may be empty (`fn` itself). @default {false} */
  empty?: boolean;
}

/** The longest encoded path a route forwards: far above any file or API path dock makes (under 300). */
export const MAX_FORWARD_PATH = 4096;

/** The 400 every refused path answers. */
export function invalidPath(message: string): DockError {
  return new DockError("invalid_path", message, { status: 400 });
}

/**
 * The path of `url` exactly as it came, still percent-encoded, its dot segments kept (what hono routes
 * on before `decodeURI`); `new URL(url).pathname` would resolve `..` and `%2e%2e` first and hide them.
 */
export function requestPath(url: string): string {
  const start = url.indexOf("/", url.indexOf("://") + 3);
  if (start < 0) return "/";
  let end = url.length;
  for (const mark of ["?", "#"]) {
    const at = url.indexOf(mark, start);
    if (at >= 0 && at < end) end = at;
  }
  return url.slice(start, end);
}

/** The query of `url` as it came (`?…`), or "". */
export function requestQuery(url: string): string {
  const at = url.indexOf("?");
  if (at < 0) return "";
  const hash = url.indexOf("#", at);
  return url.slice(at, hash < 0 ? undefined : hash);
}

/**
 * The segments a route's trailing `*` matched, each decoded once and checked ({@linkcode pathSegments}).
 * The count of the route's fixed segments comes from its registered pattern, so the same routes mounted
 * under another prefix stay right.
 */
export function wildcardSegments(c: Context, options: PathSegmentsOptions = {}): string[] {
  const pattern = routePath(c).split("/");
  const star = pattern.indexOf("*");
  if (star < 0) throw new Error(`route ${pattern.join("/")} has no *`);
  const raw = requestPath(c.req.url).split("/");
  return pathSegments(raw.slice(star).join("/"), options);
}

/**
 * Splits an encoded path (no leading `/`) into segments, each percent-decoded exactly once and checked
 * by {@linkcode checkSegment}; an empty last segment stands for a trailing `/` when allowed.
 */
export function pathSegments(encoded: string, options: PathSegmentsOptions = {}): string[] {
  if (encoded.length > MAX_FORWARD_PATH) throw invalidPath(`the path is longer than ${MAX_FORWARD_PATH}`);
  if (encoded === "") {
    if (options.empty) return [];
    throw invalidPath("the path is empty");
  }
  const raw = encoded.split("/");
  const trailing = options.trailingSlash && raw.length > 1 && raw.at(-1) === "";
  const segments = (trailing ? raw.slice(0, -1) : raw).map((segment) => {
    let decoded: string;
    try {
      decoded = decodeURIComponent(segment);
    } catch {
      throw invalidPath("the path has a malformed escape or invalid UTF-8");
    }
    return checkSegment(decoded);
  });
  return trailing ? [...segments, ""] : segments;
}

/** One decoded segment (a file's part, a box's or plugin's or session's name), or a 400 saying why not. */
export function checkSegment(segment: string, what = "a path segment"): string {
  if (segment === "") throw invalidPath(`${what} is empty (// in the path)`);
  if (segment === "." || segment === "..") throw invalidPath(`${what} is . or ..`);
  if (/[/\\]/.test(segment)) throw invalidPath(`${what} holds an encoded / or \\`);
  // deno-lint-ignore no-control-regex
  if (/[\u0000-\u001f\u007f-\u009f]/.test(segment)) {
    throw invalidPath(`${what} holds NUL or a control character`);
  }
  if (/%[0-9a-f]{2}/i.test(segment)) throw invalidPath(`${what} is encoded twice`);
  if (/[?#]/.test(segment)) throw invalidPath(`${what} holds an encoded ? or #`);
  return segment;
}

/**
 * The upstream path: `prefix` (which ends with `/`) and the checked segments, each encoded again. What it
 * returns always starts with `prefix` and no URL parser resolves it anywhere else.
 */
export function forwardPath(prefix: string, segments: readonly string[]): string {
  if (!prefix.endsWith("/")) throw new Error(`forwardPath: the prefix must end with /, got ${prefix}`);
  return prefix + segments.map(encodeURIComponent).join("/");
}

/**
 * The path and query of a request forwarded to a whole origin (a worktree's own server behind the
 * private-URL proxy): its route is that server's root, so `..` cannot leave it and `%2F` may be the
 * server's own meaning. It goes on as the browser's URL parser leaves it (dot segments resolved), but
 * never with a NUL or a control character, raw or encoded, nor a malformed escape.
 */
export function originPath(url: URL): string {
  const path = url.pathname + url.search;
  if (path.length > MAX_FORWARD_PATH * 2) {
    throw invalidPath(`the path is longer than ${MAX_FORWARD_PATH * 2}`);
  }
  // deno-lint-ignore no-control-regex
  if (/[\u0000-\u001f\u007f]|%(0[0-9a-f]|1[0-9a-f]|7f)/i.test(path)) {
    throw invalidPath("the path holds NUL or a control character");
  }
  if (/%(?![0-9a-f]{2})/i.test(url.pathname)) throw invalidPath("the path has a malformed escape");
  return path;
}
