/**
 * The app's machines (app/src/machines.tsx), in Debian's Chromium against a real `dock agent`: a machine
 * found on the network (a fake tailscale CLI) and added over SSH from the board (a real OpenSSH server on
 * loopback, tests/ssh_box.ts), a refusal shown as its step's error, another paired by its link, and a
 * box running an older dock upgraded from its card. Each step waits for what the page shows.
 *
 * Needs /usr/bin/chromium (`.ci/run` installs it); without it the tests are skipped, saying so.
 */
import { join } from "node:path";
import type { Page } from "playwright-core";
import { CHROMIUM_MISSING, launchChromium } from "./browser.ts";
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { AgentClient } from "../client/agent.ts";
import { makeDirs, startAgent, startBox, startOlderBox } from "./harness.ts";
import { until } from "./wait.ts";
import { startSshBox } from "./ssh_box.ts";

const FAKE_TAILSCALE = new URL("./fixtures/fake_tailscale.sh", import.meta.url).pathname;
const TAILSCALE_STATUS = new URL("./fixtures/tailscale_status.json", import.meta.url).pathname;

/** Opens the app with the agent's token, as `dock open` does, and waits for the board. */
async function openApp(page: Page, agent: { url: string; token: string }): Promise<void> {
  await page.goto(`${agent.url}/app/#token=${agent.token}`);
  await page.locator(".board").waitFor();
}

Deno.test({
  name: "app: a machine added over SSH from the board, its steps and upload shown; a refused one says why",
  ignore: CHROMIUM_MISSING,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    await using box = await startSshBox();
    const dirs = await makeDirs();
    await using _laptop = { [Symbol.asyncDispose]: () => Deno.remove(dirs.root, { recursive: true }) };
    // tailscale here (a fake CLI serving recorded JSON) sees one machine, "devbox" at 127.0.0.1, whose SSH
    // is the test server's port.
    const bin = join(dirs.root, "bin");
    await Deno.mkdir(bin, { recursive: true });
    await Deno.symlink(FAKE_TAILSCALE, join(bin, "tailscale"));
    await using agent = await startAgent(dirs, {
      env: {
        DOCK_SSH_CONFIG: box.clientConfig,
        PATH: `${bin}:${Deno.env.get("PATH")}`,
        FAKE_TAILSCALE_STATUS: TAILSCALE_STATUS,
        DOCK_SSH_PORT: String(box.port),
      },
    });
    const browser = await launchChromium();
    try {
      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      const errors: string[] = [];
      page.on("pageerror", (error) => errors.push(error.message));
      await openApp(page, agent);
      const card = page.locator(".add-machine");
      // The network's machine that answers on SSH, picked: the form is filled with its name.
      await card.locator('button[name="discover"]').click();
      await card.locator('[data-machine="devbox"] button').click();
      assertEquals(await card.locator('input[name="ssh-host"]').inputValue(), "devbox.tail1234.ts.net");
      assertEquals(await card.locator('input[name="box-name"]').inputValue(), "devbox");
      assertEquals(
        await card.locator('[data-machine="phone"]').count(),
        0,
        "an offline machine is not offered",
      );
      // Its name does not resolve here: the SSH configuration's Host for it is used instead.
      await card.locator('input[name="ssh-host"]').fill("testbox");
      await card.locator('input[name="box-name"]').fill("devbox");

      // The host key is not known yet: the step and what to do are shown, nothing is added.
      await card.locator('button[name="add-ssh"]').click();
      const refused = await card.locator('.run [role="alert"]').textContent();
      assertStringIncludes(refused ?? "", "connect: the box's host key is not known here");
      // The command to accept it, with the SSH config the agent was told to use (DOCK_SSH_CONFIG).
      assert(/ssh -F \S+ssh_config testbox/.test(refused ?? ""), refused ?? "");
      assertEquals(await page.locator(".box").count(), 0);

      await box.trust();
      await card.locator('button[name="add-ssh"]').click();
      await card.locator('.run [role="status"]').waitFor({ timeout: 120_000 });
      const done = await card.locator('.run [role="status"]').textContent();
      assert(/^added devbox \(https:\/\/127\.0\.0\.1:\d+\): online$/.test(done ?? ""), done ?? "");
      // The steps it went through, and the upload's bar full.
      const lines = (await card.locator(".run-lines").textContent()) ?? "";
      for (
        const step of [
          "connect:",
          "package:",
          "install:",
          "service: dockd answers",
          "pair: paired as 'devbox'",
        ]
      ) {
        assertStringIncludes(lines, step);
      }
      const bar = card.locator("progress.upload");
      assertEquals(await bar.getAttribute("value"), await bar.getAttribute("max"));
      assertEquals(await card.locator('.run [role="alert"]').count(), 0);
      // The board shows the box, from the agent's event, and no upgrade for it (it runs this laptop's dock).
      await page.locator('.box[data-box="devbox"] .dot.online').waitFor();
      assertEquals(await page.locator('.box[data-box="devbox"] .tag.behind').count(), 0);
      // Found again, it is a box now: no Add.
      await card.locator('button[name="discover"]').click();
      await card.locator('[data-machine="devbox"] .tag').waitFor();
      assertEquals(await card.locator('[data-machine="devbox"] .tag').textContent(), "box devbox");
      assertEquals(await card.locator('[data-machine="devbox"] button').count(), 0);

      // Another machine by the link its `dockd pair` prints: a mistyped one is refused, the right one pairs.
      await using other = await startBox({ env: { DOCK_LISTEN: "127.0.0.1:0" } });
      const printed = await other.cli(["pair", "--host", "127.0.0.1"]);
      const link = /dock:\/\/[^\s']+/.exec(printed.stdout)?.[0];
      assert(link, printed.stdout + printed.stderr);
      await card.locator('input[name="box-name"]').fill("second");
      // Codes are compared without case: the first letter becomes another letter, not the same one upper-cased.
      await card.locator('input[name="pair-link"]').fill(
        link.replace(/code=(.)/, (_, c: string) => `code=${c.toLowerCase() === "a" ? "b" : "a"}`),
      );
      await card.locator('button[name="pair"]').click();
      assertStringIncludes(
        (await card.locator('.run [role="alert"]').textContent()) ?? "",
        "Cannot pair: the code is not valid",
      );
      assertEquals(await page.locator('.box[data-box="second"]').count(), 0);
      await card.locator('input[name="pair-link"]').fill(link);
      await card.locator('button[name="pair"]').click();
      await card.locator('.run [role="status"]').waitFor();
      assertStringIncludes(
        (await card.locator('.run [role="status"]').textContent()) ?? "",
        "added second (",
      );
      await page.locator('.box[data-box="second"] .dot.online').waitFor();
      assertEquals((await other.client.laptops()).length, 1);

      // Forgotten after a yes: gone from the board, and the box no longer knows this laptop.
      await page.locator('.box[data-box="second"] [data-action="forget"] > button').click();
      await page.locator('.box[data-box="second"] [data-answer="yes"]').click();
      await page.locator('.box[data-box="second"]').waitFor({ state: "detached" });
      // The card goes with the agent's event, which comes before the box has answered the unpairing.
      await until(async () => (await other.client.laptops()).length === 0 || undefined, { on: other });
      assertEquals((await other.client.laptops()).length, 0);
      assertEquals(errors, []);
    } finally {
      await browser.close();
    }
  },
});

Deno.test({
  name:
    "app: a box running an older dock says so on its card, and its Upgrade button brings it to the laptop's",
  ignore: CHROMIUM_MISSING,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const out = await Deno.makeTempDir({ prefix: "dock-app-upgrade-test-" });
    const dirs = await makeDirs();
    const browser = await launchChromium();
    try {
      await using box = (await startOlderBox(dirs, out)).box;
      await using agent = await startAgent(dirs);
      const client = new AgentClient({ url: agent.url, token: agent.token });
      try {
        await client.addLocal("local");
        const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
        await openApp(page, agent);
        const card = page.locator('.box[data-box="local"]');
        await card.locator(".tag.behind").waitFor();
        assertEquals(await card.locator(".tag.behind").textContent(), "behind: 0.0.9+aaaaaaaaaaaa");

        await card.locator('button[name="upgrade"]').click();
        await card.locator('.run [role="status"]').waitFor({ timeout: 120_000 });
        const build = (await client.status()).build;
        assertEquals(
          await card.locator('.run [role="status"]').textContent(),
          `local runs ${(await box.client.info()).build}`,
        );
        assertStringIncludes((await card.locator(".run-lines").textContent()) ?? "", "restart:");
        // Nothing is behind any more (the board reloaded on the agent's event); the session lived on.
        await card.locator(".tag.behind").waitFor({ state: "detached" });
        assert(build.startsWith("0.1.0+"), build);
        assertEquals((await box.client.session("keep")).exited, false);
      } finally {
        client.close();
      }
    } finally {
      await browser.close();
      await Deno.remove(out, { recursive: true });
    }
  },
});
