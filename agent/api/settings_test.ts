import { assert, assertEquals } from "../../tests/assert.ts";
import { agentTables } from "../../tests/route_tables.ts";
import { APP_DOCUMENT_LIMIT, settingsRoutes } from "./settings.ts";

/** The settings routes over a temporary home, a bus that records, and one plugin theme. */
async function settingsApp() {
  const home = await Deno.makeTempDir({ prefix: "dock-settings-" });
  const published: string[] = [];
  const tables = agentTables([settingsRoutes({
    paths: { home },
    bus: {
      publish: (announce) => {
        published.push(`${announce.type} ${JSON.stringify(announce.data)} ${announce.origin}`);
        return { type: announce.type, time: "", data: {} };
      },
    },
    plugins: { themes: () => Promise.resolve([{ id: "p1/dark", name: "Dark" }]) },
  })]);
  return { home, tables, published, close: () => Deno.remove(home, { recursive: true }) };
}

Deno.test("settings routes: app documents, templates (a bad one listed with its error) and themes", async () => {
  const world = await settingsApp();
  try {
    const { tables } = world;
    assertEquals((await tables.call("GET", "/app/board")).body, null);
    const put = await tables.call("PUT", "/app/board", {
      json: { columns: 3 },
      headers: { "x-dock-origin": "app" },
    });
    assertEquals([put.status, put.body], [200, { columns: 3 }]);
    assertEquals((await tables.call("GET", "/app/board")).body, { columns: 3 });
    assertEquals(world.published, ['app.changed {"key":"board"} app']);
    await Deno.mkdir(`${world.home}/templates`);
    await Deno.writeTextFile(
      `${world.home}/templates/fix.json`,
      '{ "agent": "claude", /* why */ "prompt": "fix" }',
    );
    await Deno.writeTextFile(`${world.home}/templates/both.json`, '{ "agent": "claude", "command": "htop" }');
    const templates = (await tables.call("GET", "/templates")).body;
    assertEquals(templates[1], { id: "fix", agent: "claude", prompt: "fix" });
    assertEquals(templates[0].id, "both");
    assert(templates[0].error.includes("either agent or command"), templates[0].error);
    await Deno.mkdir(`${world.home}/themes`);
    await Deno.writeTextFile(`${world.home}/themes/light.json`, '{ "name": "Light" }');
    assertEquals((await tables.call("GET", "/themes")).body, [{ name: "Light", id: "light" }, {
      id: "p1/dark",
      name: "Dark",
    }]);
    tables.assertEveryRouteSucceeded();
  } finally {
    await world.close();
  }
});

Deno.test("settings routes: refusals (a key that is no file name, a document over 1 MB, the token)", async () => {
  const world = await settingsApp();
  try {
    const { tables } = world;
    for (const key of ["..x", "Board", "a%2Fb", ".hidden"]) {
      const answer = await tables.call("PUT", `/app/${key}`, { json: {} });
      assertEquals([answer.status, answer.body.error.code], [400, "invalid_request"], key);
    }
    assertEquals((await tables.call("GET", "/app/..")).status, 404); // normalised away before routing
    const big = await tables.call("PUT", "/app/big", { json: { text: "x".repeat(APP_DOCUMENT_LIMIT) } });
    assertEquals(big.status, 413);
    const nul = await tables.call("PUT", "/app/nul", { json: { text: "a\u0000b" } });
    assertEquals(nul.status, 400);
    await tables.assertEveryRouteNeedsToken();
    assertEquals(world.published, []);
    assertEquals([...Deno.readDirSync(world.home)], []);
  } finally {
    await world.close();
  }
});
