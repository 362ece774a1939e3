/**
 * The board by worktree, Needs you in the order to take it, notifications and outages (issue 32 items 3,
 * 4 and 6), in Debian's Chromium against a real `dock agent` and `dockd` with fake agents in real
 * worktrees: sessions grouped under their worktree with why they wait; Needs you ordered permission →
 * question → input → finished; Alt+W opening the next waiting agent; a search narrowing the board; the
 * permission to notify asked from the Needs you badge, a notice saying why and where, its click opening the
 * session; an answer shown as delivered; a preview link through the laptop's proxy under the laptop's name;
 * the banner while the agent is down; the "last known" marker and disabled keys while the box is down; the
 * phone page (390×844) with its service worker. No step waits a fixed time.
 *
 * Needs /usr/bin/chromium (`.ci/run` installs it); without it the test is skipped, saying so.
 */
import { join } from "node:path";
import type { Page } from "playwright-core";
import { type Browser, chromium } from "playwright-core";
import { CHROMIUM, CHROMIUM_MISSING, dropShots, launchChromium, shotsDir } from "./browser.ts";
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { AgentClient } from "../client/agent.ts";
import type { PhonePairCode, PhoneState } from "../client/wire.ts";
import { makeDirs, makeRepo, startAgent, startBox, type TestBox } from "./harness.ts";
import { until } from "./wait.ts";
import { paneOutput } from "./tmux_watch.ts";

const DENO = Deno.execPath();
const FAKE = new URL("./fixtures/fake_agent.ts", import.meta.url).pathname;
const AGENT = {
  id: "fake",
  name: "Fake agent",
  command: `'${DENO}' run -A --cached-only '${FAKE}'`,
  prompt_flag: "",
};

// What runs in the page: this file is type-checked without the DOM's types.
// deno-lint-ignore no-explicit-any
declare const document: any;
// deno-lint-ignore no-explicit-any
declare const globalThis: any;
// deno-lint-ignore no-explicit-any
declare const navigator: any;

/**
 * Puts a recorder in place of the page's `Notification` before the app loads: the permission starts
 * unasked, `requestPermission` is counted and asks the real one (granted by the context), each notice is
 * kept (title, body, and the object, whose `onclick` the test calls as a click would). `__hidden` makes
 * the page report itself hidden, as a page in the background does.
 */
function recordNotifications(): void {
  const Real = globalThis.Notification;
  const shown: unknown[] = [];
  let permission = "default";
  class Recorded {
    title: string;
    body: string;
    onclick: (() => void) | null = null;
    constructor(title: string, options: { body?: string } = {}) {
      this.title = title;
      this.body = options.body ?? "";
      shown.push(this);
    }
    close(): void {}
    static get permission() {
      return permission;
    }
    static async requestPermission() {
      globalThis.__asked = (globalThis.__asked ?? 0) + 1;
      permission = await Real.requestPermission();
      return permission;
    }
  }
  globalThis.__notices = shown;
  globalThis.Notification = Recorded;
  Object.defineProperty(document, "visibilityState", {
    get: () => globalThis.__hidden ? "hidden" : "visible",
  });
}

/** The `data-session` of each Needs you card, top to bottom. */
function needOrder(page: Page): Promise<string[]> {
  return page.evaluate(() =>
    [...document.querySelectorAll(".need")].map((e: { dataset: { session: string } }) => e.dataset.session)
  );
}

/** Waits until the session's badge on the board reads `state` (and, when given, `reason`). */
async function boardState(page: Page, key: string, state: string, reason?: string): Promise<void> {
  const row = page.locator(`.sessions [data-session="${key}"]`);
  await row.locator(`.badge[data-state="${state}"]`).waitFor({ timeout: 30_000 });
  if (reason) await row.locator(`.reason[data-reason="${reason}"]`).waitFor({ timeout: 30_000 });
}

async function dockd<T>(box: TestBox, args: string[]): Promise<T> {
  const out = await box.cli(["phone", ...args, "--json"]);
  assertEquals(out.code, 0, out.stderr);
  return JSON.parse(out.stdout) as T;
}

Deno.test({
  name: "app board: by worktree, needs-you order, next waiting key, notifications, outages, phone",
  ignore: CHROMIUM_MISSING,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const SHOTS = await shotsDir();
    const dirs = await makeDirs();
    let box = await startBox({ dirs });
    let agent = await startAgent(dirs);
    const browser = await launchChromium();
    let trusting: Browser | undefined;
    try {
      const laptop = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
      await laptop.addLocal("devbox");
      laptop.close();
      const repo = await makeRepo(join(dirs.home, "work"), "app", {
        ".dock/config.json": JSON.stringify({ agents: [AGENT] }),
      });
      await box.client.addLocation({ name: "app", path: repo });
      await box.client.createWorktree("app", { name: "feat" });
      const main = (await box.client.locations())[0].worktrees.find((w) => w.main)!.name;
      // The box's own name is not the laptop's ("devbox"): the page must use the laptop's.
      const own = (await box.client.info()).name;
      assert(own !== "devbox", own);

      const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      await context.grantPermissions(["notifications"]);
      await context.addInitScript(recordNotifications);
      const page = await context.newPage();
      const errors: string[] = [];
      page.on("pageerror", (error) => errors.push(error.message));
      await page.goto(`${agent.url}/app/#token=${encodeURIComponent(agent.token)}`);
      await page.locator('.box[data-box="devbox"] .dot.online').waitFor();

      // Four agents, each waiting for a different reason (or finished), in two worktrees.
      await box.client.createSession({ location: "app/feat", agent: "fake", name: "perm" });
      for (const name of ["quest", "input", "done"]) {
        await box.client.createSession({ location: "app", agent: "fake", name });
      }
      for (const name of ["perm", "quest", "input", "done"]) await boardState(page, `devbox/${name}`, "idle");
      await box.client.send("done", "hello");
      await boardState(page, "devbox/done", "finished");
      await box.client.send("input", "long work SLOW:600000");
      await boardState(page, "devbox/input", "running");
      const printed = await paneOutput(box, "input");
      await until(async () => (await box.client.screen("input")).screen.includes("thinking"), {
        timeoutMs: 30_000,
        watch: printed,
      });
      await box.client.keys("input", ["Escape"]);
      await boardState(page, "devbox/input", "waiting", "input");
      await box.client.send("quest", "ASK-QUESTION which one?");
      await boardState(page, "devbox/quest", "waiting", "question");
      await box.client.send("perm", "ASK-MENU run echo");
      await boardState(page, "devbox/perm", "waiting", "permission");

      // Grouped by worktree: each session under the worktree it runs in, with its time in state.
      const feat = page.locator('.worktree[data-where="devbox/app/feat"]');
      await feat.locator('.sessions [data-session="devbox/perm"]').waitFor();
      const home = page.locator(`.worktree[data-where="devbox/app/${main}"]`);
      for (const name of ["quest", "input", "done"]) {
        await home.locator(`.sessions [data-session="devbox/${name}"]`).waitFor();
      }
      assertEquals(await feat.locator(".sessions li").count(), 1);
      // The last line of a screen, read when its state changed (and once more as it settles).
      await page.locator('.sessions [data-session="devbox/done"] .last-line', { hasText: /Done|>/ })
        .waitFor();
      assertStringIncludes(
        await page.locator('.sessions [data-session="devbox/perm"] .since').textContent() ?? "",
        "for ",
      );
      await page.screenshot({ path: join(SHOTS, "app-board.png") });

      // The search narrows the board to what matches; the state filter too.
      await page.locator(".board-search").fill("quest");
      await page.locator('.sessions [data-session="devbox/done"]').waitFor({ state: "detached" });
      assertEquals(await page.locator(".sessions li").count(), 1);
      await page.locator(".board-search").fill("");
      await page.locator('[data-filter="running"]').click();
      await page.locator(".sessions li").first().waitFor({ state: "detached" });
      await page.locator('[data-filter="all"]').click();
      await page.locator('.sessions [data-session="devbox/done"]').waitFor();

      // The first press of the Needs you badge asks to notify; Needs you is in the order to take it.
      assertEquals(await page.evaluate(() => globalThis.__asked ?? 0), 0);
      await page.locator('[data-view="needs"] .count').click();
      await page.waitForFunction(() => globalThis.__asked === 1);
      await page.waitForFunction(() => document.querySelectorAll(".need").length === 4);
      assertEquals(await needOrder(page), ["devbox/perm", "devbox/quest", "devbox/input", "devbox/done"]);
      await page.locator('.need[data-session="devbox/perm"] .screen').waitFor();
      await page.screenshot({ path: join(SHOTS, "app-needs-you.png") });

      // Alt+W opens the next waiting agent, round the waiting ones in that order.
      await page.locator('[data-view="board"]').click();
      await page.keyboard.press("Alt+KeyW");
      await page.locator('.pane[data-session="devbox/perm"]').waitFor();
      await page.waitForFunction(() => globalThis.location.hash === "#terminals");
      await page.keyboard.press("Alt+KeyW");
      await page.locator('.pane[data-session="devbox/quest"]').waitFor();

      // In the background, an agent that starts waiting is notified with why and where; a click on the
      // notice opens its terminal.
      await page.locator('[data-view="board"]').click();
      await page.evaluate(() => globalThis.__hidden = true);
      await box.client.send("done", "ASK-QUESTION one more?");
      const notice = await page.waitForFunction(() =>
        globalThis.__notices.find((n: { title: string }) => n.title === "devbox/done needs you")?.body
      );
      assertEquals(await notice.jsonValue(), `fake asks you a question in app/${main}.`);
      await page.evaluate(() => {
        globalThis.__hidden = false;
        globalThis.__notices.find((n: { title: string }) => n.title === "devbox/done needs you").onclick();
      });
      await page.locator('.pane[data-session="devbox/done"]').waitFor();
      await page.waitForFunction(() => globalThis.location.hash === "#terminals");

      // An answer through the answer route shows as delivered once the box typed it.
      await page.locator('[data-view="needs"]').click();
      const perm = page.locator('.need[data-session="devbox/perm"]');
      await perm.locator('[data-answer="yes"]').click();
      // The mark stays once the agent moves on (the card with it, until dismissed).
      await perm.locator('.delivered[data-delivered="answered yes"]').waitFor();
      await page.locator('[data-view="board"]').click();
      await boardState(page, "devbox/perm", "finished");

      // A preview the box announces opens through the laptop's proxy, under the laptop's name for the box.
      await box.client.preview({ location: "app", worktree: "feat", path: "/docs/" });
      const link = page.locator('.preview[data-preview="devbox/app/feat"] a');
      await link.waitFor();
      assertEquals(
        await link.getAttribute("href"),
        `http://feat.app.devbox.localhost:${agent.proxyPort}/docs/`,
      );

      // The agent goes down: a banner says so in a sentence, and goes when it is back.
      await agent.stop();
      const banner = page.locator('.outage[data-outage="agent"]');
      await banner.waitFor();
      assertStringIncludes(
        await banner.textContent() ?? "",
        "The dock agent on this laptop is not answering",
      );
      agent = await startAgent(dirs, { port: agent.port });
      await banner.waitFor({ state: "detached", timeout: 30_000 });

      // The box goes down: every state it showed is marked as the last known, keys and answers are off,
      // and no socket error reaches the page.
      await box.stop();
      await page.locator('.box[data-box="devbox"] .dot.offline').waitFor({ timeout: 30_000 });
      await page.locator('.sessions [data-session="devbox/quest"] .stale', { hasText: "last known" })
        .waitFor();
      assertEquals(
        await page.locator(".sessions li").count(),
        await page.locator(".sessions li .stale").count(),
      );
      await page.locator('[data-view="needs"]').click();
      const quest = page.locator('.need[data-session="devbox/quest"]');
      await quest.locator(".stale").waitFor();
      assert(await quest.locator("button.key").first().isDisabled(), "keys are disabled while offline");
      const text = await page.locator("body").textContent() ?? "";
      assert(!/os error|fetch failed|error sending request/i.test(text), text);
      await page.setViewportSize({ width: 390, height: 844 });
      await page.locator('[data-view="board"]').click();
      await page.locator('.box[data-box="devbox"] .offline-note').waitFor();
      assertEquals(errors, []);
      await context.close();

      // The phone: the box's own page at 390×844, installable (manifest, service worker that caches
      // nothing: an API answer read twice through it is the box's newest).
      box = await startBox({ dirs });
      await dockd<PhoneState>(box, ["on", "--listen", "127.0.0.1:0"]);
      const { link: pair } = await dockd<PhonePairCode>(box, ["pair", "--host", "127.0.0.1"]);
      // A service worker needs a certificate the browser trusts: a phone that installed the box's CA
      // (after comparing its fingerprint) has one; this browser is told to trust it the same way.
      trusting = await chromium.launch({
        executablePath: CHROMIUM,
        headless: true,
        args: ["--headless", "--no-sandbox", "--disable-gpu", "--ignore-certificate-errors"],
      });
      const phone = await trusting.newContext({
        viewport: { width: 390, height: 844 },
        ignoreHTTPSErrors: true,
      });
      const phonePage = await phone.newPage();
      await phonePage.goto(pair);
      await phonePage.waitForURL((url) => url.pathname === "/app/");
      await phonePage.locator(`.sessions [data-session="${own}/quest"]`).waitFor({ timeout: 30_000 });
      // The worker controls the page, and an API answer read through it twice is the box's newest.
      await phonePage.waitForFunction(() => navigator.serviceWorker.controller !== null);
      const scope = await phonePage.evaluate(async () =>
        (await navigator.serviceWorker.getRegistration()).scope
      );
      assertEquals(new URL(scope).pathname, "/app/");
      const listed = () =>
        phonePage.evaluate(async () =>
          (await (await fetch("/v1/sessions", { headers: { "x-dock-phone": "1" } })).json()).length
        );
      const first = await listed();
      await box.client.createSession({ location: "app", command: "sh", name: "later" });
      assertEquals(await listed(), first + 1);
      await phonePage.locator('[data-view="needs"]').click();
      await phonePage.locator(".need").first().waitFor({ timeout: 30_000 });
      await phonePage.screenshot({ path: join(SHOTS, "app-phone.png") });
    } finally {
      await trusting?.close();
      await browser.close();
      await agent.stop().catch(() => {});
      // Disposed, not only stopped: its tmux server (and a pane's output pipe) goes with it.
      await box[Symbol.asyncDispose]().catch(() => {});
      await dropShots(SHOTS);
    }
  },
});
