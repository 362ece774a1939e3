/**
 * The plugin SDK and its reference are generated from dock's own sources and stay so: the generated
 * files are current, every event type dock announces is in the event definitions, the SDK reaches
 * nothing outside its folder (it is published, and read by sandboxed workers, as it is), and its two
 * manifests agree.
 */
import { assert, assertEquals } from "./assert.ts";
import { EVENT_CATALOG } from "../core/event_catalog.ts";
import { clientAnswers, writePluginReference } from "../cli/write_plugin_reference.ts";
import { SDK_VERSION } from "../sdk/mod.ts";
import { BOX_ROUTES, LAPTOP_ROUTES } from "../sdk/generated.ts";
import { matchRoute } from "../sdk/testing.ts";

const root = new URL("../", import.meta.url);

Deno.test("sdk/ and docs/plugin-reference.md are generated (regenerate: deno run -A cli/write_plugin_reference.ts)", async () => {
  assertEquals(await writePluginReference(true), []);
});

/** Literal event types the sources announce: `type: "a.b"` in a publish, and the queue's `#announce("…")`. */
async function announcedTypes(): Promise<Map<string, string>> {
  const found = new Map<string, string>();
  for (const folder of ["daemon", "agent", "core", "plugins"]) {
    for await (const file of walk(new URL(`${folder}/`, root))) {
      if (!file.pathname.endsWith(".ts") || file.pathname.endsWith("_test.ts")) continue;
      const text = await Deno.readTextFile(file);
      const patterns = [
        /(?:publish|publishAll)\(\s*\{\s*type:\s*"([a-z_]+(?:\.[a-z_]+)+)"/g,
        /bus\??\.publish\(\{\s*\n\s*type:\s*"([a-z_]+(?:\.[a-z_]+)+)"/g,
        /announce: \{ type: "([a-z_]+(?:\.[a-z_]+)+)"/g,
        /#announce\("([a-z_]+(?:\.[a-z_]+)+)"/g,
      ];
      for (const pattern of patterns) {
        for (const match of text.matchAll(pattern)) {
          found.set(match[1], file.pathname.slice(root.pathname.length));
        }
      }
    }
  }
  return found;
}

async function* walk(dir: URL): AsyncGenerator<URL> {
  for await (const entry of Deno.readDir(dir)) {
    const url = new URL(entry.name + (entry.isDirectory ? "/" : ""), dir);
    if (entry.isDirectory) yield* walk(url);
    else if (entry.isFile) yield url;
  }
}

Deno.test("every event type dock announces is in core/event_catalog.ts (and so typed in the SDK)", async () => {
  const announced = await announcedTypes();
  // Guards against a reader that finds nothing.
  for (
    const type of ["session.created", "agent.waiting", "worktree.created", "queue.added", "plugin.enabled"]
  ) {
    assert(announced.has(type), `the scan missed ${type}`);
  }
  const missing = [...announced].filter(([type]) => !(type in EVENT_CATALOG)).map(([t, f]) => `${t} (${f})`);
  assertEquals(missing, []);
});

Deno.test("the SDK imports nothing outside its folder, and its deno.json and package.json agree", async () => {
  for await (const entry of Deno.readDir(new URL("sdk/", root))) {
    if (!entry.name.endsWith(".ts")) continue;
    const text = await Deno.readTextFile(new URL(`sdk/${entry.name}`, root));
    const specifiers = [...text.matchAll(/^(?:import|export)[^"';]*from\s+"([^"]+)"/gm)].map((m) => m[1]);
    assertEquals(specifiers.filter((s) => !/^\.\/[a-z_]+\.ts$/.test(s)), [], entry.name);
  }
  const deno = JSON.parse(await Deno.readTextFile(new URL("sdk/deno.json", root)));
  const npm = JSON.parse(await Deno.readTextFile(new URL("sdk/package.json", root)));
  assertEquals([deno.name, deno.version], [npm.name, npm.version]);
  assertEquals(deno.version, SDK_VERSION);
  assertEquals(Object.keys(deno.exports), Object.keys(npm.exports));
  for (const file of [...Object.values(deno.exports) as string[], ...npm.files as string[]]) {
    await Deno.stat(new URL(file, new URL("sdk/", root)));
  }
});

Deno.test("the routes' answers come from the clients' return types, and paths match as the host matches them", () => {
  const answers = clientAnswers(
    `  sessions(): Promise<Session[]> {
    return this.transport.json("/v1/sessions");
  }
  send(name: string, body: SendText): Promise<Session> {
    return this.transport.json(\`/v1/sessions/\${enc(name)}/send\`, { body });
  }
  odd(): Promise<NotWire> {
    return this.transport.json("/v1/odd");
  }`,
    new Set(["Session", "SendText"]),
  );
  assertEquals([...answers], [["GET sessions", "Session[]"], ["POST sessions/:/send", "Session"]]);
  assertEquals(matchRoute(BOX_ROUTES, "GET", "sessions")?.scope, "sessions:read");
  assertEquals(matchRoute(BOX_ROUTES, "POST", "sessions/web-1/send")?.scope, "sessions:send");
  assertEquals(matchRoute(BOX_ROUTES, "GET", "plugins"), undefined);
  assert(LAPTOP_ROUTES.some((r) => r.scope === "boxes:read"));
});
