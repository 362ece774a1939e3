/**
 * `deno run -A package/bundler.ts` (part of `deno task test`): makes sure `deno bundle` runs offline.
 * It fetches its esbuild from the npm registry into the Deno cache on first use; a package build in a
 * test runs in a process with a temporary home and a bare environment, which must find it there
 * rather than fetch it. Bundles one small module of dock's into a temporary folder.
 *
 * @module
 */
import { run } from "../core/runner.ts";

if (import.meta.main) {
  const out = await Deno.makeTempDir({ prefix: "dock-bundler-" });
  try {
    const entry = new URL("../client/version.ts", import.meta.url).pathname;
    const bundled = await run(Deno.execPath(), [
      "bundle",
      "--quiet",
      "--platform",
      "deno",
      "--outdir",
      out,
      entry,
    ], {
      timeoutMs: 300_000,
    });
    if (bundled.code !== 0) throw new Error(`deno bundle cannot run: ${bundled.output}`);
  } finally {
    await Deno.remove(out, { recursive: true });
  }
}
