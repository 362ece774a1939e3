/**
 * Creating from the app and the small things (issue 32 items 5 and 7), in Debian's Chromium against a
 * real `dock agent` and `dockd` with a fake agent preset: a location added from a path, a worktree, a
 * session in it with a preset picked from a select, a template that cannot work listed as invalid with
 * why, a config that does not load shown, a hand-off recording `from_session`, hooks refreshed on
 * `hooks.changed`, a forward shown as a toast, a delivered queue item with nothing to resend, a kit's
 * `match.slug` narrowing its Apply form, empty views saying so, and the theme kept over a reload (at
 * 1280×800); then at 390×844 every tab reachable through the More menu and every button, select and
 * input of the main views at least 44 px high. Each step waits for what the page shows.
 *
 * Needs /usr/bin/chromium (`.ci/run` installs it); without it the tests are skipped, saying so.
 */
import { join } from "node:path";
import type { Page } from "playwright-core";
import { CHROMIUM_MISSING, dropShots, launchChromium, shotsDir } from "./browser.ts";
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { AgentClient } from "../client/agent.ts";
import {
  freePort,
  git,
  makeDirs,
  makeRepo,
  startAgent,
  startBox,
  type TestAgent,
  type TestBox,
} from "./harness.ts";
import { until } from "./wait.ts";

/** The app's views (app/src/views.ts, which reads the page's address as it loads: not importable here). */
const VIEWS = [
  ["board", "Board"],
  ["needs", "Needs you"],
  ["terminals", "Terminals"],
  ["review", "Review"],
  ["task", "New task"],
  ["queue", "Queue"],
  ["events", "Events"],
  ["automation", "Hooks & flows"],
  ["plugins", "Plugins"],
  ["shares", "Shares & units"],
  ["kits", "Kits"],
  ["settings", "Settings"],
].map(([id, label]) => ({ id, label }));

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

/** A box with the fake preset's location `app`, a broken config's `broken`, and an agent that knows it. */
async function setUp(): Promise<
  { box: TestBox; agent: TestAgent; root: string; home: string; log: string }
> {
  const dirs = await makeDirs();
  const log = join(dirs.root, "prompts.log");
  const env = { FAKE_AGENT_WORK_MS: "300", FAKE_AGENT_LOG: log, FAKE_AGENT_LOG_TEXT: "1" };
  const box = await startBox({ dirs, env });
  const agent = await startAgent(dirs, { env });
  const client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  await client.addLocal("devbox");
  client.close();
  const app = await makeRepo(join(dirs.home, "work"), "app", {
    ".dock/config.json": JSON.stringify({ agents: [AGENT] }),
  });
  // Cloned from acme/shop, as far as its origin says: what a kit's `match.slug` selects.
  await git(app, "remote", "add", "origin", "https://github.com/acme/shop.git");
  await box.client.addLocation({ name: "app", path: app });
  const broken = await makeRepo(join(dirs.home, "work"), "broken", {
    ".dock/config.json": JSON.stringify({ ports: "many" }),
  });
  await box.client.addLocation({ name: "broken", path: broken });
  await Deno.mkdir(join(dirs.dockHome, "templates"), { recursive: true });
  await Deno.writeTextFile(
    join(dirs.dockHome, "templates", "fix.json"),
    JSON.stringify({ name: "Fix", box: "devbox", location: "app", agent: "fake", prompt: "Fix {{name}}" }),
  );
  // A command with a first prompt: every `POST tasks` would refuse it.
  await Deno.writeTextFile(
    join(dirs.dockHome, "templates", "script.json"),
    JSON.stringify({ name: "Script", command: "make test", prompt: "run it" }),
  );
  return { box, agent, root: dirs.root, home: dirs.home, log };
}

/** An agent route called as the test (not the page). */
async function call(agent: TestAgent, method: string, path: string, body?: unknown): Promise<unknown> {
  const response = await fetch(`${agent.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${agent.token}`, "content-type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  assert(response.ok, `${method} ${path}: ${response.status} ${text}`);
  return text ? JSON.parse(text) : null;
}

/** Opens the app with the agent's token, as `dock open` does, and waits for the box on the board. */
async function openApp(page: Page, agent: TestAgent): Promise<void> {
  await page.goto(`${agent.url}/app/#token=${agent.token}`);
  await page.locator('.box[data-box="devbox"] .dot.online').waitFor();
}

Deno.test({
  name: "app: a location, a worktree and a session with a preset made from the page; templates, config, " +
    "hand-off, hooks, toasts, queue, kits, empty views and the theme",
  ignore: CHROMIUM_MISSING,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const { box, agent, root, home, log } = await setUp();
    const browser = await launchChromium();
    try {
      const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
      const errors: string[] = [];
      page.on("pageerror", (error) => errors.push(error.message));
      await openApp(page, agent);

      // Box and location are chosen up front: the first ones, not "—".
      await page.locator('[data-view="task"]').click();
      const boxSelect = page.locator('select[name="box"]');
      await boxSelect.waitFor();
      assertEquals(await boxSelect.inputValue(), "devbox");
      // (The box's locations may still be on their way when the view opens: chosen as they come.)
      await until(async () => await page.locator('select[name="location"]').inputValue() === "app");

      // The template that cannot work is listed as invalid, with why; the valid one is not.
      const script = page.locator('button[data-template="script"]');
      assert(await script.isDisabled());
      assertStringIncludes((await script.textContent()) ?? "", "(invalid)");
      assertStringIncludes(
        (await page.locator('.template-problem[data-template="script"]').textContent()) ?? "",
        "a first prompt needs an agent",
      );
      assert(await page.locator('button[data-template="fix"]').isEnabled());

      await page.locator('select[name="agent"] option[value="fake"]').waitFor({ state: "attached" });
      const shots = await shotsDir();
      await page.screenshot({ path: join(shots, "app-new.png") });
      await dropShots(shots);

      // The reads of the config of `other` (added below) are held until `broken`'s was answered: an
      // answer overtaken by a newer pick must not overwrite it (CI once saw `other`'s clean config land
      // last and hide `broken`'s errors).
      let brokenRead!: () => void;
      const brokenAnswered = new Promise<void>((resolve) => brokenRead = resolve);
      let otherHeld = 0;
      let otherAnswered = 0;
      page.on("requestfinished", (request) => {
        if (request.url().endsWith("/locations/broken/config")) brokenRead();
        if (request.url().endsWith("/locations/other/config")) otherAnswered++;
      });
      await page.route("**/locations/other/config", async (route) => {
        otherHeld++;
        await brokenAnswered;
        await route.continue();
      });

      // A location added from a path on the box: listed by the box, and chosen at once.
      const other = await makeRepo(join(home, "work"), "other");
      await page.locator('input[name="location-source"]').fill(other);
      await page.locator('input[name="location-name"]').fill("other");
      await page.locator('button[name="add-location"]').click();
      await page.locator(".add-location [role=status]", { hasText: "added devbox/other" }).waitFor();
      assert((await box.client.locations()).some((l) => l.name === "other" && l.path === other));
      await until(async () => await page.locator('select[name="location"]').inputValue() === "other");

      // A broken config is shown with its field, here and in Hooks & flows; it stays shown once the
      // held read of `other` came back after it.
      await page.locator('select[name="location"]').selectOption("broken");
      const problem = page.locator(".create .config-errors");
      await problem.waitFor();
      await until(() => otherHeld > 0 && otherAnswered === otherHeld || undefined);
      await page.unroute("**/locations/other/config");
      // Two frames: the page has drawn what those answers set.
      await page.evaluate(() => {
        const frame = (globalThis as unknown as { requestAnimationFrame(f: () => void): void })
          .requestAnimationFrame;
        return new Promise<void>((resolve) => frame(() => frame(resolve)));
      });
      assert(await problem.isVisible(), "an overtaken read of `other` hid the errors of `broken`");
      assertStringIncludes((await problem.textContent()) ?? "", "ports");

      // A worktree with its branch, in `app`.
      await page.locator('select[name="location"]').selectOption("app");
      await page.locator('input[name="worktree-name"]').fill("feature");
      await page.locator('input[name="worktree-branch"]').fill("feat/page");
      await page.locator('button[name="create-worktree"]').click();
      await page.locator(".new-worktree [role=status]", { hasText: "created devbox/app/feature" }).waitFor();
      const made = (await box.client.locations()).find((l) => l.name === "app")!.worktrees
        .find((w) => w.name === "feature");
      assertEquals(made?.branch, "feat/page");

      // A session in that worktree, its agent picked among the box's presets (a select, not free text).
      await page.locator('select[name="worktree"] option[value="feature"]').waitFor({ state: "attached" });
      await page.locator('select[name="worktree"]').selectOption("feature");
      const agents = await page.locator('select[name="agent"] option').evaluateAll((options) =>
        options.map((o) => (o as unknown as { value: string }).value)
      );
      assert(agents.includes("fake"), agents.join());
      await page.locator('select[name="agent"]').selectOption("fake");
      await page.locator('textarea[name="prompt"]').fill("hello from the page");
      await page.locator('button[name="create-task"]', { hasText: "Start session" }).click();
      await page.locator('.pane[data-session^="devbox/"]').first().waitFor();
      const session = await until(
        async () => (await box.client.sessions()).find((s) => s.worktree === "feature" && s.agent === "fake"),
        { on: box },
      );
      await until(
        async () => (await Deno.readTextFile(log).catch(() => "")).includes("hello from the page"),
        { watch: log },
      );

      // Hand-off from that session (its terminal and the palette offer it): the new task records
      // `from_session`.
      await page.keyboard.press("Control+k");
      await page.locator(".palette input").fill(`Hand off devbox/${session.name}`);
      await page.locator(".palette li", { hasText: "new task from this session" }).waitFor();
      await page.keyboard.press("Escape");
      await page.locator(`.pane[data-session="devbox/${session.name}"] button[name="hand-off"]`).click();
      await page.locator(".hand-off", { hasText: `devbox/${session.name}` }).waitFor();
      assertEquals(await page.locator('select[name="location"]').inputValue(), "app");
      await page.locator('input[name="name"]').fill("next");
      // (Enabled once the box's presets are read: a task needs an agent.)
      await page.locator('button[name="create-task"]', { hasText: "Create task" }).click();
      // The page opens its terminal once the box answered (after which nothing moves the view).
      await page.locator('.pane[data-session="devbox/next-fake"]').waitFor();
      const next = (await box.client.sessions()).find((s) => s.worktree === "next");
      assertEquals(next?.from_session, session.name);

      // A delivered queue item offers no send, retry or edit (it was typed: again would type it twice).
      await call(agent, "POST", "/v1/queue", { box: "devbox", session: session.name, text: "queued line" });
      await page.locator('[data-view="queue"]').click();
      const delivered = page.locator('.queue-item[data-state="delivered"]');
      await delivered.waitFor({ timeout: 60_000 }).catch(async (error) => {
        // What the agent says of the item, for the failure's message.
        throw new Error(`${error.message}\nqueue: ${JSON.stringify(await call(agent, "GET", "/v1/queue"))}`);
      });
      assertEquals(await delivered.locator("button").allTextContents(), ["remove"]);

      // Hooks & flows: the hooks as they read, refreshed when the file changes; the broken config shown.
      await page.locator('[data-view="automation"]').click();
      await page.locator('.config-errors[data-location="broken"]').first().waitFor();
      await call(agent, "PUT", "/v1/hooks", { hooks: [{ on: "agent.finished", run: "echo done" }] });
      const hook = page.locator('.hook[data-on="agent.finished"]').first();
      await hook.waitFor();
      assertEquals(await hook.locator("code").textContent(), "echo done");

      // A forward is shown where the person is, not only in the event log.
      await call(agent, "POST", "/v1/forwards", { box: "devbox", local: freePort(), remote: 9 });
      await page.locator('.toast[data-type="forward.created"]', { hasText: "devbox:9" }).waitFor();

      // Empty views say so.
      await page.locator('[data-view="plugins"]').click();
      await page.locator(".plugins .empty", { hasText: "No plugin" }).waitFor();
      await page.locator('[data-view="events"]').click();
      await page.locator(".events .filter").fill("no-such-event-type");
      await page.locator(".events .empty", { hasText: "No event matches" }).waitFor();

      // A kit for acme/shop offers only the locations cloned from it, and all of them once asked.
      const kitFile = join(root, "kit.json");
      await Deno.writeTextFile(
        kitFile,
        JSON.stringify({ id: "shop-kit", version: "1.0.0", match: { slug: "acme/shop" }, config: {} }),
      );
      await call(agent, "POST", "/v1/kits/add", { file: kitFile });
      await page.locator('[data-view="kits"]').click();
      const place = page.locator('.apply-kit select[name="place"]');
      await until(async () => {
        const values = await place.locator("option").allTextContents();
        return values.length === 1 && values[0] === "devbox/app";
      });
      await page.locator('.apply-kit input[name="every-location"]').check();
      await until(async () => (await place.locator("option").count()) === 3);

      // The theme: the header's button says which, and a reload keeps it.
      const theme = page.locator('button[name="theme"]');
      assertEquals(await theme.textContent(), "Theme: System");
      await theme.click();
      await theme.click();
      assertEquals(await theme.textContent(), "Theme: Dark");
      await page.reload();
      await page.locator("main.view-kits .apply-kit").waitFor();
      assertEquals(await theme.textContent(), "Theme: Dark");
      assertEquals(await page.evaluate(() => document.documentElement.dataset.theme), "dark");
      await page.locator('[data-view="settings"]').click();
      assertEquals(await page.locator('.themes [aria-pressed="true"]').textContent(), "Dark");
      assertEquals(errors, []);
    } finally {
      await browser.close();
      await agent[Symbol.asyncDispose]();
      await box[Symbol.asyncDispose]();
    }
  },
});

Deno.test({
  name: "app at 390 px: every tab reachable through the More menu, touch targets of 44 px",
  ignore: CHROMIUM_MISSING,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const { box, agent } = await setUp();
    const browser = await launchChromium();
    try {
      await box.client.createSession({ location: "app", agent: "fake", name: "phone-1" });
      const page = await browser.newPage({ viewport: { width: 390, height: 844 } });
      const errors: string[] = [];
      page.on("pageerror", (error) => errors.push(error.message));
      await openApp(page, agent);
      await page.locator('.sessions [data-session="devbox/phone-1"]').waitFor();
      const more = page.locator('button[name="more-views"]');
      await more.click();
      const shots = await shotsDir();
      await page.screenshot({ path: join(shots, "app-phone-menu.png") });
      await more.click();
      for (const view of VIEWS) {
        const tab = page.locator(`[data-view="${view.id}"]`);
        if (await tab.isVisible()) {
          await tab.click();
        } else {
          // Not in the bar: in the menu, none left out.
          await more.click();
          await page.locator(`[data-menu-view="${view.id}"]`).click();
          assertStringIncludes((await more.textContent()) ?? "", view.label);
        }
        await page.locator(`main.view-${view.id}`).waitFor();
        // Nothing of the bar is cut off to the right.
        const bar = await page.locator(".top").evaluate((e) => ({
          scroll: (e as unknown as { scrollWidth: number }).scrollWidth,
        }));
        assert(bar.scroll <= 390, `the header is ${bar.scroll} px wide`);
        if (view.id === "terminals") continue;
        // Every control of the view and the header is 44 px high at least (buttons 44 px wide too).
        const small = await page.locator(
          "button, select, input:not([type=checkbox]):not([type=radio]), summary",
        ).evaluateAll(
          (elements) =>
            elements.flatMap((e) => {
              const box = (e as unknown as {
                getBoundingClientRect(): { width: number; height: number };
              }).getBoundingClientRect();
              const tag = (e as unknown as { tagName: string }).tagName;
              if (box.width === 0 && box.height === 0) return []; // not shown
              const tooSmall = box.height < 44 || (tag === "BUTTON" && box.width < 44);
              return tooSmall
                ? [
                  `${tag} "${(e as unknown as { textContent: string }).textContent?.trim().slice(0, 30)}" ${
                    Math.round(box.width)
                  }×${Math.round(box.height)}`,
                ]
                : [];
            }),
        );
        assertEquals(small, [], `view ${view.id}`);
      }
      await dropShots(shots);
      assertEquals(errors, []);
    } finally {
      await browser.close();
      await agent[Symbol.asyncDispose]();
      await box[Symbol.asyncDispose]();
    }
  },
});
