/**
 * Whole-system tests of the phone companion: a real `dockd` whose phone listener is switched on and off
 * through `dockd phone`, reached over real TLS with the box's CA pinned; a phone paired by the link
 * `dockd phone pair` prints (once, with its cookie set); what a phone credential may do tested as a
 * matrix over every route of the box's route table; revocation ending the phone's open streams; and
 * `GET phone` never showing a credential.
 */
import { join } from "node:path";
import {
  assert,
  assertEquals,
  assertMatch,
  assertNotEquals,
  assertRejects,
  assertStringIncludes,
} from "./assert.ts";
import { connectTlsWebSocket } from "../core/ws_client.ts";
import type { PhonePairCode, PhoneState } from "../client/wire.ts";
import { Box } from "../daemon/box.ts";
import { boxRoutes } from "../daemon/api/server.ts";
import { PHONE_SCOPE } from "../daemon/api/phone.ts";
import { boxPaths } from "../core/paths.ts";
import { makeDirs, makeRepo, runCli, startAgent, startBox, type TestBox } from "./harness.ts";
import { untilEvent } from "./wait.ts";
import { AgentClient } from "../client/agent.ts";
import { DatabaseSync } from "node:sqlite";

const COOKIE = "__Host-dock-phone";

async function dockd<T>(box: TestBox, args: string[]): Promise<T> {
  const out = await box.cli(["phone", ...args, "--json"]);
  assertEquals(out.code, 0, out.stderr);
  return JSON.parse(out.stdout) as T;
}

function caOf(box: TestBox): Promise<string> {
  return Deno.readTextFile(join(box.dirs.state, "box", "tls", "ca.pem"));
}

/** Every event the box journalled, as text (read from its database, as only the daemon does). */
function journal(box: TestBox): string {
  const db = new DatabaseSync(join(box.dirs.state, "box", "dockd.db"), { readOnly: true, timeout: 5000 });
  try {
    return JSON.stringify(db.prepare("SELECT * FROM events").all());
  } finally {
    db.close();
  }
}

/** A request to the phone listener trusting only the box's CA, as the phone page would make it. */
async function phoneFetch(
  box: TestBox,
  port: number,
  path: string,
  init: {
    method?: string;
    body?: string;
    cookie?: string;
    headers?: Record<string, string>;
    signal?: AbortSignal;
  } = {},
): Promise<Response> {
  const client = Deno.createHttpClient({ caCerts: [await caOf(box)], poolMaxIdlePerHost: 0 });
  try {
    const headers: Record<string, string> = { ...init.headers };
    if (init.cookie) headers.cookie = `${COOKIE}=${init.cookie}`;
    const response = await fetch(`https://127.0.0.1:${port}${path}`, {
      method: init.method ?? "GET",
      headers,
      body: init.body,
      client,
      signal: init.signal,
    } as RequestInit);
    return response;
  } finally {
    client.close();
  }
}

/** POSTs a code to `phone/pair` as the pairing page does. */
function redeem(
  box: TestBox,
  port: number,
  code: string,
  headers: Record<string, string> = { "x-dock-phone": "1" },
) {
  return phoneFetch(box, port, "/v1/phone/pair", {
    method: "POST",
    body: JSON.stringify({ code, name: "test phone" }),
    headers: { "content-type": "application/json", ...headers },
  });
}

/** `dockd phone pair`: the link and its code (the fragment). */
async function pairCode(box: TestBox): Promise<{ link: string; code: string; port: number }> {
  const made = await dockd<PhonePairCode>(box, ["pair", "--host", "127.0.0.1"]);
  const match = /^https:\/\/127\.0\.0\.1:(\d+)\/pair#([a-z2-7]{32})$/.exec(made.link);
  assert(match, `unexpected link ${made.link}`);
  return { link: made.link, code: match[2], port: Number(match[1]) };
}

/** Pairs a phone; answers its credential (read from the Set-Cookie, as the browser would keep it). */
async function pairPhone(box: TestBox): Promise<{ credential: string; id: string; port: number }> {
  const { code, port } = await pairCode(box);
  const response = await redeem(box, port, code);
  const body = await response.json();
  assertEquals(response.status, 201, JSON.stringify(body));
  const cookie = response.headers.get("set-cookie") ?? "";
  const credential = new RegExp(`^${COOKIE}=([^;]+);`).exec(cookie)?.[1];
  assert(credential, `no credential cookie in ${cookie}`);
  assertEquals(Object.keys(body).sort(), ["box", "id"], "the credential travels only in the cookie");
  return { credential, id: body.id, port };
}

/** The box's route table as the phone listener mounts it (built from a Box of its own, never started). */
async function phoneRouteTable(): Promise<{ method: string; path: string }[]> {
  const dirs = await makeDirs();
  const env = new Map([["HOME", dirs.home], ["DOCK_STATE_DIR", dirs.state], ["DOCK_HOME", dirs.dockHome]]);
  const box = new Box(boxPaths({ get: (key) => env.get(key) }));
  try {
    return boxRoutes(box, { listener: "phone" }).flatMap((t) =>
      t.routes.map((r) => ({ method: r.method, path: r.path }))
    );
  } finally {
    await box.close();
    await Deno.remove(dirs.root, { recursive: true });
  }
}

Deno.test("phone companion: on and off, a link paired once, a credential scoped by a route matrix, revocation, persistence", async () => {
  await using box = await startBox();
  await makeRepo(join(box.dirs.home, "work"));
  await box.client.addLocation({ name: "app", path: join(box.dirs.home, "work", "app") });
  await box.client.createSession({ location: "app", command: "sh", name: "s1" });

  // Off by default, and no link while off.
  const off = await dockd<PhoneState>(box, ["status"]);
  assertEquals([off.enabled, off.url, off.devices], [false, null, []]);
  const noLink = await box.cli(["phone", "pair"]);
  assertEquals(noLink.code, 1);
  assertStringIncludes(noLink.stderr, "dockd phone on");

  // On: a TLS listener whose certificate chains to the box's CA (and to nothing a system trusts).
  const on = await dockd<PhoneState>(box, ["on", "--listen", "127.0.0.1:0"]);
  assert(on.enabled && on.url, JSON.stringify(on));
  const port = Number(new URL(on.url).port);
  const manifest = await phoneFetch(box, port, "/manifest.webmanifest");
  assertEquals(manifest.status, 200);
  assertEquals((await manifest.json()).display, "standalone");
  assertStringIncludes(manifest.headers.get("content-security-policy") ?? "", "script-src 'self'");
  for (const icon of ["/icon-192.png", "/icon-512.png"]) {
    const png = new Uint8Array(await (await phoneFetch(box, port, icon)).arrayBuffer());
    assertEquals([...png.subarray(1, 4)], [0x50, 0x4e, 0x47], `${icon} is a PNG`);
  }
  await assertRejects(
    () => fetch(`https://127.0.0.1:${port}/manifest.webmanifest`),
    TypeError,
  );
  const pairPage = await phoneFetch(box, port, "/pair");
  assertStringIncludes(await pairPage.text(), `<script src="/pair.js">`);

  // The link: printed with a QR code drawn in half blocks; works once.
  const human = await box.cli(["phone", "pair", "--host", "127.0.0.1"]);
  assertEquals(human.code, 0, human.stderr);
  assertMatch(human.stdout, /[▀▄█]{7}/);
  assertMatch(human.stdout, /https:\/\/127\.0\.0\.1:\d+\/pair#[a-z2-7]{32}/);

  const { code } = await pairCode(box);
  const noCsrf = await redeem(box, port, code, {});
  assertEquals([noCsrf.status, (await noCsrf.json()).error.code], [403, "csrf"]);
  const crossOrigin = await redeem(box, port, code, { "x-dock-phone": "1", origin: "https://evil.example" });
  assertEquals([crossOrigin.status, (await crossOrigin.json()).error.code], [403, "cross_origin"]);
  const first = await redeem(box, port, code);
  assertEquals(first.status, 201);
  const setCookie = first.headers.get("set-cookie") ?? "";
  const firstId = (await first.json()).id;
  for (const attribute of ["Secure", "HttpOnly", "SameSite=Strict", "Path=/"]) {
    assertStringIncludes(setCookie, attribute);
  }
  const again = await redeem(box, port, code);
  assertEquals([again.status, (await again.json()).error.code], [403, "pairing_refused"]);

  const { credential, id } = await pairPhone(box);
  const secret = credential.split(".")[1];

  // Without the cookie, or with a laptop's style of credential, nothing.
  const anonymous = await phoneFetch(box, port, "/v1/sessions");
  assertEquals([anonymous.status, (await anonymous.json()).error.code], [401, "unauthorized"]);
  const bearer = await phoneFetch(box, port, "/v1/sessions", {
    headers: { authorization: `Bearer ${credential}` },
  });
  assertEquals(bearer.status, 401);
  await bearer.body?.cancel();

  // The matrix: every route of the box, with the phone's cookie (and the CSRF header, so only the scope
  // decides). Outside the scope: 403 naming it, before any body is read. Inside: never 401 or 403.
  const routes = await phoneRouteTable();
  assert(routes.length > 60, `only ${routes.length} routes`);
  const inScope = new Set(PHONE_SCOPE);
  const seen = new Set<string>();
  for (const route of routes) {
    const key = `${route.method} ${route.path}`;
    seen.add(key);
    const path = "/v1" + route.path.replace(/:name\b/g, "s1").replace(/:[a-z]+/g, "x").replace(/\*/g, "x");
    const query = route.path === "/sessions/:name/wait"
      ? "?for=idle,running,waiting,finished&timeout=1s"
      : "";
    const abort = new AbortController();
    const response = await phoneFetch(box, port, path + query, {
      method: route.method,
      cookie: credential,
      headers: { "x-dock-phone": "1", "content-type": "application/json" },
      body: route.method === "GET"
        ? undefined
        : route.path.endsWith("/send")
        ? JSON.stringify({ text: "true" })
        : "{}",
      signal: abort.signal,
    });
    if (inScope.has(key)) {
      assert(
        ![401, 403].includes(response.status),
        `${key} is in the phone's scope but answered ${response.status}`,
      );
      abort.abort(); // event streams never end by themselves
      await response.body?.cancel().catch(() => {});
    } else {
      const answer = await response.json();
      assertEquals(
        [response.status, answer.error?.code],
        [403, "phone_forbidden"],
        `${key}: ${JSON.stringify(answer)}`,
      );
    }
  }
  for (const entry of PHONE_SCOPE) assert(seen.has(entry), `${entry} is in the scope but no route`);
  for (
    const refused of [
      "POST /exec",
      "PUT /env",
      "PUT /hooks",
      "PUT /flows",
      "POST /plugins/:id/enable",
      "PUT /phone",
    ]
  ) {
    assert(seen.has(refused) && !inScope.has(refused), `${refused} must be in the table and refused`);
  }

  // What a phone may do works end to end: read sessions, send a prompt.
  const sessions = await phoneFetch(box, port, "/v1/sessions", { cookie: credential });
  assertEquals((await sessions.json()).map((s: { name: string }) => s.name), ["s1"]);

  // GET phone (and the events about it) never show a credential.
  const state = await dockd<PhoneState>(box, ["status"]);
  assertEquals(state.devices.map((d) => d.id).sort(), [id, firstId].sort());
  assert(!JSON.stringify(state).includes(secret), "GET phone shows no credential");
  await untilEvent(box.client, (e) => e.type === "phone.changed");
  await untilEvent(box.client, (e) => e.type === "phone.paired" && e.data?.id === id);
  assert(!journal(box).includes(secret), "no event carries a credential");

  // Revocation closes the phone's open streams: its event stream and its attach socket.
  const stream = await phoneFetch(box, port, "/v1/events", { cookie: credential });
  assertEquals(stream.status, 200);
  const ws = await connectTlsWebSocket({
    hostname: "127.0.0.1",
    port,
    caCerts: [await caOf(box)],
    path: "/v1/sessions/s1/attach?cols=80&rows=24",
    headers: { cookie: `${COOKIE}=${credential}`, origin: `https://127.0.0.1:${port}` },
  });
  await ws.sendBinary(new TextEncoder().encode("echo phone-$((6*7))\r"));
  await ws.readUntil((text) => text.includes("phone-42"));
  const ended = (async () => {
    try {
      for await (const _ of stream.body!) { /* events until cut */ }
      return "ended";
    } catch {
      return "cut";
    }
  })();
  const revoked = await dockd<{ id: string }>(box, ["revoke", id]);
  assertEquals(revoked.id, id);
  assertNotEquals(await ended, undefined);
  const closed = await assertRejects(() => ws.readUntil(() => false, 5000));
  assertStringIncludes(closed.message, "closed (1008)");
  const after = await phoneFetch(box, port, "/v1/sessions", { cookie: credential });
  assertEquals(after.status, 401);
  await after.body?.cancel();
  await untilEvent(box.client, (e) => e.type === "phone.revoked" && e.data?.id === id);

  // A cross-site WebSocket (another page driving the phone's cookie) is refused.
  const other = await pairPhone(box);
  const ca = await caOf(box);
  await assertRejects(() =>
    connectTlsWebSocket({
      hostname: "127.0.0.1",
      port,
      caCerts: [ca],
      path: "/v1/sessions/s1/attach",
      headers: { cookie: `${COOKIE}=${other.credential}`, origin: "https://evil.example" },
    })
  );

  // Off closes the listener; the setting outlives a restart.
  const offAgain = await dockd<PhoneState>(box, ["off"]);
  assertEquals([offAgain.enabled, offAgain.url], [false, null]);
  await assertRejects(() => phoneFetch(box, port, "/manifest.webmanifest"));
  await dockd<PhoneState>(box, ["on", "--listen", "127.0.0.1:0"]);
  await box.stop();
  await using restarted = await startBox({ dirs: box.dirs });
  const back = await dockd<PhoneState>(restarted, ["status"]);
  assert(back.enabled && back.url, "on again after a restart");
  assertEquals(back.devices.map((d) => d.id).sort(), [firstId, other.id].sort(), "revoked stays revoked");
});

Deno.test("phone pairing refuses repeated bad codes from one address, then even a good one", async () => {
  await using box = await startBox();
  const on = await dockd<PhoneState>(box, ["on", "--listen", "127.0.0.1:0"]);
  const port = Number(new URL(on.url!).port);
  for (let i = 0; i < 5; i++) {
    const bad = await redeem(box, port, "a".repeat(32));
    assertEquals(bad.status, 403);
    await bad.body?.cancel();
  }
  const { code } = await pairCode(box);
  const locked = await redeem(box, port, code);
  assertEquals([locked.status, (await locked.json()).error.code], [429, "rate_limited"]);
  // Laptop pairing codes and phone codes are apart: the laptop's table knows nothing of phones.
  assertEquals(await box.client.laptops(), []);
});

Deno.test("dock phone BOX …: the laptop switches a box's phone companion and pairs a phone through the relay", async () => {
  const dirs = await makeDirs();
  await using box = await startBox({ dirs });
  await using agent = await startAgent(dirs);
  const client = new AgentClient({ url: agent.url, token: agent.token });
  try {
    assertEquals((await client.addLocal("devbox")).online, true);
  } finally {
    client.close();
  }
  const env = {
    PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
    HOME: dirs.home,
    DOCK_HOME: dirs.dockHome,
    DOCK_STATE_DIR: dirs.state,
    DOCK_AGENT_PORT: String(agent.port),
    NO_COLOR: "1",
  };
  const dock = async <T>(...args: string[]): Promise<T> => {
    const out = await runCli("dock", ["phone", ...args, "--json"], { env, cwd: dirs.home });
    assertEquals(out.code, 0, out.stderr);
    return JSON.parse(out.stdout) as T;
  };
  const on = await dock<PhoneState>("on", "devbox", "--listen", "127.0.0.1:0");
  assert(on.enabled && on.url);
  const made = await dock<PhonePairCode>("pair", "devbox", "--host", "127.0.0.1");
  const code = made.link.split("#")[1];
  const paired = await redeem(box, Number(new URL(on.url).port), code);
  assertEquals(paired.status, 201);
  const { id } = await paired.json();
  assertEquals((await dock<PhoneState>("status", "devbox")).devices.map((d) => d.id), [id]);
  assertEquals((await dock<{ id: string }>("revoke", "devbox", id)).id, id);
  assertEquals((await dock<PhoneState>("off", "devbox")).url, null);
});
