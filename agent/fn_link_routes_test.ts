import { assert, assertEquals } from "../tests/assert.ts";
import { agentTables } from "../tests/route_tables.ts";
import { FakeClock } from "../tests/fake_clock.ts";
import { fnLinkRoutes, FnLinks } from "./fn_links.ts";

/** The fn-link route over one enabled laptop plugin, `p1`, and one box, `b1`; time stands still. */
function fnLinkApp() {
  const links = new FnLinks({ clock: new FakeClock(Date.parse("2030-01-01T00:00:00Z")) });
  const tables = agentTables([fnLinkRoutes(links, {
    plugins: { isOn: (id: string) => id === "p1", fetch: () => Promise.resolve(new Response()) },
    boxes: { has: (name: string) => name === "b1", client: () => ({}) as never },
  })]);
  return { tables, links };
}

Deno.test("fn-link route: a signed link for a laptop plugin's page or a box's, each path checked", async () => {
  const { tables, links } = fnLinkApp();
  const laptop = await tables.call("POST", "/plugins/p1/fn-link", { json: { path: "/report/today" } });
  assertEquals([laptop.status, laptop.body.expires], [200, "2030-01-01T00:01:00.000Z"]);
  assert(laptop.body.url.startsWith("/app/fn/laptop/p1/report/today?exp="), laptop.body.url);
  // The link the route made is one the links accept (once) for that plugin and path.
  const url = new URL(laptop.body.url, "http://x");
  await links.check(
    "laptop",
    "p1",
    "/report/today",
    Number(url.searchParams.get("exp")),
    url.searchParams.get("sig")!,
  );
  const bare = await tables.call("POST", "/plugins/p1/fn-link");
  assert(bare.body.url.startsWith("/app/fn/laptop/p1/?exp="), bare.body.url);
  const box = await tables.call("POST", "/plugins/p9/fn-link", { json: { where: "b1" } });
  assert(box.body.url.startsWith("/app/fn/b1/p9/?exp="), box.body.url);
  tables.assertEveryRouteSucceeded();
});

Deno.test("fn-link route: refusals (strict body, a plugin that is off, an unknown box, a climbing path, the token)", async () => {
  const { tables } = fnLinkApp();
  await tables.refusesUnknownField("POST", "/plugins/p1/fn-link", { path: "/" });
  assertEquals((await tables.call("POST", "/plugins/p2/fn-link")).status, 404);
  assertEquals((await tables.call("POST", "/plugins/p1/fn-link", { json: { where: "b9" } })).status, 404);
  assertEquals(
    (await tables.call("POST", "/plugins/p1/fn-link", { json: { path: "/a/../../v1" } })).status,
    400,
  );
  assertEquals((await tables.call("POST", "/plugins/p1/fn-link", { json: { where: "" } })).status, 400);
  await tables.assertEveryRouteNeedsToken();
});
