import * as node from "node:path";
import { pathToFileURL } from "node:url";
import { assertEquals, assertThrows } from "../tests/assert.ts";
import {
  basename,
  dirname,
  extname,
  fromFileUrl,
  isAbsolute,
  join,
  normalize,
  relative,
  resolve,
  sep,
} from "./posix_path.ts";

const PATHS = [
  "",
  ".",
  "..",
  "/",
  "//",
  "a",
  "a/",
  "/a",
  "/a/",
  "a/b/c",
  "/a/b/c/",
  "/a//b///c",
  "a/./b/../c",
  "../a/../../b",
  "/../a",
  "/a/b/../../..",
  "./a/.",
  ".env",
  "/x/.env",
  "/x/file.tar.gz",
  "/x/file.",
  "/x/dir.d/",
  "name.ts",
  "~/folder",
  "..a",
  "a..",
  "file..ts",
  "...",
  ".a.b",
];

Deno.test("normalize, dirname, basename, extname and isAbsolute answer as node:path does", () => {
  for (const path of PATHS) {
    assertEquals(normalize(path), node.normalize(path), `normalize(${JSON.stringify(path)})`);
    assertEquals(dirname(path), node.dirname(path), `dirname(${JSON.stringify(path)})`);
    assertEquals(basename(path), node.basename(path), `basename(${JSON.stringify(path)})`);
    assertEquals(extname(path), node.extname(path), `extname(${JSON.stringify(path)})`);
    assertEquals(isAbsolute(path), node.isAbsolute(path), `isAbsolute(${JSON.stringify(path)})`);
  }
  assertEquals(basename("/x/main.ts", ".ts"), node.basename("/x/main.ts", ".ts"));
  assertEquals(basename("/x/.ts", ".ts"), node.basename("/x/.ts", ".ts"));
});

Deno.test("join and resolve answer as node:path does", () => {
  for (const a of PATHS) {
    for (const b of ["", "b", "/b", "../b", "b/", "./b/c/.."]) {
      assertEquals(join(a, b), node.join(a, b), `join(${JSON.stringify(a)}, ${JSON.stringify(b)})`);
      assertEquals(resolve(a, b), node.resolve(a, b), `resolve(${JSON.stringify(a)}, ${JSON.stringify(b)})`);
    }
  }
  assertEquals(join(), node.join());
  assertEquals(resolve(), node.resolve());
  assertEquals(join("/a", "b", "", "c"), node.join("/a", "b", "", "c"));
});

Deno.test("relative and sep answer as node:path does", () => {
  for (const a of PATHS) {
    for (const b of [...PATHS, "/a/b/c/d", "/a/x/y", "/a/b", "/b"]) {
      assertEquals(
        relative(a, b),
        node.relative(a, b),
        `relative(${JSON.stringify(a)}, ${JSON.stringify(b)})`,
      );
    }
  }
  assertEquals(sep, node.sep);
});

Deno.test("fromFileUrl decodes a file URL and refuses any other", () => {
  for (const path of ["/a b/c#d%e", "/plain/path.ts", "/ü/ñ"]) {
    assertEquals(fromFileUrl(pathToFileURL(path)), path);
    assertEquals(fromFileUrl(pathToFileURL(path).href), path);
  }
  assertThrows(() => fromFileUrl("https://example.com/x"), TypeError);
});
