import { assertEquals } from "../../tests/assert.ts";
import { boxTables } from "../../tests/route_tables.ts";
import { tunnelRoutes } from "./tunnel.ts";

// The tunnel's success is a WebSocket upgrade, which only a real listener can make (Deno upgrades only
// a request it received): tests/forwards_test.ts and tests/proxy_test.ts cover it end to end. In memory,
// what it refuses before it connects anywhere.
Deno.test("tunnel route: refusals before any connection (the port, a plain request, the method)", async () => {
  const { app } = boxTables([tunnelRoutes()]);
  for (const query of ["", "?port=0", "?port=65536", "?port=x"]) {
    const answer = await app.call("GET", `/tunnel${query}`);
    assertEquals([answer.status, answer.body.error.code], [400, "invalid_request"], query);
  }
  // A listening port, asked without an upgrade: refused, and nothing connects to it.
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let accepted = false;
  listener.accept().then((conn) => {
    accepted = true;
    conn.close();
  }).catch(() => {});
  try {
    const plain = await app.call("GET", `/tunnel?port=${listener.addr.port}`);
    assertEquals(plain.status >= 400 && plain.status < 500, true);
    assertEquals(accepted, false);
  } finally {
    listener.close();
  }
  assertEquals((await app.call("POST", "/tunnel?port=80")).status, 405);
});
