/**
 * What the agent itself reads from a box over the relay's kept connections (`box_http.ts`), beside the
 * relay: its `GET info` (the health check) and its `GET sessions` (`sessions.ts`, the board's copy).
 * Each answer is bounded, and a box's error answer becomes a `DockError` with the box's message.
 *
 * @module
 */
import type { BoxInfo } from "../client/wire.ts";
import { DockError } from "../client/errors.ts";
import { type Clock, timeoutSignal } from "../core/clock.ts";
import { readLimited } from "../core/http.ts";
import { type BoxHttp, SMALL_BODY } from "./box_http.ts";

/** How a box is read: its kept connections, and a TLS box's `Bearer` credential (`Boxes.endpoint`). */
export interface BoxEndpoint {
  http: Pick<BoxHttp, "request">;
  authorization: string | null;
}

/**
 * A box's `GET info` on the relay's kept connections, within `ms`: the health check. Through the typed
 * client's `fetch` it kept a TLS connection of its own to each box beside the event stream's and the
 * relay's (~0.1 MiB of the agent each: 200 boxes, ~20 MiB measured), and cost ~0.44 ms against ~0.15 ms.
 */
export async function boxInfo(endpoint: BoxEndpoint, clock: Clock, ms: number): Promise<BoxInfo> {
  // On the agent's clock: a test's fake clock runs the deadline out.
  const deadline = timeoutSignal(clock, ms);
  try {
    return JSON.parse(await read(endpoint, "/v1/info", { signal: deadline.signal, maxBytes: SMALL_BODY }));
  } finally {
    deadline.cancel();
  }
}

/**
 * A box's `GET sessions` over the relay's kept connections: its JSON text, or an error with the box's
 * message. An answer past `maxBytes` is refused as it arrives, never held beyond it.
 */
export function readSessions(
  endpoint: BoxEndpoint,
  options: { signal: AbortSignal; maxBytes: number },
): Promise<string> {
  return read(endpoint, "/v1/sessions", options);
}

/** A GET of the box's `path`: the answer's text (at most `maxBytes`), or the box's error as a DockError. */
async function read(
  endpoint: BoxEndpoint,
  path: string,
  options: { signal: AbortSignal; maxBytes: number },
): Promise<string> {
  const headers: Record<string, string> = { "x-dock-origin": "dock" };
  if (endpoint.authorization) headers.authorization = endpoint.authorization;
  const answer = await endpoint.http.request({ method: "GET", path, headers, signal: options.signal });
  const text = await boundedText(answer.body, options.maxBytes, path);
  if (answer.status !== 200) {
    let message = `the box answered ${answer.status}`;
    try {
      message = JSON.parse(text).error.message ?? message;
    } catch { /* not dock's error shape: the status says it */ }
    throw new DockError("box_error", message, { status: 502 });
  }
  return text;
}

/** A body as text, refused past `maxBytes` (as it arrives, for a stream). */
async function boundedText(
  body: Uint8Array | ReadableStream<Uint8Array> | null,
  maxBytes: number,
  path: string,
): Promise<string> {
  const tooLarge = () =>
    new DockError("box_error", `the box's answer to ${path} is larger than ${maxBytes} bytes`, {
      status: 502,
    });
  if (body instanceof Uint8Array) {
    if (body.length > maxBytes) throw tooLarge();
    return new TextDecoder().decode(body);
  }
  return new TextDecoder().decode(await readLimited(body, maxBytes, tooLarge));
}
