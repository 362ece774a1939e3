import { assertEquals } from "../../tests/assert.ts";
import { AGENT_PORT, AGENT_TOKEN, agentTables } from "../../tests/route_tables.ts";
import type { Boxes } from "../boxes.ts";
import { ATTACH_PATH, attachRoutes } from "./attach.ts";

// The relay's success is a WebSocket upgrade on both sides, which only real listeners make (Deno
// upgrades only a request it received): tests/attach_relay_test.ts covers it end to end. In memory:
// what it refuses before it dials the box.
Deno.test("attach route: refusals before the box is dialled (names, a plain request, the token)", async () => {
  const dialled: string[] = [];
  const tables = agentTables([attachRoutes({} as Boxes, {
    target: (box) => {
      dialled.push(box);
      return { kind: "socket", path: "/nowhere" } as never;
    },
  })], { websockets: [ATTACH_PATH] });
  for (const path of ["/boxes/b%2F..%2Fx/sessions/s1/attach", "/boxes/b1/sessions/..%2Fx/attach"]) {
    assertEquals((await tables.call("GET", path)).status, 400, path);
  }
  const plain = await tables.call("GET", "/boxes/b1/sessions/s1/attach");
  assertEquals(plain.status >= 400 && plain.status < 500, true);
  // `?token=` opens only a WebSocket upgrade: a plain GET with it in the URL is refused at the gate.
  const inUrl = await tables.call("GET", `/boxes/b1/sessions/s1/attach?token=${AGENT_TOKEN}`, {
    token: null,
  });
  assertEquals([inUrl.status, inUrl.body.error.code], [401, "unauthorized"]);
  const wrongHost = await tables.app.request(
    `http://evil.example:${AGENT_PORT}/v1/boxes/b1/sessions/s1/attach`,
    {
      headers: { host: `evil.example:${AGENT_PORT}`, authorization: `Bearer ${AGENT_TOKEN}` },
    },
  );
  assertEquals(wrongHost.status, 403);
  await tables.assertEveryRouteNeedsToken();
  assertEquals(tables.entered >= 1, true);
  assertEquals(dialled.length <= 1, true);
});
