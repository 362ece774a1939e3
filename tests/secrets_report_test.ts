/**
 * Whole-system test of secrets for people at the box (issue 16): `dockd secret exec` runs a command with
 * a worktree's secrets resolved into its environment only (never its command line); `POST
 * secrets/report` says which resolve and why not, without a value, on the box's socket only (refused
 * over TLS and through the laptop's relay); resolving announces `secret.resolved`/`secret.failed` with
 * the variable and the scheme only. `secret exec` builds the environment from the layers the daemon
 * gives (`POST secrets/environment`, socket only): the kit's folder and the compatibility names with it.
 */
import { join } from "node:path";
import { assert, assertEquals, assertRejects, assertStringIncludes } from "./assert.ts";
import { AgentClient } from "../client/agent.ts";
import { DockError } from "../client/errors.ts";
import { makeDirs, makeRepo, runCli, startAgent, startBox } from "./harness.ts";
import { untilEvent } from "./wait.ts";

const VALUE = "s3cret-Value-42";

Deno.test("dockd secret exec and secrets/report: values only in the child's environment; the report on the socket only", async () => {
  const dirs = await makeDirs();
  // The compatibility names under the box's own prefix, not the default one.
  await Deno.mkdir(dirs.dockHome, { recursive: true });
  await Deno.writeTextFile(join(dirs.dockHome, "box.json"), JSON.stringify({ compat_prefix: "MYTOOL" }));
  await using box = await startBox({ dirs, env: { DOCK_TEST_TOKEN: VALUE } });
  await using agent = await startAgent(dirs);
  const laptop = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  const { client } = box;
  try {
    const repo = await makeRepo(join(dirs.home, "work"), "app", {
      ".dock/config.json": JSON.stringify({ env: { API_TOKEN: "env://DOCK_TEST_TOKEN", PLAIN: "p" } }),
    });
    await client.addLocation({ name: "app", path: repo });
    await client.putEnv({ env: { MISSING: "env://DOCK_NOT_SET_ANYWHERE" } });
    await laptop.addLocal("devbox");
    const mark = (await client.emit({ type: "test.mark" })).id!;

    const report = await client.secretReport("app");
    assertEquals(report.secrets, [
      {
        variable: "MISSING",
        scheme: "env",
        ok: false,
        error: "env://DOCK_NOT_SET_ANYWHERE: not set in the daemon's environment",
      },
      { variable: "API_TOKEN", scheme: "env", ok: true, length: VALUE.length },
    ]);
    assert(!JSON.stringify(report).includes(VALUE), "no value in the report");
    const resolved = await untilEvent(client, (e) => e.type === "secret.resolved", { after: mark });
    assertEquals(resolved.data, {
      location: "app",
      worktree: report.worktree,
      variable: "API_TOKEN",
      scheme: "env",
    });
    const failed = await untilEvent(client, (e) => e.type === "secret.failed", { after: mark });
    assertEquals([failed.data?.variable, failed.data?.scheme], ["MISSING", "env"]);

    // Through the laptop's relay: refused, the box's own user only.
    const relayed = await assertRejects(
      () => laptop.box("devbox").secretReport("app"),
      DockError,
    ) as DockError;
    assertEquals([relayed.status, relayed.code], [403, "socket_only"]);

    // secret exec: the value in the child's environment, and not on any command line.
    const exec = await runCli(
      "dockd",
      [
        "secret",
        "exec",
        "--location",
        "app",
        "--",
        'test "$API_TOKEN" = "$DOCK_TEST_TOKEN" && echo same; echo "$PLAIN"; echo "$DOCK_LOCATION"; tr "\\0" " " </proc/$$/cmdline',
      ],
      { env: { ...box.env, DOCK_TEST_TOKEN: VALUE }, cwd: dirs.home },
    );
    assertEquals(exec.code, 0, exec.stderr);
    const [same, plain, location, cmdline] = exec.stdout.trim().split("\n");
    assertEquals([same, plain, location], ["same", "p", "app"]);
    assert(!cmdline.includes(VALUE), cmdline);
    assertStringIncludes(exec.stderr, "MISSING left out");
    // Inside a worktree's folder, it knows which; its exit code is the command's.
    const here = await runCli("dockd", ["secret", "exec", "--", "exit 7"], { env: box.env, cwd: repo });
    assertEquals(here.code, 7);
    const nowhere = await runCli("dockd", ["secret", "exec", "--", "true"], { env: box.env, cwd: dirs.home });
    assertEquals(nowhere.code, 2);
    assertStringIncludes(nowhere.stderr, "--location");
    const printed = await runCli("dockd", ["secret", "report", "app"], { env: box.env, cwd: dirs.home });
    assertStringIncludes(printed.stdout, `yes (${VALUE.length} chars)`);
    assert(!printed.stdout.includes(VALUE));

    // The environment is the daemon's to build (secrets/environment gives its layers, references
    // unresolved): with a kit, its folder; and the compatibility names under the box's prefix, as the
    // worktree's own processes get them (`POST exec` runs with the daemon's build of it).
    await client.applyKit("app", {
      id: "k",
      name: "K",
      version: "1.0.0",
      config: { env: { FROM_KIT: "yes" } },
    });
    const probe =
      'echo "$DOCK_KIT_DIR|$MYTOOL_ROOT_PATH|$MYTOOL_WORKTREE_PATH|$MYTOOL_WORKSPACE_NAME|$FROM_KIT|$CONDUCTOR_ROOT_PATH"';
    const seen = await runCli("dockd", ["secret", "exec", "--location", "app", "--", probe], {
      env: box.env,
      cwd: dirs.home,
    });
    assertEquals(seen.code, 0, seen.stderr);
    const [kitDir, root, path, name, fromKit, conductor] = seen.stdout.trim().split("|");
    const main = (await client.location("app")).worktrees.find((w) => w.main)!;
    assertEquals([root, path, name, fromKit, conductor], [main.path, main.path, main.name, "yes", ""]);
    assert(kitDir.length > 0 && (await Deno.stat(kitDir)).isDirectory, `DOCK_KIT_DIR: '${kitDir}'`);
    assertEquals(seen.stdout, (await client.exec({ location: "app", command: probe })).output);
    const layers = await client.secretEnvironment("app");
    assertEquals([layers.dock.DOCK_KIT_DIR, layers.config.API_TOKEN], [kitDir, "env://DOCK_TEST_TOKEN"]);
    assert(!JSON.stringify(layers).includes(VALUE), "references, never a value");
    const relayedLayers = await assertRejects(
      () => laptop.box("devbox").secretEnvironment("app"),
      DockError,
    ) as DockError;
    assertEquals([relayedLayers.status, relayedLayers.code], [403, "socket_only"]);
  } finally {
    laptop.close();
  }
});
