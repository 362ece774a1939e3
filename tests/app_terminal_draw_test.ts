/**
 * The app's terminal draws a key's echo as it arrives, and leaves bulk output to xterm.js's one draw per
 * frame (issue 32; app/src/term_draw.ts): in Chromium against a real agent and box, with the page's
 * animation frames held back, so what is drawn without a frame is told apart from what waits for one,
 * with no clock in the test.
 *
 * Needs /usr/bin/chromium (`.ci/run` installs it); without it the test is skipped, saying so.
 */
import type { Page } from "playwright-core";
import { CHROMIUM_MISSING, launchChromium } from "./browser.ts";
import { assert, assertEquals } from "./assert.ts";
import { startBoxAndAgent } from "./harness.ts";

// What runs in the page: this file is type-checked without the DOM's types.
// deno-lint-ignore no-explicit-any
declare const document: any;
// deno-lint-ignore no-explicit-any
declare const globalThis: any;
declare class MutationObserver {
  constructor(callback: (records: { target: unknown }[]) => void);
  observe(target: unknown, options: Record<string, boolean>): void;
}

/** One attach message as the page received it: its socket's session, its size, and whether it was drawn. */
interface Message {
  session: string;
  bytes: number;
  drawn: boolean;
}

/**
 * Records every attach message and whether the terminal's rows changed in the task that brought it (a
 * draw at once), and lets the test hold the page's animation frames back (`hold`) and let them go
 * (`release`, running what waited).
 */
function instrument(): void {
  globalThis.messages = [] as Message[];
  const Native = globalThis.WebSocket;
  globalThis.WebSocket = class extends Native {
    constructor(url: string, ...rest: unknown[]) {
      super(url, ...rest);
      const session = /\/sessions\/([^/]+)\/attach/.exec(url)?.[1] ?? "";
      // Added before the page's own handler: it runs first, and the rows' mutation records of the
      // page's handler are delivered after it, within the same task.
      let tail = "";
      this.addEventListener("message", (event: { data: unknown }) => {
        const text = typeof event.data === "string"
          ? event.data
          : new TextDecoder().decode(event.data as ArrayBuffer);
        globalThis.messages.push({ session, bytes: text.length, drawn: false });
        // The end of `seq 1 3000`'s output (its command line holds no 2999), wherever a chunk cut it.
        if ((tail + text).includes("2999")) globalThis.ended = session;
        tail = text.slice(-4);
      });
    }
  };
  const rows = new MutationObserver((records) => {
    for (const record of records) {
      // deno-lint-ignore no-explicit-any
      const node: any = record.target;
      const element = node.closest ? node : node.parentElement;
      if (!globalThis.held || !element?.closest?.(".xterm-rows")) continue;
      // Frames held: the rows changed in the task of the socket's last message.
      const session = element.closest(".pane")?.dataset.session?.split("/")[1];
      const last = globalThis.messages.findLast((m: Message) => m.session === session);
      if (last) last.drawn = true;
    }
  });
  addEventListener("DOMContentLoaded", () => {
    rows.observe(document.body, { subtree: true, childList: true, characterData: true });
  });
  const frame = globalThis.requestAnimationFrame.bind(globalThis);
  const cancel = globalThis.cancelAnimationFrame.bind(globalThis);
  const waiting = new Map<number, (time: number) => void>();
  let next = 1e9;
  globalThis.held = false;
  globalThis.requestAnimationFrame = (callback: (time: number) => void) => {
    if (!globalThis.held) return frame(callback);
    waiting.set(++next, callback);
    return next;
  };
  globalThis.cancelAnimationFrame = (id: number) => waiting.delete(id) || cancel(id);
  globalThis.hold = () => globalThis.held = true;
  globalThis.release = () => {
    globalThis.held = false;
    const callbacks = [...waiting.values()];
    waiting.clear();
    for (const callback of callbacks) callback(performance.now());
  };
}

/** Opens a session's terminal from the board and gives it the keyboard. */
async function openTerminal(page: Page, session: string): Promise<void> {
  await page.locator('[data-view="board"]').click();
  await page.locator(`.sessions [data-session="${session}"] .link-button`).click();
  const pane = page.locator(`.pane[data-session="${session}"]`);
  await pane.locator('[data-link="open"]').waitFor();
  await pane.locator(".term").click();
}

/** The attach messages of `session` received so far. */
async function messagesOf(page: Page, session: string): Promise<Message[]> {
  return await page.evaluate(
    (name: string) => globalThis.messages.filter((m: Message) => m.session === name),
    session,
  );
}

Deno.test({
  name: "app terminal: a key's echo is drawn without waiting for a frame; bulk output waits for one",
  ignore: CHROMIUM_MISSING,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await using laptop = await startBoxAndAgent("local");
    const { box, agent } = laptop;
    const browser = await launchChromium();
    try {
      await box.client.createSession({ location: "app", command: "cat", name: "cat" });
      await box.client.createSession({ location: "app", command: "sh", name: "sh" });
      const page = await browser.newPage({ viewport: { width: 1200, height: 800 } });
      const errors: string[] = [];
      page.on("pageerror", (error) => errors.push(error.message));
      await page.addInitScript(instrument);
      await page.goto(`${agent.url}/app/#token=${encodeURIComponent(agent.token)}`);

      // A key into `cat`, with the frames held: its echo is on screen, drawn in the task that brought it.
      await openTerminal(page, "local/cat");
      // The attach's redraw in first: the echo then comes into a quiet stream.
      await page.waitForFunction(() => globalThis.messages.some((m: Message) => m.session === "cat"));
      const before = (await messagesOf(page, "cat")).length;
      await page.evaluate(() => globalThis.hold());
      await page.keyboard.press("q");
      const echoRow = page.locator('.pane[data-session="local/cat"] .xterm-rows > div', {
        hasText: /^q\s*$/,
      });
      await echoRow.first().waitFor();
      const echo = (await messagesOf(page, "cat")).slice(before);
      assert(echo.length >= 1 && echo.every((m) => m.bytes <= 256), JSON.stringify(echo));
      assert(echo.some((m) => m.drawn), `the echo waited for a frame: ${JSON.stringify(echo)}`);
      await page.evaluate(() => globalThis.release());

      // 3,000 lines in a shell, frames held: no large write is drawn at once; the frames draw it all.
      await openTerminal(page, "local/sh");
      await page.keyboard.type("seq 1 3000");
      const start = (await messagesOf(page, "sh")).length;
      await page.evaluate(() => globalThis.hold());
      await page.keyboard.press("Enter");
      // Polled on a timer: the page's frames are held.
      await page.waitForFunction(() => globalThis.ended === "sh", undefined, { polling: 20 });
      const bulk = (await messagesOf(page, "sh")).slice(start);
      const large = bulk.filter((m) => m.bytes > 256);
      assert(large.length > 0, `no large write: ${JSON.stringify(bulk)}`);
      assertEquals(large.filter((m) => m.drawn), [], "a large write was drawn without its frame");
      await page.evaluate(() => globalThis.release());
      await page.locator('.pane[data-session="local/sh"] .xterm-rows > div', { hasText: /^3000\s*$/ }).first()
        .waitFor();
      assertEquals(errors, []);
    } finally {
      await browser.close();
    }
  },
});
