import { assertEquals } from "../tests/assert.ts";
import { join } from "node:path";
import { PathTools, RACY_MS } from "./tools.ts";

/** Two PATH folders whose last change is an hour old (their listings are kept). */
async function folders(): Promise<{ root: string; first: string; second: string; path: string }> {
  const root = await Deno.makeTempDir({ prefix: "dock-tools-" });
  const first = join(root, "first");
  const second = join(root, "second");
  await Deno.mkdir(first);
  await Deno.mkdir(second);
  await Deno.writeTextFile(join(second, "tool"), "#!/bin/sh\n", { mode: 0o755 });
  await age(first, second);
  return { root, first, second, path: `${first}:${join(root, "missing")}:${second}` };
}

/** An hour before the tests started: the folders' mtime, always the same instant. */
const PAST = new Date(Date.now() - 3_600_000);

/** Sets the folders' mtime back to {@linkcode PAST}. */
async function age(...paths: string[]): Promise<void> {
  for (const path of paths) await Deno.utime(path, PAST, PAST);
}

Deno.test("PathTools finds programs in PATH order, as which does", async () => {
  const { root, first, second, path } = await folders();
  try {
    const tools = new PathTools();
    assertEquals(tools.lookup(path)("tool"), join(second, "tool"));
    assertEquals(tools.lookup(path)("absent"), null);
    assertEquals(tools.lookup(path)(join(second, "tool")), join(second, "tool"));
    await Deno.writeTextFile(join(first, "tool"), "#!/bin/sh\n", { mode: 0o755 });
    assertEquals(tools.lookup(path)("tool"), join(first, "tool"));
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("PathTools keeps a folder's listing until its mtime changes: a program installed later is found", async () => {
  const { root, first, path } = await folders();
  try {
    const tools = new PathTools();
    assertEquals(tools.lookup(path)("gh"), null);
    // The listing is kept: a file that appears without changing the folder's mtime is not seen…
    await Deno.writeTextFile(join(first, "gh"), "#!/bin/sh\n", { mode: 0o755 });
    await age(first);
    assertEquals(tools.lookup(path)("gh"), null);
    // …while any real install (a new entry) changes the mtime, and the folder is read again.
    await Deno.writeTextFile(join(first, "glab"), "#!/bin/sh\n", { mode: 0o755 });
    assertEquals(tools.lookup(path)("glab"), join(first, "glab"));
    assertEquals(tools.lookup(path)("gh"), join(first, "gh"));
    await Deno.remove(join(first, "gh"));
    assertEquals(tools.lookup(path)("gh"), null);
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("PathTools re-reads a folder changed less than RACY_MS ago, and sees chmod +x at once", async () => {
  const { root, first, path } = await folders();
  try {
    let now = Date.now();
    const tools = new PathTools({ now: () => now });
    await Deno.writeTextFile(join(first, "node"), "#!/bin/sh\n", { mode: 0o644 });
    // The folder just changed: its listing is not kept, so an entry added in the same clock tick
    // (same mtime) is still found.
    const changed = (await Deno.stat(first)).mtime!;
    assertEquals(tools.lookup(path)("node"), null, "not executable");
    await Deno.writeTextFile(join(first, "deno"), "#!/bin/sh\n", { mode: 0o755 });
    await Deno.utime(first, changed, changed);
    assertEquals(tools.lookup(path)("deno"), join(first, "deno"));
    // A name in a kept listing is stat'ed on each lookup: a permission change needs no new entry.
    now = changed.getTime() + RACY_MS;
    assertEquals(tools.lookup(path)("node"), null);
    await Deno.chmod(join(first, "node"), 0o755);
    assertEquals(tools.lookup(path)("node"), join(first, "node"));
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});
