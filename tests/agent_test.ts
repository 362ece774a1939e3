/**
 * Whole-system tests of the laptop agent: the gate (an auth matrix over every route), the local box,
 * the relay (streaming, 503 and 502), and the merged event stream (box events carry `box`, resume
 * after a reconnect of the box and with Last-Event-ID).
 */
import { join } from "node:path";
import { assert, assertEquals, assertRejects, assertStringIncludes } from "./assert.ts";
import { Agent } from "../agent/agent.ts";
import { agentApp } from "../agent/api/server.ts";
import { AgentClient } from "../client/agent.ts";
import { exists } from "../core/files.ts";
import { clientPaths } from "../core/paths.ts";
import { DockError } from "../client/errors.ts";
import type { DockEvent } from "../client/wire.ts";
import { makeDirs, makeRepo, startAgent, startBox } from "./harness.ts";
import { Changes, until, untilEvent } from "./wait.ts";

/** Every route of the agent's API (the relay's with two methods), as registered: `:params` and `*` filled in below. */
const ROUTES: [string, string][] = [
  ["GET", "/v1/status"],
  ["GET", "/v1/sessions"],
  ["POST", "/v1/refresh"],
  ["GET", "/v1/events"],
  ["POST", "/v1/events"],
  ["POST", "/v1/stop"],
  ["GET", "/v1/boxes"],
  ["POST", "/v1/boxes/add-local"],
  ["POST", "/v1/boxes/add-ssh"],
  ["POST", "/v1/boxes/pair"],
  ["DELETE", "/v1/boxes/:box"],
  ["POST", "/v1/boxes/:box/upgrade"],
  ["POST", "/v1/forwards"],
  ["DELETE", "/v1/forwards/:id"],
  ["POST", "/v1/routes"],
  ["DELETE", "/v1/routes"],
  ["GET", "/v1/app/:key"],
  ["PUT", "/v1/app/:key"],
  ["GET", "/v1/templates"],
  ["GET", "/v1/themes"],
  ["GET", "/v1/hooks"],
  ["PUT", "/v1/hooks"],
  ["GET", "/v1/queue"],
  ["POST", "/v1/queue"],
  ["GET", "/v1/queue/:id"],
  ["PATCH", "/v1/queue/:id"],
  ["POST", "/v1/queue/:id/retry"],
  ["POST", "/v1/queue/:id/send"],
  ["DELETE", "/v1/queue/:id"],
  ["POST", "/v1/broadcast"],
  ["GET", "/v1/plugins"],
  ["GET", "/v1/plugins/:id"],
  ["POST", "/v1/plugins/:id/enable"],
  ["POST", "/v1/plugins/:id/disable"],
  ["POST", "/v1/plugins/:id/ui-api"],
  ["PUT", "/v1/plugins/:id/files"],
  ["DELETE", "/v1/plugins/:id"],
  ["GET", "/v1/plugins/:id/config"],
  ["PUT", "/v1/plugins/:id/config"],
  ["POST", "/v1/plugins/:id/test-event"],
  ["POST", "/v1/plugins/:id/fn-link"],
  ["POST", "/v1/setup/port80"],
  ["POST", "/v1/upgrade"],
  ["GET", "/v1/networks"],
  ["GET", "/v1/networks/:name/peers"],
  ["POST", "/v1/networks/:name/login"],
  ["GET", "/v1/discover"],
  ["GET", "/v1/editors"],
  ["POST", "/v1/editors/open"],
  ["GET", "/v1/ssh-config"],
  ["POST", "/v1/ssh-config"],
  ["GET", "/v1/kits"],
  ["GET", "/v1/kits/installed"],
  ["GET", "/v1/kits/:id"],
  ["DELETE", "/v1/kits/:id"],
  ["POST", "/v1/kits/add"],
  ["POST", "/v1/kits/preview"],
  ["POST", "/v1/kits/remove"],
  ["POST", "/v1/kits/save"],
  ["POST", "/v1/kits/:id/apply"],
  ["POST", "/v1/kits/:id/update"],
  ["GET", "/v1/mcp"],
  ["POST", "/v1/mcp"],
  ["DELETE", "/v1/mcp"],
  ...(["GET", "POST", "PUT", "PATCH", "DELETE"] as const).flatMap((method) => [
    [method, "/v1/plugins/:id/fn"] as [string, string],
    [method, "/v1/plugins/:id/fn/*"] as [string, string],
  ]),
  ["GET", "/v1/plugins/:id/*"],
  ["GET", "/v1/boxes/:box/sessions/:name/attach"],
  ["GET", "/v1/boxes/:box/api/*"],
  ["POST", "/v1/boxes/:box/api/*"],
  ["GET", "/v1/no/such/route"],
];

/** The app's static files (issue 14): open without a token, behind the Host and Origin checks. */
const APP_ROUTES: [string, string][] = [
  ["GET", "/app"],
  ["GET", "/app/*"],
  ["HEAD", "/app"],
  ["HEAD", "/app/*"],
  ["GET", "/app/plugins/*"],
  ["HEAD", "/app/plugins/*"],
  // A plugin's `fn` page by a signed link that lasts a minute (agent/fn_links.ts): no token either.
  ["GET", "/app/fn/*"],
];

/** A concrete path for a route pattern. */
function concrete(pattern: string): string {
  return pattern.replace(":box", "local").replace(/:[a-z]+/g, "x").replace("*", "locations");
}

Deno.test("the auth matrix below covers every route the agent's API registers", async () => {
  const dirs = await makeDirs();
  const env: Record<string, string> = {
    DOCK_STATE_DIR: dirs.state,
    HOME: dirs.home,
    DOCK_HOME: dirs.dockHome,
  };
  const agent = new Agent(clientPaths({ get: (key) => env[key] }));
  try {
    const listed = new Set([...ROUTES, ...APP_ROUTES].map(([method, path]) => `${method} ${path}`));
    const registered = agentApp(agent, { port: 1378 }).routes
      // ALL routes are the 405 answers of known paths (and the gate), except the relay's.
      .filter((route) => route.method !== "ALL" || route.path.endsWith("/api/*"))
      .map((route) => `${route.method === "ALL" ? "GET" : route.method} ${route.path}`);
    assertEquals(registered.filter((route) => !listed.has(route)), [], "routes missing from ROUTES");
  } finally {
    agent.close();
    await Deno.remove(dirs.root, { recursive: true });
  }
});

/** A request with a Host header of our choosing (fetch does not let a caller set Host). */
async function rawStatus(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
): Promise<number> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    const lines = [`${method} ${path} HTTP/1.1`, ...Object.entries(headers).map(([k, v]) => `${k}: ${v}`)];
    const body = method === "GET" || method === "DELETE" ? "" : "{}";
    lines.push(`content-length: ${body.length}`, "connection: close", "", body);
    await conn.write(new TextEncoder().encode(lines.join("\r\n")));
    const buffer = new Uint8Array(1024);
    const n = await conn.read(buffer);
    return Number(new TextDecoder().decode(buffer.subarray(0, n ?? 0)).split(" ")[1]);
  } finally {
    conn.close();
  }
}

async function call(url: string, method: string, path: string, headers: Record<string, string>) {
  const response = await fetch(`${url}${path}`, {
    method,
    headers,
    body: method === "GET" || method === "DELETE" ? undefined : "{}",
    signal: AbortSignal.timeout(5000),
  });
  const text = await response.text();
  return { status: response.status, text, headers: response.headers };
}

Deno.test("the gate refuses every route without the token, with a wrong one, a foreign Host or Origin", async () => {
  const dirs = await makeDirs();
  await using box = await startBox({ dirs });
  await using agent = await startAgent(dirs);
  const good = { authorization: `Bearer ${agent.token}` };
  for (const [method, pattern] of ROUTES) {
    const path = concrete(pattern);
    const label = `${method} ${path}`;
    const none = await call(agent.url, method, path, {});
    assertEquals(none.status, 401, `${label} without a token`);
    assertEquals(JSON.parse(none.text).error.code, "unauthorized");
    assertEquals((await call(agent.url, method, path, { authorization: "Bearer nope" })).status, 401, label);
    assertEquals(await rawStatus(agent.port, method, path, { ...good, host: "evil.example" }), 403, label);
    assertEquals(
      await rawStatus(agent.port, method, path, { ...good, host: `attacker.com:${agent.port}` }),
      403,
      `${label} DNS rebinding`,
    );
    assertEquals(
      await rawStatus(agent.port, method, path, { ...good, host: "127.0.0.1:1" }),
      403,
      `${label} port`,
    );
    assertEquals(
      (await call(agent.url, method, path, { ...good, origin: "https://evil.example" })).status,
      403,
      label,
    );
    // The token as a query parameter is for WebSocket upgrades only, and only on a WebSocket route:
    // upgrade headers on another route do not open it.
    assertEquals(
      (await call(agent.url, method, `${path}?token=${agent.token}`, {})).status,
      401,
      `${label} ?token=`,
    );
    if (!path.endsWith("/attach")) {
      assertEquals(
        await rawStatus(agent.port, method, `${path}?token=${agent.token}`, {
          host: `127.0.0.1:${agent.port}`,
          upgrade: "websocket",
          connection: "Upgrade",
          "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
          "sec-websocket-version": "13",
        }),
        401,
        `${label} ?token= with upgrade headers`,
      );
    }
  }
  // The allowed origins get CORS headers; a preflight needs no token.
  for (
    const origin of [
      "tauri://localhost",
      "http://tauri.localhost",
      "https://tauri.localhost",
      "http://localhost:1420",
      "http://localhost:1439",
    ]
  ) {
    const answer = await call(agent.url, "GET", "/v1/status", { ...good, origin });
    assertEquals(answer.status, 200, origin);
    assertEquals(answer.headers.get("access-control-allow-origin"), origin);
    assertEquals(answer.headers.get("x-content-type-options"), "nosniff");
  }
  assertEquals(
    (await call(agent.url, "GET", "/v1/status", { ...good, origin: "http://localhost:1440" })).status,
    403,
  );
  const preflight = await call(agent.url, "OPTIONS", "/v1/status", { origin: "http://localhost:1420" });
  assertEquals(preflight.status, 204);
  assertStringIncludes(preflight.headers.get("access-control-allow-headers") ?? "", "authorization");
  assertEquals(
    await rawStatus(agent.port, "GET", "/v1/status", { ...good, host: `localhost:${agent.port}` }),
    200,
  );
  const stop = await call(agent.url, "POST", "/v1/stop", good);
  assertEquals(stop.status, 403, "no app can stop the agent");
  // The app's files need no token (they hold no data) and carry a strict policy; the Host and Origin
  // checks still apply, nothing but GET and HEAD is open, and the page's own origin is not CORS.
  for (const path of ["/app/", "/app/app.js", "/app/config.json"]) {
    const file = await call(agent.url, "GET", path, {});
    assertEquals(file.status, 200, path);
    assertStringIncludes(file.headers.get("content-security-policy") ?? "", "script-src 'self'");
    assertEquals(file.headers.get("x-content-type-options"), "nosniff");
    assertEquals(await rawStatus(agent.port, "GET", path, { host: "evil.example" }), 403, `${path} Host`);
    assertEquals((await call(agent.url, "GET", path, { origin: "https://evil.example" })).status, 403, path);
  }
  assertEquals((await call(agent.url, "GET", "/app/nope.js", {})).status, 404);
  assertEquals((await call(agent.url, "POST", "/app/", {})).status, 401);
  assertEquals((await call(agent.url, "GET", "/application", {})).status, 401);
  const own = `http://127.0.0.1:${agent.port}`;
  assertEquals((await call(agent.url, "GET", "/v1/status", { ...good, origin: own })).status, 200);
  assertEquals((await call(agent.url, "GET", "/v1/status", { origin: own })).status, 401);
  const mode = (await Deno.stat(join(dirs.state, "client", "ui-token"))).mode! & 0o777;
  assertEquals(mode, 0o600);
  void box;
});

Deno.test("the relay reaches the local box, streams answers, and says 503 or 502 when it cannot", async () => {
  const dirs = await makeDirs();
  const box = await startBox({ dirs });
  await using agent = await startAgent(dirs);
  const client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  try {
    const added = await client.addLocal();
    assertEquals([added.name, added.online], ["local", true]);
    const local = client.box("local");
    const repo = await makeRepo(join(dirs.home, "work"));
    const location = await local.addLocation({ name: "app", path: repo });
    assertEquals(location.worktrees.length, 1);
    assertEquals((await box.client.locations()).map((l) => l.name), ["app"], "it reached the box");
    // The path after the box's own segment is what goes on, whatever the box is called.
    assertEquals((await client.addLocal("api")).online, true);
    assertEquals((await client.box("api").locations()).map((l) => l.name), ["app"]);
    await client.removeBox("api");
    // Errors from the box pass through as they are.
    const missing = await assertRejects(() => local.location("nope"), DockError);
    assertEquals((missing as DockError).status, 404);
    // Streamed answers come through as they are produced.
    const started = Date.now();
    const lines: { line?: string; at: number }[] = [];
    for await (const line of local.execStream({ location: "app", command: "echo one; sleep 1; echo two" })) {
      lines.push({ line: line.line, at: Date.now() - started });
    }
    assertEquals(lines.filter((l) => l.line).map((l) => l.line), ["one", "two"]);
    assert(lines[1].at - lines[0].at >= 700, "the first line arrived before the command finished");
    const status = await client.status();
    assertEquals(status.boxes.map((b) => [b.name, b.online]), [["local", true]]);

    // Killed mid-request: the request went out, the box may have acted: 502.
    const running = join(repo, ".exec-running");
    const pending = local.exec({ location: "app", command: `touch ${running}; sleep 5` }).catch((error) =>
      error
    );
    await until(() => exists(running), { watch: running }); // the command runs: the request is with the box
    await box.stop({ kill: true });
    const broken = await pending;
    assert(broken instanceof DockError, String(broken));
    assertEquals((broken as DockError).status, 502);
    // Stopped: the request never reached it: 503, and the box is reported offline.
    const unreachable = await assertRejects(() => local.locations(), DockError);
    assertEquals((unreachable as DockError).status, 503);
    const offline = await client.refresh();
    assertEquals(offline.boxes[0].online, false);
  } finally {
    client.close();
    await box.stop();
  }
});

Deno.test("merged events carry the box, and resume after the box restarts and with Last-Event-ID", async () => {
  const dirs = await makeDirs();
  const first = await startBox({ dirs });
  await using agent = await startAgent(dirs, { env: { DOCK_AGENT_HEALTH_MS: "200" } });
  const client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  try {
    await client.addLocal();
    const seen: DockEvent[] = [];
    // The stream under test is what the waits read: its reader says when it brought one more.
    const heard = new Changes();
    const controller = new AbortController();
    const reading = (async () => {
      for await (const event of client.events({ after: 0, signal: controller.signal })) {
        seen.push(event);
        heard.changed();
      }
    })();
    await first.client.emit({ type: "build.one", data: { n: 1 } });
    await client.emit({ type: "laptop.thing", data: { n: 2 } });
    const one = await until(() => seen.find((e) => e.type === "build.one"), { wake: heard });
    assertEquals([one.box, one.origin, one.data], ["local", "test", { n: 1 }]);
    const own = await until(() => seen.find((e) => e.type === "laptop.thing"), { wake: heard });
    assertEquals(own.box, undefined);

    // The box goes away and comes back; what it journaled meanwhile is not lost.
    await first.stop({ kill: true });
    await until(() => seen.some((e) => e.type === "box.offline"), { wake: heard });
    await using second = await startBox({ dirs });
    await second.client.emit({ type: "build.two", data: { n: 3 } });
    const two = await until(() => seen.find((e) => e.type === "build.two"), {
      wake: heard,
      timeoutMs: 15_000,
    });
    assertEquals(two.box, "local");
    assert(seen.some((e) => e.type === "box.online"));
    controller.abort();
    await reading;
    assertEquals(
      seen.filter((e) => e.type === "build.one").length,
      1,
      "nothing repeated after the reconnect",
    );

    // A client resuming with Last-Event-ID gets exactly what came after.
    const resumed: string[] = [];
    const expected = seen.filter((e) => e.id! > one.id!).map((e) => e.type);
    for await (const event of client.events({ after: one.id!, signal: AbortSignal.timeout(10_000) })) {
      resumed.push(event.type);
      if (resumed.length === expected.length) break;
    }
    assertEquals(resumed.slice(0, expected.length), expected);
  } finally {
    client.close();
  }
});

Deno.test("GET /v1/sessions: every box's sessions from the agent's copy, current after each box event", async () => {
  const dirs = await makeDirs();
  const box = await startBox({ dirs });
  await using agent = await startAgent(dirs);
  const client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  try {
    await client.addLocal();
    const repo = await makeRepo(join(dirs.home, "work"));
    await box.client.addLocation({ name: "app", path: repo });
    // The agent may have read the box's list already (on `box.added`): its copy has "one" once the
    // box's event for it has come through, which a read made sooner does not wait for.
    const start = await client.emit({ type: "test.marker", data: {} });
    await box.client.createSession({ location: "app", command: "sh", name: "one" });
    await untilEvent(
      { client },
      (e) => e.box === "local" && e.type === "session.created" && e.data?.session === "one",
      { after: start.id },
    );
    const names = async () => (await client.sessions())[0].sessions.map((s) => s.name).sort();
    const first = await client.sessions();
    assertEquals(first.map((b) => [b.box.name, b.box.online, b.stale, b.error]), [[
      "local",
      true,
      false,
      null,
    ]]);
    assertEquals(await names(), ["one"]);
    // Made on the box itself, not through the agent: the first read after the agent heard of it has it
    // (the copy is kept until a box event says it changed; without the event it would be kept a minute).
    const marker = await client.emit({ type: "test.marker", data: {} });
    await box.client.createSession({ location: "app", command: "sh", name: "two" });
    await untilEvent(
      { client },
      (e) => e.box === "local" && e.type === "session.created" && e.data?.session === "two",
      { after: marker.id },
    );
    assertEquals(await names(), ["one", "two"]);
    assertEquals((await client.sessions({ box: "local" })).map((b) => b.box.name), ["local"]);
    const unknown = await assertRejects(() => client.sessions({ box: "ghost" }), DockError);
    assertEquals((unknown as DockError).status, 404);
    // The box gone: its last known sessions, said to be stale.
    await box.stop({ kill: true });
    await until(async () => (await client.status()).boxes[0].online === false, { on: client });
    const gone = await client.sessions();
    assertEquals([gone[0].box.online, gone[0].stale, gone[0].sessions.length], [false, true, 2]);
  } finally {
    client.close();
  }
});
