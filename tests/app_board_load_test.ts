/**
 * The board's load through the laptop agent (issue 36, the app ready with 200 boxes): in Debian's Chromium
 * against a real `dock agent` and `dockd`, the board is drawn from one `GET /v1/sessions`, never from each
 * box's list through the relay, and a session made on the box afterwards shows from the box's event; the
 * event stream resumes after the newest event that read holds, so a change made between the read and the
 * stream opening shows, with no second read of every box's sessions.
 *
 * Needs /usr/bin/chromium (`.ci/run` installs it); without it the test is skipped, saying so.
 */
import { CHROMIUM_MISSING, launchChromium } from "./browser.ts";
import { assertEquals } from "./assert.ts";
import { startBoxAndAgent } from "./harness.ts";
import { until } from "./wait.ts";

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

Deno.test({
  name: "app board: the event stream resumes after the board's one read; a state change between them shows",
  ignore: CHROMIUM_MISSING,
  async fn() {
    await using laptop = await startBoxAndAgent("local");
    const { box, agent, client } = laptop;
    const browser = await launchChromium();
    try {
      await box.client.createSession({ location: "app", command: "sh", name: "one" });
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      const asked: string[] = [];
      page.on("request", (request) => {
        const url = new URL(request.url());
        asked.push(url.pathname + url.search);
      });
      // The page's event stream is held until the change below reached the agent: it happens after the
      // board's read and before the stream opens.
      let release!: () => void;
      const released = new Promise<void>((resolve) => release = resolve);
      let streamAsked!: (resume: string | undefined) => void;
      const streamHeld = new Promise<string | undefined>((resolve) => streamAsked = resolve);
      await page.route("**/v1/events", async (route) => {
        streamAsked(route.request().headers()["last-event-id"]);
        await released;
        await route.continue();
      });
      await page.goto(`${agent.url}/app/#token=${encodeURIComponent(agent.token)}`);
      await page.locator('.sessions [data-session="local/one"] .badge').waitFor();
      const resume = await streamHeld;
      assertEquals(typeof resume, "string", "the stream resumes after an event id");
      await box.client.emit({
        type: "agent.waiting",
        origin: "claude",
        session: "one",
        data: { path: "/", agent: "claude", session_id: null, reason: "permission" },
      });
      await until(
        async () =>
          (await client.sessions({ box: "local" }))[0].sessions[0].agent_state === "waiting" || undefined,
        { on: client },
      );
      release();
      await page.locator('.sessions [data-session="local/one"] .badge[data-state="waiting"]').waitFor();
      await page.locator('.sessions [data-session="local/one"] .reason[data-reason="permission"]').waitFor();
      // One read of every box's sessions: the event named the box, whose list alone is read again.
      assertEquals(asked.filter((path) => path === "/v1/sessions").length, 1, asked.join(" "));
    } finally {
      await browser.close();
    }
  },
});
