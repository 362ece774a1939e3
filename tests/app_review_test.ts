/**
 * The app's review and terminals (issue 32 items 1 and 2), whole: Debian's Chromium driven by Playwright
 * against a real `dock agent` and `dockd`, real git and tmux. A worktree's review is opened from the
 * board and shows its commit and diff (and, with no `gh` on the box, a create-PR that says what to
 * install); a terminal shows history the session printed before the attach, the wheel scrolls it and
 * sends the program nothing (the program logs every byte it reads), search finds a line in it, the
 * terminal stays attached across a view switch, copies what is selected, and Ctrl+Shift+K gives the
 * keyboard back to the page. Screenshots (into `docs/` with `DOCK_SCREENSHOTS=1`): app-review.png,
 * app-terminal-scrollback.png.
 *
 * Needs /usr/bin/chromium; without it the test is skipped, saying so.
 */
import { join } from "node:path";
import { CHROMIUM_MISSING, dropShots, launchChromium, shotsDir } from "./browser.ts";
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { AgentClient } from "../client/agent.ts";
import { which } from "../core/runner.ts";
import { git, laptopEnv, makeDirs, makeRepo, runCli, startAgent, startBox } from "./harness.ts";
import { paneOutput } from "./tmux_watch.ts";
import { until } from "./wait.ts";

// What runs in the page: this file is type-checked without the DOM's types.
// deno-lint-ignore no-explicit-any
declare const document: any;
// deno-lint-ignore no-explicit-any
declare const navigator: any;

/** The PATH with no folder that holds a `gh`: the box has none. */
function pathWithoutGh(): string {
  return (Deno.env.get("PATH") ?? "").split(":").filter((dir) => dir && !which("gh", dir)).join(":");
}

Deno.test({
  name:
    "app: a worktree's review from the board; a terminal with tmux's history, wheel, search, pool, leave key",
  ignore: CHROMIUM_MISSING,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const SHOTS = await shotsDir();
    const dirs = await makeDirs();
    const box = await startBox({ dirs, env: { PATH: pathWithoutGh() } });
    const agent = await startAgent(dirs);
    const browser = await launchChromium();
    try {
      const client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
      await client.addLocal("devbox");
      client.close();
      const repo = await makeRepo(join(dirs.home, "work"), "app", {
        "src/greet.ts": 'export function greet(name: string) {\n  return "hello " + name;\n}\n',
      });
      await box.client.addLocation({ name: "app", path: repo });
      const wt = await box.client.createWorktree("app", { name: "topic" });
      await Deno.writeTextFile(
        join(wt.path, "src/greet.ts"),
        "export function greet(name: string) {\n  // Polite by default.\n  return `hello, ${name}!`;\n}\n",
      );
      await git(wt.path, "commit", "-qam", "greet politely");
      await Deno.writeTextFile(join(wt.path, "TODO.md"), "- tests\n");

      // A program that prints 300 lines, then logs every byte it reads (raw: each key as it comes).
      const log = join(dirs.root, "read.log");
      const script = join(dirs.root, "reader.sh");
      await Deno.writeTextFile(
        script,
        `i=1; while [ $i -le 300 ]; do echo "history line $i"; i=$((i+1)); done\nstty raw -echo\nexec cat > '${log}'\n`,
      );
      await box.client.createSession({ location: "app", command: `sh '${script}'`, name: "reader" });
      // Re-checked as the pane prints and as the log is made.
      const printed = await paneOutput(box, "reader");
      await until(async () => {
        assertStringIncludes((await box.client.screen("reader")).screen, "history line 300");
        assert(await Deno.stat(log).then(() => true, () => false), "cat is reading");
        return true;
      }, { watch: [printed, log] });

      const open = await runCli("dock", ["open", "--print"], { env: laptopEnv(dirs, agent), cwd: dirs.home });
      assertEquals(open.code, 0, open.stderr);
      const context = await browser.newContext({
        viewport: { width: 1280, height: 800 },
        permissions: ["clipboard-read", "clipboard-write"],
      });
      const page = await context.newPage();
      const errors: string[] = [];
      page.on("pageerror", (error) => errors.push(error.message));
      await page.goto(open.stdout.trim());

      // The review, from the worktree on the board.
      await page.locator('[data-worktree="devbox/app/topic"]').waitFor();
      await page.locator('.worktree:has([data-worktree="devbox/app/topic"]) [data-action="review"]').click();
      const review = page.locator('.review[data-review="devbox/app/topic"]');
      await review.locator('[data-ahead="1"]').waitFor();
      await review.locator(".commits li", { hasText: "greet politely" }).waitFor();
      const patch = review.locator('.patch[data-patch="src/greet.ts"]');
      await patch.locator(".line.add", { hasText: "// Polite by default." }).waitFor();
      await patch.locator(".line.del", { hasText: 'return "hello " + name;' }).waitFor();
      // The light colour: a keyword and a string in the added line are told apart.
      assertEquals(await patch.locator(".line.add .tok-k", { hasText: "return" }).count(), 1);
      await review.locator('[data-untracked="TODO.md"]').waitFor();
      // No gh on the box: the answer says what to install.
      await review.locator('[data-action="create-pr"]').click();
      await review.locator(".error", { hasText: "install it" }).waitFor();
      await page.screenshot({ path: join(SHOTS, "app-review.png") });

      // The terminal: the history from before the attach is there to scroll back to.
      await page.locator('[data-view="board"]').click();
      await page.locator('.sessions [data-session="devbox/reader"] .link-button').click();
      const pane = page.locator('.pane[data-session="devbox/reader"]');
      await pane.locator('[data-link="open"]').waitFor();
      const row = (text: string) =>
        pane.locator(".xterm-rows > div", { hasText: new RegExp(`^${text}\\s*$`) });
      await row("history line 300").waitFor();
      await pane.locator(".term").hover();
      for (let i = 0; i < 100 && !(await row("history line 5").isVisible()); i++) {
        await page.mouse.wheel(0, -400);
      }
      await row("history line 5").waitFor();
      await page.screenshot({ path: join(SHOTS, "app-terminal-scrollback.png") });
      for (let i = 0; i < 100 && !(await row("history line 300").isVisible()); i++) {
        await page.mouse.wheel(0, 400);
      }
      await row("history line 300").waitFor();
      // The wheel sent the program nothing: the first bytes it reads are the ones typed.
      await pane.locator(".term").click();
      await page.keyboard.type("zq");
      await until(async () => (await Deno.readTextFile(log)) === "zq", { watch: log });

      // Search finds a line far up in the history.
      await page.keyboard.press("Control+Shift+F");
      assertEquals(await page.evaluate(() => document.activeElement?.type), "search");
      await page.keyboard.type("history line 42");
      await page.keyboard.press("Enter");
      await row("history line 42").waitFor();

      // Copy on select: a double-click selects a word, which lands on the clipboard.
      const at = (await row("history line 42").boundingBox())!;
      await page.mouse.dblclick(at.x + 5, at.y + at.height / 2);
      await until(async () => (await page.evaluate(() => navigator.clipboard.readText())) === "history");

      // Another view and back: the same terminal, still attached, its history kept.
      const attached = await pane.locator(".link").getAttribute("data-attached");
      await page.evaluate(() =>
        document.querySelector('.pane[data-session="devbox/reader"]').dataset.kept = "1"
      );
      await page.locator('[data-view="review"]').click();
      await review.waitFor();
      assertEquals(await pane.isVisible(), false);
      await page.locator('[data-view="terminals"]').click();
      await pane.locator('[data-link="open"]').waitFor();
      assertEquals(await pane.getAttribute("data-kept"), "1");
      assertEquals(await pane.locator(".link").getAttribute("data-attached"), attached);
      assertEquals(await row("history line 42").count(), 1);

      // Ctrl+Shift+K, as the header says, gives the keyboard back to the page (and types nothing).
      await pane.locator(".term-keys", { hasText: "Ctrl+Shift+K" }).waitFor();
      await pane.locator(".term").click();
      await page.keyboard.press("Control+Shift+K");
      assertEquals(
        await page.evaluate(() => document.activeElement?.closest(".pane") === null),
        true,
      );
      assertEquals(await page.locator(".palette").count(), 0);
      await page.keyboard.press("Tab");
      assertEquals(await page.evaluate(() => document.activeElement?.closest(".xterm") === null), true);
      assertEquals(await Deno.readTextFile(log), "zq");
      assertEquals(errors, []);
    } finally {
      await browser.close();
      await agent.stop();
      // Disposed, not only stopped: its tmux server (and the pane's output pipe) goes with it.
      await box[Symbol.asyncDispose]();
      await dropShots(SHOTS);
      await Deno.remove(dirs.root, { recursive: true }).catch(() => {});
    }
  },
});
