import { join } from "node:path";
import { assert, assertEquals, assertRejects } from "../tests/assert.ts";
import { ConfigError } from "../core/user_files.ts";
import { grantCovers, manifestJsonSchema, normalizePermissions, readManifest } from "./manifest.ts";

/** Reads `value` as a manifest file, in a folder removed once read. */
async function manifest(value: unknown, folder = "demo"): Promise<() => ReturnType<typeof readManifest>> {
  const dir = await Deno.makeTempDir({ prefix: "dock-manifest-" });
  const path = join(dir, "dock-plugin.json");
  await Deno.writeTextFile(path, typeof value === "string" ? value : JSON.stringify(value));
  return async () => {
    try {
      return await readManifest(path, folder);
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  };
}

const BASE = { id: "demo", name: "Demo", version: "1.2.0" };

Deno.test("a manifest reads with comments and its hooks have run or module", async () => {
  const read = await manifest(`// a plugin
    { "id": "demo", "name": "Demo", "version": "1.2.0", "main": "main.ts",
      "hooks": [{ "on": "agent.*", "module": "hooks/a.ts" }, { "on": "before:exec", "run": "true" }],
      "permissions": { "net": ["hooks.example.com", "127.0.0.1:8080"], "env": ["TOKEN"], "scopes": ["events:emit"] } }`);
  const parsed = await read();
  assertEquals(parsed.hooks?.length, 2);
  assertEquals(parsed.permissions?.net, ["hooks.example.com", "127.0.0.1:8080"]);
});

Deno.test("a manifest that asks for what is never granted, or points outside its folder, names the field", async () => {
  const cases: [unknown, string][] = [
    [{ ...BASE, permissions: { run: ["sh"] } }, "permissions.run: is never granted"],
    [{ ...BASE, permissions: { ffi: true } }, "permissions.ffi: is never granted"],
    [{ ...BASE, permissions: { import: ["x.com"] } }, "permissions.import: is never granted"],
    [{ ...BASE, permissions: { commands: ["true"] } }, "permissions.commands: is listed by dock"],
    [{ ...BASE, main: "../other/main.ts" }, "main"],
    [{ ...BASE, main: "/etc/x.ts" }, "main"],
    [{ ...BASE, main: "https://example.com/x.ts" }, "main"],
    [{ ...BASE, hooks: [{ on: "x.y", module: "a/../../b.ts" }] }, "hooks[0].module"],
    [{ ...BASE, hooks: [{ on: "x.y" }] }, "hooks[0].run: a hook has either run"],
    [{ ...BASE, hooks: [{ on: "x.y", run: "true", module: "a.ts" }] }, "hooks[0].run: a hook has either run"],
    [{ ...BASE, permissions: { read: ["../../etc"] } }, "permissions.read[0]"],
    [{ ...BASE, permissions: { net: ["*.example.com"] } }, "permissions.net[0]"],
    [{ ...BASE, permissions: { scopes: ["plugins:write"] } }, "permissions.scopes[0]"],
    [{ ...BASE, ui: ["../secret"] }, "ui[0]"],
    [{ ...BASE, id: "Demo" }, "id"],
    [{ ...BASE, versoin: "1" }, "did you mean"],
  ];
  for (const [value, expected] of cases) {
    const error = await assertRejects(await manifest(value), ConfigError);
    assert(error.message.includes(expected), `${JSON.stringify(value)}: ${error.message}`);
  }
  await assertRejects(await manifest(BASE, "other"), ConfigError, "the plugin's folder is 'other'");
});

Deno.test("grants compare as sets; a manifest that asks for more is not covered", () => {
  const granted = { net: ["a.test"], scopes: ["events:emit", "sessions:read"] };
  assert(grantCovers(granted, { scopes: ["sessions:read"] }));
  assert(!grantCovers(granted, { net: ["b.test"] }));
  assertEquals(normalizePermissions({ env: ["B", "A", "A"] }), {
    read: [],
    write: [],
    net: [],
    env: ["A", "B"],
    scopes: [],
    commands: [],
  });
});

Deno.test("a manifest's shell hooks are asked for: their exact commands, which a grant must cover", async () => {
  const parsed = await (await manifest({
    ...BASE,
    hooks: [
      { on: "agent.waiting", run: "notify-send 'waiting'" },
      { on: "before:exec", run: "true" },
      { on: "agent.finished", run: "true" },
      { on: "agent.*", module: "main.ts" },
    ],
    permissions: { scopes: ["events:emit"] },
  }))();
  assertEquals(parsed.permissions, { scopes: ["events:emit"], commands: ["notify-send 'waiting'", "true"] });
  const grant = normalizePermissions(parsed.permissions);
  assert(grantCovers(grant, parsed.permissions!));
  // The grant of the same plugin before it had shell hooks (or before dock listed them) does not cover them.
  assert(!grantCovers({ scopes: ["events:emit"] }, parsed.permissions!));
  // A command changed by one character is a command not granted.
  assert(!grantCovers(grant, { ...parsed.permissions, commands: ["notify-send 'waiting!'", "true"] }));
  assertEquals((await (await manifest(BASE))()).permissions, undefined);
});

Deno.test("schemas/plugin.schema.json is the generated schema (regenerate: deno task schemas)", async () => {
  const file = JSON.parse(await Deno.readTextFile(new URL("../schemas/plugin.schema.json", import.meta.url)));
  assertEquals(file, JSON.parse(JSON.stringify(manifestJsonSchema())));
});

Deno.test("manifest: engines.dock ranges as npm writes them", async () => {
  const { satisfies, parseRange } = await import("./manifest.ts");
  const cases: [string, string, boolean][] = [
    ["0.1.0", "^0.1", true],
    ["0.2.0", "^0.1", false],
    ["1.4.2", "^1.2", true],
    ["2.0.0", "^1.2", false],
    ["1.2.9", "~1.2.3", true],
    ["1.3.0", "~1.2.3", false],
    ["0.1.0", ">=0.1.0 <1", true],
    ["1.0.0", ">=0.1.0 <1", false],
    ["3.0.0", "^1 || >=3", true],
    ["0.1.0", "*", true],
    ["0.1.0", "0.1", true],
    ["0.1.0", "0.1.1", false],
    ["0.1.0-dev", ">=0.1.0", true],
  ];
  for (const [version, range, expected] of cases) {
    assertEquals(satisfies(version, range), expected, `${version} in ${range}`);
  }
  assertEquals(parseRange("latest"), null);
  assertEquals(parseRange(""), null);
});
