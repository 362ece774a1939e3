import { assertEquals, assertNotEquals } from "../tests/assert.ts";
import { FileSignature, readRange, readTail } from "./files.ts";

Deno.test("FileSignature: a file appearing, changing and going is seen, also while its settled folder vouches for it missing", async () => {
  const dir = await Deno.makeTempDir({ prefix: "dock-files-test-" });
  try {
    const path = `${dir}/hooks.json`;
    const file = new FileSignature(path);
    assertEquals(file.read(), "missing");
    // A folder left alone for a while: its mtime answers for the missing file from now on.
    const old = new Date(Date.now() - 60_000);
    await Deno.utime(dir, old, old);
    assertEquals(file.read(), "missing");
    assertEquals(file.read(), "missing");
    Deno.writeTextFileSync(path, "{}");
    const made = file.read();
    assertNotEquals(made, "missing");
    assertEquals(file.read(), made);
    Deno.writeTextFileSync(path, '{"hooks":[]}');
    const changed = file.read();
    assertNotEquals(changed, made);
    Deno.removeSync(path);
    assertEquals(file.read(), "missing");
    // A folder changed just now is not trusted: the file is looked for each time.
    Deno.writeTextFileSync(`${dir}/other`, "");
    assertEquals(file.read(), "missing");
    Deno.writeTextFileSync(path, "{}");
    assertNotEquals(file.read(), "missing");
    // Below a folder that does not exist yet: the nearest one that does answers, until the file comes.
    const deep = new FileSignature(`${dir}/a/b/flows.json`);
    await Deno.utime(dir, old, old);
    assertEquals(deep.read(), "missing");
    assertEquals(deep.read(), "missing");
    await Deno.mkdir(`${dir}/a/b`, { recursive: true });
    Deno.writeTextFileSync(`${dir}/a/b/flows.json`, "{}");
    assertNotEquals(deep.read(), "missing");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("FileSignature.changed: the file's state once per change, the first call counting as one", async () => {
  const dir = await Deno.makeTempDir({ prefix: "dock-files-test-" });
  try {
    const file = new FileSignature(`${dir}/flows.json`);
    assertEquals([file.changed(), file.changed()], ["missing", undefined]);
    Deno.writeTextFileSync(file.path, "{}");
    assertEquals([file.changed(), file.changed()], ["present", undefined]);
    Deno.writeTextFileSync(file.path, '{"flows":[]}');
    assertEquals(file.changed(), "present");
    Deno.removeSync(file.path);
    assertEquals([file.changed(), file.changed()], ["missing", undefined]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("FileSignature.settled: a file written just now is not vouched for by its signature, an older one is", async () => {
  const dir = await Deno.makeTempDir({ prefix: "dock-files-test-" });
  try {
    const file = new FileSignature(`${dir}/config.json`);
    assertEquals(file.settled(file.read()), true, "a missing file's signature holds");
    Deno.writeTextFileSync(file.path, '{"a":1}');
    // An edit of the same size within the kernel's clock tick would leave this signature.
    assertEquals(file.settled(file.read()), false);
    const old = new Date(Date.now() - 60_000);
    await Deno.utime(file.path, old, old);
    assertEquals(file.settled(file.read()), true);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("readRange and readTail: the bytes asked for, fewer where the file ends, none of a missing file", async () => {
  const dir = await Deno.makeTempDir({ prefix: "dock-files-test-" });
  try {
    const file = `${dir}/log`;
    await Deno.writeTextFile(file, "0123456789");
    const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
    assertEquals(text(await readRange(file, 2, 3)), "234");
    assertEquals(text(await readRange(file, 8, 10)), "89");
    assertEquals(text(await readTail(file, 4)), "6789");
    assertEquals(text(await readTail(file, 100)), "0123456789");
    assertEquals((await readTail(`${dir}/missing`, 4)).length, 0);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
