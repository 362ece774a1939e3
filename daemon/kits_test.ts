import { assertEquals, assertThrows } from "../tests/assert.ts";
import { DockError } from "../client/errors.ts";
import { checkKit, KIT_LIMITS, slugOf } from "./kits.ts";

Deno.test("slugOf: owner/repo of the remote URLs git takes", () => {
  for (
    const [url, slug] of [
      ["git@github.com:acme/shop.git", "acme/shop"],
      ["https://github.com/acme/shop", "acme/shop"],
      ["https://github.com/acme/shop.git/", "acme/shop"],
      ["ssh://git@git.example.com:2222/acme/shop.git", "acme/shop"],
      ["https://gitlab.com/group/sub/shop.git", "sub/shop"],
      ["shop", null],
    ] as const
  ) assertEquals(slugOf(url), slug, url);
});

Deno.test("checkKit: 400 naming kit.json and the field; 413 past the limits; a file cannot be a folder", () => {
  const refused = (body: unknown) => assertThrows(() => checkKit(body), DockError) as DockError;
  const traversal = refused({ id: "k", files: { "a/../../b": "x" } });
  assertEquals([traversal.status, traversal.detail], [400, {
    file: "kit.json",
    field: 'files["a/../../b"]',
  }]);
  assertEquals(refused({ id: "k", config: { ports: 1.5 } }).detail, {
    file: "kit.json",
    field: "config.ports",
  });
  assertEquals(
    refused({ id: "k", files: { "bin": "x", "bin/run": "y" } }).message,
    "kit.json: files.bin/run: 'bin' is a file, not a folder",
  );
  assertEquals(refused({ id: "k", files: { big: "x".repeat(KIT_LIMITS.fileBytes + 1) } }).status, 413);
  const many = Object.fromEntries(Array.from({ length: KIT_LIMITS.files + 1 }, (_, i) => [`f${i}`, ""]));
  assertEquals(refused({ id: "k", files: many }).status, 413);
  assertEquals(checkKit({ id: "k", files: { "bin/run": "#!/bin/sh\n" } }).files, {
    "bin/run": "#!/bin/sh\n",
  });
});
