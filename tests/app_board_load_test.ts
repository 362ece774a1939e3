/**
 * The board's load through the laptop agent (issue 36, the app ready with 200 boxes): in Debian's Chromium
 * against a real `dock agent` and `dockd`, the board is drawn from one `GET /v1/sessions`, never from each
 * box's list through the relay, and a session made on the box afterwards shows from the box's event.
 *
 * Needs /usr/bin/chromium (`.ci/run` installs it); without it the test is skipped, saying so.
 */
import { CHROMIUM_MISSING, launchChromium } from "./browser.ts";
import { assertEquals } from "./assert.ts";
import { startBoxAndAgent } from "./harness.ts";

// What runs in the page: this file is type-checked without the DOM's types.
// deno-lint-ignore no-explicit-any
declare const document: any;

Deno.test({
  name: "app board: drawn from one GET /v1/sessions, no box's list through the relay, and kept by events",
  ignore: CHROMIUM_MISSING,
  async fn() {
    await using laptop = await startBoxAndAgent("local");
    const { box, agent } = laptop;
    const browser = await launchChromium();
    try {
      for (const name of ["one", "two", "three"]) {
        await box.client.createSession({ location: "app", command: "sh", name });
      }
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      const asked: string[] = [];
      page.on("request", (request) => asked.push(new URL(request.url()).pathname));
      await page.goto(`${agent.url}/app/#token=${encodeURIComponent(agent.token)}`);
      const rows = () => page.evaluate(() => document.querySelectorAll(".sessions li").length);
      await page.waitForFunction(() => document.querySelectorAll(".sessions li").length === 3);
      assertEquals(asked.filter((path) => path === "/v1/sessions").length >= 1, true, asked.join(" "));
      assertEquals(asked.filter((path) => path === "/v1/boxes/local/api/sessions"), []);
      // Made on the box, not through the app: its event has the page read the agent's copy again.
      await box.client.createSession({ location: "app", command: "sh", name: "four" });
      await page.waitForFunction(() =>
        document.querySelector('.sessions [data-session="local/four"]') !== null
      );
      assertEquals(await rows(), 4);
      assertEquals(asked.filter((path) => path === "/v1/boxes/local/api/sessions"), []);
    } finally {
      await browser.close();
    }
  },
});
