import { assert, assertEquals } from "../tests/assert.ts";
import { APP_CSP, appCsp, serveApp } from "./static.ts";

const ASSETS = {
  "index.html": { type: "text/html; charset=utf-8", body: "<head><!--dock-config--></head><p>hi</p>" },
  "app.js": { type: "text/javascript; charset=utf-8", body: "1" },
};

Deno.test("serveApp: index, files and config with a strict policy and nosniff", async () => {
  const index = serveApp(ASSETS, "GET", "/app/", { config: { mode: "agent" } })!;
  assertEquals(
    await index.text(),
    '<head><meta name="dock-config" content="{&quot;mode&quot;:&quot;agent&quot;}" /></head><p>hi</p>',
  );
  assertEquals(index.headers.get("content-security-policy"), APP_CSP);
  assertEquals(index.headers.get("x-content-type-options"), "nosniff");
  assert(APP_CSP.includes("script-src 'self'") && !/script-src[^;]*unsafe/.test(APP_CSP));
  const config = serveApp(ASSETS, "GET", "/app/config.json", { config: { mode: "box", box: "b1" } })!;
  assertEquals(await config.json(), { mode: "box", box: "b1" });
  assertEquals(
    serveApp(ASSETS, "GET", "/app/app.js", { config: {} })!.headers.get("content-type"),
    ASSETS["app.js"].type,
  );
  assertEquals(serveApp(ASSETS, "GET", "/app", { config: {} })!.status, 308);
});

Deno.test("serveApp: unknown files, other methods and other paths are not its to answer", () => {
  assertEquals(serveApp(ASSETS, "GET", "/app/nope.js", { config: {} }), null);
  assertEquals(serveApp(ASSETS, "GET", "/app/constructor", { config: {} }), null);
  assertEquals(serveApp(ASSETS, "POST", "/app/", { config: {} }), null);
  assertEquals(serveApp(ASSETS, "GET", "/v1/status", { config: {} }), null);
  assertEquals(serveApp(ASSETS, "GET", "/application", { config: {} }), null);
});

Deno.test("the app page frames only its own origin's panel route, and nothing where it has none", () => {
  const agent = serveApp(ASSETS, "GET", "/app/", { config: {}, panels: "http://127.0.0.1:1378" })!;
  const csp = agent.headers.get("content-security-policy") ?? "";
  assert(csp.includes("frame-src http://127.0.0.1:1378/app/plugins/;"), csp);
  assert(!csp.includes("frame-src 'self'"), csp);
  assert(APP_CSP.includes("frame-src 'none'"), APP_CSP);
  // An origin that is not one (a Host header made up to add a source) frames nothing.
  for (const panels of ["http://a b", "http://x; frame-src *", "javascript:1", "*"]) {
    const csp = appCsp(panels);
    assert(csp.includes("frame-src 'none'") && !csp.includes("*"), csp);
  }
});

Deno.test("serveApp: on loopback the files go as they are (no-transform: Deno compresses nothing)", () => {
  const big = { "app.js": { type: "text/javascript; charset=utf-8", body: "x".repeat(40_000) } };
  const loopback = serveApp(big, "GET", "/app/app.js", { config: {}, loopback: true })!;
  assertEquals(loopback.headers.get("cache-control"), "no-cache, no-transform");
  const phone = serveApp(big, "GET", "/app/app.js", { config: {} })!;
  assertEquals(phone.headers.get("cache-control"), "no-cache");
});
