import { assertEquals, assertThrows } from "../tests/assert.ts";
import { DockError } from "../client/errors.ts";
import { listenAddress } from "./serve_early.ts";

Deno.test("DOCK_LISTEN: HOST:PORT, [IPv6]:PORT, a bare port, off, and the default", () => {
  assertEquals(listenAddress(""), { hostname: "0.0.0.0", port: 1379 });
  assertEquals(listenAddress("127.0.0.1:0"), { hostname: "127.0.0.1", port: 0 });
  assertEquals(listenAddress("[::]:1400"), { hostname: "::", port: 1400 });
  assertEquals(listenAddress("box.lan:1379"), { hostname: "box.lan", port: 1379 });
  assertEquals(listenAddress("1380"), { hostname: "0.0.0.0", port: 1380 });
  assertEquals(listenAddress("off"), null);
  for (const bad of ["127.0.0.1", "::1:1379", "host:70000", "host:port", "on"]) {
    const error = assertThrows(() => listenAddress(bad), DockError) as DockError;
    assertEquals(error.code, "usage", bad);
  }
});
