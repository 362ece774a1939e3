/**
 * The relay: `ANY /v1/boxes/{box}/api/{path}` forwarded to the box's `/v1/{path}` with its query and
 * body, and the answer streamed back as it comes (SSE, NDJSON and log follows pass through unbuffered).
 * Spec 7: 503 when the request never reached the box (safe to retry or queue), 502 when the connection
 * failed after the request went out (the box may have acted).
 *
 * @module
 */
import { causeChain, TransportError } from "../client/errors.ts";
import { failedBeforeSending } from "../client/http.ts";
import { forwardPath } from "../core/forward_path.ts";
import type { Boxes } from "./boxes.ts";

// Only what describes the request itself goes through; the laptop's token, Host and Origin stay here.
const FORWARDED = ["content-type", "accept", "last-event-id"];
const RETURNED = ["content-type", "cache-control", "x-accel-buffering"];

/**
 * Forwards `request` to `box` as `/v1/{segments}` (checked by `core/forward_path.ts`, so the box is
 * asked nothing outside its `/v1/`; the query is taken from the request). The path through here is kept
 * lean, since every relayed request pays it: the box's endpoint is built once per connection, and
 * headers go as plain records.
 */
export async function relay(
  boxes: Boxes,
  box: string,
  segments: readonly string[],
  request: Request,
): Promise<Response> {
  const { http, base, authorization } = boxes.endpoint(box);
  const url = request.url;
  const query = url.indexOf("?");
  const requestHeaders = request.headers;
  // The box learns that the laptop brought it (a socket box cannot tell otherwise): what only the box's
  // own user may ask (`POST secrets/report`) is refused then.
  const headers: Record<string, string> = {
    "x-dock-origin": requestHeaders.get("x-dock-origin") ?? "dock",
    "x-dock-relay": "1",
  };
  for (const name of FORWARDED) {
    const value = requestHeaders.get(name);
    if (value !== null) headers[name] = value;
  }
  // A paired box wants this laptop's credential (never the laptop's own UI token).
  if (authorization) headers.authorization = authorization;
  const hasBody = request.method !== "GET" && request.method !== "HEAD";
  // Buffer the (small, JSON) request body: a streamed body that fails to send would be ambiguous.
  const body = hasBody ? await request.arrayBuffer() : undefined;
  let upstream: Response;
  try {
    upstream = await fetch(
      `${base}${forwardPath("/v1/", segments)}${query < 0 ? "" : withoutToken(url.slice(query))}`,
      {
        method: request.method,
        headers,
        body,
        signal: request.signal,
        client: http,
      } as RequestInit,
    );
  } catch (cause) {
    boxes.reset(box);
    const reason = firstLine(causeChain(cause));
    const neverSent = failedBeforeSending(cause);
    throw new TransportError(
      neverSent
        ? `box '${box}' cannot be reached: ${reason}`
        : `the connection to box '${box}' failed: ${reason}`,
      {
        neverSent,
        code: neverSent ? "box_unreachable" : "box_connection_failed",
        status: neverSent ? 503 : 502,
        cause,
        detail: { box },
      },
    );
  }
  const out: Record<string, string> = {};
  for (const name of RETURNED) {
    const value = upstream.headers.get(name);
    if (value !== null) out[name] = value;
  }
  return new Response(upstream.body, { status: upstream.status, headers: out });
}

function firstLine(text: string): string {
  return text.split("\n")[0].slice(0, 300);
}

/** The query less any `token`: the laptop's UI token never travels to a box, nor into its logs. */
export function withoutToken(query: string): string {
  if (!/[?&]token=/.test(query)) return query;
  const params = new URLSearchParams(query);
  params.delete("token");
  const rest = params.toString();
  return rest ? `?${rest}` : "";
}
