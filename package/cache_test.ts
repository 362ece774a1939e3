import { DatabaseSync } from "node:sqlite";
import { assertEquals } from "../tests/assert.ts";
import { join } from "../core/posix_path.ts";
import { CACHE, CACHE_TEMPLATE, cacheMembers, placeCache, SERVERS_CACHE, templateFrom } from "./cache.ts";

/** A cache file as Deno 2 makes it (the columns that matter here), with `rows` of URL and data. */
function writeCache(file: string, table: string, rows: [string, string][]): void {
  const db = new DatabaseSync(file);
  db.exec("PRAGMA journal_mode = WAL;");
  db.exec(`CREATE TABLE ${table} (specifier TEXT PRIMARY KEY, data TEXT NOT NULL)`);
  for (const [specifier, data] of rows) db.prepare(`INSERT INTO ${table} VALUES (?, ?)`).run(specifier, data);
  db.close();
}

function readCache(file: string, table: string): [string, string][] {
  const db = new DatabaseSync(file);
  try {
    return db.prepare(`SELECT specifier, data FROM ${table} ORDER BY specifier`).all()
      .map((row) => [String(row.specifier), String(row.data)]);
  } finally {
    db.close();
  }
}

Deno.test("cache: a template names the release's modules under a placeholder; placed, under the release's root", async () => {
  const dir = await Deno.makeTempDir({ prefix: "dock-cache-test-" });
  try {
    const built = join(dir, "built");
    const template = join(built, CACHE_TEMPLATE);
    await Deno.mkdir(join(template, "npm"), { recursive: true });
    writeCache(join(template, "v8_code_cache_v2"), "codecache", [
      [`file://${built}/src/cli/serve.js`, "serve code"],
      ["file:///tmp/scratch/load.js", "the loader's code"],
      ["ext:deno_node/zlib.js", "the runtime's code"],
    ]);
    writeCache(join(template, "dep_analysis_cache_v2"), "moduleinfocache", [
      [`file://${built}/src/cli/serve.js`, "serve imports"],
    ]);
    templateFrom(template, built);
    // Only the cache files stay, each whole (no write-ahead log beside it).
    assertEquals([...Deno.readDirSync(template)].map((entry) => entry.name).sort(), [
      "dep_analysis_cache_v2",
      "v8_code_cache_v2",
    ]);
    assertEquals(readCache(join(template, "v8_code_cache_v2"), "codecache"), [
      ["ext:deno_node/zlib.js", "the runtime's code"],
      ["file:///dock-release/src/cli/serve.js", "serve code"],
    ]);

    // Installed elsewhere: the same rows, under that root.
    const installed = join(dir, "home", ".dock", "versions", "0.1.0-abc");
    await Deno.mkdir(join(installed, ".."), { recursive: true });
    await Deno.rename(built, installed);
    placeCache(installed);
    assertEquals(readCache(join(installed, CACHE, "v8_code_cache_v2"), "codecache"), [
      ["ext:deno_node/zlib.js", "the runtime's code"],
      [`file://${installed}/src/cli/serve.js`, "serve code"],
    ]);
    assertEquals(readCache(join(installed, CACHE, "dep_analysis_cache_v2"), "moduleinfocache"), [
      [`file://${installed}/src/cli/serve.js`, "serve imports"],
    ]);
    // The template is as built (a release's files never change once installed).
    assertEquals(readCache(join(installed, CACHE_TEMPLATE, "dep_analysis_cache_v2"), "moduleinfocache"), [
      ["file:///dock-release/src/cli/serve.js", "serve imports"],
    ]);

    // Caches there already are Deno's: left as they are.
    writeCache(join(installed, CACHE, "node_analysis_cache_v2"), "cjsanalysiscache", [["file:///x.js", "x"]]);
    placeCache(installed);
    assertEquals(readCache(join(installed, CACHE, "node_analysis_cache_v2"), "cjsanalysiscache"), [
      ["file:///x.js", "x"],
    ]);
    assertEquals([...Deno.readDirSync(installed)].map((entry) => entry.name).sort(), [CACHE, CACHE_TEMPLATE]);

    // A release without a template (built before there was one) gets nothing.
    const older = join(dir, "older");
    await Deno.mkdir(older);
    placeCache(older);
    assertEquals([...Deno.readDirSync(older)], []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("cache: the servers' caches are a set of their own, made, placed and sent beside the commands'", async () => {
  const dir = await Deno.makeTempDir({ prefix: "dock-cache-test-" });
  try {
    const built = join(dir, "built");
    const template = join(built, CACHE_TEMPLATE);
    await Deno.mkdir(join(template, SERVERS_CACHE, "npm"), { recursive: true });
    writeCache(join(template, "v8_code_cache_v2"), "codecache", [
      [`file://${built}/src/cli/dockd.js`, "dockd as a command runs it"],
    ]);
    writeCache(join(template, SERVERS_CACHE, "v8_code_cache_v2"), "codecache", [
      [`file://${built}/src/cli/dockd.js`, "dockd as a server runs it"],
      ["file:///tmp/home/x.js", "not the release's"],
    ]);
    templateFrom(template, built);
    assertEquals([...Deno.readDirSync(template)].map((entry) => entry.name).sort(), [
      SERVERS_CACHE,
      "v8_code_cache_v2",
    ]);
    assertEquals([...Deno.readDirSync(join(template, SERVERS_CACHE))].map((entry) => entry.name), [
      "v8_code_cache_v2",
    ]);

    const installed = join(dir, "versions", "0.1.0-abc");
    await Deno.mkdir(join(installed, ".."), { recursive: true });
    await Deno.rename(built, installed);
    // Sent by a laptop for where the box will install it: both sets, as tar members under the top folder.
    const members = await cacheMembers(join(installed, CACHE_TEMPLATE), installed, "dock");
    assertEquals(members.map((member) => member.path), [
      "dock/cache",
      "dock/cache/servers",
      "dock/cache/v8_code_cache_v2",
      "dock/cache/servers/v8_code_cache_v2",
    ]);
    placeCache(installed);
    assertEquals(readCache(join(installed, CACHE, "v8_code_cache_v2"), "codecache"), [
      [`file://${installed}/src/cli/dockd.js`, "dockd as a command runs it"],
    ]);
    assertEquals(readCache(join(installed, CACHE, SERVERS_CACHE, "v8_code_cache_v2"), "codecache"), [
      [`file://${installed}/src/cli/dockd.js`, "dockd as a server runs it"],
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
