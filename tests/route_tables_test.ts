/**
 * Every route table has an in-memory test (issue 35): each production module that builds a
 * `RouteTable` is imported by a unit test that serves it without a socket (`tests/route_tables.ts`, or
 * `app.request` on a hono app of its own).
 */
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { assertEquals } from "./assert.ts";

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const FOLDERS = ["agent", "daemon", "plugins"];

/** Every `.ts` file under `dir`, as paths relative to the root. */
function files(dir: string): string[] {
  const found: string[] = [];
  for (const entry of Deno.readDirSync(join(ROOT, dir))) {
    const path = join(dir, entry.name);
    if (entry.isDirectory && entry.name !== "examples") found.push(...files(path));
    else if (entry.isFile && path.endsWith(".ts")) found.push(path);
  }
  return found;
}

/** The modules a file imports, as paths relative to the root. */
function imports(file: string, text: string): string[] {
  return [...text.matchAll(/from\s+"(\.[^"]+)"/g)].map((m) =>
    relative(ROOT, resolve(ROOT, dirname(file), m[1]))
  );
}

Deno.test("route tables: every module that builds a RouteTable has an in-memory test", () => {
  const all = FOLDERS.flatMap(files);
  const tables = all.filter((file) =>
    !file.endsWith("_test.ts") && Deno.readTextFileSync(join(ROOT, file)).includes("new RouteTable(")
  );
  const tested = new Set<string>();
  for (const file of all.filter((f) => f.endsWith("_test.ts"))) {
    const text = Deno.readTextFileSync(join(ROOT, file));
    if (!text.includes("route_tables.ts") && !text.includes(".request(")) continue;
    for (const module of imports(file, text)) tested.add(module);
  }
  assertEquals(tables.length > 20, true, `found only ${tables.length} table modules`);
  assertEquals(
    tables.filter((file) => !tested.has(file)),
    [],
    "route table modules without an in-memory test",
  );
});
