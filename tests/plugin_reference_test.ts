/**
 * The plugin SDK and its reference are generated from dock's own sources and stay so: the generated
 * files are current, every event type dock announces is in the event definitions, the SDK reaches
 * nothing outside its folder (it is published, and read by sandboxed workers, as it is), and its two
 * manifests agree.
 */
import { assert, assertEquals, assertRejects, assertThrows } from "./assert.ts";
import { EVENT_CATALOG } from "../core/event_catalog.ts";
import {
  classSource,
  clientAnswers,
  pluginReference,
  wireBody,
  wireParts,
  writePluginReference,
} from "../cli/write_plugin_reference.ts";
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
  for (const [type, file] of await supervisedTypes()) found.set(type, file);
  return found;
}

/**
 * The types the supervisor announces for each scope (`<noun>.<what>`, daemon/supervisor.ts `#publish`):
 * the nouns of the scopes that keep their events (no `events: false`) times the supervisor's `what`s.
 */
async function supervisedTypes(): Promise<Map<string, string>> {
  const supervisor = await Deno.readTextFile(new URL("daemon/supervisor.ts", root));
  const whats = [...supervisor.matchAll(/this\.#publish\("([a-z]+)"/g)].map((match) => match[1]);
  const found = new Map<string, string>();
  for await (const file of walk(new URL("daemon/", root))) {
    if (!file.pathname.endsWith(".ts") || file.pathname.endsWith("_test.ts")) continue;
    const text = await Deno.readTextFile(file);
    for (const match of text.matchAll(/noun: "([a-z]+)",(?<rest>[^}]*)/g)) {
      if (match.groups!.rest.includes("events: false")) continue;
      for (const what of whats) found.set(`${match[1]}.${what}`, file.pathname.slice(root.pathname.length));
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
    const type of [
      "session.created",
      "agent.waiting",
      "worktree.created",
      "queue.added",
      "plugin.enabled",
      "service.crashed",
      "unit.started",
    ]
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

Deno.test("sdk/wire.ts joins every part client/wire.ts gathers, and imports nothing", async () => {
  const parts = wireParts(await Deno.readTextFile(new URL("client/wire.ts", root)));
  assert(parts.length > 1 && parts.includes("wire_events.ts"), parts.join());
  const sdk = await Deno.readTextFile(new URL("sdk/wire.ts", root));
  assertEquals(sdk.match(/^(import|export)\b.*\bfrom\b.*$/gm), null);
  const exported = (text: string) =>
    [...text.matchAll(/^export (?:interface|type|const) (\w+)/gm)].map((m) => m[1]);
  const names: string[] = [];
  for (const part of parts) names.push(...exported(await Deno.readTextFile(new URL(`client/${part}`, root))));
  assertEquals(exported(sdk), names);
  // The laptop's own records are wire types too: its routes' answers are typed, not `unknown`.
  assert(names.includes("AgentStatus") && names.includes("BoxStatus"));
  const reference = await pluginReference();
  assert(/\| `GET status` +\| `boxes:read` +\| read +\| `AgentStatus` +\|/.test(reference.docs));
});

Deno.test("the wire join refuses what would make sdk/wire.ts reach outside its folder", () => {
  assertEquals(wireParts('/** Doc. */\nexport * from "./wire_a.ts";\n\nexport * from "./wire_b.ts";\n'), [
    "wire_a.ts",
    "wire_b.ts",
  ]);
  assertThrows(() => wireParts('export type { X } from "./agent.ts";\n'), Error, "only `export *");
  const part =
    '/**\n * Doc.\n * @module\n */\nimport type { A } from "./wire_a.ts";\n\nexport interface B {\n  a: A;\n}\n';
  assertEquals(wireBody(part), "export interface B {\n  a: A;\n}\n");
  assertThrows(() => wireBody('import { z } from "zod";\nexport type B = 1;\n'), Error, "imports only");
  assertThrows(() => wireBody('import type { H } from "../core/hooks.ts";\n'), Error, "imports only");
});

Deno.test("a client's answers are read from its class and every class it extends", async () => {
  const box = await classSource(root, "client/box.ts", "BoxClient");
  for (const name of ["class BoxClient extends", "class SessionCalls extends", "class PluginCalls {"]) {
    assert(box.includes(`export ${name}`), name);
  }
  const laptop = await classSource(root, "client/agent.ts", "AgentClient");
  assert(laptop.includes("export class PluginCalls {") && !laptop.includes("class SessionCalls"));
  // A route answered by a method of a base class (SessionCalls) is typed.
  const reference = await pluginReference();
  assert(/\| `GET sessions\/:name` +\|[^\n]*\| `Session` +\|/.test(reference.docs));
  await assertRejects(() => classSource(root, "client/box.ts", "NoSuchClient"), Error, "no exported class");
});
