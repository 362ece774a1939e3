import { Hono } from "hono";
import { assert, assertEquals, assertMatch, assertRejects } from "../../tests/assert.ts";
import type { Box, TlsListener } from "../box.ts";
import { EventBus } from "../../core/events.ts";
import { PairingStore } from "../pairing.ts";
import { parseLink } from "../../core/pairing_link.ts";
import { Store } from "../../core/store.ts";
import { errorResponse, mount, RouteTable } from "../../core/http.ts";
import { laptopGate, LaptopStreams } from "./laptop_gate.ts";
import { pairingRoutes, redeemRoutes, socketOnly } from "./pair.ts";
import { defaultLinkHost } from "../tls.ts";
import { tunnelRoutes } from "./tunnel.ts";
import { openWebSocket } from "../../core/ws_client.ts";
import { until } from "../../tests/wait.ts";
import { SYSTEM_CLOCK } from "../../core/clock.ts";
import { STDERR_LOG } from "../../core/log.ts";

const FP = "cd".repeat(32);
const ADDRESSES = ["localhost", "127.0.0.1", "::1", "devbox", "10.1.2.3", "fd00::2"];

/** The part of a Box the pairing routes and the gate use, on a fresh database. */
async function fakeBox(tls: TlsListener | null) {
  const dir = await Deno.makeTempDir();
  const store = new Store(`${dir}/box.db`);
  const box = {
    pairing: new PairingStore(store, { clock: SYSTEM_CLOCK }),
    bus: new EventBus(store),
    settings: { name: "devbox" },
    paths: { socket: `${dir}/none.sock` },
    tls,
    tlsDown: tls ? null : "DOCK_LISTEN=off",
  } as unknown as Box;
  return {
    box,
    async [Symbol.asyncDispose]() {
      store.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

function listener(overrides: Partial<TlsListener> = {}): TlsListener {
  return { hostname: "0.0.0.0", port: 1379, addresses: ADDRESSES, fingerprint: FP, ...overrides };
}

function app(tables: RouteTable[]): Hono {
  const hono = new Hono();
  hono.onError((error) => errorResponse(error, STDERR_LOG));
  mount(hono, "/v1", tables);
  return hono;
}

async function call(
  fetcher: (request: Request) => Response | Promise<Response>,
  method: string,
  path: string,
  options: { body?: unknown; credential?: string } = {},
) {
  const response = await fetcher(
    new Request(`https://box${path}`, {
      method,
      headers: options.credential ? { authorization: `Bearer ${options.credential}` } : {},
      body: options.body === undefined ? undefined : JSON.stringify(options.body),
    }),
  );
  return { status: response.status, body: await response.json() };
}

Deno.test("pair/code: a link to the listener's port, for a host its certificate covers", async () => {
  await using fake = await fakeBox(listener());
  const socket = app([pairingRoutes(fake.box)]);
  const made = await call(socket.fetch, "POST", "/v1/pair/code");
  assertEquals(made.status, 200);
  const link = parseLink(made.body.link);
  assertEquals([link.host, link.port, link.fp], ["10.1.2.3", 1379, FP]);
  assert(Date.parse(made.body.expires) > Date.now());
  const named = await call(socket.fetch, "POST", "/v1/pair/code", { body: { host: "[FD00::2]" } });
  assertMatch(named.body.link, /^dock:\/\/\[fd00::2\]:1379\?/i);
  const foreign = await call(socket.fetch, "POST", "/v1/pair/code", { body: { host: "box.example.com" } });
  assertEquals([foreign.status, foreign.body.error.code], [400, "host_not_in_certificate"]);
});

Deno.test("pair/code: refused with the reason while the box does not listen for laptops", async () => {
  await using fake = await fakeBox(null);
  const answer = await call(app([pairingRoutes(fake.box)]).fetch, "POST", "/v1/pair/code");
  assertEquals([answer.status, answer.body.error.code], [409, "not_listening"]);
  assertMatch(answer.body.error.message, /DOCK_LISTEN=off/);
});

Deno.test("defaultLinkHost: the bound address, else the first outward IPv4, IPv6, then a name", () => {
  assertEquals(defaultLinkHost(listener({ hostname: "192.168.1.9" })), "192.168.1.9");
  assertEquals(defaultLinkHost(listener()), "10.1.2.3");
  assertEquals(
    defaultLinkHost(listener({ hostname: "::", addresses: ["localhost", "::1", "devbox", "fd00::2"] })),
    "fd00::2",
  );
  assertEquals(defaultLinkHost(listener({ addresses: ["localhost", "127.0.0.1", "devbox"] })), "devbox");
  assertEquals(defaultLinkHost(listener({ addresses: ["localhost", "127.0.0.1"] })), "127.0.0.1");
});

/** The TLS side: the gate in front of redeem, the refused socket-only routes and a never-ending stream. */
function tlsSide(box: Box, streams: LaptopStreams) {
  const endless = new RouteTable("test").add("GET", "/endless", () =>
    new Response(
      new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode(": connected\n\n"));
        },
      }),
      { headers: { "content-type": "text/event-stream" } },
    ));
  const gate = laptopGate(box, app([socketOnly(pairingRoutes(box)), redeemRoutes(box), endless]), streams);
  const info = {
    remoteAddr: { transport: "tcp", hostname: "10.9.9.9", port: 50000 },
  } as Deno.ServeHandlerInfo<
    Deno.NetAddr
  >;
  return (request: Request) => gate(request, info);
}

Deno.test("the laptop gate: 401 without a credential, redeem without one, socket-only routes refused", async () => {
  await using fake = await fakeBox(listener());
  const fetcher = tlsSide(fake.box, new LaptopStreams());
  for (const path of ["/v1/endless", "/v1/laptops", "/v1/nowhere"]) {
    assertEquals((await call(fetcher, "GET", path)).status, 401, path);
    assertEquals((await call(fetcher, "GET", path, { credential: "nope" })).status, 401, path);
  }
  const { code } = await fake.box.pairing.createCode();
  const paired = await call(fetcher, "POST", "/v1/pair", { body: { code, name: "laptop" } });
  assertEquals(paired.status, 201);
  assertEquals(paired.body.box, "devbox");
  assertEquals(fake.box.pairing.list().map((l) => l.name), ["laptop"]);
  const again = await call(fetcher, "POST", "/v1/pair", { body: { code, name: "laptop" } });
  assertEquals([again.status, again.body.error.code], [403, "pairing_refused"]);
  const credential = paired.body.credential;
  for (
    const [method, path] of [["POST", "/v1/pair/code"], ["GET", "/v1/laptops"], ["DELETE", "/v1/laptops/x"]]
  ) {
    const answer = await call(fetcher, method, path, { credential });
    assertEquals([answer.status, answer.body.error.code], [403, "socket_only"], path);
  }
  const large = await call(fetcher, "POST", "/v1/pair", { body: { code: "x".repeat(5000), name: "laptop" } });
  assertEquals(large.status, 413);
});

Deno.test("the laptop gate: failures are counted per remote address", async () => {
  await using fake = await fakeBox(listener());
  const fetcher = tlsSide(fake.box, new LaptopStreams());
  const statuses: number[] = [];
  for (let i = 0; i < 6; i++) {
    statuses.push(
      (await call(fetcher, "POST", "/v1/pair", { body: { code: "a".repeat(32), name: "x" } })).status,
    );
  }
  assertEquals(statuses, [403, 403, 403, 403, 403, 429]);
});

/** The TLS side of `box` with revocation wired to its streams, and a way to pair a laptop through it. */
function revocable(box: Parameters<typeof tlsSide>[0]) {
  const streams = new LaptopStreams();
  box.pairing.onRevoke((laptop) => streams.revoke(laptop.id));
  const fetcher = tlsSide(box, streams);
  const pair = async (name: string) => {
    const { code } = await box.pairing.createCode();
    return (await call(fetcher, "POST", "/v1/pair", { body: { code, name } })).body;
  };
  return { streams, fetcher, pair };
}

Deno.test("the laptop gate: revoking a laptop cuts its open streams and only its own", async () => {
  await using fake = await fakeBox(listener());
  const { streams, fetcher, pair } = revocable(fake.box);
  const [one, two] = [await pair("one"), await pair("two")];
  const open = async (credential: string) => {
    const response = await fetcher(
      new Request("https://box/v1/endless", { headers: { authorization: `Bearer ${credential}` } }),
    );
    const reader = response.body!.getReader();
    assertEquals(new TextDecoder().decode((await reader.read()).value), ": connected\n\n");
    return reader;
  };
  const first = await open(one.credential);
  const second = await open(two.credential);
  assertEquals([streams.count(one.id), streams.count(two.id)], [1, 1]);
  assert(fake.box.pairing.revoke(one.id));
  await assertRejects(() => first.read());
  assertEquals([streams.count(one.id), streams.count(two.id)], [0, 1]);
  // The other laptop's stream stays open; the revoked one is refused from now on. Everything here runs
  // in this process: a request answered after the revocation means its effects on streams have landed.
  const pending = second.read();
  let race = "open";
  pending.then(() => race = "read", () => race = "read");
  assertEquals((await call(fetcher, "GET", "/v1/endless", { credential: one.credential })).status, 401);
  assertEquals(race, "open");
  await second.cancel();
  assertEquals(streams.count(two.id), 0, "a stream the laptop closes releases its tie");
});

Deno.test("the laptop gate: DELETE pair unpairs the calling laptop, never another", async () => {
  await using fake = await fakeBox(listener());
  const { fetcher, pair } = revocable(fake.box);
  const [one, two] = [await pair("one"), await pair("two")];
  assertEquals((await call(fetcher, "DELETE", "/v1/pair")).status, 401, "no credential, nothing to unpair");
  const stream = await fetcher(
    new Request("https://box/v1/endless", { headers: { authorization: `Bearer ${one.credential}` } }),
  );
  const reader = stream.body!.getReader();
  await reader.read();
  const revoked: unknown[] = [];
  fake.box.bus.subscribe((event) => event.type === "laptop.revoked" && revoked.push(event.data));
  const gone = await call(fetcher, "DELETE", "/v1/pair", { credential: one.credential });
  assertEquals([gone.status, gone.body.id, gone.body.name], [200, one.id, "one"]);
  assertEquals(fake.box.pairing.list().map((l) => l.name), ["two"]);
  assertEquals(revoked, [{ id: one.id, name: "one" }]);
  await assertRejects(() => reader.read()); // its open streams end
  assertEquals((await call(fetcher, "DELETE", "/v1/pair", { credential: one.credential })).status, 401);
  assertEquals((await call(fetcher, "GET", "/v1/endless", { credential: one.credential })).status, 401);
  // The other laptop's credential unpairs only itself.
  assertEquals((await call(fetcher, "DELETE", "/v1/pair", { credential: two.credential })).body.id, two.id);
  assertEquals(fake.box.pairing.list(), []);
});

Deno.test("the laptop gate: a WebSocket goes to its route holding the tie; revoking closes it with 1008", async () => {
  await using fake = await fakeBox(listener());
  const streams = new LaptopStreams();
  fake.box.pairing.onRevoke((laptop) => streams.revoke(laptop.id));
  const gate = laptopGate(fake.box, app([redeemRoutes(fake.box), tunnelRoutes()]), streams);
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, gate);
  // A TCP echo server behind the tunnel, as a worktree's server would be.
  const echo = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  (async () => {
    for await (const conn of echo) {
      (async () => {
        const buffer = new Uint8Array(1024);
        for (let n = await conn.read(buffer); n !== null; n = await conn.read(buffer)) {
          await conn.write(buffer.subarray(0, n));
        }
      })().catch(() => {});
    }
  })().catch(() => {});
  const { code } = await fake.box.pairing.createCode();
  const info = { remoteAddr: { transport: "tcp", hostname: "10.9.9.9", port: 50000 } };
  const fetcher = (request: Request) => gate(request, info as Deno.ServeHandlerInfo<Deno.NetAddr>);
  const one = (await call(fetcher, "POST", "/v1/pair", { body: { code, name: "one" } })).body;
  const tunnel = async (port: number) =>
    await openWebSocket(await Deno.connect({ hostname: "127.0.0.1", port: server.addr.port }), {
      path: `/v1/tunnel?port=${port}`,
      headers: { authorization: `Bearer ${one.credential}` },
    });
  try {
    const echoPort = (echo.addr as Deno.NetAddr).port;
    const ws = await tunnel(echoPort);
    await ws.sendBinary(new TextEncoder().encode("ping"));
    assertEquals(new TextDecoder().decode((await ws.next())?.data), "ping");
    assertEquals(streams.count(one.id), 1, "the open socket holds its tie");
    // Closing it releases the tie.
    await ws.close(1000);
    await until(() => Promise.resolve(streams.count(one.id) === 0));

    // A refused upgrade holds nothing.
    const refused = await assertRejects(() => tunnel(1));
    assertMatch(refused.message, /502/);
    assertEquals(streams.count(one.id), 0);

    // Revoking the laptop closes its socket with 1008, straight from the route's pump.
    const open = await tunnel(echoPort);
    assert(fake.box.pairing.revoke(one.id));
    assertEquals(await open.next(), null);
    assertEquals([open.closeCode, open.closeReason], [
      1008,
      "this laptop's pairing with the box was revoked",
    ]);
    assertEquals(streams.count(one.id), 0);
  } finally {
    echo.close();
    await server.shutdown();
  }
});
