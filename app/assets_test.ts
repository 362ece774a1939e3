/**
 * The embedded app never drifts from its sources: `app/assets.generated.ts` records the hash of what it
 * was built from, and this fails until `deno task app` builds it again.
 *
 * @module
 */
import { assert, assertEquals } from "../tests/assert.ts";
import { APP_ASSETS, APP_SOURCE_HASH } from "./assets.generated.ts";
import { sourceHash, sources, staticImports, withPreloads } from "./build.ts";

Deno.test("app: the embedded bundle is built from the current sources (run deno task app)", async () => {
  assert(APP_SOURCE_HASH === await sourceHash(), "app/assets.generated.ts is stale: run deno task app");
});

Deno.test("app: the sources hashed are what a bundle holds: app/src without its tests, the build, the packages", async () => {
  const names = (await sources()).map(([name]) => name);
  assert(
    names.includes("src/main.tsx") && names.includes("build.ts") && names.includes("packages"),
    names.join(),
  );
  assertEquals(
    names.filter((name) => /_test\.tsx?$/.test(name)),
    [],
    "a test edited leaves the bundle current",
  );
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
  assertEquals(scripts.map((s) => s[2].trim()), ["", ""]);
  // boot.js first (the board's first requests, before the app's scripts run), on its own: no import.
  assert(/src="boot\.js"/.test(scripts[0][1]) && /\basync\b/.test(scripts[0][1]), scripts[0][1]);
  assert(!/\bimport\b/.test(APP_ASSETS["boot.js"].body), APP_ASSETS["boot.js"].body);
  assert(/src="app\.js"/.test(scripts[1][1]));
  assert(!/https?:\/\//.test(html), "index.html names no other origin");
});

Deno.test("app: index.html preloads exactly the chunks app.js imports statically, not the lazy ones", () => {
  const html = APP_ASSETS["index.html"].body;
  const preloaded = [...html.matchAll(/<link rel="modulepreload" href="([^"]+)"/g)].map((m) => m[1]);
  const scripts = Object.fromEntries(Object.entries(APP_ASSETS).map(([name, a]) => [name, a.body]));
  assertEquals(preloaded, staticImports(scripts, "app.js"));
  assert(preloaded.length > 0 && preloaded.every((name) => name in APP_ASSETS), preloaded.join(", "));
  assert(!preloaded.some((name) => /^(terminal|review|create)-/.test(name)), preloaded.join(", "));
});

Deno.test("staticImports: static imports, transitively; dynamic ones and unknown files left out", () => {
  const scripts = {
    "app.js": 'import{a as b}from"./c1.js";import"./c2.js";const t=()=>import("./lazy.js");',
    "c1.js": 'import*as x from"./c3.js";export{x};import{y}from"./gone.js";',
    "c2.js": "",
    "c3.js": 'import{z}from"./c1.js";',
    "lazy.js": 'import"./c4.js";',
    "c4.js": "",
  };
  assertEquals(staticImports(scripts, "app.js"), ["c1.js", "c3.js", "c2.js"]);
  assertEquals(
    withPreloads('<head><script type="module" src="app.js"></script></head>', ["c1.js"]),
    '<head><link rel="modulepreload" href="c1.js" />\n    <script type="module" src="app.js"></script></head>',
  );
});
