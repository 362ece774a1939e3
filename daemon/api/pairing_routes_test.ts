import { DockError } from "../../client/errors.ts";
import type { Laptop } from "../../client/wire.ts";
import { assertEquals } from "../../tests/assert.ts";
import { boxTables } from "../../tests/route_tables.ts";
import { pairingRoutes, redeemRoutes } from "./pair.ts";

// pair_test.ts holds pairing links and the laptop gate in front; this file walks every route of the
// two pairing tables once to its success, and through the refusals each answers before anything changes.

const LAPTOP: Laptop = { id: "l1", name: "work", created: "2030-01-01T00:00:00.000Z" } as Laptop;

/** The pairing tables over a fake pairing store with one laptop, `l1`, whose one code is `good`. */
function pairingApp() {
  const calls: string[] = [];
  const laptops: Laptop[] = [LAPTOP];
  const box = {
    bus: {
      publish: (announce: { type: string; data?: unknown; origin?: string }) => {
        calls.push(`${announce.type} ${JSON.stringify(announce.data)} ${announce.origin}`);
        return {};
      },
    },
    settings: { name: "box1" },
    tls: { hostname: "10.0.0.5", port: 1379, addresses: ["10.0.0.5"], fingerprint: "ab".repeat(32) },
    tlsDown: null,
    pairing: {
      createCode: () => Promise.resolve({ code: "a".repeat(26), expires: new Date("2030-01-01T00:10:00Z") }),
      list: () => laptops,
      revoke: (id: string) => {
        const at = laptops.findIndex((l) => l.id === id);
        if (at < 0) return false;
        laptops.splice(at, 1);
        return true;
      },
      redeem: (code: string, options: { name: string; address: string }) => {
        if (code !== "good") return Promise.reject(new DockError("bad_code", "wrong code", { status: 401 }));
        calls.push(`redeem ${options.name} ${options.address}`);
        laptops.push({ ...LAPTOP, id: "l2", name: options.name });
        return Promise.resolve({ id: "l2", credential: "l2.secret" });
      },
    },
  };
  const tables = boxTables([pairingRoutes(box as never), redeemRoutes(box as never)]);
  return { ...tables, calls };
}

const REMOTE = { remoteAddr: { transport: "tcp", hostname: "10.0.0.9", port: 5555 } };

Deno.test("pairing routes: a link, the laptops, revoking one, redeeming a code, and unpairing itself", async () => {
  const { app, calls } = pairingApp();
  const code = await app.call("POST", "/pair/code");
  assertEquals([code.status, code.body.expires], [200, "2030-01-01T00:10:00.000Z"], code.text);
  assertEquals(code.body.link.startsWith("dock://10.0.0.5:1379"), true, code.body.link);
  assertEquals((await app.call("GET", "/laptops")).body, [LAPTOP]);
  const paired = await app.call("POST", "/pair", { json: { code: "good", name: "home" }, env: REMOTE });
  assertEquals([paired.status, paired.body], [201, { id: "l2", credential: "l2.secret", box: "box1" }]);
  assertEquals((await app.call("DELETE", "/laptops/l1")).body.id, "l1");
  // The TLS listener's gate puts the laptop it authenticated in the env: only that one is unpaired.
  const self = await app.call("DELETE", "/pair", { env: { ...REMOTE, laptop: { ...LAPTOP, id: "l2" } } });
  assertEquals([self.status, self.body.id], [200, "l2"]);
  assertEquals(calls, [
    "redeem home 10.0.0.9",
    'laptop.paired {"id":"l2","name":"home"} dock',
    'laptop.revoked {"id":"l1","name":"work"} api',
    'laptop.revoked {"id":"l2","name":"work"} api',
  ]);
  app.assertEveryRouteSucceeded();
});

Deno.test("pairing routes: refusals (strict bodies, a host outside the certificate, codes, unknown laptops)", async () => {
  const { app, calls } = pairingApp();
  await app.refusesUnknownField("POST", "/pair/code", {});
  await app.refusesUnknownField("POST", "/pair", { code: "good", name: "x" });
  assertEquals((await app.call("POST", "/pair/code", { json: { host: "evil.example" } })).status, 400);
  assertEquals(
    (await app.call("POST", "/pair", { json: { code: "x".repeat(201), name: "x" }, env: REMOTE })).status,
    400,
  );
  assertEquals(
    (await app.call("POST", "/pair", { json: { code: "bad", name: "x" }, env: REMOTE })).status,
    401,
  );
  assertEquals((await app.call("DELETE", "/laptops/ghost")).status, 404);
  assertEquals(calls, []);
});
