/**
 * Routes of the offline prompt queue (spec 4.1, 3.1): list, add (a client-supplied `id` seen before
 * answers the existing item), edit, retry, send now (409 `box_offline` while the box is offline) and
 * remove (409 while the item is being sent). The queue itself is `agent/queue.ts`.
 *
 * @module
 */
import { z } from "zod";
import { SESSION_NAME } from "../../core/names.ts";
import { body, json, param, requestOrigin, RouteTable } from "../../core/http.ts";
import type { Agent } from "../agent.ts";
import { TEXT_LIMIT } from "../queue.ts";

const ID = z.string().regex(
  /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/,
  "must be letters, digits, '.', '_', ':' and '-', at most 128",
);
const BOX = z.string().min(1).max(63);
const SESSION = z.string().regex(SESSION_NAME, "must be a session name (letters, digits, '_' and '-')");
const TEXT = z.string().max(TEXT_LIMIT, `must be at most ${TEXT_LIMIT} characters`);
const CREATE = z.object({
  id: ID.optional(),
  box: BOX,
  session: SESSION,
  text: TEXT,
  wait: z.boolean().optional(),
  enter: z.boolean().optional(),
}).strict();
const EDIT = z.object({ box: BOX.optional(), session: SESSION.optional(), text: TEXT.optional() }).strict();

/** The queue routes. */
export function queueRoutes(agent: Agent): RouteTable {
  const { queue } = agent;
  return new RouteTable("queue")
    .add("GET", "/queue", () => json(queue.list()))
    .add("POST", "/queue", async (c) => {
      const { item, created } = queue.add(await body(c, CREATE), requestOrigin(c));
      return json(item, created ? 201 : 200);
    })
    .add("GET", "/queue/:id", (c) => json(queue.get(param(c, "id"))))
    .add("PATCH", "/queue/:id", async (c) => {
      const patch = await body(c, EDIT);
      return json(queue.edit(param(c, "id"), patch, requestOrigin(c)));
    })
    .add("POST", "/queue/:id/retry", (c) => json(queue.retry(param(c, "id"), requestOrigin(c))))
    .add("POST", "/queue/:id/send", async (c) => json(await queue.sendNow(param(c, "id"), requestOrigin(c))))
    .add("DELETE", "/queue/:id", (c) => json(queue.remove(param(c, "id"), requestOrigin(c))));
}
