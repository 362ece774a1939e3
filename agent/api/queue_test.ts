import { DockError } from "../../client/errors.ts";
import { assertEquals } from "../../tests/assert.ts";
import { agentTables } from "../../tests/route_tables.ts";
import { queueRoutes, type QueueRoutesBackend } from "./queue.ts";

type Item = { id: string; box: string; session: string; text: string; state: string };

/** The queue routes over a fake queue in an array, which records what it was asked. */
function queueApp() {
  const calls: string[] = [];
  const items: Item[] = [];
  const find = (id: string) => {
    const item = items.find((i) => i.id === id);
    if (!item) throw new DockError("not_found", `no queued item ${id}`, { status: 404 });
    return item;
  };
  const queue: QueueRoutesBackend["queue"] = {
    list: () => items as never,
    add: (request, origin) => {
      const known = request.id ? items.find((i) => i.id === request.id) : undefined;
      if (known) return { item: known, created: false } as never;
      calls.push(`add ${request.box}/${request.session} ${origin}`);
      const item = { id: request.id ?? `q${items.length + 1}`, ...request, state: "waiting" } as Item;
      items.push(item);
      return { item, created: true } as never;
    },
    get: (id) => find(id) as never,
    edit: (id, patch, origin) => {
      calls.push(`edit ${id} ${origin}`);
      return Object.assign(find(id), patch) as never;
    },
    retry: (id) => {
      calls.push(`retry ${id}`);
      return Object.assign(find(id), { state: "waiting" }) as never;
    },
    sendNow: (id) => {
      const item = find(id);
      if (item.box === "off") {
        return Promise.reject(new DockError("box_offline", "box off is offline", { status: 409 }));
      }
      calls.push(`send ${id}`);
      return Promise.resolve(Object.assign(item, { state: "sent" }) as never);
    },
    remove: (id) => {
      calls.push(`remove ${id}`);
      const item = find(id);
      items.splice(items.indexOf(item), 1);
      return item as never;
    },
  };
  return { tables: agentTables([queueRoutes({ queue })]), calls };
}

Deno.test("queue routes: add (an id seen before answers the item, 200), list, get, edit, retry, send, remove", async () => {
  const { tables, calls } = queueApp();
  const item = { id: "k1", box: "b1", session: "s1", text: "go" };
  assertEquals(
    (await tables.call("POST", "/queue", { json: item, headers: { "x-dock-origin": "app" } })).status,
    201,
  );
  assertEquals((await tables.call("POST", "/queue", { json: item })).status, 200);
  assertEquals((await tables.call("GET", "/queue")).body.length, 1);
  assertEquals((await tables.call("GET", "/queue/k1")).body.text, "go");
  assertEquals((await tables.call("PATCH", "/queue/k1", { json: { text: "again" } })).body.text, "again");
  assertEquals((await tables.call("POST", "/queue/k1/retry")).body.state, "waiting");
  assertEquals((await tables.call("POST", "/queue/k1/send")).body.state, "sent");
  assertEquals((await tables.call("DELETE", "/queue/k1")).status, 200);
  assertEquals(calls, ["add b1/s1 app", "edit k1 api", "retry k1", "send k1", "remove k1"]);
  tables.assertEveryRouteSucceeded();
});

Deno.test("queue routes: refusals (strict bodies, names, an offline box, unknown ids, the token)", async () => {
  const { tables, calls } = queueApp();
  await tables.refusesUnknownField("POST", "/queue", { box: "b1", session: "s1", text: "go" });
  await tables.refusesUnknownField("PATCH", "/queue/k1", { text: "x" });
  assertEquals(
    (await tables.call("POST", "/queue", { json: { box: "b1", session: "a b", text: "x" } })).status,
    400,
  );
  assertEquals((await tables.call("POST", "/queue", { json: { box: "b1", session: "s1" } })).status, 400);
  assertEquals((await tables.call("GET", "/queue/none")).status, 404);
  assertEquals(
    (await tables.call("POST", "/queue", { json: { box: "off", session: "s1", text: "x" } })).status,
    201,
  );
  const offline = await tables.call("POST", "/queue/q1/send");
  assertEquals([offline.status, offline.body.error.code], [409, "box_offline"]);
  calls.length = 0;
  await tables.assertEveryRouteNeedsToken();
  assertEquals(calls, []);
});
