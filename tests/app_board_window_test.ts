/**
 * The board draws what is near the screen (issue 36, the app ready with 2,000 sessions): in Debian's
 * Chromium against a real `dock agent` and three real `dockd`s (one on the socket, two paired over TLS),
 * with more sessions than two screens hold, the boxes below are placeholders until scrolled near, while
 * the board knows every session; a search reaches a session in such a box at once; a state change in it
 * still reaches Needs you.
 *
 * Needs /usr/bin/chromium (`.ci/run` installs it); without it the test is skipped, saying so.
 */
import { join } from "node:path";
import { CHROMIUM_MISSING, launchChromium } from "./browser.ts";
import { assert, assertEquals } from "./assert.ts";
import { makeRepo, startBox, startBoxAndAgent } from "./harness.ts";

// What runs in the page: this file is type-checked without the DOM's types.
// deno-lint-ignore no-explicit-any
declare const document: any;

/** Sessions per box: three boxes' worth is more than the rows the board draws at once (60). */
const PER_BOX = 40;

Deno.test({
  name:
    "app board: boxes below the first screens are drawn when scrolled near; search and Needs you reach them",
  ignore: CHROMIUM_MISSING,
  async fn() {
    await using laptop = await startBoxAndAgent("local");
    const { box, agent, client } = laptop;
    await using remote1 = await startBox({ env: { DOCK_LISTEN: "127.0.0.1:0" } });
    await using remote2 = await startBox({ env: { DOCK_LISTEN: "127.0.0.1:0" } });
    for (const [name, remote] of [["remote1", remote1], ["remote2", remote2]] as const) {
      const paired = await remote.cli(["pair", "--host", "127.0.0.1"]);
      await client.pairBox(/dock:\/\/[^\s']+/.exec(paired.stdout)![0], name);
      await remote.client.addLocation({
        name: "app",
        path: await makeRepo(join(remote.dirs.home, "work"), "app"),
      });
    }
    for (const b of [box, remote1, remote2]) {
      for (let i = 0; i < PER_BOX; i++) {
        await b.client.createSession({ location: "app", command: "sh", name: `s${i}` });
      }
    }
    const total = 3 * PER_BOX;
    const browser = await launchChromium();
    try {
      const url = `${agent.url}/app/#token=${encodeURIComponent(agent.token)}`;
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      await page.goto(url);
      // The board has every session (its mark counts what it knows), and drew the first boxes' rows.
      await page.waitForFunction(
        (n: number) =>
          performance.getEntriesByName("dock:board").some((m) => (m as PerformanceMark).detail >= n),
        total,
      );
      const rows = (name: string) =>
        page.evaluate(
          (name: string) => document.querySelectorAll(`.box[data-box="${name}"] .sessions li`).length,
          name,
        );
      assertEquals(await rows("local"), PER_BOX);
      assertEquals(await rows("remote2"), 0, "the last box is not drawn before it is near the screen");
      assertEquals(await page.locator('.box[data-box="remote2"] .later').count(), 1);
      // Scrolled near, it is drawn, every row of it.
      await page.locator('.box[data-box="remote2"]').scrollIntoViewIfNeeded();
      await page.waitForFunction(
        (n: number) => document.querySelectorAll('.box[data-box="remote2"] .sessions li').length === n,
        PER_BOX,
      );

      // A fresh page: a search for a session of the last box draws it without scrolling.
      const fresh = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      await fresh.goto(url);
      await fresh.locator('.sessions [data-session="local/s0"]').waitFor();
      assertEquals(await fresh.locator('.sessions [data-session="remote2/s7"]').count(), 0);
      await fresh.locator(".board-search").fill("remote2 s7");
      await fresh.locator('.sessions [data-session="remote2/s7"]').waitFor();
      assertEquals(await fresh.locator(".sessions li").count(), 1);
      await fresh.locator(".board-search").fill("");

      // A state change of an undrawn session still reaches Needs you (it reads the store, not the board).
      const path = join(remote2.dirs.home, "work", "app");
      await remote2.client.emit({
        type: "agent.waiting",
        origin: "claude",
        session: `s${PER_BOX - 1}`,
        data: { path, agent: "claude", session_id: null, reason: "permission" },
      });
      await fresh.locator('nav [data-view="needs"]').click();
      await fresh.locator(`.need[data-session="remote2/s${PER_BOX - 1}"]`).waitFor();
      assert(await fresh.locator(".need").count() >= 1);
    } finally {
      await browser.close();
    }
  },
});
