/**
 * `POST sessions` with `open` (spec 2.4, 4.2), in Debian's Chromium against a real `dock agent` and
 * `dockd`: the box announces `session.open`, and the open app brings that session's terminal forward.
 * With no app open, `dock agent` says so through the OS instead: a fake `notify-send` on its `PATH`
 * records what it was asked to show.
 *
 * Needs /usr/bin/chromium (`.ci/run` installs it); without it the browser test is skipped, saying so.
 */
import { join } from "node:path";
import { CHROMIUM_MISSING, launchChromium } from "./browser.ts";
import { assertEquals, assertStringIncludes } from "./assert.ts";
import { AgentClient } from "../client/agent.ts";
import { makeDirs, makeRepo, startAgent, startBox, startBoxAndAgent } from "./harness.ts";
import { until } from "./wait.ts";

Deno.test({
  name: "app: a session started with open comes forward in the terminals; one without stays on the board",
  ignore: CHROMIUM_MISSING,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await using laptop = await startBoxAndAgent("devbox");
    const { agent, client } = laptop;
    const browser = await launchChromium();
    try {
      const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
      const errors: string[] = [];
      page.on("pageerror", (error) => errors.push(error.message));
      await page.goto(`${agent.url}/app/#token=${agent.token}`);
      await page.locator(".board").waitFor();
      await page.locator(".live.on").waitFor();
      const devbox = client.box("devbox");
      await devbox.createSession({ location: "app", name: "quiet" });
      await devbox.createSession({ location: "app", name: "wanted", open: true });
      // Its terminal, shown and attached: what the shell prints reaches the page.
      const pane = page.locator('.pane[data-session="devbox/wanted"]');
      await pane.waitFor({ state: "visible" });
      await page.locator(".view-terminals").waitFor();
      await devbox.send("wanted", "echo opened-$((6*7))");
      await pane.locator(".term").getByText("opened-42").first().waitFor();
      // The one started without `open` (announced before it) brought nothing forward.
      assertEquals(await page.locator('.pane[data-session="devbox/quiet"]').count(), 0);
      assertEquals(errors, []);
    } finally {
      await browser.close();
    }
  },
});

Deno.test({
  name: "desktop notice: with no app open, a session started with open is announced through the OS",
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const dirs = await makeDirs();
    const bin = join(dirs.root, "bin");
    const shown = join(dirs.root, "notices");
    await Deno.mkdir(bin, { recursive: true });
    await Deno.writeTextFile(
      join(bin, "notify-send"),
      `#!/bin/sh\nprintf '%s|' "$@" >> '${shown}'\necho >> '${shown}'\n`,
    );
    await Deno.chmod(join(bin, "notify-send"), 0o755);
    await using box = await startBox({ dirs });
    await using agent = await startAgent(dirs, {
      env: { DOCK_DESKTOP_NOTIFY: "1", PATH: `${bin}:${Deno.env.get("PATH")}` },
    });
    const client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
    try {
      await client.addLocal("devbox");
      await box.client.addLocation({ name: "app", path: await makeRepo(join(dirs.home, "work"), "app") });
      await client.box("devbox").createSession({ location: "app", name: "wanted", open: true });
      const line = await until(async () => {
        const text = await Deno.readTextFile(shown).catch(() => "");
        return text.split("\n").find((l) => l.includes("devbox/wanted"));
      }, { watch: shown });
      assertStringIncludes(line, "--app-name=dock|--|dock: devbox/wanted was opened for you|");
      assertStringIncludes(line, "dock attach devbox/wanted");
    } finally {
      client.close();
    }
  },
});
