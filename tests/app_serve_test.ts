/**
 * The laptop agent serves the app's files as they are (core/static.ts `loopback`): on loopback Deno's
 * brotli cost the agent CPU on the way to every first paint and saved no time. A real agent, asked as
 * Chromium asks.
 */
import { assertEquals } from "./assert.ts";
import { APP_ASSETS } from "../app/assets.generated.ts";
import { makeDirs, startAgent } from "./harness.ts";

Deno.test("agent: the app's files are sent uncompressed on loopback, whatever the browser accepts", async () => {
  const dirs = await makeDirs();
  await using agent = await startAgent(dirs);
  for (const name of ["app.js", "app.css", "index.html"]) {
    const response = await fetch(`${agent.url}/app/${name === "index.html" ? "" : name}`, {
      headers: { "accept-encoding": "gzip, deflate, br, zstd" },
    });
    const body = await response.text();
    assertEquals(response.status, 200, name);
    assertEquals(response.headers.get("content-encoding"), null, name);
    if (name !== "index.html") assertEquals(body, APP_ASSETS[name].body, name);
  }
});
