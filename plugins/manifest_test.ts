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
  });
});

Deno.test("schemas/plugin.schema.json is the generated schema (regenerate: deno task schemas)", async () => {
  const file = JSON.parse(await Deno.readTextFile(new URL("../schemas/plugin.schema.json", import.meta.url)));
  assertEquals(file, JSON.parse(JSON.stringify(manifestJsonSchema())));
});
