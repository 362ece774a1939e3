import { DockError } from "../../client/errors.ts";
import { assertEquals } from "../../tests/assert.ts";
import { agentTables } from "../../tests/route_tables.ts";
import { pairRoutes } from "./pair.ts";

/** The pairing routes over a fake backend that knows one box, `b1`, and records each call. */
function pairApp() {
  const calls: string[] = [];
  const tables = agentTables([pairRoutes({
    pair: (request, origin) => {
      if (!request.link.startsWith("dock://")) {
        return Promise.reject(new DockError("invalid_link", "not a pairing link", { status: 400 }));
      }
      calls.push(`pair ${request.link} ${request.name} ${request.network} ${origin}`);
      return Promise.resolve({ name: request.name ?? "b1" } as never);
    },
    checkAddSsh: (request) => {
      if (request.host.startsWith("-")) {
        return Promise.reject(new DockError("invalid_request", "host: not an option", { status: 400 }));
      }
      calls.push(`check ${request.host}`);
      return Promise.resolve();
    },
    addSsh: async function* (request) {
      yield { step: "connect", host: request.host };
      yield { step: "done", box: request.name };
    },
    checkUpgrade: (name) => {
      if (name !== "b1") throw new DockError("not_found", `no box named ${name}`, { status: 404 });
    },
    upgrade: async function* (name) {
      yield { step: "send", box: name };
    },
  })]);
  return { tables, calls };
}

/** The lines of an NDJSON answer. */
function lines(text: string): unknown[] {
  return text.trim().split("\n").map((line) => JSON.parse(line));
}

Deno.test("pair routes: pair by a link (201), add-ssh and upgrade stream their steps as NDJSON", async () => {
  const { tables, calls } = pairApp();
  const paired = await tables.call("POST", "/boxes/pair", {
    json: { link: "dock://box:1379#code", name: "b1", network: "tailscale" },
    headers: { "x-dock-origin": "app" },
  });
  assertEquals([paired.status, paired.body.name], [201, "b1"]);
  const added = await tables.call("POST", "/boxes/add-ssh", { json: { host: "me@box", name: "b2" } });
  assertEquals(added.status, 200);
  assertEquals(added.response.headers.get("content-type")?.startsWith("application/x-ndjson"), true);
  assertEquals(lines(added.text), [{ step: "connect", host: "me@box" }, { step: "done", box: "b2" }]);
  const upgraded = await tables.call("POST", "/boxes/b1/upgrade");
  assertEquals([upgraded.status, lines(upgraded.text)], [200, [{ step: "send", box: "b1" }]]);
  assertEquals(calls, ["pair dock://box:1379#code b1 tailscale app", "check me@box"]);
  tables.assertEveryRouteSucceeded();
});

Deno.test("pair routes: refusals answer before any stream starts (strict bodies, checks, the token)", async () => {
  const { tables, calls } = pairApp();
  await tables.refusesUnknownField("POST", "/boxes/pair", { link: "dock://box" });
  await tables.refusesUnknownField("POST", "/boxes/add-ssh", { host: "me@box" });
  assertEquals((await tables.call("POST", "/boxes/pair", { json: { link: "http://x" } })).status, 400);
  assertEquals(
    (await tables.call("POST", "/boxes/add-ssh", { json: { host: "-oProxyCommand=x" } })).status,
    400,
  );
  assertEquals(
    (await tables.call("POST", "/boxes/add-ssh", { json: { host: "b", via: "ftp" } })).status,
    400,
  );
  assertEquals((await tables.call("POST", "/boxes/add-ssh", { json: { host: "" } })).status, 400);
  const ghost = await tables.call("POST", "/boxes/ghost/upgrade");
  assertEquals([ghost.status, ghost.body.error.code], [404, "not_found"]);
  await tables.assertEveryRouteNeedsToken();
  assertEquals(calls, []);
});
