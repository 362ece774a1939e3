/**
 * The app (issue 14), whole: Debian's Chromium driven by Playwright against a real `dock agent` and
 * `dockd`, with a fake agent in a real worktree. The page is opened from `dock open --print`'s address;
 * everything it shows comes from the event stream. No step waits a fixed time: each waits for what the
 * page shows. A screenshot of a terminal is taken (into `docs/` with `DOCK_SCREENSHOTS=1`; the board's
 * and Needs you's are tests/app_board_test.ts's).
 *
 * Needs /usr/bin/chromium (`.ci/run` installs it); without it the test is skipped, saying so.
 */
import { join } from "node:path";
import { userInfo } from "node:os";
import type { Page } from "playwright-core";
import { CHROMIUM_MISSING, dropShots, launchChromium, shotsDir } from "./browser.ts";
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { AgentClient } from "../client/agent.ts";
import { laptopEnv, makeDirs, makeRepo, runCli, startAgent, startBox } from "./harness.ts";
import { until } from "./wait.ts";

const DENO = Deno.execPath();
const FAKE = new URL("./fixtures/fake_agent.ts", import.meta.url).pathname;
const AGENT = {
  id: "fake",
  name: "Fake agent",
  command: `'${DENO}' run -A --cached-only '${FAKE}'`,
  prompt_flag: "",
};

// What runs in the page: this file is type-checked without the DOM's types. Passed as functions (which
// Playwright calls through the debugger, not eval: the page's CSP forbids eval, and rightly).
// deno-lint-ignore no-explicit-any
declare const document: any;
// deno-lint-ignore no-explicit-any
declare const globalThis: any;
declare class MutationObserver {
  constructor(callback: () => void);
  observe(target: unknown, options: Record<string, boolean>): void;
}

/** The states a session's badge has shown, in order (recorded in the page as they are drawn). */
async function recordBadges(page: Page, session: string): Promise<void> {
  await page.evaluate((key) => {
    const seen: string[] = [];
    (globalThis.badges ??= {})[key] = seen;
    const note = () => {
      const state = document.querySelector(`.sessions [data-session="${key}"] .badge`)?.getAttribute(
        "data-state",
      );
      if (state && seen[seen.length - 1] !== state) seen.push(state);
    };
    new MutationObserver(note).observe(document.body, { subtree: true, childList: true, attributes: true });
    note();
  }, session);
}

/** Waits until the recorded badge states of `session` contain `states` in that order. */
async function badgesWent(page: Page, session: string, states: string[]): Promise<void> {
  await page.waitForFunction(
    ({ key, want }) => {
      let i = 0;
      for (const state of globalThis.badges[key] ?? []) if (state === want[i]) i++;
      return i === want.length;
    },
    { key: session, want: states },
    { timeout: 30_000 },
  );
}

/** Waits until `selector`'s attribute `name` is no longer `was`. */
async function attributeChanged(
  page: Page,
  selector: string,
  name: string,
  was: string | null,
): Promise<void> {
  await page.waitForFunction(
    (a) => document.querySelector(a.selector)?.getAttribute(a.name) !== a.was,
    { selector, name, was },
  );
}

/** Types into a terminal pane and waits for a row of its screen to read `line`. */
async function typeAndSee(
  page: Page,
  session: string,
  command: string,
  line: string,
  timeout?: number,
): Promise<void> {
  const pane = page.locator(`.pane[data-session="${session}"]`);
  await pane.locator(".term").click();
  await page.keyboard.type(command);
  await page.keyboard.press("Enter");
  await pane.locator(".xterm-rows > div", { hasText: new RegExp(`^${line}\\s*$`) }).first().waitFor({
    timeout,
  });
}

/**
 * A plugin's panel as a plugin author writes one: it asks the app for the laptop's status (granted) and
 * the queue (not granted), and tries what the sandbox must stop: the app's storage and the API itself.
 */
const PANEL = `<!doctype html><meta charset="utf-8"><pre id="out">loading</pre><script>
const out = document.getElementById("out");
const seen = {};
try { sessionStorage.getItem("token"); seen.storage = "readable"; } catch { seen.storage = "blocked"; }
try { document.cookie; seen.cookie = "readable"; } catch { seen.cookie = "blocked"; }
const waiting = new Map();
addEventListener("message", (e) => e.data && e.data.dock === "api" && waiting.get(e.data.id)?.(e.data));
const call = (id, method, path) => new Promise((resolve) => {
  waiting.set(id, resolve);
  parent.postMessage({ dock: "api", id, method, path }, "*");
});
(async () => {
  const status = await call(1, "GET", "status");
  seen.status = status.status;
  seen.boxes = status.body && Array.isArray(status.body.boxes) ? status.body.boxes.length : -1;
  seen.queue = (await call(2, "GET", "queue")).status;
  try { await fetch("/v1/status"); seen.fetch = "reached"; } catch { seen.fetch = "blocked"; }
  out.textContent = JSON.stringify(seen);
  out.dataset.done = "1";
})();
</script>`;

Deno.test({
  name: "app: board, badges, needs you, terminal (resize, reconnect), queued prompt, task template, plugin",
  ignore: CHROMIUM_MISSING,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const SHOTS = await shotsDir();
    const dirs = await makeDirs();
    const env = {
      FAKE_AGENT_WORK_MS: "1500",
      FAKE_AGENT_LOG: join(dirs.root, "prompts.log"),
      DOCK_PLUGIN_SCAN_MS: "100",
    };
    let box = await startBox({ dirs, env });
    let agent = await startAgent(dirs, { env });
    const browser = await launchChromium();
    try {
      const client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
      await client.addLocal("devbox");
      client.close();
      const repo = await makeRepo(join(dirs.home, "work"), "app", {
        ".dock/config.json": JSON.stringify({ agents: [AGENT] }),
      });
      await box.client.addLocation({ name: "app", path: repo });
      await Deno.mkdir(join(dirs.dockHome, "templates"), { recursive: true });
      await Deno.writeTextFile(
        join(dirs.dockHome, "templates", "fix.json"),
        JSON.stringify({
          name: "Fix an issue",
          box: "devbox",
          location: "app",
          agent: "fake",
          branch: "fix/{{name}}",
          prompt: "Fix issue {{issue}}",
          variables: [{ id: "issue", label: "Issue number" }],
        }),
      );
      const pluginDir = join(dirs.dockHome, "plugins", "notify");
      await Deno.mkdir(pluginDir, { recursive: true });
      const example = new URL("../plugins/examples/notify/", import.meta.url).pathname;
      await Deno.copyFile(join(example, "main.ts"), join(pluginDir, "main.ts"));
      await Deno.writeTextFile(
        join(pluginDir, "dock-plugin.json"),
        JSON.stringify({
          id: "notify",
          name: "Notify",
          version: "1.0.0",
          main: "main.ts",
          // A shell hook (on an event nothing sends): its command is part of the consent.
          hooks: [
            { on: "agent.waiting", module: "main.ts", timeout: "15s" },
            { on: "app.never", run: "true" },
          ],
          ui: ["panel.html"],
          permissions: { env: ["NOTIFY_WEBHOOK_URL"], scopes: ["events:emit", "boxes:read"] },
        }),
      );
      await Deno.writeTextFile(join(pluginDir, "panel.html"), PANEL);

      // The address `dock open` gives; the token is in the fragment only.
      const open = await runCli("dock", ["open", "--print"], { env: laptopEnv(dirs, agent), cwd: dirs.home });
      assertEquals(open.code, 0, open.stderr);
      const url = open.stdout.trim();
      assert(url.startsWith(`${agent.url}/app/#token=`), url);

      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      const errors: string[] = [];
      page.on("pageerror", (error) => errors.push(error.message));
      page.on("console", (message) => {
        if (message.type() === "error" && /Content Security Policy/.test(message.text())) {
          errors.push(message.text());
        }
      });
      await page.goto(url);
      // The token left the address bar (and the history) at once.
      await page.waitForFunction(() => !globalThis.location.hash.includes("token"));
      await page.locator('.box[data-box="devbox"] .dot.online').waitFor();

      // A fake agent: its hooks move the badge running → waiting → finished.
      await box.client.createSession({ location: "app", agent: "fake", name: "agent-1" });
      await page.locator('.sessions [data-session="devbox/agent-1"]').waitFor();
      await recordBadges(page, "devbox/agent-1");
      await box.client.send("agent-1", "ASK-PERMISSION please");
      await badgesWent(page, "devbox/agent-1", ["running", "waiting"]);
      // Needs you lists it with its screen, the count is in the tab title, and a reply answers it.
      await page.waitForFunction(() => document.title.startsWith("(1)"));
      await page.locator('[data-view="needs"]').click();
      const need = page.locator('.need[data-session="devbox/agent-1"]');
      await need.locator(".screen").waitFor();
      await need.locator(".prompt-text").fill("y");
      await need.locator('button[type="submit"]').click();
      await page.locator('[data-view="board"]').click();
      await badgesWent(page, "devbox/agent-1", ["running", "waiting", "finished"]);

      // A terminal: attach, type, see the output; resize follows the pane.
      await box.client.createSession({ location: "app", command: "sh", name: "shell" });
      await page.locator('.sessions [data-session="devbox/shell"] .link-button').click();
      await page.locator('.pane[data-session="devbox/shell"] [data-link="open"]').waitFor();
      await typeAndSee(page, "devbox/shell", "echo hi", "hi");
      const before = await page.locator('.pane[data-session="devbox/shell"]').getAttribute("data-size");
      await page.setViewportSize({ width: 900, height: 600 });
      await attributeChanged(page, '.pane[data-session="devbox/shell"]', "data-size", before);
      // The pane may settle over more than one fit, and tmux applies a resize a moment after the PTY
      // takes it: ask again until the shell reports the size the pane shows now.
      for (let attempt = 1;; attempt++) {
        const size = (await page.locator('.pane[data-session="devbox/shell"]').getAttribute("data-size"))!;
        const [cols, rows] = size.split("x");
        try {
          await typeAndSee(page, "devbox/shell", "stty size", `${rows} ${cols}`, 3000);
          break;
        } catch (error) {
          if (attempt === 5) throw error;
        }
      }
      await page.screenshot({ path: join(SHOTS, "app-terminal.png") });

      // The agent restarts: the terminal and the event stream come back by themselves.
      const attached = await page.locator('.pane[data-session="devbox/shell"] .link').getAttribute(
        "data-attached",
      );
      await agent.stop();
      await page.locator('.pane[data-session="devbox/shell"] [data-link="closed"]').waitFor();
      agent = await startAgent(dirs, { env, port: agent.port });
      await attributeChanged(page, '.pane[data-session="devbox/shell"] .link', "data-attached", attached);
      await page.locator('.pane[data-session="devbox/shell"] [data-link="open"]').waitFor();
      await typeAndSee(page, "devbox/shell", "echo again-$((40+2))", "again-42");
      await page.locator(".live.on").waitFor();

      // The box goes down: a prompt is queued, then delivered once when it is back.
      await page.locator('[data-view="board"]').click();
      await page.locator('.sessions [data-session="devbox/agent-1"] .link-button').click();
      await box.stop();
      await page.locator('[data-view="board"]').click();
      await page.locator('.box[data-box="devbox"] .dot.offline').waitFor();
      await page.locator('[data-view="terminals"]').click();
      const prompt = page.locator('.pane[data-session="devbox/agent-1"] .prompt');
      await prompt.locator(".prompt-text").fill("while you were away");
      await prompt.locator('button[type="submit"]').click();
      await prompt.locator(".outcome-queued").waitFor();
      box = await startBox({ dirs, env });
      const prompts = async () =>
        (await Deno.readTextFile(env.FAKE_AGENT_LOG).catch(() => "")).split("\n").filter(Boolean)
          .map((line) => JSON.parse(line) as { length: number });
      await until(
        async () => (await prompts()).some((p) => p.length === "while you were away".length),
        { watch: env.FAKE_AGENT_LOG, timeoutMs: 30_000 },
      );
      await page.locator('[data-view="queue"]').click();
      // Nothing left to send: the item was delivered (or has left the list).
      await page.locator(".queue").waitFor();
      await page.locator('.queue-item:not([data-state="delivered"])').first().waitFor({ state: "detached" });
      assertEquals((await prompts()).filter((p) => p.length === "while you were away".length).length, 1);

      // New task from the template: variables filled in, the branch named from them.
      await page.locator('[data-view="task"]').click();
      await page.locator('[data-template="fix"]').click();
      await page.locator('input[name="var-issue"]').fill("42");
      await page.locator('select[name="location"]').selectOption("app");
      await page.locator('input[name="name"]').fill("issue-42");
      await page.locator('button[type="submit"]', { hasText: "Create task" }).click();
      await page.locator('.pane[data-session^="devbox/"]', { hasText: "issue-42" }).first().waitFor();
      const worktree = await until(
        async () => (await box.client.locations())[0].worktrees.find((w) => w.name === "issue-42"),
        { on: box },
      );
      assertEquals(worktree.branch, "fix/issue-42");

      // A plugin: its permissions are shown before it is enabled.
      await page.locator('[data-view="plugins"]').click();
      const plugin = page.locator('.plugin[data-plugin="notify"]').first();
      await plugin.locator("button", { hasText: "enable" }).click();
      await plugin.locator(".confirm", { hasText: "NOTIFY_WEBHOOK_URL" }).waitFor();
      // Each scope with what it can lead to; the shell command quoted, with the user it runs as.
      await plugin.locator(".confirm", { hasText: "events:emit (write)" }).waitFor();
      const commands = plugin.locator(`.confirm .commands[data-runs-as="${userInfo().username}"]`);
      assertEquals(await commands.locator("code").allTextContents(), ['"true"']);
      await plugin.locator("button", { hasText: "Grant and enable" }).click();
      await page.locator('.plugin[data-plugin="notify"] button', { hasText: "disable" }).first().waitFor();

      // Its ui panel: the calls its scopes allow answer, the others are refused; it reaches nothing itself.
      await page.locator('[data-open-panel="panel.html"]').first().click();
      const panel = page.frameLocator("iframe.panel-frame");
      await panel.locator('#out[data-done="1"]').waitFor();
      const seen = JSON.parse(await panel.locator("#out").textContent() ?? "{}");
      assertEquals(seen, {
        storage: "blocked",
        cookie: "blocked",
        status: 200,
        boxes: 1,
        queue: 403,
        fetch: "blocked",
      });
      const src = await page.locator("iframe.panel-frame").getAttribute("src");
      const served = await fetch(`${agent.url}${src}`);
      assertStringIncludes(served.headers.get("content-security-policy") ?? "", "sandbox allow-scripts");
      assertStringIncludes(served.headers.get("content-security-policy") ?? "", "connect-src 'none'");
      await served.body?.cancel();
      // A box's plugin's panel comes through the pairing, once enabled there.
      const boxPanel = `${agent.url}/app/plugins/devbox/notify/panel.html`;
      assertEquals((await fetch(boxPanel).then(async (r) => (await r.body?.cancel(), r))).status, 404);
      await box.client.enablePlugin("notify", {
        env: ["NOTIFY_WEBHOOK_URL"],
        scopes: ["events:emit", "boxes:read"],
        commands: ["true"],
      });
      const fromBox = await fetch(boxPanel);
      assertEquals(fromBox.status, 200);
      assertStringIncludes(fromBox.headers.get("content-security-policy") ?? "", "sandbox allow-scripts");
      assertStringIncludes(await fromBox.text(), 'parent.postMessage({ dock: "api"');
      // Only files its manifest lists, only of an enabled plugin, never the token-protected API.
      for (const path of [src!.replace("panel.html", "main.ts"), src!.replace("/notify/", "/nope/")]) {
        const refused = await fetch(`${agent.url}${path}`);
        assertEquals(refused.status, 404, path);
        await refused.body?.cancel();
      }

      // An agent shows its dev server: the page offers the private URL, through the laptop's proxy under
      // the laptop's name for the box (the box's own URL names it by its own name).
      await box.client.preview({ location: "app", worktree: "issue-42", path: "/admin" });
      const banner = page.locator('.preview[data-preview="devbox/app/issue-42"]');
      await banner.waitFor();
      assertEquals(
        await banner.locator("a").getAttribute("href"),
        `http://issue-42.app.devbox.localhost:${agent.proxyPort}/admin`,
      );

      // The panel's own fetch, refused by its CSP as it should be, is the only error the page saw.
      const refusedByPanel = (e: string) => e.includes("Content Security Policy") && e.includes("/v1/status");
      assert(errors.some(refusedByPanel), errors.join("\n"));
      assertEquals(errors.filter((e) => !refusedByPanel(e)), []);
    } finally {
      await browser.close();
      await agent.stop();
      await box[Symbol.asyncDispose]();
      await dropShots(SHOTS);
    }
  },
});

const FAKE_TUNNEL = new URL("./fixtures/fake_cloudflared.sh", import.meta.url).pathname;

Deno.test({
  name:
    "app: shares & units (stop, start, log; a share opened after its warning, then closed) kits (preview, apply, update), worktree actions (editor, pause, sync, remove) and ending a session",
  ignore: CHROMIUM_MISSING,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const dirs = await makeDirs();
    const bin = join(dirs.root, "bin");
    await Deno.mkdir(bin, { recursive: true });
    await Deno.symlink(FAKE_TUNNEL, join(bin, "cloudflared"));
    const env = { PATH: `${bin}:${Deno.env.get("PATH")}`, FAKE_TUNNEL_LOG: join(dirs.root, "tunnel.calls") };
    // A VS Code on the laptop that records what it is asked to open.
    const editorCalls = join(dirs.root, "code.calls");
    await Deno.writeTextFile(join(bin, "code"), `#!/bin/sh\necho "$@" >>'${editorCalls}'\n`, { mode: 0o755 });
    await using box = await startBox({ dirs, env });
    await using agent = await startAgent(dirs, { env: { PATH: env.PATH } });
    const browser = await launchChromium();
    const laptop = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
    try {
      await laptop.addLocal("devbox");
      await box.client.addLocation({ name: "app", path: await makeRepo(join(dirs.home, "work"), "app") });
      const w = await box.client.createWorktree("app", { name: "w" });
      await box.client.createUnit({ name: "ticker", run: "while true; do echo tick; sleep 1; done" });
      const kitFile = join(dirs.root, "kit.json");
      const kit = { id: "base", name: "Base", version: "1.0.0", config: { env: { BASE: "1" } } };
      await Deno.writeTextFile(kitFile, JSON.stringify(kit));
      await laptop.addKit({ file: kitFile });

      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      const errors: string[] = [];
      page.on("pageerror", (error) => errors.push(error.message));
      await page.goto(`${agent.url}/app/#token=${encodeURIComponent(agent.token)}`);
      await page.locator('.box[data-box="devbox"] .dot.online').waitFor();

      // Units: the one the box runs, stopped and started from the page, its output shown.
      await page.locator('[data-view="shares"]').click();
      const unit = page.locator('.unit[data-unit="ticker"]');
      await unit.locator('[data-state="running"]').waitFor();
      await unit.locator('[data-action="stop"]').click();
      await unit.locator('[data-state="stopped"]').waitFor();
      assertEquals((await box.client.unit("ticker")).state, "stopped");
      await unit.locator('[data-action="start"]').click();
      await unit.locator('[data-state="running"]').waitFor();
      await unit.locator('[data-action="log"]').click();
      await unit.locator("pre.log", { hasText: "tick" }).waitFor();

      // A share: the page says what goes public before it opens one; closing it ends it.
      const card = page.locator('.card[data-box="devbox"]');
      await card.locator('select[name="worktree"]').selectOption("app/w");
      await card.locator("button", { hasText: "Share publicly" }).click();
      const warning = card.locator('.confirm[role="dialog"]');
      assertStringIncludes(await warning.textContent() ?? "", `port ${w.ports[0]} of app/w`);
      assertEquals(await box.client.shares(), []);
      await warning.locator("button", { hasText: "Make it public" }).click();
      const link = card.locator('.share[data-share="app/w"] a');
      await link.waitFor();
      const [share] = await box.client.shares();
      assertEquals(await link.getAttribute("href"), share.url);
      await card.locator('.share[data-share="app/w"] button', { hasText: "close" }).click();
      await card.locator('.share[data-share="app/w"]').waitFor({ state: "detached" });
      assertEquals(await box.client.shares(), []);

      // Kits: preview shows what changes, apply puts it on the box, a newer version is flagged and updated.
      await page.locator('[data-view="kits"]').click();
      await page.locator('.kit[data-kit="base"]').waitFor();
      await page.locator('.apply-kit select[name="place"]').selectOption("devbox/app");
      await page.locator('.apply-kit button[type="submit"]').click();
      const preview = page.locator('.kit-preview[data-preview-kit="base"]');
      await preview.waitFor();
      assertStringIncludes(await preview.textContent() ?? "", "changes env");
      assertEquals((await box.client.kits()).installed, []);
      await preview.locator('[data-action="apply"]').click();
      await page.locator('.installed[data-installed="devbox/app"]').waitFor();
      assertEquals((await box.client.config("app")).effective.env, { BASE: "1" });
      await Deno.writeTextFile(
        kitFile,
        JSON.stringify({ ...kit, version: "1.1.0", config: { env: { BASE: "2" } } }),
      );
      await laptop.addKit({ file: kitFile });
      // The library is the laptop's own (no event says it changed): the view reads it again when shown.
      await page.locator('[data-view="board"]').click();
      await page.locator('[data-view="kits"]').click();
      const running = page.locator('.installed[data-installed="devbox/app"]');
      await running.locator('[data-older="1"]').waitFor();
      await running.locator('[data-action="update"]').click();
      await running.locator('[data-older="1"]').waitFor({ state: "detached" });
      assertEquals((await box.client.config("app")).effective.env, { BASE: "2" });

      // The board's worktree actions: open in the editor, pause and resume, sync, remove after a yes.
      await page.locator('[data-view="board"]').click();
      const actions = page.locator('.actions[data-worktree="devbox/app/w"]');
      await actions.locator('[data-action="edit"]').click();
      await actions.locator('[role="status"]', { hasText: "opened in Visual Studio Code" }).waitFor();
      // The editor is started detached: its record of the call comes when it has run (late on a loaded machine).
      await until(async () => (await Deno.readTextFile(editorCalls).catch(() => "")).includes(w.path), {
        watch: editorCalls,
      });
      await actions.locator('[data-action="pause"]').click();
      await actions.locator('[data-action="resume"]').waitFor();
      assertEquals((await box.client.worktree("app", "w")).paused, true);
      await actions.locator('[data-action="resume"]').click();
      await actions.locator('[data-action="pause"]').waitFor();
      assertEquals((await box.client.worktree("app", "w")).paused, false);
      await actions.locator('[data-action="sync"]').click();
      await actions.locator('[role="status"]', { hasText: "rebased onto" }).waitFor();
      // A dirty worktree: removal is refused, then done when asked again.
      await Deno.writeTextFile(join(w.path, "scratch.txt"), "work in progress\n");
      await actions.locator('.confirmed[data-action="remove"] > button').click();
      await actions.locator('[data-answer="yes"]').click();
      await actions.locator('[data-answer="retry"]').click();
      await actions.waitFor({ state: "detached" });
      assertEquals((await box.client.locations())[0].worktrees.map((x) => x.name), ["app"]);

      // A session ended from the board, after a yes.
      await box.client.createSession({ location: "app", command: "sh", name: "shell" });
      const shell = page.locator('.sessions [data-session="devbox/shell"]');
      await shell.locator('.confirmed[data-action="end"] > button').click();
      await shell.locator('[data-answer="yes"]').click();
      await until(async () => !(await box.client.sessions()).some((x) => x.name === "shell" && !x.exited), {
        on: box,
      });
      assertEquals(errors, []);
    } finally {
      laptop.close();
      await browser.close();
    }
  },
});
