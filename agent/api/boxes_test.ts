import type { BoxStatus, ForgottenBox } from "../../client/wire.ts";
import { DockError } from "../../client/errors.ts";
import { assertEquals } from "../../tests/assert.ts";
import { agentTables } from "../../tests/route_tables.ts";
import { boxesRoutes } from "./boxes.ts";

/** The box registry routes over a fake registry that records what it was asked. */
function boxesApp() {
  const calls: string[] = [];
  const listed: BoxStatus[] = [];
  const tables = agentTables([boxesRoutes({
    boxes: {
      status: () => listed,
      add: (box, origin) => {
        if (listed.some((b) => b.name === box.name)) {
          return Promise.reject(new DockError("conflict", `box ${box.name} exists`, { status: 409 }));
        }
        calls.push(`add ${box.name} ${box.kind} ${box.address} ${origin}`);
        const status = { name: box.name, kind: box.kind, address: box.address } as BoxStatus;
        listed.push(status);
        return Promise.resolve(status);
      },
    },
    localSocket: "/run/dock/dockd.sock",
    forget: (name, origin) => {
      if (!listed.some((b) => b.name === name)) {
        return Promise.reject(new DockError("not_found", `no box ${name}`, { status: 404 }));
      }
      calls.push(`forget ${name} ${origin}`);
      return Promise.resolve(
        { name, kind: "socket", address: "", created: "", revoked: null } as ForgottenBox,
      );
    },
  })]);
  return { tables, calls };
}

Deno.test("boxes routes: list, add the local box (named or not), forget one", async () => {
  const { tables, calls } = boxesApp();
  assertEquals((await tables.call("GET", "/boxes")).body, []);
  const local = await tables.call("POST", "/boxes/add-local", { headers: { "x-dock-origin": "cli" } });
  assertEquals([local.status, local.body.name], [201, "local"]);
  const named = await tables.call("POST", "/boxes/add-local", { json: { name: "here" } });
  assertEquals([named.status, named.body.name], [201, "here"]);
  assertEquals((await tables.call("GET", "/boxes")).body.map((b: BoxStatus) => b.name), ["local", "here"]);
  const forgotten = await tables.call("DELETE", "/boxes/here", { headers: { "x-dock-origin": "app" } });
  assertEquals([forgotten.status, forgotten.body.name, forgotten.body.revoked], [200, "here", null]);
  assertEquals(calls, [
    "add local socket /run/dock/dockd.sock cli",
    "add here socket /run/dock/dockd.sock api",
    "forget here app",
  ]);
  tables.assertEveryRouteSucceeded();
});

Deno.test("boxes routes: refusals (strict body, a name twice, an unknown box, the token)", async () => {
  const { tables, calls } = boxesApp();
  await tables.refusesUnknownField("POST", "/boxes/add-local", { name: "x" });
  const wrongType = await tables.call("POST", "/boxes/add-local", { json: { name: 7 } });
  assertEquals(wrongType.status, 400);
  assertEquals((await tables.call("POST", "/boxes/add-local")).status, 201);
  assertEquals((await tables.call("POST", "/boxes/add-local")).status, 409);
  assertEquals((await tables.call("DELETE", "/boxes/ghost")).status, 404);
  await tables.assertEveryRouteNeedsToken();
  assertEquals(calls, ["add local socket /run/dock/dockd.sock api"]);
});
