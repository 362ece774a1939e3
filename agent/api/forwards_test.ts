import { DockError } from "../../client/errors.ts";
import { assertEquals } from "../../tests/assert.ts";
import { agentTables } from "../../tests/route_tables.ts";
import type { Route } from "../proxy.ts";
import { forwardRoutes } from "./forwards.ts";

/** The forwards and proxy routes over fakes that record what they were asked. */
function forwardsApp() {
  const calls: string[] = [];
  const routes: Route[] = [];
  const tables = agentTables([forwardRoutes({
    forwards: {
      create: (request, origin) => {
        calls.push(`forward ${request.box} ${request.local}->${request.remote} ${origin}`);
        return { id: "f1", ...request, created: "2024-01-01T00:00:00.000Z" } as never;
      },
      remove: (id, origin) => {
        if (id !== "f1") throw new DockError("not_found", `no forward ${id}`, { status: 404 });
        calls.push(`unforward ${id} ${origin}`);
        return { id } as never;
      },
    },
    proxy: {
      addRoute: (route) => {
        calls.push(`route ${route.pattern} ${route.box}:${route.port}`);
        routes.push(route);
        return route;
      },
      removeRoute: (pattern) => {
        const found = routes.find((r) => r.pattern === pattern);
        if (!found) throw new DockError("not_found", `no route ${pattern}`, { status: 404 });
        calls.push(`unroute ${pattern}`);
        return found;
      },
    },
  })]);
  return { tables, calls };
}

Deno.test("forwards routes: a forward and a proxy route, each made and removed", async () => {
  const { tables, calls } = forwardsApp();
  const made = await tables.call("POST", "/forwards", {
    json: { box: "b1", local: 8080, remote: 3000 },
    headers: { "x-dock-origin": "cli" },
  });
  assertEquals([made.status, made.body.id], [201, "f1"]);
  assertEquals((await tables.call("DELETE", "/forwards/f1")).status, 200);
  const route = await tables.call("POST", "/routes", { json: { pattern: "app.*", box: "b1", port: 3000 } });
  assertEquals([route.status, route.body.pattern], [201, "app.*"]);
  assertEquals((await tables.call("DELETE", "/routes?pattern=app.*")).status, 200);
  assertEquals(calls, [
    "forward b1 8080->3000 cli",
    "unforward f1 api",
    "route app.* b1:3000",
    "unroute app.*",
  ]);
  tables.assertEveryRouteSucceeded();
});

Deno.test("forwards routes: refusals (strict bodies, ports, unknown ids, the token)", async () => {
  const { tables, calls } = forwardsApp();
  await tables.refusesUnknownField("POST", "/forwards", { box: "b1", local: 8080, remote: 3000 });
  await tables.refusesUnknownField("POST", "/routes", { pattern: "a.*", box: "b1", port: 3000 });
  for (const port of [0, 65536, 80.5, "80"]) {
    assertEquals(
      (await tables.call("POST", "/forwards", { json: { box: "b1", local: port, remote: 1 } })).status,
      400,
    );
  }
  assertEquals(
    (await tables.call("POST", "/routes", { json: { pattern: "", box: "b1", port: 1 } })).status,
    400,
  );
  assertEquals((await tables.call("DELETE", "/forwards/f9")).status, 404);
  assertEquals((await tables.call("DELETE", "/routes")).status, 404);
  await tables.assertEveryRouteNeedsToken();
  assertEquals(calls, []);
});
