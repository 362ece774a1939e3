/**
 * Whole-system test of pruning (daemon/upgrade.ts, package/install.ts): a box installed from a package
 * is upgraded twice; each time the new daemon serves, `~/.dock/versions/` keeps the release that runs
 * and the one it replaced, nothing older.
 */
import { join } from "node:path";
import { assertEquals } from "./assert.ts";
import { buildPackage } from "../package/build.ts";
import { hostTarget } from "../package/release.ts";
import { makeDirs, startOlderBox } from "./harness.ts";
import { until, untilEvent } from "./wait.ts";

Deno.test("after two upgrades a box keeps the release it runs and the one before, nothing older", async () => {
  const target = hostTarget()!;
  const out = await Deno.makeTempDir({ prefix: "dock-prune-test-" });
  const dirs = await makeDirs();
  try {
    const [b, c] = await Promise.all(
      ["bbbbbbbbbbbb", "cccccccccccc"].map((commit) =>
        buildPackage({ target, out: join(out, commit), commit })
      ),
    );
    const { old, box } = await startOlderBox(dirs, out);
    await using _box = box;
    const versions = join(dirs.dockHome, "versions");
    const listed = async () => (await Array.fromAsync(Deno.readDir(versions))).map((e) => e.name).sort();
    // A release left from before (as every box had: nothing was ever pruned), installed long ago.
    const stale = join(versions, "0.0.8-ffffffffffffffff");
    await Deno.mkdir(join(stale, "bin"), { recursive: true });
    await Deno.utime(stale, 1_000_000, 1_000_000);
    const folder = (release: { version: string; id: string }) => `${release.version}-${release.id}`;

    let after = (await box.client.emit({ type: "test.mark" })).id!;
    for (const [next, kept] of [[b, [old, b]], [c, [b, c]]] as const) {
      const started = await box.client.upgrade((await Deno.open(next.withoutRuntime.file)).readable);
      await until(
        async () => (await box.client.info().catch(() => undefined))?.build === started.to,
        { timeoutMs: 60_000 },
      );
      // The stream of the daemon that handed over ends with it: look again until the new one has told.
      const upgraded = await until(
        () =>
          untilEvent(box.client, (e) => e.type === "box.upgraded", { after, timeoutMs: 3000 }).catch(() =>
            undefined
          ),
        { timeoutMs: 60_000 },
      );
      after = upgraded.id!;
      assertEquals(await listed(), kept.map((built) => folder(built.release)).sort());
    }
    assertEquals(await Deno.readLink(join(dirs.dockHome, "current")), `versions/${folder(c.release)}`);
  } finally {
    await Deno.remove(out, { recursive: true });
  }
});
