import { DockError } from "../../client/errors.ts";
import { assertEquals } from "../../tests/assert.ts";
import { boxTables } from "../../tests/route_tables.ts";
import { kitRoutes } from "./kits.ts";

/** The box's kit routes over fake kits and one location, `app`; the gate refuses kit `evil`. */
function kitsApp() {
  const calls: string[] = [];
  const { app, gates } = boxTables([kitRoutes({
    kits: {
      onBox: (tools) => Promise.resolve({ tools: tools ?? null } as never),
      apply: (name, kit, origin) => {
        calls.push(`apply ${name} ${kit.id} ${origin}`);
        return Promise.resolve({ id: kit.id } as never);
      },
      remove: (name) => {
        calls.push(`remove ${name}`);
        return Promise.resolve({} as never);
      },
    },
    locations: {
      get: (name) => {
        if (name !== "app") throw new DockError("not_found", `no location ${name}`, { status: 404 });
        return {} as never;
      },
    },
  })], { refuse: (_action, target) => (target.value as { id?: string } | null)?.id === "evil" });
  return { app, gates, calls };
}

Deno.test("box kit routes: what runs where (with the tools asked), apply and remove through the gate", async () => {
  const { app, gates, calls } = kitsApp();
  assertEquals((await app.call("GET", "/kits?tools=git, gh,")).body, { tools: ["git", "gh"] });
  assertEquals((await app.call("GET", "/kits")).body, { tools: null });
  const kit = { id: "web", version: "1.0", files: { "setup.sh": "#!/bin/sh\necho hi\n" } };
  assertEquals((await app.call("PUT", "/locations/app/kit", { json: kit })).status, 200);
  assertEquals((await app.call("DELETE", "/locations/app/kit")).status, 200);
  assertEquals(gates, [
    'config.change app {"file":"kit","location":"app","value":{"id":"web","version":"1.0"}}',
    'config.change app {"file":"kit","location":"app","value":null}',
  ]);
  assertEquals(calls, ["apply app web api", "remove app"]);
  app.assertEveryRouteSucceeded();
});

Deno.test("box kit routes: refusals (strict kit.json, a path that climbs, an unknown location, the gate)", async () => {
  const { app, gates, calls } = kitsApp();
  await app.refusesUnknownField("PUT", "/locations/app/kit", { id: "web" }, "invalid_kit");
  for (
    const kit of [{ id: "Web Kit" }, { id: "web", files: { "../x": "" } }, {
      id: "web",
      files: { "/etc/x": "" },
    }]
  ) {
    const answer = await app.call("PUT", "/locations/app/kit", { json: kit });
    assertEquals(answer.status >= 400 && answer.status < 500, true, JSON.stringify(kit));
  }
  assertEquals(
    (await app.refused("PUT", "/locations/ghost/kit", 404, "not_found", { json: { id: "web" } })).entered,
    0,
  );
  assertEquals((await app.call("DELETE", "/locations/ghost/kit")).status, 404);
  assertEquals(gates, []);
  assertEquals(
    (await app.refused("PUT", "/locations/app/kit", 403, "gate_refused", { json: { id: "evil" } })).entered,
    0,
  );
  assertEquals(calls, []);
});
