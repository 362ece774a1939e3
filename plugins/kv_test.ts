import { assertEquals, assertRejects } from "../tests/assert.ts";
import { join } from "node:path";
import { DockError } from "../client/errors.ts";
import { MemoryLog } from "../core/log.ts";
import { KV_MAX_BYTES, PluginKv } from "./kv.ts";

async function store(): Promise<{ dir: string; kv: PluginKv }> {
  const dir = await Deno.makeTempDir({ prefix: "dock-kv-" });
  return { dir, kv: new PluginKv(dir, new MemoryLog()) };
}

Deno.test("the store's cap is in UTF-8 bytes, not characters", async () => {
  const { dir, kv } = await store();
  try {
    // 600,000 characters, 1.2 MB: under a cap that counted characters.
    await assertRejects(() => kv.set("wide", "é".repeat(600_000)), DockError, "would hold 1200");
    await kv.set("narrow", "e".repeat(1000));
    assertEquals((await kv.get("narrow") as string).length, 1000);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a kv.json the plugin wrote is read by size first, and never through a symlink", async () => {
  const { dir, kv } = await store();
  try {
    await Deno.writeTextFile(join(dir, "kv.json"), JSON.stringify({ x: "a".repeat(KV_MAX_BYTES) }));
    await assertRejects(() => kv.get("x"), DockError, `over the ${KV_MAX_BYTES}-byte limit`);
    await Deno.remove(join(dir, "kv.json"));
    const secret = join(dir, "..", `${crypto.randomUUID()}-secret.json`);
    await Deno.writeTextFile(secret, JSON.stringify({ token: "SECRET" }));
    try {
      await Deno.symlink(secret, join(dir, "kv.json"));
      await assertRejects(() => kv.get("token"), DockError, "is not a plain file");
      await Deno.remove(join(dir, "kv.json"));
      assertEquals(await kv.get("token"), null, "gone, the store starts afresh");
    } finally {
      await Deno.remove(secret);
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
