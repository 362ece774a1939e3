/**
 * Whole-system test of `GET review` and `POST preview` (daemon/review.ts) on a real box with real git
 * worktrees and a fake agent: what has work to review and why, what is left out while an agent works,
 * an unseen finished turn that attaching marks seen; a preview announced with its private URL, from
 * `dockd preview` inside a worktree and `dock preview BOX/LOC/WT` on the laptop.
 */
import { join } from "node:path";
import { assertEquals, assertStringIncludes } from "./assert.ts";
import { AgentClient } from "../client/agent.ts";
import { run } from "../core/runner.ts";
import { laptopEnv, makeDirs, makeRepo, runCli, startAgent, startBox } from "./harness.ts";
import { untilEvent } from "./wait.ts";
import { connectUnixWebSocket } from "./ws_unix.ts";

const DENO = Deno.execPath();
const FAKE = new URL("./fixtures/fake_agent.ts", import.meta.url).pathname;
const AGENT = {
  id: "fake",
  name: "Fake",
  command: `'${DENO}' run -A --cached-only '${FAKE}'`,
  prompt_flag: "",
};

Deno.test("review lists worktrees with commits, changes or an unseen finished agent; preview announces the private URL", async () => {
  const dirs = await makeDirs();
  await using box = await startBox({ dirs, env: { FAKE_AGENT_WORK_MS: "200" } });
  await using agent = await startAgent(dirs);
  const laptop = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  const { client } = box;
  try {
    const repo = await makeRepo(join(dirs.home, "work"), "app", {
      ".dock/config.json": JSON.stringify({ agents: [AGENT] }),
    });
    await client.addLocation({ name: "app", path: repo });
    await laptop.addLocal("devbox");
    const committed = await client.createWorktree("app", { name: "committed" });
    const dirty = await client.createWorktree("app", { name: "dirty" });
    await client.createWorktree("app", { name: "clean" });
    const done = await client.createWorktree("app", { name: "done" });
    const busy = await client.createWorktree("app", { name: "busy" });
    const git = (cwd: string, ...args: string[]) => run("git", args, { cwd });
    await Deno.writeTextFile(join(committed.path, "feature.ts"), "export const x = 1;\n");
    await git(committed.path, "add", ".");
    await git(committed.path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "feature");
    await Deno.writeTextFile(join(dirty.path, "wip.ts"), "// wip\n");

    // An agent that finished a turn nobody looked at, and one still working.
    await client.createSession({ location: "app/done", agent: "fake", name: "done-agent" });
    await client.wait("done-agent", { states: ["idle"], timeout: "30s" });
    const sent = await client.send("done-agent", "do it");
    await client.wait("done-agent", { states: ["finished"], after: sent.state_time!, timeout: "30s" });
    await client.createSession({ location: "app/busy", agent: "fake", name: "busy-agent" });
    await client.wait("busy-agent", { states: ["idle"], timeout: "30s" });
    await client.send("busy-agent", "long SLOW:600000");
    await client.wait("busy-agent", { states: ["running"], timeout: "30s" });
    await Deno.writeTextFile(join(busy.path, "half.ts"), "// half done\n");

    const items = await client.review();
    assertEquals(items.map((i) => [i.worktree, i.reasons]), [
      ["committed", ["commits"]],
      ["dirty", ["changes"]],
      ["done", ["finished"]],
    ]);
    const first = items[0];
    assertEquals([first.ahead, first.base, first.dirty], [1, "main", false]);
    assertEquals(items[1].changes.untracked, 1);
    assertEquals(items[2].sessions, [{
      name: "done-agent",
      agent: "fake",
      agent_state: "finished",
      unseen: true,
    }]);
    // With all, the worktree whose agent still works is listed too, marked.
    const all = await client.review({ all: true });
    assertEquals(all.find((i) => i.worktree === "busy")?.working, true);

    // Attaching is looking: the finished turn is seen, and the worktree has nothing else to review.
    const ws = await connectUnixWebSocket(box.dirs.socket, "/v1/sessions/done-agent/attach");
    await ws.close();
    assertEquals((await client.review()).map((i) => i.worktree), ["committed", "dirty"]);

    // The CLI, on the box and through the laptop.
    const cli = await box.cli(["review"]);
    assertEquals(cli.code, 0, cli.stderr);
    assertStringIncludes(cli.stdout, "app/committed");
    const fromLaptop = await runCli("dock", ["review", "--json"], {
      env: laptopEnv(dirs, agent),
      cwd: dirs.home,
    });
    assertEquals(
      JSON.parse(fromLaptop.stdout).map((i: { box: string; worktree: string }) => `${i.box}/${i.worktree}`),
      [
        "devbox/committed",
        "devbox/dirty",
      ],
    );

    // Preview: announced with the private URL; dockd preview knows its worktree from DOCK_*.
    const mark = (await client.emit({ type: "test.mark" })).id!;
    const info = await client.info();
    const inside = await runCli("dockd", ["preview", "/admin"], {
      env: { ...box.env, DOCK_LOCATION: "app", DOCK_WORKTREE_NAME: "dirty" },
      cwd: dirty.path,
    });
    assertEquals(inside.code, 0, inside.stderr);
    assertEquals(inside.stdout.trim(), `http://dirty.app.${info.name}.localhost:1377/admin`);
    const opened = await untilEvent(client, (e) => e.type === "preview.open", { after: mark });
    assertEquals(opened.data, {
      location: "app",
      worktree: "dirty",
      port: dirty.ports[0],
      path: "/admin",
      url: `http://dirty.app.${info.name}.localhost:1377/admin`,
    });
    const printed = await runCli("dock", ["preview", "devbox/app/committed", "--port", "4999"], {
      env: laptopEnv(dirs, agent),
      cwd: dirs.home,
    });
    assertEquals(printed.code, 0, printed.stderr);
    assertEquals(printed.stdout.trim(), `http://committed.app.${info.name}.localhost:1377/`);
    const outside = await box.cli(["preview"]);
    assertEquals(outside.code, 2);
    assertStringIncludes(outside.stderr, "inside a dock worktree");
    assertEquals(done.name, "done");
  } finally {
    laptop.close();
  }
});
