import { assertEquals, assertThrows } from "../tests/assert.ts";
import { DockError } from "../client/errors.ts";
import { checkName, nameFromFolder } from "./names.ts";

Deno.test("checkName accepts ordinary names", () => {
  for (const name of ["feature-1", "fix_bug", "v1.2", "A", "x".repeat(64)]) {
    assertEquals(checkName("name", name), name);
  }
});

Deno.test("checkName refuses paths, dots and long names, naming the field", () => {
  for (
    const name of ["../x", "a/b", ".hidden", "", "x".repeat(65), "a..b", "branch.lock", "-x", "a b", "a\\b"]
  ) {
    const error = assertThrows(() => checkName("name", name), DockError, "name:");
    assertEquals((error as DockError).status, 400);
  }
});

Deno.test("nameFromFolder always yields a valid name", () => {
  for (const folder of ["my worktree", "..weird..", ".x", "feature/a", "ok.lock", "", "ünïcode"]) {
    checkName("name", nameFromFolder(folder));
  }
  assertEquals(nameFromFolder("my worktree"), "my-worktree");
});
