import { assertEquals } from "../tests/assert.ts";
import { Store } from "../core/store.ts";
import { PortAllocator } from "./ports.ts";
import { BOX_SCHEMA } from "./schema.ts";
import { Worktrees, type WorktreesOptions } from "./worktrees.ts";

Deno.test("Worktrees.containing: the deepest worktree holding a path; a folder whose name only starts the same holds nothing", async () => {
  const dir = await Deno.makeTempDir({ prefix: "dock-worktrees-test-" });
  const store = new Store(`${dir}/box.db`, { schema: BOX_SCHEMA });
  try {
    store.run(
      "INSERT INTO locations (name, path, created) VALUES ('app', '/srv/app', '2024-01-01T00:00:00Z')",
    );
    for (const [name, path] of [["main", "/srv/app"], ["inner", "/srv/app/.worktrees/inner"]]) {
      store.run(
        `INSERT INTO worktrees (location, name, path, main, origin, created)
         VALUES ('app', ?, ?, ?, 'dock', '2024-01-01T00:00:00Z')`,
        name,
        path,
        name === "main" ? 1 : 0,
      );
    }
    // What `containing` reads: the worktree rows and their ports.
    const worktrees = new Worktrees(
      { store, ports: new PortAllocator(store) } as unknown as WorktreesOptions,
    );
    const holding = (path: string) => worktrees.containing(path)?.name;
    assertEquals(holding("/srv/app"), "main");
    assertEquals(holding("/srv/app/src/x.ts"), "main");
    assertEquals(holding("/srv/app/.worktrees/inner"), "inner");
    assertEquals(holding("/srv/app/.worktrees/inner/pkg"), "inner");
    assertEquals(holding("/srv/app/.worktrees/inner2"), "main");
    assertEquals(holding("/srv/app2"), undefined);
    assertEquals(holding("/srv"), undefined);
  } finally {
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
});
