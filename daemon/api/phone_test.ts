import { DockError } from "../../client/errors.ts";
import { assert, assertEquals } from "../../tests/assert.ts";
import { boxTables } from "../../tests/route_tables.ts";
import { PHONE_COOKIE, phoneRedeemRoutes, phoneRoutes, type PhoneRoutesBackend } from "./phone.ts";

const LISTENER = { hostname: "0.0.0.0", port: 1380, addresses: ["10.0.0.5"], fingerprint: "ab:cd" };

/** The phone routes over a fake companion with one paired phone, `p1`; its one code is `good`. */
function phoneApp(listening = true) {
  const calls: string[] = [];
  const phones = [{ id: "p1", name: "Pixel", created: "", address: "" }];
  const box = {
    bus: {
      publish: (announce) => {
        calls.push(`${announce.type} ${JSON.stringify(announce.data)} ${announce.origin}`);
        return {} as never;
      },
    },
    settings: { name: "box1" },
    phone: {
      listener: listening ? LISTENER : null,
      state: () => ({ enabled: listening, error: null }) as never,
      configure: (settings, origin) => {
        calls.push(`configure ${JSON.stringify(settings)} ${origin}`);
        return Promise.resolve(settings as never);
      },
      devices: {
        createCode: () => Promise.resolve({ code: "c0de", expires: new Date("2030-01-01T00:00:00Z") }),
        list: () => phones as never,
        revoke: (id) => {
          calls.push(`revoke ${id}`);
          return true;
        },
        redeem: (code, options) => {
          if (code !== "good") {
            return Promise.reject(new DockError("bad_code", "wrong code", { status: 401 }));
          }
          phones.push({ id: "p2", name: options.name, created: "", address: options.address });
          return Promise.resolve({ id: "p2", credential: "p2.secret" } as never);
        },
      },
    },
  } as PhoneRoutesBackend;
  return { ...boxTables([phoneRoutes(box), phoneRedeemRoutes(box)]), calls };
}

const ENV = { remoteAddr: { transport: "tcp", hostname: "10.0.0.9", port: 5555 } };

Deno.test("phone routes: state, settings, a pairing link, revoke, and redeeming a code (the cookie)", async () => {
  const { app, calls } = phoneApp();
  assertEquals((await app.call("GET", "/phone")).body.enabled, true);
  assertEquals(
    (await app.call("PUT", "/phone", { json: { enabled: true, listen: "0.0.0.0:1380" } })).status,
    200,
  );
  const code = await app.call("POST", "/phone/code");
  assertEquals(code.body, {
    link: "https://10.0.0.5:1380/pair#c0de",
    expires: "2030-01-01T00:00:00.000Z",
    fingerprint: "ab:cd",
  });
  const redeemed = await app.call("POST", "/phone/pair", {
    json: { code: "good", name: "iPhone" },
    env: ENV,
  });
  assertEquals([redeemed.status, redeemed.body], [201, { id: "p2", box: "box1" }]);
  const cookie = redeemed.response.headers.get("set-cookie") ?? "";
  assert(cookie.startsWith(`${PHONE_COOKIE}=p2.secret;`) && cookie.includes("HttpOnly"), cookie);
  assert(!JSON.stringify(redeemed.body).includes("secret"));
  assertEquals((await app.call("DELETE", "/phone/devices/p1")).body.name, "Pixel");
  assertEquals(calls, [
    'configure {"enabled":true,"listen":"0.0.0.0:1380"} api',
    'phone.paired {"id":"p2","name":"iPhone"} phone',
    "revoke p1",
    'phone.revoked {"id":"p1","name":"Pixel"} api',
  ]);
  app.assertEveryRouteSucceeded();
});

Deno.test("phone routes: refusals (not listening, a host outside the certificate, strict bodies, codes)", async () => {
  const off = phoneApp(false);
  const notListening = await off.app.call("POST", "/phone/code");
  assertEquals([notListening.status, notListening.body.error.code], [409, "not_listening"]);
  const { app, calls } = phoneApp();
  const host = await app.call("POST", "/phone/code", { json: { host: "evil.example" } });
  assertEquals([host.status, host.body.error.code], [400, "host_not_in_certificate"]);
  await app.refusesUnknownField("PUT", "/phone", { enabled: true });
  await app.refusesUnknownField("POST", "/phone/code", {});
  await app.refusesUnknownField("POST", "/phone/pair", { code: "good" });
  assertEquals(
    (await app.call("POST", "/phone/pair", { json: { code: "x".repeat(201) }, env: ENV })).status,
    400,
  );
  assertEquals((await app.call("POST", "/phone/pair", { body: "x".repeat(5000), env: ENV })).status, 413);
  assertEquals((await app.call("POST", "/phone/pair", { json: { code: "bad" }, env: ENV })).status, 401);
  assertEquals((await app.call("DELETE", "/phone/devices/ghost")).status, 404);
  assertEquals(calls, []);
});
