/**
 * Debian's Chromium for the browser tests and the app's bench (`playwright-core`): where it is, whether it
 * is missing (the tests are skipped then, saying so), how it is launched on these machines, and where
 * screenshots go.
 *
 * @module
 */
import { type Browser, chromium } from "playwright-core";

/** Where `.ci/run` installs Chromium (`apt-get install chromium`). */
export const CHROMIUM = "/usr/bin/chromium";

/** True when there is no Chromium: browser tests are `ignore`d then. */
export const CHROMIUM_MISSING = !await Deno.stat(CHROMIUM).then(() => true, () => false);
if (CHROMIUM_MISSING) {
  console.warn(`browser tests skipped: ${CHROMIUM} is missing (apt-get install chromium; .ci/run does)`);
}

const KEEP_SHOTS = Deno.env.get("DOCK_SCREENSHOTS") === "1";

/**
 * Where a test's screenshots go: `docs/` with `DOCK_SCREENSHOTS=1` (to refresh the README's), else a new
 * temporary folder, which {@linkcode dropShots} removes (a test run leaves the tree clean).
 */
export async function shotsDir(): Promise<string> {
  return KEEP_SHOTS
    ? new URL("../docs/", import.meta.url).pathname
    : await Deno.makeTempDir({ prefix: "dock-app-shots-" });
}

/** Removes a {@linkcode shotsDir} folder unless it is `docs/`. */
export async function dropShots(dir: string): Promise<void> {
  if (!KEEP_SHOTS) await Deno.remove(dir, { recursive: true }).catch(() => {});
}

/**
 * Chromium as it runs on these machines: headless, no sandbox (root), no background traffic (a closed
 * network refuses it). Playwright gives each launch a fresh profile of its own (`--user-data-dir` in a
 * new temporary folder, removed on close).
 */
export async function launchChromium(): Promise<Browser> {
  return await chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
    ],
  });
}
