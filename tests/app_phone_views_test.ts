/**
 * The app's review and terminal on a phone, and its pool of terminals (issue 32), whole: Debian's Chromium
 * driven by Playwright against a real `dock agent` and `dockd`, real git and tmux.
 *
 * - At 390×844 the review of a worktree and a terminal are usable: the page never scrolls sideways, every
 *   control of the review and of the terminal's header lies within the screen and answers a tap, the diff
 *   reads at a legible size (a line wider than the screen scrolls inside its patch, not the page), and the
 *   terminal fits the screen and takes keys (the program reads them).
 * - Opening a 9th terminal detaches the oldest (its tmux client goes: the pool of `TERMINAL_POOL`), and
 *   opening that one again attaches it again with the history it printed before.
 *
 * Needs /usr/bin/chromium; without it the tests are skipped, saying so. A screenshot of the phone's review
 * (app-phone-review.png) goes into `docs/` with `DOCK_SCREENSHOTS=1`.
 */
import { join } from "node:path";
import type { Page } from "playwright-core";
import { CHROMIUM_MISSING, dropShots, launchChromium, shotsDir } from "./browser.ts";
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { AgentClient } from "../client/agent.ts";
import { run } from "../core/runner.ts";
import { type BoxDirs, git, laptopEnv, makeDirs, makeRepo, runCli, startAgent, startBox } from "./harness.ts";
import { clientChanges, paneOutput } from "./tmux_watch.ts";
import { until } from "./wait.ts";

/** The pool's size as app/src/views.ts sets it (that module needs the DOM's types: read, not imported). */
const TERMINAL_POOL = Number(
  /export const TERMINAL_POOL = (\d+);/.exec(
    await Deno.readTextFile(new URL("../app/src/views.ts", import.meta.url)),
  )?.[1],
);

// What runs in the page: this file is type-checked without the DOM's types.
// deno-lint-ignore no-explicit-any
declare const document: any;
// deno-lint-ignore no-explicit-any
declare const globalThis: any;

/** A real box and agent with the app's address, and what a test made there; closed by `dispose`. */
async function setUp(dirs: BoxDirs) {
  const box = await startBox({ dirs });
  const agent = await startAgent(dirs);
  const client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  await client.addLocal("devbox");
  client.close();
  const open = await runCli("dock", ["open", "--print"], { env: laptopEnv(dirs, agent), cwd: dirs.home });
  assertEquals(open.code, 0, open.stderr);
  return { box, agent, url: open.stdout.trim() };
}

/** The tmux sessions with a client attached on the box. */
async function attachedSessions(dirs: BoxDirs): Promise<string[]> {
  const socket = join(dirs.state, "box", "tmux.sock");
  const listed = await run("tmux", ["-S", socket, "list-clients", "-F", "#{session_name}"]);
  return listed.stdout.split("\n").filter(Boolean).sort();
}

/** A session that prints `lines` lines of history named after it, then logs every byte it reads. */
async function historyScript(dirs: BoxDirs, name: string, lines: number): Promise<string> {
  const script = join(dirs.root, `${name}.sh`);
  await Deno.writeTextFile(
    script,
    `i=1; while [ $i -le ${lines} ]; do echo "${name} line $i"; i=$((i+1)); done\n` +
      `stty raw -echo\nexec cat > '${join(dirs.root, `${name}.log`)}'\n`,
  );
  return `sh '${script}'`;
}

/** The page's horizontal overflow in CSS pixels (0: nothing sticks out sideways). */
async function sideways(page: Page): Promise<number> {
  return await page.evaluate(() =>
    Math.max(document.documentElement.scrollWidth, document.body.scrollWidth) - globalThis.innerWidth
  );
}

/** Asserts every element `selector` matches lies, once scrolled to, within the screen's width. */
async function allWithinWidth(page: Page, selector: string, width: number): Promise<number> {
  const items = page.locator(selector);
  const count = await items.count();
  for (let i = 0; i < count; i++) {
    await items.nth(i).scrollIntoViewIfNeeded();
    const box = await items.nth(i).boundingBox();
    assert(box, `${selector} #${i} is not shown`);
    assert(
      box.x >= 0 && box.x + box.width <= width + 0.5,
      `${selector} #${i} at x ${box.x}, ${box.width} wide`,
    );
  }
  return count;
}

Deno.test({
  name: "app at 390×844: the review and a terminal fit the phone, answer taps, read, and take keys",
  ignore: CHROMIUM_MISSING,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const SHOTS = await shotsDir();
    const dirs = await makeDirs();
    const { box, agent, url } = await setUp(dirs);
    const browser = await launchChromium();
    try {
      const repo = await makeRepo(join(dirs.home, "work"), "app", {
        "src/greet.ts": 'export function greet(name: string) {\n  return "hello " + name;\n}\n',
      });
      await box.client.addLocation({ name: "app", path: repo });
      const wt = await box.client.createWorktree("app", { name: "topic" });
      const long = `  const banner = "${"a wide line that no phone shows whole ".repeat(6)}";`;
      await Deno.writeTextFile(
        join(wt.path, "src/greet.ts"),
        `export function greet(name: string) {\n${long}\n  return \`hello, \${name}!\`;\n}\n`,
      );
      await git(wt.path, "commit", "-qam", "greet politely");
      await box.client.createSession({
        location: "app",
        command: await historyScript(dirs, "phone", 60),
        name: "phone",
      });
      // Re-checked as the pane prints and as the log is made.
      const printed = await paneOutput(box, "phone");
      const phoneLog = join(dirs.root, "phone.log");
      await until(async () => {
        assertStringIncludes((await box.client.screen("phone")).screen, "phone line 60");
        return await Deno.stat(phoneLog).then(() => true, () => false);
      }, { watch: [printed, phoneLog] });

      const page = await browser.newPage({
        viewport: { width: 390, height: 844 },
        isMobile: true,
        hasTouch: true,
      });
      const errors: string[] = [];
      page.on("pageerror", (error) => errors.push(error.message));
      await page.goto(url);

      // The review, opened from the board.
      await page.locator('[data-worktree="devbox/app/topic"]').waitFor();
      const reviewButton = page.locator(
        '.worktree:has([data-worktree="devbox/app/topic"]) [data-action="review"]',
      );
      await reviewButton.scrollIntoViewIfNeeded();
      await reviewButton.tap();
      const review = page.locator('.review[data-review="devbox/app/topic"]');
      const patch = review.locator('.patch[data-patch="src/greet.ts"]');
      const added = patch.locator(".line.add", { hasText: "a wide line" });
      await added.waitFor();
      assertEquals(await sideways(page), 0);
      // Every action is on screen, and a tap reaches it: create-PR answers (no gh on this box's PATH or
      // an error from it: either way a message in the page).
      assertEquals(await allWithinWidth(page, ".review [data-action]", 390), 5);
      await allWithinWidth(page, ".review .pr-title", 390);
      await review.locator('[data-action="create-pr"]').tap();
      await review.locator('.review-head [role="status"]').waitFor();
      // The diff reads: a legible size, its patch within the screen, the wide line scrolled inside it.
      const [fontPx, patchRight, bodyWide] = await patch.evaluate((el: {
        querySelector: (s: string) => { scrollWidth: number; clientWidth: number };
        getBoundingClientRect: () => { right: number };
      }) =>
        [
          parseFloat(globalThis.getComputedStyle(el.querySelector(".line.add") as never).fontSize),
          el.getBoundingClientRect().right,
          el.querySelector(".patch-body").scrollWidth > el.querySelector(".patch-body").clientWidth,
        ] as [number, number, boolean]
      );
      assert(fontPx >= 11, `diff font ${fontPx} px`);
      assert(patchRight <= 390, `the patch ends at ${patchRight} px`);
      assert(bodyWide, "the wide line scrolls inside its patch");
      await patch.locator(".line.add .tok-k", { hasText: "return" }).waitFor();
      await page.screenshot({ path: join(SHOTS, "app-phone-review.png") });

      // The terminal: from the board, fits the screen, its header's controls on screen, takes keys.
      await page.locator('[data-view="board"]').tap();
      const open = page.locator('.sessions [data-session="devbox/phone"] .link-button');
      await open.scrollIntoViewIfNeeded();
      await open.tap();
      const pane = page.locator('.pane[data-session="devbox/phone"]');
      await pane.locator('[data-link="open"]').waitFor();
      await pane.locator(".xterm-rows > div", { hasText: /^phone line 60\s*$/ }).waitFor();
      assertEquals(await sideways(page), 0);
      const screen = (await pane.locator(".xterm-screen").boundingBox())!;
      assert(screen.x >= 0 && screen.x + screen.width <= 390, `xterm at ${screen.x}, ${screen.width} wide`);
      const [cols, rows] = (await pane.getAttribute("data-size"))!.split("x").map(Number);
      assert(cols >= 30 && rows >= 10, `terminal of ${cols}x${rows}`);
      await allWithinWidth(page, '.pane[data-session="devbox/phone"] .pane-head button', 390);
      await allWithinWidth(page, '.pane[data-session="devbox/phone"] .term-search input', 390);
      await pane.locator(".term").tap();
      await page.keyboard.type("ok");
      await until(async () => (await Deno.readTextFile(phoneLog)) === "ok", { watch: phoneLog });
      assertEquals(errors, []);
    } finally {
      await browser.close();
      await agent.stop();
      // The box's sessions outlive its daemon by design: disposing the box ends them and its folder.
      await box[Symbol.asyncDispose]();
      await dropShots(SHOTS);
    }
  },
});

Deno.test({
  name: "app: a 9th terminal detaches the oldest; opened again it attaches with its history",
  ignore: CHROMIUM_MISSING,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const dirs = await makeDirs();
    const { box, agent, url } = await setUp(dirs);
    const browser = await launchChromium();
    try {
      const repo = await makeRepo(join(dirs.home, "work"), "app");
      await box.client.addLocation({ name: "app", path: repo });
      const names = Array.from({ length: TERMINAL_POOL + 1 }, (_, i) => `t${i}`);
      for (const name of names) {
        await box.client.createSession({
          location: "app",
          command: await historyScript(dirs, name, 120),
          name,
        });
      }
      // Re-checked as any of the panes prints.
      const printed = await Promise.all(names.map((name) => paneOutput(box, name)));
      await until(async () => {
        for (const name of names) {
          assertStringIncludes((await box.client.screen(name)).screen, `${name} line 120`);
        }
        return true;
      }, { timeoutMs: 30_000, watch: printed });
      const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
      const errors: string[] = [];
      page.on("pageerror", (error) => errors.push(error.message));
      await page.goto(url);
      const pane = (name: string) => page.locator(`.pane[data-session="devbox/${name}"]`);
      const openFromBoard = async (name: string) => {
        await page.locator('[data-view="board"]').click();
        await page.locator(`.sessions [data-session="devbox/${name}"] .link-button`).click();
        await pane(name).locator('[data-link="open"]').waitFor();
      };

      // Each tmux client attached or detached adds a line to `changes`.
      const changes = await clientChanges(join(dirs.state, "box", "tmux.sock"), dirs.root);
      for (const name of names.slice(0, TERMINAL_POOL)) await openFromBoard(name);
      assertEquals(await page.locator(".pane").count(), TERMINAL_POOL);
      await until(async () => (await attachedSessions(dirs)).length === TERMINAL_POOL, { watch: changes });
      // The 9th: the oldest (t0) leaves the page and its tmux client goes; the other eight stay.
      await openFromBoard(names[TERMINAL_POOL]);
      assertEquals(await page.locator(".pane").count(), TERMINAL_POOL);
      assertEquals(await pane("t0").count(), 0);
      await until(async () => {
        assertEquals(await attachedSessions(dirs), names.slice(1).sort());
        return true;
      }, { watch: changes });

      // t0 again: attached again (t1, now the oldest, makes room), with what it printed before.
      await openFromBoard("t0");
      await until(async () => {
        assertEquals(await attachedSessions(dirs), [...names.slice(2), "t0"].sort());
        return true;
      }, { watch: changes });
      const t0 = pane("t0");
      const row = (text: string) => t0.locator(".xterm-rows > div", { hasText: new RegExp(`^${text}\\s*$`) });
      await row("t0 line 120").waitFor();
      await t0.locator(".term").hover();
      for (let i = 0; i < 100 && !(await row("t0 line 1").isVisible()); i++) await page.mouse.wheel(0, -400);
      await row("t0 line 1").waitFor();
      // And it takes keys again: the program reads them.
      await t0.locator(".term").click();
      await page.keyboard.type("back");
      const t0Log = join(dirs.root, "t0.log");
      await until(async () => (await Deno.readTextFile(t0Log)) === "back", { watch: t0Log });
      assertEquals(errors, []);
    } finally {
      await browser.close();
      await agent.stop();
      await box[Symbol.asyncDispose]();
    }
  },
});
