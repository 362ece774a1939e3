import { join } from "../core/posix_path.ts";
import { assert, assertEquals } from "../tests/assert.ts";
import { type Stamps, unchanged, unchangedSync, walkFolder } from "./folder_check.ts";

const OLD = new Date(Date.now() - 3_600_000);

/** Makes a folder's mtime an hour old. */
async function age(folder: string): Promise<void> {
  await Deno.utime(folder, OLD, OLD);
}

/** A folder with `count` subfolders, every mtime an hour old (a stamp is only kept for an old mtime). */
async function tree(count: number): Promise<string> {
  const root = await Deno.realPath(await Deno.makeTempDir({ prefix: "dock-folder-check-" }));
  for (let i = 0; i < count; i++) {
    await Deno.mkdir(join(root, `d${i}`));
    await age(join(root, `d${i}`));
  }
  await age(root);
  return root;
}

for (
  const [name, count] of [["a stat each, synchronously", 3], ["past 64 folders, asynchronously", 70]] as const
) {
  Deno.test(`unchanged: ${name}, it sees an entry made, a link planted, a folder swapped`, async () => {
    // What `unchanged` finds, which the synchronous check finds alike up to 64 folders (past them it leaves
    // the answer to `unchanged`: false).
    const check = async (stamps: Stamps | undefined) => {
      const found = await unchanged(stamps);
      assertEquals(unchangedSync(stamps), count <= 64 && found);
      return found;
    };
    const root = await tree(count);
    try {
      const { escape, stamps } = await walkFolder(root, root, false);
      assertEquals([escape, stamps.size], [null, count + 1]);
      assert(await check(stamps), "nothing changed");
      assertEquals(await check(undefined), false);

      const last = join(root, `d${count - 1}`);
      await Deno.writeTextFile(join(last, "new.txt"), "x");
      assertEquals(await check(stamps), false, "a file made in the last folder");

      await age(last);
      const again = (await walkFolder(root, root, false)).stamps;
      assert(await check(again), "walked again");
      await Deno.symlink("/etc", join(root, "d0", "out"));
      assertEquals(await check(again), false, "a link planted");
      assertEquals(
        (await walkFolder(root, root, false)).escape,
        "d0/out is a symlink out of its folder (to /etc)",
      );

      await Deno.remove(join(root, "d0", "out"));
      await age(join(root, "d0"));
      const third = (await walkFolder(root, root, false)).stamps;
      assert(await check(third), "the link gone");
      // A folder swapped for a link to another whose mtime is the same: not a directory any more.
      const elsewhere = await tree(1);
      await Deno.remove(join(root, "d0"));
      await Deno.symlink(join(elsewhere, "d0"), join(root, "d0"));
      await age(root);
      assertEquals(await check(third), false, "a folder swapped for a link");
      await Deno.remove(elsewhere, { recursive: true });
    } finally {
      await Deno.remove(root, { recursive: true });
    }
  });
}
