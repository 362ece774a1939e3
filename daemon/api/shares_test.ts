import { DockError } from "../../client/errors.ts";
import { assertEquals } from "../../tests/assert.ts";
import { boxTables } from "../../tests/route_tables.ts";
import { shareRoutes } from "./shares.ts";

/** The share routes over fake shares and one worktree, `app/feat`; the gate refuses port 22. */
function sharesApp() {
  const calls: string[] = [];
  const { app, gates } = boxTables([shareRoutes({
    shares: {
      list: () => [] as never,
      open: (request, origin) => {
        calls.push(`open ${request.location}/${request.worktree}:${request.port} ${origin}`);
        return Promise.resolve({ id: "s1", url: "https://x.trycloudflare.com" } as never);
      },
      remove: (id) => {
        if (id !== "s1") return Promise.reject(new DockError("not_found", `no share ${id}`, { status: 404 }));
        calls.push(`remove ${id}`);
        return Promise.resolve({ id } as never);
      },
    },
    worktrees: {
      get: (location, name) => {
        if (`${location}/${name}` !== "app/feat") {
          throw new DockError("not_found", "no worktree", { status: 404 });
        }
        return {} as never;
      },
    },
  })], { refuse: (_action, target) => target.port === 22 });
  return { app, gates, calls };
}

Deno.test("share routes: open (share.open gate, in the location), list, remove", async () => {
  const { app, gates, calls } = sharesApp();
  const opened = await app.call("POST", "/shares", {
    json: { location: "app", worktree: "feat", port: 3000 },
  });
  assertEquals([opened.status, opened.body.id], [201, "s1"]);
  assertEquals(gates, ['share.open app {"location":"app","worktree":"feat","port":3000}']);
  assertEquals((await app.call("GET", "/shares")).body, []);
  assertEquals((await app.call("DELETE", "/shares/s1")).status, 200);
  assertEquals(calls, ["open app/feat:3000 api", "remove s1"]);
  app.assertEveryRouteSucceeded();
});

Deno.test("share routes: refusals (an unknown worktree before the gate, the gate, strict body)", async () => {
  const { app, gates, calls } = sharesApp();
  const ghost = await app.refused("POST", "/shares", 404, "not_found", {
    json: { location: "app", worktree: "x" },
  });
  assertEquals([ghost.entered, gates], [0, []]);
  const refused = await app.refused("POST", "/shares", 403, "gate_refused", {
    json: { location: "app", worktree: "feat", port: 22 },
  });
  assertEquals(refused.entered, 0);
  await app.refusesUnknownField("POST", "/shares", { location: "app", worktree: "feat" });
  for (const port of [0, 70000, "80"]) {
    assertEquals(
      (await app.call("POST", "/shares", { json: { location: "app", worktree: "feat", port } })).status,
      400,
    );
  }
  assertEquals((await app.call("DELETE", "/shares/s9")).status, 404);
  assertEquals(calls, []);
});
