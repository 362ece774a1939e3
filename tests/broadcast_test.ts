/**
 * Whole-system tests of broadcast (spec 6, issue 30 item 3) on a real agent and a real box running the
 * fake agent (tests/fixtures/fake_agent.ts, which logs each prompt it receives): variables filled per
 * session, each typed once, a session waiting on a permission prompt never typed into (queued until the
 * person answers), a retry with the same id typing nothing twice, `where` over the laptop's view, an
 * offline box's sessions queued and typed once when it is back, `dock broadcast`, and the app's
 * multi-select in Chromium.
 */
import { join } from "node:path";
import { CHROMIUM_MISSING, launchChromium } from "./browser.ts";
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { AgentClient } from "../client/agent.ts";
import { DockError } from "../client/errors.ts";
import type { BroadcastResult } from "../client/wire.ts";
import {
  type BoxDirs,
  killProcessesUnder,
  laptopEnv,
  makeDirs,
  makeRepo,
  runCli,
  startAgent,
  startBox,
  type TestAgent,
  type TestBox,
} from "./harness.ts";
import { until } from "./wait.ts";

const FAKE = new URL("./fixtures/fake_agent.ts", import.meta.url).pathname;

/** A box whose location `app` has worktrees `feat-a` and `feat-b`, the agent with it as `devbox`. */
async function setup() {
  const dirs = await makeDirs();
  const log = join(dirs.root, "prompts.log");
  const boxEnv = { FAKE_AGENT_WORK_MS: "100", FAKE_AGENT_LOG: log, FAKE_AGENT_LOG_TEXT: "1" };
  const box = await startBox({ dirs, env: boxEnv });
  const agentEnv = { DOCK_AGENT_HEALTH_MS: "200" };
  const agent = await startAgent(dirs, { env: agentEnv });
  const client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  assertEquals((await client.addLocal("devbox")).online, true);
  const repo = await makeRepo(join(dirs.home, "work"), "app", {
    ".dock/config.json": JSON.stringify({
      agents: [{ id: "fake", name: "Fake", command: `'${Deno.execPath()}' run -A --cached-only '${FAKE}'` }],
    }),
  });
  await box.client.addLocation({ name: "app", path: repo });
  for (const name of ["feat-a", "feat-b"]) await box.client.createWorktree("app", { name });
  return { dirs, box, agent, client, log, boxEnv, agentEnv };
}

/** Starts the fake agent as session `name` in `location` and gives it a first turn (so it is `finished`). */
async function agentSession(box: TestBox, name: string, location: string): Promise<void> {
  await box.client.createSession({ location, agent: "fake", name });
  await box.client.wait(name, { states: ["idle"], timeout: "60s" });
  const after = new Date().toISOString();
  await box.client.send(name, `warm-${name}`);
  await box.client.wait(name, { states: ["finished"], after, timeout: "60s" });
}

/** The prompts the fake agents logged, in order. */
async function prompts(log: string): Promise<string[]> {
  const text = await Deno.readTextFile(log).catch(() => "");
  return text.split("\n").filter(Boolean).map((line) => JSON.parse(line).text as string);
}

/**
 * Sends `marker` to `session` straight to the box and waits until it is logged: anything typed into
 * that session before (a broadcast's repeat that should not have been) is in the log by then.
 */
async function fence(box: TestBox, log: string, session: string, marker: string): Promise<string[]> {
  await box.client.send(session, marker);
  return await until(async () => {
    const seen = await prompts(log);
    return seen.includes(marker) ? seen : undefined;
  }, { watch: log, timeoutMs: 30_000 });
}

function outcomes(result: BroadcastResult): string[][] {
  return result.targets.map((t) => [`${t.box}/${t.session}`, t.outcome, t.reason ?? ""]);
}

async function cleanup(dirs: BoxDirs, box: TestBox | undefined, agent: TestAgent, client: AgentClient) {
  client.close();
  await agent.stop();
  await box?.stop();
  killProcessesUnder(dirs.root);
  await Deno.remove(dirs.root, { recursive: true }).catch(() => {});
}

Deno.test("broadcast: variables per session, typed once each, a permission prompt never typed into, a retry types nothing twice", async () => {
  const { dirs, box, agent, client, log } = await setup();
  try {
    await agentSession(box, "s1", "app/feat-a");
    await agentSession(box, "s2", "app/feat-b");
    await agentSession(box, "s3", "app");
    // s3 asks the person for permission: text typed now would be its answer.
    let after = new Date().toISOString();
    await box.client.send("s3", "ASK-PERMISSION");
    await box.client.wait("s3", { states: ["waiting"], after, timeout: "60s" });

    const request = {
      id: "release-1",
      text: "hi {{session}} on {{box}} in {{location}}/{{worktree}} of {{ branch }}",
      to: ["devbox/s1", "devbox/s2", "devbox/s3", "devbox/nobody", "devbox/s1"],
    };
    after = new Date().toISOString();
    const first = await client.broadcast(request);
    assertEquals(first.id, "release-1");
    assertEquals(outcomes(first), [
      ["devbox/s1", "sent", ""],
      ["devbox/s2", "sent", ""],
      ["devbox/s3", "queued", "waiting_permission"],
      ["devbox/nobody", "failed", "not_found"],
    ]);
    const queueId = first.targets[2].queue_id!;
    await box.client.wait("s1", { states: ["finished"], after, timeout: "60s" });
    await box.client.wait("s2", { states: ["finished"], after, timeout: "60s" });
    assertEquals((await client.queueItem(queueId)).state, "waiting", "held while the person is asked");

    // The same id again: nothing is typed twice, the queued one stays one item.
    const again = await client.broadcast(request);
    assertEquals(outcomes(again).map(([target, outcome]) => [target, outcome]), [
      ["devbox/s1", "sent"],
      ["devbox/s2", "sent"],
      ["devbox/s3", "queued"],
      ["devbox/nobody", "failed"],
    ]);
    assertEquals(again.targets[2].queue_id, queueId);
    await fence(box, log, "s1", "fence-s1");
    const seen = await fence(box, log, "s2", "fence-s2");
    // Sent side by side: in either order.
    assertEquals(seen.filter((p) => p.startsWith("hi ")).sort(), [
      "hi s1 on devbox in app/feat-a of feat-a",
      "hi s2 on devbox in app/feat-b of feat-b",
    ]);
    assertEquals((await client.queue()).filter((i) => i.id === queueId).length, 1);
    // s3 still waits on its prompt, unanswered by the broadcast.
    const held = await box.client.session("s3");
    assertEquals([held.agent_state, held.reason], ["waiting", "permission"]);

    // The person answers; the queue then types the broadcast into s3, once.
    await box.client.send("s3", "y");
    await until(async () => (await client.queueItem(queueId)).state === "delivered", {
      on: client,
      timeoutMs: 60_000,
    });
    const all = await until(async () => {
      const logged = await prompts(log);
      return logged.some((p) => p.startsWith("hi s3")) ? logged : undefined;
    }, { watch: log, timeoutMs: 30_000 });
    assertEquals(all.filter((p) => p.startsWith("hi s3")), ["hi s3 on devbox in app/app of main"]);
    assertEquals(all.indexOf("hi s3 on devbox in app/app of main") > all.indexOf("ASK-PERMISSION"), true);
    // A retry after delivery answers `sent` from the queue item and types nothing.
    const late = await client.broadcast(request);
    assertEquals(late.targets[2].outcome, "sent");
    await box.client.wait("s3", { states: ["finished"], timeout: "60s" });
    const final = await fence(box, log, "s3", "fence-s3");
    assertEquals(final.filter((p) => p.startsWith("hi ")).length, 3);
  } finally {
    await cleanup(dirs, box, agent, client);
  }
});

Deno.test("broadcast: where selects over the laptop's view; unknown variables and bad bodies are 400s; the CLI", async () => {
  const { dirs, box, agent, client, log } = await setup();
  try {
    await agentSession(box, "s1", "app/feat-a");
    await agentSession(box, "s2", "app/feat-b");
    await box.client.createSession({ location: "app", command: "sh", name: "plain" });

    const planned = await client.broadcast({
      text: "{{session}}@{{branch}}",
      where: { state: "finished" },
      dry_run: true,
    });
    assertEquals(
      planned.targets.map((t) => [t.session, t.outcome, t.text]),
      [["s1", "planned", "s1@feat-a"], ["s2", "planned", "s2@feat-b"]],
    );
    assertEquals(
      (await client.broadcast({ text: "x", where: { agent: "fake", location: "nowhere" }, dry_run: true }))
        .targets,
      [],
    );

    for (
      const [body, field, words] of [
        [{ text: "hi {{ticket}}", to: ["devbox/s1"] }, "text", "{{ticket}}"],
        [{ text: "hi", to: ["devbox/s1"], where: { state: "idle" } }, "to", "not both"],
        [{ text: "hi" }, "to", "not both"],
        [{ text: "hi", where: {} }, "where", "at least one"],
        [{ text: "hi", to: ["devbox/bad name"] }, "to[0]", "BOX/SESSION"],
        [{ text: "hi", where: { state: "sleeping" } }, "where.state", ""],
      ] as const
    ) {
      const refused = await client.broadcast(body as never).then(() => null, (e) => e as DockError);
      assert(refused instanceof DockError, JSON.stringify(body));
      assertEquals(
        [refused.status, refused.detail?.field],
        [400, field],
        `${JSON.stringify(body)}: ${refused.message}`,
      );
      assertStringIncludes(refused.message, words);
    }
    assertEquals(await prompts(log), ["warm-s1", "warm-s2"], "nothing typed by a refused broadcast");

    const env = laptopEnv(dirs, agent);
    const dry = await runCli("dock", [
      "broadcast",
      "cli {{session}}",
      "--where",
      "state=finished",
      "--dry-run",
    ], {
      env,
      cwd: dirs.home,
    });
    assertEquals(dry.code, 0, dry.stderr);
    assertStringIncludes(dry.stdout, "devbox/s1");
    assertStringIncludes(dry.stdout, '"cli s2"');
    const sent = await runCli("dock", ["broadcast", "cli {{session}}", "--to", "devbox/s1", "devbox/gone"], {
      env,
      cwd: dirs.home,
    });
    assertEquals(sent.code, 1, "a failed target fails the command");
    assertStringIncludes(sent.stdout, "sent");
    assertStringIncludes(sent.stdout, "session 'gone' not found");
    assertStringIncludes(sent.stderr, "--id ");
    const bad = await runCli("dock", ["broadcast", "x", "--where", "colour=red"], { env, cwd: dirs.home });
    assertEquals(bad.code, 2);
    await until(async () => (await prompts(log)).includes("cli s1"), { watch: log, timeoutMs: 30_000 });
  } finally {
    await cleanup(dirs, box, agent, client);
  }
});

Deno.test("broadcast: an offline box's sessions are queued with their variables, and typed once when it is back", async () => {
  const { dirs, box: first, agent, client, log, boxEnv } = await setup();
  let box: TestBox | undefined = first;
  try {
    await agentSession(box, "s1", "app/feat-a");
    await agentSession(box, "s2", "app/feat-b");
    // The laptop's view of the box, read while it is online.
    assertEquals(
      (await client.broadcast({ text: "x", where: { box: "devbox" }, dry_run: true })).targets.length,
      2,
    );

    await box.stop();
    box = undefined;
    await until(async () => (await client.refresh()).boxes.every((b) => !b.online), {
      on: client,
      timeoutMs: 15_000,
    });
    const request = {
      id: "away-1",
      text: "back {{session}} {{branch}}",
      where: { state: "finished" as const },
    };
    const queued = await client.broadcast(request);
    assertEquals(outcomes(queued), [["devbox/s1", "queued", "box_offline"], [
      "devbox/s2",
      "queued",
      "box_offline",
    ]]);
    // Sent again while the box is away: the same two items.
    const again = await client.broadcast(request);
    assertEquals(again.targets.map((t) => t.queue_id), queued.targets.map((t) => t.queue_id));
    assertEquals((await client.queue()).length, 2);
    // A session never seen cannot have its {{branch}} filled; without variables it is queued.
    const unseen = await client.broadcast({ text: "{{branch}}", to: ["devbox/s9"], queue: false });
    assertEquals(outcomes(unseen), [["devbox/s9", "failed", "not_seen"]]);
    const skipped = await client.broadcast({ text: "plain", to: ["devbox/s1"], queue: false });
    assertEquals(outcomes(skipped), [["devbox/s1", "skipped", "box_offline"]]);

    const back = new Date().toISOString();
    box = await startBox({ dirs, env: boxEnv });
    for (const target of queued.targets) {
      await until(async () => (await client.queueItem(target.queue_id!)).state === "delivered", {
        on: client,
        timeoutMs: 60_000,
      });
    }
    // `where` is matched again on a retry: once the turns are over, the same two, typed before.
    await box.client.wait("s1", { states: ["finished"], after: back, timeout: "60s" });
    await box.client.wait("s2", { states: ["finished"], after: back, timeout: "60s" });
    const retried = await client.broadcast(request);
    assertEquals(retried.targets.map((t) => t.outcome), ["sent", "sent"]);
    await fence(box, log, "s1", "fence-s1");
    const seen = await fence(box, log, "s2", "fence-s2");
    assertEquals(seen.filter((p) => p.startsWith("back ")).sort(), ["back s1 feat-a", "back s2 feat-b"]);
    assertEquals(seen.includes("plain"), false);
  } finally {
    await cleanup(dirs, box, agent, client);
  }
});

// What runs in the page: this file is type-checked without the DOM's types.
// deno-lint-ignore no-explicit-any
declare const document: any;

Deno.test({
  name:
    "broadcast: the app's multi-select ticks sessions on the board and in Needs you, sends one prompt, shows each outcome",
  ignore: CHROMIUM_MISSING,
  sanitizeOps: false,
  sanitizeResources: false,
  async fn() {
    const { dirs, box, agent, client, log } = await setup();
    const browser = await launchChromium();
    try {
      await agentSession(box, "s1", "app/feat-a");
      await agentSession(box, "s2", "app/feat-b");
      await agentSession(box, "s3", "app");
      const after = new Date().toISOString();
      await box.client.send("s3", "ASK-PERMISSION");
      await box.client.wait("s3", { states: ["waiting"], after, timeout: "60s" });

      const page = await browser.newPage({ viewport: { width: 1400, height: 900 } });
      await page.goto(`${agent.url}/app/#token=${encodeURIComponent(agent.token)}`);
      await page.locator('.sessions [data-session="devbox/s3"] .badge[data-state="waiting"]').waitFor();
      // Nothing ticked: no broadcast form.
      assertEquals(await page.locator(".broadcast-text").count(), 0);
      await page.locator('.sessions [data-select="devbox/s1"]').check();
      await page.locator('.sessions [data-select="devbox/s2"]').check();
      // Needs you shares the ticks: s3, waiting on the person, is ticked there.
      await page.locator('[data-view="needs"]').click();
      await page.locator('.need[data-session="devbox/s3"] [data-select="devbox/s3"]').check();
      assertEquals(await page.locator('.need [data-select="devbox/s1"]').isChecked(), true);
      await page.locator(".broadcast-text").fill("app {{session}} on {{branch}}");
      await page.locator('.broadcast button[type="submit"]').click();
      for (
        const [target, outcome] of [["devbox/s1", "sent"], ["devbox/s2", "sent"], ["devbox/s3", "queued"]]
      ) {
        await page.locator(`.broadcast-result [data-target="${target}"][data-outcome="${outcome}"]`)
          .waitFor();
      }
      assertStringIncludes(
        await page.locator('.broadcast-result [data-target="devbox/s3"]').innerText(),
        "waiting_permission",
      );
      // The ticks are cleared once sent.
      await page.waitForFunction(() => document.querySelectorAll(".select-session:checked").length === 0);

      await fence(box, log, "s1", "fence-s1");
      const seen = await fence(box, log, "s2", "fence-s2");
      assertEquals(seen.filter((p) => p.startsWith("app ")).sort(), ["app s1 on feat-a", "app s2 on feat-b"]);
      const held = await box.client.session("s3");
      assertEquals([held.agent_state, held.reason], ["waiting", "permission"]);
      assertEquals((await client.queue()).map((i) => [i.session, i.state]), [["s3", "waiting"]]);
    } finally {
      await browser.close();
      await cleanup(dirs, box, agent, client);
    }
  },
});
