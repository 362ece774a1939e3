/**
 * The embedded app never drifts from its sources: `app/assets.generated.ts` records the hash of what it
 * was built from, and this fails until `deno task app` builds it again.
 *
 * @module
 */
import { assert, assertEquals } from "../tests/assert.ts";
import { APP_ASSETS, APP_SOURCE_HASH } from "./assets.generated.ts";
import { sourceHash } from "./build.ts";

Deno.test("app: the embedded bundle is built from the current sources (run deno task app)", async () => {
  assert(APP_SOURCE_HASH === await sourceHash(), "app/assets.generated.ts is stale: run deno task app");
});

Deno.test("app: index.html loads only the bundle's own files, with no inline script", () => {
  const names = Object.keys(APP_ASSETS);
  assert(["app.css", "app.js", "index.html"].every((name) => names.includes(name)), names.join(", "));
  assert(
    names.every((name) => /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*\.(js|css|html)$/.test(name)),
    names.join(", "),
  );
  const html = APP_ASSETS["index.html"].body;
  const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)];
  assertEquals(scripts.map((s) => s[2].trim()), [""]);
  assert(/src="app\.js"/.test(scripts[0][1]));
  assert(!/https?:\/\//.test(html), "index.html names no other origin");
});
