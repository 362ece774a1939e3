/**
 * Routes of the offline prompt queue (spec 4.1, 3.1): list, add (a client-supplied `id` seen before
 * answers the existing item), edit, retry, send now (409 `box_offline` while the box is offline) and
 * remove (409 while the item is being sent). The queue itself is `agent/queue.ts`.
 *
 * @module
 */
import { QUEUE_CREATE, QUEUE_EDIT } from "../../client/schemas_laptop.ts";
import { body, json, param, requestOrigin, RouteTable } from "../../core/http.ts";
import type { Queue } from "../queue.ts";

/** What the queue routes use of the agent. */
export interface QueueRoutesBackend {
  queue: Pick<Queue, "list" | "add" | "get" | "edit" | "retry" | "sendNow" | "remove">;
}

/** The queue routes. */
export function queueRoutes(agent: QueueRoutesBackend): RouteTable {
  const { queue } = agent;
  return new RouteTable("queue")
    .add("GET", "/queue", () => json(queue.list()))
    .add("POST", "/queue", async (c) => {
      const { item, created } = queue.add(await body(c, QUEUE_CREATE), requestOrigin(c));
      return json(item, created ? 201 : 200);
    })
    .add("GET", "/queue/:id", (c) => json(queue.get(param(c, "id"))))
    .add("PATCH", "/queue/:id", async (c) => {
      const patch = await body(c, QUEUE_EDIT);
      return json(queue.edit(param(c, "id"), patch, requestOrigin(c)));
    })
    .add("POST", "/queue/:id/retry", (c) => json(queue.retry(param(c, "id"), requestOrigin(c))))
    .add("POST", "/queue/:id/send", async (c) => json(await queue.sendNow(param(c, "id"), requestOrigin(c))))
    .add("DELETE", "/queue/:id", (c) => json(queue.remove(param(c, "id"), requestOrigin(c))));
}
