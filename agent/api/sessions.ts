/**
 * `GET /v1/sessions` (ours; README "Differences from the spec"): every box's sessions in one answer,
 * `BoxSessions[]` sorted by box, or one box's with `?box=NAME`, from the agent's copy
 * (`agent/sessions.ts`), each box's list read again first only when it may have changed. The query is
 * strict: any other parameter is refused with a "did you mean".
 *
 * @module
 */
import { badField } from "../../client/errors.ts";
import { RouteTable, textQuery } from "../../core/http.ts";
import type { Context } from "hono";

/** What the route uses of the agent. */
export interface SessionsRoutesBackend {
  /** Every box's `BoxSessions` as a JSON array, or only `box`'s (404 when unknown). */
  json(box?: string): Promise<string>;
  /** The id of the newest event on the agent's bus (0 when none). */
  lastEventId(): number;
}

/**
 * The header naming the newest event the answer already holds: the agent's last event id when the read
 * was asked for (the index reads again every list an event up to it may have changed). A client that
 * follows `GET /v1/events` with it as `Last-Event-ID` misses no change and needs no second read (the
 * app read every box's sessions again when its stream opened, and drew the board twice).
 */
export const EVENT_ID_HEADER = "x-dock-event-id";

/** The query parameters the route reads. */
const KNOWN = ["box"];

/** The sessions route. */
export function sessionsRoutes(agent: SessionsRoutesBackend): RouteTable {
  return new RouteTable("sessions").add("GET", "/sessions", async (c) => {
    checkQuery(c, KNOWN);
    const box = textQuery(c, "box", 63);
    if (box !== undefined && !/^[a-z0-9][a-z0-9-]{0,62}$/.test(box)) {
      throw badField("box", `must be a box's name, got ${JSON.stringify(box)}`);
    }
    const after = agent.lastEventId();
    const answer = loopbackJson(await agent.json(box));
    answer.headers.set(EVENT_ID_HEADER, String(after));
    return answer;
  });
}

/** Refuses a query parameter not in `known` (400, naming the closest known one), or one given twice. */
export function checkQuery(c: Context, known: readonly string[]): void {
  const params = new URL(c.req.url).searchParams;
  const seen = new Set<string>();
  for (const name of params.keys()) {
    if (!known.includes(name)) {
      const close = known.find((k) => near(k, name));
      throw badField(
        name,
        `unknown query parameter${close ? ` (did you mean "${close}"?)` : ` (known: ${known.join(", ")})`}`,
      );
    }
    if (seen.has(name)) throw badField(name, "given more than once");
    seen.add(name);
  }
}

/** True when `a` and `b` differ by at most a third of `a`'s length in edits (at least one). */
function near(a: string, b: string): boolean {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let diagonal = row[0];
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const above = row[j];
      row[j] = Math.min(row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length] <= Math.max(1, Math.floor(a.length / 3));
}

/**
 * A JSON answer sent as it is: the agent listens on loopback only, where compressing costs CPU and
 * saves nothing (Deno compresses answers of 16 KiB and more for a client that accepts it: 200 boxes'
 * 2,000 sessions are ~800 KB of JSON).
 */
export function loopbackJson(text: string): Response {
  return new Response(text, {
    headers: { "content-type": "application/json", "cache-control": "no-transform" },
  });
}
