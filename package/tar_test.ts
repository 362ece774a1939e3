import { assertEquals, assertRejects } from "../tests/assert.ts";
import { join } from "../core/posix_path.ts";
import { run } from "../core/runner.ts";
import { END_OF_ARCHIVE, membersEnd, tarMembers } from "./tar.ts";

Deno.test("tar: an archive cut at its members' end, then members of ours and the end, is one archive tar reads whole", async () => {
  const dir = await Deno.makeTempDir({ prefix: "dock-tar-test-" });
  try {
    await Deno.mkdir(join(dir, "in", "pkg", "bin"), { recursive: true });
    await Deno.writeTextFile(join(dir, "in", "pkg", "bin", "tool"), "#!/bin/sh\necho tool\n");
    // Data that ends in zero blocks: the end is found from the headers, not by trimming zeros.
    const zeros = new Uint8Array(3000);
    zeros.set([1, 2, 3]);
    await Deno.writeFile(join(dir, "in", "pkg", "data"), zeros);
    const archive = join(dir, "pkg.tar");
    assertEquals((await run("tar", ["-cf", archive, "-C", join(dir, "in"), "pkg"])).code, 0);
    const end = await membersEnd(archive);
    assertEquals(end % 512, 0);
    assertEquals((await Deno.stat(archive)).size > end, true);
    const cut = (await Deno.readFile(archive)).subarray(0, end);

    const ours = tarMembers([
      { path: "pkg/cache" },
      { path: "pkg/cache/v8_code_cache_v2", bytes: new TextEncoder().encode("code") },
    ], 1_700_000_000);
    const whole = new Uint8Array([...cut, ...ours, ...END_OF_ARCHIVE]);
    const joined = join(dir, "joined.tar");
    await Deno.writeFile(joined, whole);
    const out = join(dir, "out");
    await Deno.mkdir(out);
    const extracted = await run("tar", ["-xf", joined, "-C", out, "--strip-components=1"]);
    assertEquals([extracted.code, extracted.stderr], [0, ""]);
    assertEquals(await Deno.readTextFile(join(out, "bin", "tool")), "#!/bin/sh\necho tool\n");
    assertEquals(await Deno.readFile(join(out, "data")), zeros);
    assertEquals(await Deno.readTextFile(join(out, "cache", "v8_code_cache_v2")), "code");
    assertEquals((await Deno.stat(join(out, "cache", "v8_code_cache_v2"))).mode! & 0o777, 0o644);
    const listed = await run("tar", ["-tvf", joined]);
    assertEquals(listed.stdout.includes("2023-11-14"), true, listed.stdout); // our mtime
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("tar: a file that is not a whole archive is refused; a path too long for a header too", async () => {
  const dir = await Deno.makeTempDir({ prefix: "dock-tar-test-" });
  try {
    const file = join(dir, "cut.tar");
    await Deno.writeFile(file, tarMembers([{ path: "a", bytes: new Uint8Array(10) }], 0));
    await assertRejects(() => membersEnd(file), Error, "not a whole tar archive");
    let error: unknown;
    try {
      tarMembers([{ path: "x".repeat(101) }], 0);
    } catch (caught) {
      error = caught;
    }
    assertEquals(String(error), "Error: tar: path too long: " + "x".repeat(101));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
