/**
 * Whole-system test of editors and the SSH config (agent/editors.ts, agent/ssh_config.ts): a paired box
 * gets a `Host dock-<box>` in `~/.ssh/config.d/dock`, included once from `~/.ssh/config` (backed up, every
 * other line kept, idempotent); `dock edit` opens a worktree's file in a fake VS Code, whose arguments
 * are recorded.
 */
import { join } from "node:path";
import { assert, assertEquals, assertRejects, assertStringIncludes } from "./assert.ts";
import { AgentClient } from "../client/agent.ts";
import { DockError } from "../client/errors.ts";
import { laptopEnv, makeDirs, makeRepo, runCli, startAgent, startBox } from "./harness.ts";
import { until } from "./wait.ts";

/** What a fake editor or opener wrote into `file`, once it has (they run detached). */
function wroteTo(file: string): Promise<string> {
  return until(async () => (await Deno.readTextFile(file).catch(() => "")).trim() || undefined, {
    watch: file,
  });
}

Deno.test("ssh-config writes a Host per box once; dock edit opens a box's file through it", async () => {
  const dirs = await makeDirs();
  const bin = join(dirs.root, "bin");
  await Deno.mkdir(bin, { recursive: true });
  const calls = join(dirs.root, "code.calls");
  await Deno.writeTextFile(join(bin, "code"), `#!/bin/sh\necho "$@" >>'${calls}'\n`, { mode: 0o755 });
  // JetBrains Gateway is there, and opens through the desktop's URL opener.
  const opened = join(dirs.root, "xdg-open.calls");
  await Deno.writeTextFile(join(bin, "gateway"), "#!/bin/sh\nexit 0\n", { mode: 0o755 });
  await Deno.writeTextFile(join(bin, "xdg-open"), `#!/bin/sh\necho "$@" >>'${opened}'\n`, { mode: 0o755 });
  const env = { PATH: `${bin}:${Deno.env.get("PATH")}` };
  await using remote = await startBox({ env: { DOCK_LISTEN: "127.0.0.1:0" } });
  await using agent = await startAgent(dirs, { env: { ...env, USER: "me" } });
  const laptop = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  try {
    const paired = await remote.cli(["pair", "--host", "127.0.0.1"]);
    await laptop.pairBox(/dock:\/\/[^\s']+/.exec(paired.stdout)![0], "remote");
    const repo = await makeRepo(join(remote.dirs.home, "work"), "app");
    await remote.client.addLocation({ name: "app", path: repo });
    const w = await remote.client.createWorktree("app", { name: "w" });

    // The person's own config: kept, backed up, included once.
    const ssh = join(dirs.home, ".ssh");
    await Deno.mkdir(ssh, { recursive: true });
    const own = "Host work\n  HostName work.example.com\n";
    await Deno.writeTextFile(join(ssh, "config"), own);
    const written = await laptop.writeSshConfig();
    assertEquals(written.hosts, [{ host: "dock-remote", box: "remote", hostname: "127.0.0.1" }]);
    assertEquals(await Deno.readTextFile(join(ssh, "config")), `Include config.d/dock\n\n${own}`);
    assertEquals(await Deno.readTextFile(join(ssh, "config.dock-backup")), own);
    assertStringIncludes(
      await Deno.readTextFile(join(ssh, "config.d", "dock")),
      "Host dock-remote\n  HostName 127.0.0.1",
    );
    assertEquals((await Deno.stat(join(ssh, "config.d", "dock"))).mode! & 0o777, 0o600);
    const again = await laptop.writeSshConfig();
    assertEquals(again.changed, []);
    assertEquals((await laptop.sshConfig()).included, true);

    // The editors here, and a file opened at a line in the worktree, through the host above.
    assertEquals((await laptop.editors()).map((e) => e.id), ["vscode", "gateway"]);
    const edited = await runCli("dock", ["edit", "remote/app/w", "src/main.ts:12:3"], {
      env: laptopEnv(dirs, agent, env),
      cwd: dirs.home,
    });
    assertEquals(edited.code, 0, edited.stderr);
    const recorded = await wroteTo(calls);
    assertEquals(recorded, `--remote ssh-remote+dock-remote ${w.path} --goto ${w.path}/src/main.ts:12:3`);
    await laptop.openEditor({ editor: "gateway", box: "remote", location: "app", worktree: "w" });
    const url = await wroteTo(opened);
    assertEquals(
      url,
      `jetbrains-gateway://connect#type=ssh&deploy=false&host=dock-remote&port=22&user=me&projectPath=${
        encodeURIComponent(w.path)
      }`,
    );
    const refused = await assertRejects(
      () => laptop.openEditor({ editor: "zed", box: "remote", location: "app" }),
      DockError,
    ) as DockError;
    assertEquals([refused.status, refused.code], [422, "no_editor"]);
    assert(refused.message.includes("vscode"));
  } finally {
    laptop.close();
  }
});

Deno.test("dock edit on a box of this machine (dock add local) opens the folder as it is, no SSH", async () => {
  const dirs = await makeDirs();
  const bin = join(dirs.root, "bin");
  await Deno.mkdir(bin, { recursive: true });
  const calls = join(dirs.root, "code.calls");
  await Deno.writeTextFile(join(bin, "code"), `#!/bin/sh\necho "$@" >>'${calls}'\n`, { mode: 0o755 });
  await Deno.writeTextFile(join(bin, "gateway"), "#!/bin/sh\nexit 0\n", { mode: 0o755 });
  const env = { PATH: `${bin}:${Deno.env.get("PATH")}` };
  await using box = await startBox({ dirs });
  await using agent = await startAgent(dirs, { env });
  const laptop = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  try {
    await laptop.addLocal("here");
    await box.client.addLocation({ name: "app", path: await makeRepo(join(dirs.home, "work"), "app") });
    const w = await box.client.createWorktree("app", { name: "w" });
    const edited = await runCli("dock", ["edit", "here/app/w", "README.md:3"], {
      env: laptopEnv(dirs, agent, env),
      cwd: dirs.home,
    });
    assertEquals(edited.code, 0, edited.stderr);
    const recorded = await wroteTo(calls);
    assertEquals(recorded, `${w.path} --goto ${w.path}/README.md:3`);
    // Nothing was written for SSH: the box is this machine.
    assertEquals((await laptop.sshConfig()).hosts, []);
    // JetBrains Gateway opens remote projects only: said so, not a broken SSH URL.
    const refused = await assertRejects(
      () => laptop.openEditor({ editor: "gateway", box: "here", location: "app", worktree: "w" }),
      DockError,
    ) as DockError;
    assertEquals([refused.status, refused.code], [422, "remote_only"]);
  } finally {
    laptop.close();
  }
});
