import { join } from "node:path";
import { assert, assertEquals, assertRejects } from "../tests/assert.ts";
import { DockError } from "../client/errors.ts";
import { run } from "../core/runner.ts";
import { hashTree, hostTarget, type PackageRelease, targetName } from "./release.ts";
import { installRelease, pruneReleases } from "./install.ts";

/**
 * A small package as `build.ts` lays one out (a stand-in runtime of a few bytes), archived whole and
 * without `bin/deno`; `runtime` overrides what its `release.json` says the runtime is.
 */
async function fakePackage(
  dir: string,
  id: string,
  runtime?: string,
): Promise<{ whole: string; lean: string; release: PackageRelease }> {
  const name = `dock-9.0.0-${id}`;
  const root = join(dir, name);
  await Deno.mkdir(join(root, "bin"), { recursive: true });
  await Deno.mkdir(join(root, "src"));
  await Deno.writeTextFile(join(root, "bin", "deno"), "#!/bin/sh\necho a stand-in runtime\n", {
    mode: 0o755,
  });
  await Deno.writeTextFile(join(root, "bin", "dockd"), "#!/bin/sh\n", { mode: 0o755 });
  await Deno.writeTextFile(join(root, "src", "release.ts"), `export const ID = "${id}";\n`);
  const files = await hashTree(root);
  const release: PackageRelease = {
    name: "dock",
    id,
    version: "9.0.0",
    commit: "c0ffee",
    target: targetName(hostTarget()!),
    deno: "2.9.6",
    runtime: runtime ?? files["bin/deno"],
  };
  await Deno.writeTextFile(join(root, "release.json"), JSON.stringify(release));
  await Deno.writeTextFile(join(root, "manifest.json"), JSON.stringify({ ...release, files }));
  const whole = join(dir, `${name}.tar.gz`);
  const lean = join(dir, `${name}.without-runtime.tar.gz`);
  await run("tar", ["-czf", whole, "-C", dir, name]);
  await run("tar", ["-czf", lean, `--exclude=${name}/bin/deno`, "-C", dir, name]);
  return { whole, lean, release };
}

const body = async (file: string) => (await Deno.open(file)).readable;

Deno.test("a package without its runtime links the runtime of an installed release naming the same one; else 409 runtime_missing", async () => {
  const dir = await Deno.makeTempDir({ prefix: "dock-install-test-" });
  try {
    const home = join(dir, "home");
    const a = await fakePackage(dir, "a".repeat(16));
    const b = await fakePackage(dir, "b".repeat(16));
    const options = { from: "none", what: "the box" };

    // Nothing installed has that runtime: refused, nothing left behind, the sender sends the whole one.
    const missing = await assertRejects(
      () => body(a.lean).then((s) => installRelease(s, home, options)),
      DockError,
    );
    assertEquals([(missing as DockError).status, (missing as DockError).code], [409, "runtime_missing"]);
    assertEquals([...Deno.readDirSync(join(home, "versions"))], []);

    await installRelease(await body(a.whole), home, options);
    const installed = await installRelease(await body(b.lean), home, options);
    assertEquals(installed.release.id, b.release.id);
    // The same file, linked: no second copy of the runtime.
    const runtimeOf = (id: string) => Deno.statSync(join(home, "versions", `9.0.0-${id}`, "bin", "deno"));
    assertEquals(runtimeOf(b.release.id).ino, runtimeOf(a.release.id).ino);
    assert((runtimeOf(b.release.id).mode! & 0o111) !== 0);
    assertEquals(Deno.readLinkSync(join(home, "current")), `versions/9.0.0-${b.release.id}`);

    // A release.json whose runtime is not its manifest's bin/deno is not a package.
    const lying = await fakePackage(join(dir, "lying"), "c".repeat(16), "0".repeat(64));
    const refused = await assertRejects(
      () => body(lying.whole).then((s) => installRelease(s, home, options)),
      DockError,
    );
    assertEquals([(refused as DockError).status, (refused as DockError).code], [400, "bad_package"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("pruneReleases keeps the release that runs and the one installed before it, and what is being unpacked", async () => {
  const home = await Deno.makeTempDir({ prefix: "dock-prune-" });
  try {
    const versions = join(home, "versions");
    // Installed in this order (their folders' times say so), then one being unpacked.
    const order = ["0.1.0-aaaa", "0.1.0-bbbb", "0.1.0-cccc", "0.1.0-dddd"];
    for (const [i, folder] of order.entries()) {
      await Deno.mkdir(join(versions, folder, "bin"), { recursive: true });
      await Deno.utime(join(versions, folder), 1_000_000 + i, 1_000_000 + i);
    }
    await Deno.mkdir(join(versions, ".incoming-x"));
    await Deno.writeTextFile(join(versions, "stray-file"), "");
    // The newest runs: the one before it stays.
    assertEquals((await pruneReleases(home, ["0.1.0-dddd"])).sort(), ["0.1.0-aaaa", "0.1.0-bbbb"]);
    const left = async () => (await Array.fromAsync(Deno.readDir(versions))).map((e) => e.name).sort();
    assertEquals(await left(), [".incoming-x", "0.1.0-cccc", "0.1.0-dddd", "stray-file"]);
    // Both named (an upgrade knows what it replaced): nothing else stays, whatever its time.
    await Deno.mkdir(join(versions, "0.1.0-eeee"));
    assertEquals(await pruneReleases(home, ["0.1.0-cccc", "0.1.0-dddd"]), ["0.1.0-eeee"]);
    assertEquals(await left(), [".incoming-x", "0.1.0-cccc", "0.1.0-dddd", "stray-file"]);
    // No versions folder: nothing to do.
    assertEquals(await pruneReleases(join(home, "none"), ["x"]), []);
  } finally {
    await Deno.remove(home, { recursive: true });
  }
});
