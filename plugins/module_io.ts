/**
 * What the supervisor hands a module and takes back, apart from calling it: a plugin's `fetch` request
 * as the worker sees it (without the caller's credentials) and its answer as an HTTP response, a module
 * hook's answer as a hook's result, and the worker of a module named by a file outside any plugin (a hook
 * file's, a flow step's).
 *
 * @module
 */
import { dirname, join, relative } from "../core/posix_path.ts";
import type { HookResult } from "../core/hooks.ts";
import { CallError } from "./call_error.ts";
import { inside } from "./folder_check.ts";
import { readBounded } from "./context.ts";
import { type FetchInput, type FetchOutput, fromBase64, toBase64, type WorkerSpec } from "./protocol.ts";

/** Headers a plugin's `fetch` never sees: the caller's credentials are dock's, not the plugin's. */
const PRIVATE_HEADERS = new Set(["authorization", "cookie", "proxy-authorization", "x-dock-token"]);
const HOP_HEADERS = new Set(["connection", "keep-alive", "transfer-encoding", "upgrade", "content-length"]);

/**
 * The input of plugin `id`'s `fetch` call for `request` (the path after `/fn` is `subpath`), body bounded:
 * at once for a request without a body (a warm GET awaits nothing), a promise while a body is read.
 */
export function fetchInput(
  id: string,
  subpath: string,
  request: Request,
): FetchInput | Promise<FetchInput> {
  if (request.method === "GET" || request.method === "HEAD") return inputOf(id, subpath, request);
  return readBounded(request).then((body) => inputOf(id, subpath, request, body));
}

function inputOf(id: string, subpath: string, request: Request, body?: Uint8Array): FetchInput {
  // The query as it came (the URL was parsed on the way in); names from `Headers` are lower-case. Both
  // without a `URL` or an iterator: 7.9 → 1.3 µs of every call.
  const query = request.url.indexOf("?");
  const headers: [string, string][] = [];
  request.headers.forEach((value, name) => {
    if (!PRIVATE_HEADERS.has(name)) headers.push([name, value]);
  });
  return {
    method: request.method,
    url: `http://${id}.plugin${subpath}${query < 0 ? "" : request.url.slice(query)}`,
    headers,
    ...(body ? { body: toBase64(body) } : {}),
  };
}

/** A `fetch` handler's answer as the response to `request`: a status out of range is a 502. */
export function fetchResponse(answer: FetchOutput, request: Request): Response {
  const status = Number.isInteger(answer?.status) && answer.status >= 200 && answer.status <= 599
    ? answer.status
    : 502;
  const bytes = typeof answer?.body === "string" ? fromBase64(answer.body) : new Uint8Array();
  const noBody = status === 204 || status === 304 || request.method === "HEAD";
  const response = new Response(noBody ? null : bytes, { status });
  // Added to the response's own headers, each checked once (a `Headers` handed to `Response` is copied and
  // checked again).
  for (const [name, value] of Array.isArray(answer?.headers) ? answer.headers : []) {
    try {
      if (!HOP_HEADERS.has(String(name).toLowerCase())) response.headers.append(String(name), String(value));
    } catch {
      // a header the plugin got wrong is left out
    }
  }
  return response;
}

/**
 * A module hook's answer as a hook's result: refused (exit 1, with its reason) when it may refuse
 * (`refusable`: a gate) and answered `allow: false`; `by` names it in a refusal without a reason.
 */
export function answeredHook(answer: unknown, refusable: boolean, started: number, by: string): HookResult {
  const { allow, reason } = (answer ?? {}) as { allow?: boolean; reason?: string };
  const refused = refusable && allow === false;
  return {
    code: refused ? 1 : 0,
    timedOut: false,
    durationMs: performance.now() - started,
    stderr: refused ? reason || `refused by ${by}` : "",
  };
}

/** A module hook's call that failed, as a hook's result: timed out (no exit code), or exit 1. */
export function failedHook(error: unknown, started: number, what: string): HookResult {
  const timedOut = error instanceof CallError && error.failure === "timeout";
  return {
    code: timedOut ? null : 1,
    timedOut,
    durationMs: performance.now() - started,
    stderr: `${what}: ${(error as Error).message}`,
  };
}

/**
 * The worker of a module named by a file outside any plugin (a hook file, a flow step): found relative to
 * `base`, never outside `root`, granted read of its own folder and of `cwd`, nothing else.
 */
export async function fileModuleSpec(
  where: { module: string; base: string; root: string; cwd?: string },
  kind: "hook" | "step",
): Promise<WorkerSpec> {
  const path = await Deno.realPath(join(where.base, where.module)).catch(() => null);
  const realRoot = await Deno.realPath(where.root).catch(() => where.root);
  if (!path || !inside(path, realRoot)) {
    throw new Error(`module ${where.module}: ${path ? "leads outside " + realRoot : "does not exist"}`);
  }
  const cwd = where.cwd ? await Deno.realPath(where.cwd).catch(() => where.cwd!) : undefined;
  const read = [dirname(path), ...(cwd ? [cwd] : [])];
  return {
    key: `${kind}:${path}:${read.join(":")}`,
    module: path,
    grant: { read, write: [], net: [], env: [] },
    label: `${kind}:${relative(realRoot, path)}`,
  };
}
