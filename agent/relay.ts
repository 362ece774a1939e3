/**
 * The relay: `ANY /v1/boxes/{box}/api/{path}` forwarded to the box's `/v1/{path}` with its query and
 * body, and the answer streamed back as it comes (SSE, NDJSON and log follows pass through unbuffered).
 * Spec 7: 503 when the request never reached the box (safe to retry or queue), 502 when the connection
 * failed after the request went out (the box may have acted). Requests go over the box's kept
 * connections (agent/box_http.ts, which owns when a request may be sent again).
 *
 * @module
 */
import { causeChain, TransportError } from "../client/errors.ts";
import { forwardPath } from "../core/forward_path.ts";
import type { BoxAnswer } from "./box_http.ts";
import type { Boxes } from "./boxes.ts";

// Only what describes the request itself goes through; the laptop's token, Host and Origin stay here.
// The box's encoding is what the client accepts, so its answer passes through as it was compressed:
// fetch decoded every answer and the agent's server encoded it again.
const FORWARDED = ["content-type", "accept", "accept-encoding", "last-event-id"];
const RETURNED = ["content-type", "content-encoding", "vary", "cache-control", "x-accel-buffering"];

/**
 * Forwards `request` to `box` as `/v1/{segments}` (checked by `core/forward_path.ts`, so the box is
 * asked nothing outside its `/v1/`; the query is taken from the request). The path through here is kept
 * lean, since every relayed request pays it: the box's endpoint is built once per box, and headers go
 * as plain records.
 */
export async function relay(
  boxes: Boxes,
  box: string,
  segments: readonly string[],
  request: Request,
): Promise<Response> {
  const { http, authorization } = boxes.endpoint(box);
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
  const body = hasBody ? new Uint8Array(await request.arrayBuffer()) : undefined;
  let upstream: BoxAnswer;
  try {
    upstream = await http.request({
      method: request.method,
      path: `${forwardPath("/v1/", segments)}${query < 0 ? "" : withoutToken(url.slice(query))}`,
      headers,
      body,
      signal: request.signal,
    });
  } catch (cause) {
    // A caller that left says nothing about the box's connections.
    if (!request.signal.aborted) boxes.reset(box);
    const reason = firstLine(causeChain(cause));
    const neverSent = cause instanceof TransportError && cause.neverSent;
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
    if (value !== undefined) out[name] = value;
  }
  // A small answer comes as bytes: the agent's server sends it with its length in one write.
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
