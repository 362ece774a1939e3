/**
 * The phone companion in a real browser (Debian's Chromium through `playwright-core`) at a phone's
 * 360×800 viewport, against a real daemon: paired through the link `dockd phone pair` prints, the app
 * opened in box mode with its credential in an HttpOnly cookie no script can read, the board showing the
 * box's session, and exec refused. (The phone's screenshot, `docs/app-phone.png`, is
 * tests/app_board_test.ts's, at 390×844.)
 *
 * Needs /usr/bin/chromium (`.ci/run` installs it); without it the test is skipped, saying so.
 */
import { join } from "node:path";
import { assert, assertEquals } from "./assert.ts";
import type { PhonePairCode, PhoneState } from "../client/wire.ts";
import { CHROMIUM_MISSING, launchChromium } from "./browser.ts";
import { makeRepo, startBox, type TestBox } from "./harness.ts";

// What runs in the page: this file is type-checked without the DOM's types.
// deno-lint-ignore no-explicit-any
declare const document: any;

async function dockd<T>(box: TestBox, args: string[]): Promise<T> {
  const out = await box.cli(["phone", ...args, "--json"]);
  assertEquals(out.code, 0, out.stderr);
  return JSON.parse(out.stdout) as T;
}

Deno.test({
  name:
    "phone page at 360×800: paired through its link, the app in box mode, an HttpOnly cookie, exec refused",
  ignore: CHROMIUM_MISSING,
  fn: async () => {
    await using box = await startBox();
    await makeRepo(join(box.dirs.home, "work"));
    await box.client.addLocation({ name: "app", path: join(box.dirs.home, "work", "app") });
    await box.client.createSession({ location: "app", command: "sh", name: "s1" });
    await dockd<PhoneState>(box, ["on", "--listen", "127.0.0.1:0"]);
    const { link } = await dockd<PhonePairCode>(box, ["pair", "--host", "127.0.0.1"]);
    const name = (await box.client.info()).name;

    const browser = await launchChromium();
    try {
      // The box's own CA is in no browser's store: a person accepts it once, after comparing the
      // fingerprint `dockd phone pair` printed; the test does the same by ignoring the warning.
      const context = await browser.newContext({
        viewport: { width: 360, height: 800 },
        ignoreHTTPSErrors: true,
      });
      const page = await context.newPage();
      await page.goto(link);
      await page.waitForURL((url) => url.pathname === "/app/");
      assert(!page.url().includes("#"), "the code is gone from the address bar");
      const cookies = await context.cookies();
      const credential = cookies.find((c) => c.name === "__Host-dock-phone");
      assert(
        credential?.httpOnly && credential.secure && credential.sameSite === "Strict",
        JSON.stringify(cookies.map((c) => ({ ...c, value: "…" }))),
      );
      assertEquals(await page.evaluate(() => document.cookie), "", "script cannot read the credential");
      assertEquals((await dockd<PhoneState>(box, ["status"])).devices.length, 1);

      // The app in box mode: this box's session on the board, the manifest linked for installing.
      await page.waitForSelector(`.sessions [data-session="${name}/s1"]`);
      await page.waitForSelector(`.box[data-box="${name}"] .worktree`);
      // Nothing is offered that the phone's scope refuses: no worktree actions, no ending sessions.
      assertEquals(await page.locator(".actions, .confirmed").count(), 0);
      // Nor the laptop's views, in the navigation or the palette.
      const nav = await page.locator(".nav button").allTextContents();
      assertEquals(nav.map((label) => label.replace(/\d+$/, "")), [
        "Board",
        "Needs you",
        "Terminals",
        "Events",
      ]);
      await page.keyboard.press("Control+k");
      const listed = await page.locator(".palette li > span:first-child").allTextContents();
      assert(
        listed.includes("Board") && !listed.includes("Kits") && !listed.includes("Settings"),
        listed.join(),
      );
      await page.keyboard.press("Escape");
      assertEquals(
        await page.evaluate(() => document.querySelector('link[rel="manifest"]')?.getAttribute("href")),
        "/manifest.webmanifest",
      );

      // Exec as the page would ask it (same origin, the cookie, the CSRF header): refused.
      const exec = await page.evaluate(async () => {
        const response = await fetch("/v1/exec", {
          method: "POST",
          headers: { "content-type": "application/json", "x-dock-phone": "1" },
          body: JSON.stringify({ location: "app", command: "id" }),
        });
        return { status: response.status, body: await response.json() };
      });
      assertEquals([exec.status, exec.body.error.code], [403, "phone_forbidden"]);
    } finally {
      await browser.close();
    }
  },
});
