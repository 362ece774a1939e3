/**
 * The real Claude Code answered from the app and from the phone (issue 30's "Done when": an answer sent
 * from the app and the phone reaches the real Claude Code 20 times out of 20). A real `dockd` and a real
 * `dock agent` (tests/harness.ts), the real `@anthropic-ai/claude-code` in a dock session with the hooks
 * `dockd integrations install claude` wrote (tests/real_agents/), and the scripted model server on
 * loopback asking for a shell command 20 times in a row. Each permission prompt is answered by clicking
 * the answer the person would click in Chromium: Needs you's card in the laptop's app, then the same card
 * on the phone's page (390×844, paired through `dockd phone pair`), yes and no mixed.
 *
 * Each round checks that the session reached `waiting`/`permission` and the page showed it; that the
 * answer reached the tool (yes: the command ran, its file is there and its result went back to the model;
 * no: no file, and the state is `waiting`/`input`) and that the page shows the state the box reports;
 * and that nothing was typed twice (one `session.answered` event per click; each prompt reached the model
 * once, alone, with nothing typed before it).
 *
 * Skipped, with the reason, exactly where the real-agent suite is: when npm cannot reach its registry.
 * Run it alone: `deno test -A tests/app_real_claude_test.ts`.
 */
import { join } from "node:path";
import type { Page } from "playwright-core";
import { AgentClient } from "../client/agent.ts";
import type { DockEvent, PermissionAnswer, PhonePairCode, PhoneState } from "../client/wire.ts";
import { assertEquals } from "./assert.ts";
import { launchChromium } from "./browser.ts";
import { laptopEnv, runCli, startAgent } from "./harness.ts";
import { installTools } from "./real_agents/install.ts";
import { justBefore, RealBox } from "./real_agents/scenarios.ts";
import { REAL_TOOLS } from "./real_agents/tools.ts";

/** How many permission prompts each surface answers (the 20 of 20). */
const ROUNDS = 20;
/** Which rounds are answered no (the others yes): a denial in the middle and one in a row after it. */
const NO_ROUNDS = new Set([4, 9, 10, 16]);

const installed = await installTools();
if (!installed.ok) console.warn(`real Claude Code in the app skipped: ${installed.reason}`);

/** One surface: a page and how it names the box. */
interface Surface {
  label: "app" | "phone";
  page: Page;
  box: string;
}

/** The outcome of one scenario: the misses, and how many answers reached Claude Code. */
interface Outcome {
  misses: string[];
  reached: number;
}

/** The card of `name` in Needs you, and a wait for what it shows (its reason or `finished`). */
function card(surface: Surface, name: string) {
  const locator = surface.page.locator(`.need[data-session="${surface.box}/${name}"]`);
  return {
    locator,
    shows: (state: string, reason: string) =>
      locator.and(surface.page.locator(`[data-reason="${reason}"]`))
        .locator(`.badge[data-state="${state}"]`)
        .waitFor({ timeout: 45_000 }).then(() => `${state}/${reason}`, () => "not shown"),
  };
}

/** Twenty prompts in one Claude Code session, each answered by a click on `surface`. */
async function twenty(t: RealBox, surface: Surface, name: string): Promise<Outcome> {
  const misses: string[] = [];
  let reached = 0;
  const check = (step: string, expected: string, actual: string) => {
    if (expected !== actual) misses.push(`${surface.label} ${step}: expected ${expected}, got ${actual}`);
    return expected === actual;
  };
  await t.create(name);
  const start = (await t.client.emit({ type: "test.mark" })).id!;
  await surface.page.locator('[data-view="needs"]').click();
  const need = card(surface, name);
  for (let round = 1; round <= ROUNDS; round++) {
    const answer: PermissionAnswer = NO_ROUNDS.has(round) ? "no" : "yes";
    const mark = `${name}-${round}`;
    const file = `${mark}.txt`;
    const asked = t.model.seen.length;
    const before = justBefore();
    await t.send(name, `ask ${round} [[bash:touch ${file}]] [[mark:${mark}]]`);
    await t.client.wait(name, { states: ["waiting"], after: before, timeout: "45s" });
    const now = await t.client.session(name);
    check(`${round}: asked`, "waiting/permission", `${now.agent_state}/${now.reason}`);
    await t.shows(name, t.tool.permission);
    check(`${round}: the page shows it`, "waiting/permission", await need.shows("waiting", "permission"));
    // The prompt reached the model once and alone: one request with its mark, nothing typed before it.
    const prompts = t.model.seen.slice(asked).filter((s) => s.script.marks.length > 0);
    check(
      `${round}: the prompt reached the model alone`,
      JSON.stringify([[mark]]),
      JSON.stringify(prompts.map((s) => s.script.marks)),
    );
    check(
      `${round}: nothing typed before the prompt`,
      `ask ${round} `,
      prompts[0]?.script.head.slice(0, 5 + `${round}`.length) ?? "",
    );

    const answered = justBefore();
    await need.locator.locator(`button.answer[data-answer="${answer}"]`).click({ timeout: 30_000 });
    await need.locator.locator(`.delivered[data-delivered="answered ${answer}"]`).waitFor({ timeout: 30_000 })
      .catch(() => check(`${round}: shown as delivered`, "delivered", "not shown"));
    // Claude Code reports nothing on a denial: dock's check of the settled pane decides `input`.
    const [state, reason] = answer === "yes" ? ["finished", "finished"] : ["waiting", "input"];
    const after = await t.client.wait(name, {
      states: [state as "finished"],
      after: answered,
      timeout: "45s",
    });
    const settled = await t.client.session(name);
    const actual = settled.agent_state === "waiting" ? `waiting/${settled.reason}` : settled.agent_state;
    check(
      `${round}: after ${answer}`,
      answer === "yes" ? "finished" : "waiting/input",
      after.timed_out ? `${actual} (timed out)` : actual,
    );
    check(
      `${round}: the page shows it after ${answer}`,
      `${state}/${reason}`,
      await need.shows(state, reason),
    );
    const made = await Deno.stat(join(t.repo, file)).then(() => true, () => false);
    const result = t.model.seen.slice(asked).some((s) =>
      s.toolResult !== undefined && !s.script.marks.length
    );
    const ran = answer === "yes" ? made && result : !made;
    if (
      check(
        `${round}: ${answer} reached the tool`,
        "yes",
        ran ? "yes" : `no (file ${made}, result ${result})`,
      )
    ) {
      reached++;
    }
  }
  // One answer typed per click, each the one clicked.
  const mine = (await eventsBetween(t, start)).filter((e) =>
    e.type === "session.answered" && e.data?.session === name
  ).map((e) => e.data?.answer);
  check(
    "answers typed",
    JSON.stringify(Array.from({ length: ROUNDS }, (_, i) => NO_ROUNDS.has(i + 1) ? "no" : "yes")),
    JSON.stringify(mine),
  );
  return { misses, reached };
}

/** The box's events after `start`, up to a mark announced now. */
async function eventsBetween(t: RealBox, start: number): Promise<DockEvent[]> {
  const end = (await t.client.emit({ type: "test.mark" })).id!;
  const events: DockEvent[] = [];
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), 30_000);
  try {
    for await (const event of t.client.events({ after: start, signal: controller.signal })) {
      if (event.id === end) break;
      events.push(event);
    }
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
  return events;
}

/** Runs the twenty; a scenario that misses runs once more in a new session, the first printed. */
async function scenario(t: RealBox, surface: Surface): Promise<Outcome> {
  let outcome = await twenty(t, surface, `${surface.label}-1`);
  if (outcome.misses.length) {
    // As the real-agent suite does: the real tool is not ours, and a loaded machine now and then delays
    // it; only the second run counts, and the first's misses are printed so a repeat is still seen.
    for (const miss of outcome.misses) console.warn(`${miss.slice(0, 300)}; running the scenario once more`);
    outcome = await twenty(t, surface, `${surface.label}-2`);
  }
  console.log(`real Claude Code answered from the ${surface.label}: ${outcome.reached}/${ROUNDS}`);
  return outcome;
}

Deno.test({
  name: "real Claude Code: 20 permission prompts answered from the app and 20 from the phone, each reached",
  ignore: !installed.ok,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    if (!installed.ok) return;
    await using t = await RealBox.start(REAL_TOOLS.claude!, installed.tools);
    const dirs = t.box.dirs;
    await using agent = await startAgent(dirs);
    const laptop = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
    const browser = await launchChromium();
    try {
      await laptop.addLocal("devbox");
      const open = await runCli("dock", ["open", "--print"], { env: laptopEnv(dirs, agent), cwd: dirs.home });
      assertEquals(open.code, 0, open.stderr);
      const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
      await page.goto(open.stdout.trim());
      const app = await scenario(t, { label: "app", page, box: "devbox" });
      await page.close();

      // The phone: the same bundle in box mode, straight to the box's phone listener.
      const phone = async <T>(args: string[]) => {
        const out = await t.box.cli(["phone", ...args, "--json"]);
        assertEquals(out.code, 0, out.stderr);
        return JSON.parse(out.stdout) as T;
      };
      await phone<PhoneState>(["on", "--listen", "127.0.0.1:0"]);
      const { link } = await phone<PhonePairCode>(["pair", "--host", "127.0.0.1"]);
      const context = await browser.newContext({
        viewport: { width: 390, height: 844 },
        ignoreHTTPSErrors: true,
      });
      const mobile = await context.newPage();
      await mobile.goto(link);
      await mobile.waitForURL((url) => url.pathname === "/app/");
      const phoneOutcome = await scenario(t, {
        label: "phone",
        page: mobile,
        box: (await t.client.info()).name,
      });

      assertEquals(
        { app: app.misses, phone: phoneOutcome.misses, reached: [app.reached, phoneOutcome.reached] },
        { app: [], phone: [], reached: [ROUNDS, ROUNDS] },
      );
    } finally {
      await browser.close();
      laptop.close();
    }
  },
});
