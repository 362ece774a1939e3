import { Hono } from "hono";
import { errorResponse, mount } from "../../core/http.ts";
import { assertEquals } from "../../tests/assert.ts";
import type { Box } from "../box.ts";
import { laptopGate, LaptopStreams } from "./laptop_gate.ts";
import { phoneGate } from "./phone.ts";
import { boxRoutes } from "./server.ts";
import { STDERR_LOG } from "../../core/log.ts";

// Each route table of the box takes its backend and leaves authentication to the listener's gate in
// front of the whole app (the socket's mode on the socket, a laptop's credential on TLS, a phone's
// cookie on the phone listener). In memory, here: every route of each listener refuses a stranger,
// and no backend is touched (the box below records any call made on it).

/** A box whose every member is a function-or-object that records being called. */
function recordingBox(touched: string[]): Box {
  const member = (path: string): unknown =>
    new Proxy(function () {}, {
      get: (_target, key) => key === "then" ? undefined : member(`${path}.${String(key)}`),
      apply: () => {
        touched.push(path);
        return member(`${path}()`);
      },
    });
  return member("box") as Box;
}

const INFO = { remoteAddr: { transport: "tcp" as const, hostname: "10.9.9.9", port: 50000 } };

/** Every `METHOD path` the app of `listener` serves, with `:param`s and `*` filled in. */
function concrete(tables: { routes: { method: string; path: string }[] }[]): [string, string][] {
  return tables.flatMap((t) => t.routes).map((
    r,
  ) => [r.method, `/v1${r.path.replaceAll(/:(\w+)/g, "$1-x").replace(/\*$/, "a")}`]);
}

for (const listener of ["tls", "phone"] as const) {
  Deno.test(`the box's ${listener} listener: every route refuses a caller without a credential, touching nothing`, async () => {
    const touched: string[] = [];
    const box = recordingBox(touched);
    // The stores the gates ask: no credential is known.
    const unknown = () => Promise.resolve(null);
    const tables = boxRoutes(box, { listener });
    const app = new Hono();
    app.onError((error) => errorResponse(error, STDERR_LOG));
    mount(app, "/v1", tables, { gate: () => Promise.reject(new Error("a gate ran")) });
    const gate = listener === "tls"
      ? laptopGate(
        { pairing: { authenticate: unknown }, log: STDERR_LOG } as unknown as Box,
        app,
        new LaptopStreams(),
      )
      : phoneGate(
        { phone: { devices: { authenticate: unknown } }, log: STDERR_LOG },
        app,
        new LaptopStreams({ device: "phone" }),
        () => new Response("page"),
      );
    touched.length = 0;
    const redeem = listener === "tls" ? "POST /v1/pair" : "POST /v1/phone/pair";
    const routes = concrete(tables).filter(([method, path]) => `${method} ${path}` !== redeem);
    assertEquals(routes.length > 60, true, `${routes.length} routes`);
    for (const [method, path] of routes) {
      for (const credential of [undefined, "l1.wrong"]) {
        const headers: Record<string, string> = { "x-dock-phone": "1" };
        if (credential) {
          headers.authorization = `Bearer ${credential}`;
          headers.cookie = `__Host-dock-phone=${credential}`;
        }
        const body = method === "GET" ? undefined : "{}";
        const answer = await gate(new Request(`https://box:1379${path}`, { method, headers, body }), INFO);
        assertEquals(answer.status, 401, `${method} ${path} ${credential ?? "no credential"}`);
        await answer.body?.cancel();
      }
    }
    assertEquals(touched, [], "a refused request reached the box");
  });
}
