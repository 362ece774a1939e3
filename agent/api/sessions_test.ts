import { notFound } from "../../client/errors.ts";
import { assert, assertEquals } from "../../tests/assert.ts";
import { agentTables } from "../../tests/route_tables.ts";
import { sessionsRoutes } from "./sessions.ts";
import { statusRoutes } from "./status.ts";

/** The sessions route over a fake index that records what it was asked. */
function sessionsApp() {
  const asked: (string | undefined)[] = [];
  // An event lands on the bus while each read is under way: the header names the one before it.
  let lastId = 41;
  const tables = agentTables([sessionsRoutes({
    json: (box) => {
      asked.push(box);
      lastId++;
      if (box !== undefined && box !== "a") return Promise.reject(notFound("box", box));
      return Promise.resolve(
        JSON.stringify([{ box: { name: "a" }, sessions: [], read: null, stale: true, error: null }]),
      );
    },
    lastEventId: () => lastId,
  })]);
  return { tables, asked };
}

Deno.test("sessions route: every box's sessions, or one box's; the answer as the index made it, uncompressed", async () => {
  const { tables, asked } = sessionsApp();
  const all = await tables.call("GET", "/sessions", { headers: { "accept-encoding": "gzip, br" } });
  assertEquals([all.status, all.body[0].box.name], [200, "a"]);
  assertEquals(all.response.headers.get("content-type"), "application/json");
  assert(all.response.headers.get("cache-control")?.includes("no-transform"));
  // The newest event on the bus when the read was asked (not one that came during it): the app follows
  // events after it, so a change during the read is heard, and needs no second read at start.
  assertEquals(all.response.headers.get("x-dock-event-id"), "41");
  const one = await tables.call("GET", "/sessions?box=a");
  assertEquals([one.status, one.body.length], [200, 1]);
  assertEquals(asked, [undefined, "a"]);
  tables.assertEveryRouteSucceeded();
});

Deno.test("sessions route: a strict query; a box no one has is a 404", async () => {
  const { tables, asked } = sessionsApp();
  const typo = await tables.refused("GET", "/sessions?bx=a", 400, "invalid_request");
  assert(typo.answer.body.error.message.includes(`did you mean "box"`), typo.answer.body.error.message);
  const unknown = await tables.refused("GET", "/sessions?limit=5", 400, "invalid_request");
  assert(unknown.answer.body.error.message.includes("known: box"), unknown.answer.body.error.message);
  await tables.refused("GET", "/sessions?box=a&box=b", 400, "invalid_request");
  for (const bad of ["", "A", "a%00", "-a", "a/b", "x".repeat(64), "%ff"]) {
    await tables.refused("GET", `/sessions?box=${bad}`, 400, "invalid_request");
  }
  assertEquals(asked, []);
  await tables.refused("GET", "/sessions?box=ghost", 404, "not_found");
  assertEquals(asked, ["ghost"]);
});

Deno.test("sessions route: needs the token", async () => {
  const { tables, asked } = sessionsApp();
  await tables.assertEveryRouteNeedsToken();
  assertEquals(asked, []);
});

Deno.test("status route: a large status is sent uncompressed (Deno compressed answers over 16 KiB)", async () => {
  const boxes = Array.from({ length: 200 }, (_, i) => ({
    name: `box-${i}`,
    address: `https://box-${i}.tailnet.example:1379`,
    since: "2026-11-26T12:00:00.000Z",
  }));
  const tables = agentTables([statusRoutes({
    statusJson: () =>
      JSON.stringify({ build: "1", boxes, forwards: [], routes: [], proxy: { enabled: false } }),
    refresh: () => Promise.resolve(),
    upgrade: () => Promise.reject(new Error("not here")),
  })]);
  for (const [method, path] of [["GET", "/status"], ["POST", "/refresh"]]) {
    const answer = await tables.call(method, path, { headers: { "accept-encoding": "gzip, br" } });
    assert(answer.text.length > 16 * 1024, `${answer.text.length} bytes`);
    assertEquals([answer.status, answer.body.boxes.length], [200, 200]);
    assert(answer.response.headers.get("cache-control")?.includes("no-transform"), path);
  }
});
