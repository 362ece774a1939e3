/**
 * `deno run -A package/bundler.ts` (part of `deno task test`): makes sure `deno bundle` runs offline.
 * It fetches its esbuild from the npm registry into the Deno cache on first use; a package build in a
 * test runs in a process with a temporary home and a bare environment, which must find it there
 * rather than fetch it. Bundles one small module of dock's into a temporary folder.
 *
 * @module
 */
import { denoBundle } from "./build.ts";

if (import.meta.main) {
  const out = await Deno.makeTempDir({ prefix: "dock-bundler-" });
  try {
    await denoBundle(out, ["--outdir", out, new URL("../client/version.ts", import.meta.url).pathname]);
  } finally {
    await Deno.remove(out, { recursive: true });
  }
}
