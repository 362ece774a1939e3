/**
 * `plugin new ID`: a working plugin skeleton: a manifest (with `$schema`), a module typed with the SDK
 * (`import { definePlugin } from "@dock/plugin"`), a test with the SDK's testing module, and a `deno.json`
 * whose import map resolves `@dock/plugin` for the author's editor and `deno test`. Where the plugin runs,
 * the plugin host resolves the same specifier to its own SDK (plugins/sdk_map.ts): the module names no
 * path of this machine, so the folder can be installed on any box as it is.
 *
 * @module
 */
import { join } from "../core/posix_path.ts";
import { DockError } from "../client/errors.ts";
import { boxPaths } from "../core/paths.ts";
import { SDK_DIR } from "../plugins/sdk_map.ts";

/** Writes the skeleton of plugin `id` into `dir` (default `~/.dock/plugins/<id>`); returns the folder. */
export async function newPlugin(id: string, dir?: string): Promise<string> {
  if (!/^[a-z0-9][a-z0-9-]{0,47}$/.test(id)) {
    throw new DockError("invalid_name", `'${id}': a plugin id is [a-z0-9][a-z0-9-]*, at most 48 characters`);
  }
  const folder = dir ?? join(boxPaths().home, "plugins", id);
  try {
    await Deno.stat(join(folder, "dock-plugin.json"));
    throw new DockError("exists", `${folder} already holds a plugin`, { status: 409 });
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
  await Deno.mkdir(folder, { recursive: true });
  for (const [name, text] of Object.entries(scaffoldFiles(id))) {
    await Deno.writeTextFile(join(folder, name), text);
  }
  return folder;
}

/** The skeleton's files by name: what `plugin new` writes. */
export function scaffoldFiles(id: string, sdk: string = SDK_DIR): Record<string, string> {
  const file = (name: string) => `file://${join(sdk, name)}`;
  return {
    "dock-plugin.json": JSON.stringify(
      {
        $schema: file("plugin.schema.json"),
        id,
        name: id,
        version: "0.1.0",
        description: `Counts finished turns; GET /v1/plugins/${id}/fn/ answers the count.`,
        main: "main.ts",
        hooks: [{ on: "agent.finished", module: "main.ts" }],
        permissions: {},
      },
      null,
      2,
    ) + "\n",
    // The editor's and `deno test`'s resolution; the plugin host never reads it (it maps the same names
    // to its own SDK). Once the SDK is published on npm, "npm:@dock/plugin@^0.1" works here as well.
    "deno.json": JSON.stringify(
      { imports: { "@dock/plugin": file("mod.ts"), "@dock/plugin/testing": file("testing.ts") } },
      null,
      2,
    ) + "\n",
    "main.ts": `/**
 * The ${id} plugin. It runs in a sandboxed worker that may read only this folder (and the SDK).
 * dock-plugin.json's hooks say which events reach \`event\`; \`fetch\` answers /v1/plugins/${id}/fn/*.
 * Every event, gate and API route is typed: see the SDK's reference (docs/plugin-reference.md).
 */
import { definePlugin } from "@dock/plugin";

export default definePlugin({
  async event(event, ctx) {
    if (event.type !== "agent.finished") return;
    const seen = ((await ctx.kv.get<number>("seen")) ?? 0) + 1;
    await ctx.kv.set("seen", seen);
    ctx.log(\`\${event.data.session ?? "a session"} finished (#\${seen})\`);
  },
  async fetch(_request, ctx) {
    return Response.json({ seen: (await ctx.kv.get<number>("seen")) ?? 0 });
  },
});
`,
    "main_test.ts": `import assert from "node:assert/strict";
import { callFetch, fakeContext, fakeEvent } from "@dock/plugin/testing";
import plugin from "./main.ts";

Deno.test("${id} counts finished turns and tells the count", async () => {
  const ctx = fakeContext();
  await plugin.event(fakeEvent("agent.finished", { session: "web-1", agent: "claude" }), ctx);
  await plugin.event(fakeEvent("agent.finished", { session: "web-1", agent: "claude" }), ctx);
  await plugin.event(fakeEvent("agent.waiting", { session: "web-1" }), ctx);
  const answer = await callFetch(plugin, "/", {}, ctx);
  assert.deepEqual(await answer.json(), { seen: 2 });
  assert.deepEqual(ctx.logs, ["web-1 finished (#1)", "web-1 finished (#2)"]);
});
`,
  };
}
