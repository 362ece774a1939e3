import { join } from "node:path";
import { assert, assertEquals } from "../tests/assert.ts";
import {
  hostTarget,
  packageName,
  type PackageRelease,
  targetName,
  withoutRuntimeName,
  zstdName,
} from "../package/release.ts";
import { keepInstalled, packageFor, pruneKept } from "./packages.ts";

/** A release's files as a build leaves them in `dir` (small stand-ins: what is kept is their identity). */
async function builtIn(dir: string, id: string) {
  const release: PackageRelease = {
    name: "dock",
    id,
    version: "0.1.0",
    commit: "c0ffee",
    target: targetName(hostTarget()!),
    deno: "2.9.6",
    runtime: "r".repeat(64),
  };
  const name = packageName(release);
  await Deno.mkdir(join(dir, `${name}.cache-template`, "deps"), { recursive: true });
  await Deno.writeTextFile(join(dir, `${name}.cache-template`, "deps", "x"), id);
  for (const file of [`${name}.tar.gz`, withoutRuntimeName(release), zstdName(release)]) {
    await Deno.writeTextFile(join(dir, file), `${file} ${id}`);
  }
  return {
    release,
    file: join(dir, `${name}.tar.gz`),
    withoutRuntime: { file: join(dir, withoutRuntimeName(release)), bytes: 1 },
    zstd: { file: join(dir, zstdName(release)), bytes: 1 },
    cacheTemplate: join(dir, `${name}.cache-template`),
  };
}

Deno.test("deno task install's package is the cache's: the installed agent's first add ssh builds nothing; older ones are pruned", async () => {
  const root = await Deno.makeTempDir({ prefix: "dock-packages-" });
  try {
    const paths = { client: join(root, "client") };
    const dist = join(root, "dist");
    await Deno.mkdir(dist);
    const first = await builtIn(dist, "1".repeat(16));
    const folder = await keepInstalled(paths, first);
    assertEquals(folder, join(paths.client, "packages"));
    // The same file (linked, not copied: the same file system here).
    assertEquals(
      (await Deno.stat(join(folder, `${packageName(first.release)}.tar.gz`))).ino,
      (await Deno.stat(first.file)).ino,
    );
    // What the installed release's agent fingerprints its sources as: the kept package, no build (a build
    // from this stand-in would fail).
    const kept = await packageFor(paths, hostTarget()!, Promise.resolve(`release:${first.release.id}`));
    assertEquals([kept.file, kept.release.id], [
      join(folder, `${packageName(first.release)}.tar.gz`),
      first.release.id,
    ]);
    assertEquals(kept.zstd?.file, join(folder, zstdName(first.release)));
    assertEquals(kept.withoutRuntime?.file, join(folder, withoutRuntimeName(first.release)));
    assertEquals(await Deno.readTextFile(join(kept.cacheTemplate!, "deps", "x")), first.release.id);

    // Another release installed: its files replace the kept ones; the first's go once its agent started.
    const other = join(root, "dist2");
    await Deno.mkdir(other);
    const second = await builtIn(other, "2".repeat(16));
    await keepInstalled(paths, second);
    const before = (await Array.fromAsync(Deno.readDir(folder))).map((e) => e.name);
    assert(before.includes(`${packageName(first.release)}.tar.gz`), before.join(" "));
    // Same version and target: the archive names are the same, so only what differs by release remains.
    assertEquals((await pruneKept(paths)).sort(), []);
    await Deno.writeTextFile(join(folder, "dock-0.0.9-linux-x64.tar.gz"), "an older version's");
    assertEquals(await pruneKept(paths), ["dock-0.0.9-linux-x64.tar.gz"]);
    const again = await packageFor(paths, hostTarget()!, Promise.resolve(`release:${second.release.id}`));
    assertEquals(again.release.id, second.release.id);
    assertEquals(
      await Deno.readTextFile(again.file),
      `${packageName(second.release)}.tar.gz ${second.release.id}`,
    );
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
