import { DockError } from "../client/errors.ts";
import type { GateRunner } from "../core/http.ts";
import { assert, assertEquals } from "../tests/assert.ts";
import { agentTables, TableApp } from "../tests/route_tables.ts";
import type { Plugins } from "./plugins.ts";
import { fnTarget, pluginRoutes } from "./routes.ts";

const FN = ["GET", "POST", "PUT", "PATCH", "DELETE"];
const GRANT = { read: [], write: [], net: [], env: [], scopes: [] };

/** A fake plugin host with one plugin, `p1`, that records each call it is asked. */
function fakePlugins(calls: string[]): Plugins {
  const known = (id: string) => {
    if (id !== "p1") throw new DockError("not_found", `no plugin ${id}`, { status: 404 });
  };
  const answer = (what: string, value: unknown = { id: "p1" }) => {
    calls.push(what);
    return Promise.resolve(value);
  };
  return {
    list: () => [{ id: "p1" }],
    get: (id: string, log: number) => (known(id), { id, log }),
    enable: (
      id: string,
      permissions: unknown,
      origin: string,
    ) => (known(id), answer(`enable ${id} ${JSON.stringify(permissions)} ${origin}`)),
    disable: (id: string) => (known(id), answer(`disable ${id}`)),
    install: (id: string, files: { path: string }[]) => answer(`install ${id} ${files.map((f) => f.path)}`),
    remove: (id: string) => (known(id), answer(`remove ${id}`)),
    config: (id: string) => (known(id), answer(`config ${id}`, { values: {} })),
    setConfig: (id: string, values: unknown) => (known(id), answer(`set ${id} ${JSON.stringify(values)}`)),
    testEvent: (id: string, event: { type: string }) => (known(id), answer(`test ${id} ${event.type}`)),
    panelApi: (
      id: string,
      request: { method: string; path: string },
    ) => (known(id), answer(`ui-api ${id} ${request.method} ${request.path}`)),
    fetch: (id: string, path: string, request: Request) => {
      known(id);
      calls.push(`fn ${id} ${request.method} ${path}`);
      return Promise.resolve(new Response(`fn ${path}`));
    },
    file: (id: string, path: string) => {
      known(id);
      calls.push(`file ${id} ${path}`);
      return Promise.resolve(new Response("<html>"));
    },
  } as unknown as Plugins;
}

/** Asks every route of the plugin table once, each as it should succeed. */
async function everyRoute(tables: TableApp): Promise<number[]> {
  const statuses = [
    (await tables.call("GET", "/plugins")).status,
    (await tables.call("GET", "/plugins/p1?log=5")).status,
    (await tables.call("POST", "/plugins/p1/enable", { json: { permissions: GRANT } })).status,
    (await tables.call("POST", "/plugins/p1/disable")).status,
    (await tables.call("PUT", "/plugins/p2/files", { json: { files: [{ path: "mod.ts", data: "" }] } }))
      .status,
    (await tables.call("GET", "/plugins/p1/config")).status,
    (await tables.call("PUT", "/plugins/p1/config", { json: { values: { url: "https://x", n: 2 } } })).status,
    (await tables.call("POST", "/plugins/p1/test-event", { json: { type: "agent.finished" } })).status,
    (await tables.call("POST", "/plugins/p1/ui-api", { json: { method: "GET", path: "/v1/status" } })).status,
    (await tables.call("GET", "/plugins/p1/ui/panel.html")).status,
    (await tables.call("DELETE", "/plugins/p1")).status,
  ];
  for (const method of ["GET", "POST", "PUT", "PATCH", "DELETE"]) {
    statuses.push((await tables.call(method, "/plugins/p1/fn")).status);
    statuses.push((await tables.call(method, "/plugins/p1/fn/a/b/")).status);
  }
  return statuses;
}

Deno.test("plugin routes (laptop): every route reaches the host with its request", async () => {
  const calls: string[] = [];
  const tables = agentTables([pluginRoutes(fakePlugins(calls))]);
  assert((await everyRoute(tables)).every((status) => status === 200));
  assertEquals(calls.slice(0, 9), [
    `enable p1 ${JSON.stringify(GRANT)} api`,
    "disable p1",
    "install p2 mod.ts",
    "config p1",
    'set p1 {"url":"https://x","n":2}',
    "test p1 agent.finished",
    "ui-api p1 GET /v1/status",
    "file p1 ui/panel.html",
    "remove p1",
  ]);
  // The fn path is what follows `fn`, its trailing slash kept.
  assertEquals(calls.slice(9, 11), ["fn p1 GET /", "fn p1 GET /a/b/"]);
  tables.assertEveryRouteSucceeded();
});

Deno.test("plugin routes (laptop): refusals (strict bodies, a path that climbs, unknown plugins, the token)", async () => {
  const calls: string[] = [];
  const tables = agentTables([pluginRoutes(fakePlugins(calls))]);
  await tables.refusesUnknownField("POST", "/plugins/p1/enable", { permissions: GRANT });
  await tables.refusesUnknownField("PUT", "/plugins/p1/files", { files: [] });
  await tables.refusesUnknownField("PUT", "/plugins/p1/config", { values: {} });
  await tables.refusesUnknownField("POST", "/plugins/p1/test-event", { type: "agent.finished" });
  await tables.refusesUnknownField("POST", "/plugins/p1/ui-api", { method: "GET", path: "/v1/status" });
  const grant = await tables.call("POST", "/plugins/p1/enable", {
    json: { permissions: { ...GRANT, read: "/" } },
  });
  assertEquals(grant.status, 400);
  const event = await tables.call("POST", "/plugins/p1/test-event", { json: { type: "Agent Finished" } });
  assertEquals(event.status, 400);
  const log = await tables.call("GET", "/plugins/p1?log=501");
  assertEquals(log.status, 400);
  assertEquals((await tables.call("GET", "/plugins/p1/fn/a%2F..%2F..%2Fx")).status, 400);
  assertEquals((await tables.call("GET", "/plugins/p1/ui%2F..%2F..%2Fsecret")).status, 400);
  assertEquals((await tables.call("POST", "/plugins/ghost/disable")).status, 404);
  await tables.assertEveryRouteNeedsToken();
  assertEquals(calls, []);
});

Deno.test("plugin routes (box): enable, disable, install, remove and config pass the config.change gate", async () => {
  const calls: string[] = [];
  const gated: string[] = [];
  const gate: GateRunner = (action, target) => {
    gated.push(`${action} ${JSON.stringify(target)}`);
    if (target.plugin === "p1") {
      throw new DockError("gate_refused", "refused by a before: hook", { status: 403 });
    }
    return Promise.resolve();
  };
  const tables = new TableApp([pluginRoutes(fakePlugins(calls), { gated: true })], { gate });
  for (
    const [method, path, json] of [
      ["POST", "/plugins/p1/enable", { permissions: GRANT }],
      ["POST", "/plugins/p1/disable", undefined],
      ["PUT", "/plugins/p1/files", { files: [] }],
      ["DELETE", "/plugins/p1", undefined],
      ["PUT", "/plugins/p1/config", { values: {} }],
    ] as const
  ) {
    const { entered } = await tables.refused(method, path, 403, "gate_refused", { json });
    assertEquals(entered, 0, path);
  }
  assertEquals(gated.map((g) => g.split(" ")[0]), Array(5).fill("config.change"));
  assertEquals(JSON.parse(gated[0].slice("config.change ".length)), {
    plugin: "p1",
    enabled: true,
    permissions: GRANT,
  });
  // What the gate allows goes through; what no gate guards never asks it.
  assertEquals((await tables.call("PUT", "/plugins/p2/files", { json: { files: [] } })).status, 200);
  assertEquals((await tables.call("GET", "/plugins/p1/config")).status, 200);
  assertEquals(gated.length, 6);
  assertEquals(calls, ["install p2 ", "config p1"]);
});

Deno.test("fnTarget: a fn call it finds is the call the router makes; what it leaves, the router answers", async () => {
  const calls: string[] = [];
  const tables = new TableApp([pluginRoutes(fakePlugins(calls))]);
  const paths = [
    "/v1/plugins/p1/fn",
    "/v1/plugins/p1/fn/",
    "/v1/plugins/p1/fn/a",
    "/v1/plugins/p1/fn/a/",
    "/v1/plugins/p1/fn/a/b.json?x=1&y=%2F",
    "/v1/plugins/p1/fn?q",
    "/v1/plugins/p1/fn/a#frag",
    "/v1/plugins/p1/fn//a",
    "/v1/plugins/p1/fn/../enable",
    "/v1/plugins/p1/fn/./a",
    "/v1/plugins/p1/fn/a%2Fb",
    "/v1/plugins/p1/fn/%2e%2e/x",
    "/v1/plugins/%70%31/fn/a",
    "/v1/%70lugins/p1/fn/a",
    "/v1/plugins/p1/fn/a\\..\\b",
    "/v1/plugins/P1/fn/a",
    "/v1/plugins//fn/a",
    "/v1/plugins/p1/fnx/a",
    "/v1/plugins/p1/file.html",
    "/v1/plugins/p1",
    "/v2/plugins/p1/fn/a",
  ];
  const found = new Map<string, string[]>();
  for (const method of ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]) {
    for (const path of paths) {
      const request = new Request(`http://localhost${path}`, { method });
      const target = fnTarget(request, "/v1");
      if (!target) continue;
      found.set(method, [...found.get(method) ?? [], `${path} → ${target.subpath}`]);
      calls.length = 0;
      const response = await tables.app.fetch(request.clone());
      await response.body?.cancel();
      assertEquals(calls, [`fn ${target.id} ${method} ${target.subpath}`], `${method} ${path}`);
    }
  }
  // Plain paths of a valid id, for each method the routes take (a Request's URL is resolved first: `.`,
  // and `\` as `/`); the rest is the router's.
  const plain = [
    "/v1/plugins/p1/fn → /",
    "/v1/plugins/p1/fn/ → /",
    "/v1/plugins/p1/fn/a → /a",
    "/v1/plugins/p1/fn/a/ → /a/",
    "/v1/plugins/p1/fn/a/b.json?x=1&y=%2F → /a/b.json",
    "/v1/plugins/p1/fn?q → /",
    "/v1/plugins/p1/fn/a#frag → /a",
    "/v1/plugins/p1/fn/./a → /a",
    "/v1/plugins/p1/fn/a\\..\\b → /b",
  ];
  assertEquals(Object.fromEntries(found), Object.fromEntries(FN.map((method) => [method, plain])));
  assertEquals(fnTarget(new Request("http://localhost/v1/plugins/p1/fn/a/b/"), "/v1"), {
    id: "p1",
    subpath: "/a/b/",
  });
});
