/**
 * `plugin new ID`: a working plugin skeleton, a manifest with one typed module hook and a `fetch`
 * function, and a test that runs its handlers with a stand-in `ctx` (`deno test main_test.ts`).
 *
 * @module
 */
import { join } from "../core/posix_path.ts";
import { DockError } from "../client/errors.ts";
import { boxPaths } from "../core/paths.ts";

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
  const dock = new URL("../mod.ts", import.meta.url).href;
  const files: Record<string, string> = {
    "dock-plugin.json": JSON.stringify(
      {
        id,
        name: id,
        version: "0.1.0",
        description: "Counts finished turns; GET /v1/plugins/" + id + "/fn/ answers the count.",
        main: "main.ts",
        hooks: [{ on: "agent.finished", module: "main.ts" }],
        permissions: {},
      },
      null,
      2,
    ) + "\n",
    "main.ts": `/**
 * The ${id} plugin. It runs in a sandboxed worker that may read only this folder: dock's types are
 * imported with \`import type\` (erased when it runs). Hooks in dock-plugin.json say which events reach
 * \`event\`; \`fetch\` answers /v1/plugins/${id}/fn/*.
 */
import type { DockPlugin } from "${dock}";

export default {
  async event(event, ctx) {
    const seen = ((await ctx.kv.get<number>("seen")) ?? 0) + 1;
    await ctx.kv.set("seen", seen);
    ctx.log(\`\${event.type} #\${seen}\`);
  },
  async fetch(_request, ctx) {
    return Response.json({ seen: (await ctx.kv.get<number>("seen")) ?? 0 });
  },
} satisfies DockPlugin;
`,
    "main_test.ts": `import assert from "node:assert/strict";
import type { DockEvent, PluginContext } from "${dock}";
import plugin from "./main.ts";

/** A stand-in for dock's \`ctx\`: a store in memory, a log in an array. */
function fakeContext(): PluginContext & { lines: string[] } {
  const store = new Map<string, unknown>();
  const lines: string[] = [];
  return {
    lines,
    api: () => Promise.reject(new Error("no API in this test")),
    emit: () => Promise.resolve(),
    log: (...values: unknown[]) => void lines.push(values.join(" ")),
    kv: {
      get: <T>(key: string) => Promise.resolve((store.get(key) ?? null) as T | null),
      set: (key: string, value: unknown) => Promise.resolve(void store.set(key, value)),
      delete: (key: string) => Promise.resolve(void store.delete(key)),
      list: (prefix = "") => Promise.resolve([...store.keys()].filter((k) => k.startsWith(prefix))),
    },
  };
}

Deno.test("${id} counts finished turns and tells the count", async () => {
  const ctx = fakeContext();
  const event: DockEvent = { id: 1, type: "agent.finished", time: new Date().toISOString(), data: {} };
  await plugin.event(event, ctx);
  await plugin.event(event, ctx);
  const answer = await plugin.fetch(new Request("http://${id}.plugin/"), ctx);
  assert.deepEqual(await answer.json(), { seen: 2 });
  assert.deepEqual(ctx.lines, ["agent.finished #1", "agent.finished #2"]);
});
`,
  };
  for (const [name, text] of Object.entries(files)) await Deno.writeTextFile(join(folder, name), text);
  return folder;
}
