import { DockError } from "../../client/errors.ts";
import { assertEquals } from "../../tests/assert.ts";
import { agentTables } from "../../tests/route_tables.ts";
import type { KitLibrary } from "../kits.ts";
import { kitRoutes } from "./kits.ts";

/** The kits routes over a fake library that records each call (and knows one kit, `k1`). */
function kitsApp() {
  const calls: string[] = [];
  const known = (id: string) => {
    if (id !== "k1") throw new DockError("not_found", `no kit ${id}`, { status: 404 });
  };
  const record = (what: string, value: unknown = { ok: what }) => {
    calls.push(what);
    return Promise.resolve(value);
  };
  const library = {
    list: () => record("list", []),
    installed: () => record("installed", []),
    add: (request: { git?: string }) => record(`add ${request.git}`, { id: "k1" }),
    preview: (request: { id: string; box: string }) => record(`preview ${request.id} ${request.box}`),
    remove: (request: { box: string; location: string }) =>
      record(`remove ${request.box}/${request.location}`),
    save: (request: { id: string }) => record(`save ${request.id}`, { id: request.id }),
    show: (id: string) => (known(id), record(`show ${id}`, { id })),
    delete: (id: string) => (known(id), record(`delete ${id}`)),
    apply: (
      request: { id: string; box: string; location: string },
    ) => (known(request.id), record(`apply ${request.id} ${request.box}/${request.location}`)),
    update: (id: string) => (known(id), record(`update ${id}`)),
  } as unknown as KitLibrary;
  return { tables: agentTables([kitRoutes(library)]), calls };
}

Deno.test("kits routes: every route reaches its library call with the request", async () => {
  const { tables, calls } = kitsApp();
  const target = { box: "b1", location: "app" };
  assertEquals((await tables.call("GET", "/kits")).status, 200);
  assertEquals((await tables.call("GET", "/kits/installed")).status, 200);
  assertEquals((await tables.call("POST", "/kits/add", { json: { git: "https://x/k.git" } })).status, 201);
  assertEquals((await tables.call("POST", "/kits/preview", { json: { id: "k1", ...target } })).status, 200);
  assertEquals((await tables.call("POST", "/kits/remove", { json: target })).status, 200);
  assertEquals((await tables.call("POST", "/kits/save", { json: { id: "k2", ...target } })).status, 201);
  assertEquals((await tables.call("GET", "/kits/k1")).body, { id: "k1" });
  assertEquals((await tables.call("POST", "/kits/k1/apply", { json: target })).status, 200);
  assertEquals((await tables.call("POST", "/kits/k1/update")).status, 200);
  assertEquals((await tables.call("DELETE", "/kits/k1")).status, 200);
  assertEquals(calls, [
    "list",
    "installed",
    "add https://x/k.git",
    "preview k1 b1",
    "remove b1/app",
    "save k2",
    "show k1",
    "apply k1 b1/app",
    "update k1",
    "delete k1",
  ]);
  tables.assertEveryRouteSucceeded();
});

Deno.test("kits routes: refusals (strict bodies, missing fields, unknown kits, the token)", async () => {
  const { tables, calls } = kitsApp();
  const target = { box: "b1", location: "app" };
  await tables.refusesUnknownField("POST", "/kits/add", { git: "https://x/k.git" });
  await tables.refusesUnknownField("POST", "/kits/preview", { id: "k1", ...target });
  await tables.refusesUnknownField("POST", "/kits/remove", target);
  await tables.refusesUnknownField("POST", "/kits/save", { id: "k1", ...target });
  await tables.refusesUnknownField("POST", "/kits/k1/apply", target);
  assertEquals((await tables.call("POST", "/kits/remove", { json: { box: "b1" } })).status, 400);
  assertEquals(
    (await tables.call("POST", "/kits/save", { json: { id: "k1", ...target, version: "v1" } })).status,
    400,
  );
  assertEquals((await tables.call("GET", "/kits/ghost")).status, 404);
  assertEquals((await tables.call("POST", "/kits/ghost/apply", { json: target })).status, 404);
  await tables.assertEveryRouteNeedsToken();
  assertEquals(calls, []);
});
