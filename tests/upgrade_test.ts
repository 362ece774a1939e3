/**
 * Whole-system test of `POST upgrade` (daemon/upgrade.ts): a box installed from a package, as `dock
 * add ssh` installs one, replaced by another package while a session and a service run; packages that
 * are not good ones refused; a package whose daemon cannot start rolled back.
 */
import { join } from "node:path";
import { assert, assertEquals, assertRejects, assertStringIncludes } from "./assert.ts";
import { DockError } from "../client/errors.ts";
import { run } from "../core/runner.ts";
import { buildPackage, type BuiltPackage } from "../package/build.ts";
import { hashTree, hostTarget, type PackageManifest } from "../package/release.ts";
import { AgentClient } from "../client/agent.ts";
import {
  freePort,
  installPackage,
  laptopEnv,
  makeDirs,
  makeRepo,
  processesWith,
  runCli,
  startAgent,
  startBox,
  startOlderBox,
  stopProcessesOf,
} from "./harness.ts";
import { until, untilEvent } from "./wait.ts";

/**
 * This tree's package for this machine under `commit`, built once for the whole file: each takes seconds,
 * and two tests upgrade between the same two releases.
 */
const releases = new Map<string, Promise<BuiltPackage>>();
const releasesDir = Deno.makeTempDirSync({ prefix: "dock-upgrade-releases-" });
globalThis.addEventListener("unload", () => Deno.removeSync(releasesDir, { recursive: true }));
function release(commit: string): Promise<BuiltPackage> {
  let built = releases.get(commit);
  if (!built) {
    built = buildPackage({ target: hostTarget()!, out: join(releasesDir, commit), commit });
    releases.set(commit, built);
  }
  return built;
}

/** `built` again, with the daemon's bundle made to fail at start, under a new commit: a release that cannot run. */
async function broken(built: BuiltPackage, out: string): Promise<string> {
  const root = join(out, "broken");
  await Deno.mkdir(root, { recursive: true });
  assertEquals((await run("tar", ["-xzf", built.file, "-C", root, "--strip-components=1"])).code, 0);
  const serve = join(root, "src", "cli", "serve.js");
  await Deno.writeTextFile(
    serve,
    'throw new Error("this release cannot start");\n' + await Deno.readTextFile(serve),
  );
  const { ["manifest.json"]: _, ["release.json"]: __, ...files } = await hashTree(root);
  const release = { ...built.release, commit: "cccccccccccc", id: "c".repeat(16) };
  const manifest: PackageManifest = { ...release, files };
  await Deno.writeTextFile(join(root, "manifest.json"), JSON.stringify(manifest));
  await Deno.writeTextFile(join(root, "release.json"), JSON.stringify(release));
  const file = join(out, "broken.tar.gz");
  assertEquals((await run("tar", ["-czf", file, "-C", out, "broken"])).code, 0);
  return file;
}

Deno.test("POST upgrade hands over to the package's daemon; what runs goes on, once; bad packages are refused; one that cannot start rolls back", async () => {
  const target = hostTarget();
  assert(target);
  const out = await Deno.makeTempDir({ prefix: "dock-upgrade-test-" });
  const dirs = await makeDirs();
  try {
    const [a, b] = await Promise.all([release("aaaaaaaaaaaa"), release("bbbbbbbbbbbb")]);
    await installPackage(dirs.dockHome, a);
    await using box = await startBox({ dirs, launcher: join(dirs.dockHome, "bin", "dockd") });
    const { client } = box;
    assertEquals((await client.info()).build, "0.1.0+aaaaaaaaaaaa");

    const marker = `upgrade-${Date.now() % 100000}`;
    const repo = await makeRepo(join(dirs.home, "work"), "app", {
      ".dock/config.json": JSON.stringify({
        services: [{ name: "ticker", run: `while true; do sleep 0.2; done # ${marker}`, autostart: true }],
      }),
    });
    await client.addLocation({ name: "app", path: repo });
    await client.createWorktree("app", { name: "w" });
    await client.createSession({ location: "app", command: "sh", name: "term" });
    const service = async () => (await client.services("app", "w")).find((s) => s.name === "ticker")!;
    await until(async () => (await service()).state === "running", { on: client });
    const panePid = async () => {
      const socket = join(dirs.state, "box", "tmux.sock");
      const out = await run("tmux", ["-S", socket, "display-message", "-p", "-t", "=term:", "#{pane_pid}"]);
      return out.stdout.trim();
    };
    const before = { service: (await service()).pid, session: await panePid() };
    assert(/^\d+$/.test(before.session), before.session);
    const after = (await client.emit({ type: "test.mark" })).id!;

    // Not packages for this box: refused, and the daemon serves on as it was.
    const garbage = await assertRejects(
      () => client.upgrade(new TextEncoder().encode("not a package")),
      DockError,
    );
    assertEquals([(garbage as DockError).status, (garbage as DockError).code], [400, "bad_package"]);
    const same = await assertRejects(() => client.upgrade(Deno.readFileSync(a.file)), DockError);
    assertEquals([(same as DockError).status, (same as DockError).code], [409, "same_release"]);

    // Without its runtime: the box links the one of the release it runs (the same Deno).
    const started = await client.upgrade((await Deno.open(b.withoutRuntime.file)).readable);
    const { after: upgrading, ...builds } = started;
    assertEquals(builds, { from: "0.1.0+aaaaaaaaaaaa", to: "0.1.0+bbbbbbbbbbbb", mode: "self" });
    assert(upgrading > after, "the answer names the box.upgrading event");
    await until(async () => (await client.info().catch(() => undefined))?.build === started.to, {
      timeoutMs: 60_000,
    });
    // The stream of the daemon that handed over ends with it: look again until the new one has told.
    const seen = (type: string, after: number) =>
      until(
        () => untilEvent(client, (e) => e.type === type, { after, timeoutMs: 3000 }).catch(() => undefined),
        { timeoutMs: 60_000 },
      );
    const upgraded = await seen("box.upgraded", after);
    assertEquals(upgraded.data, { from: started.from, to: started.to });
    // The same session and the same service process, not a second of either.
    assertEquals([(await client.session("term")).exited, await panePid()], [false, before.session]);
    assertEquals([(await service()).state, (await service()).pid], ["running", before.service]);
    assertEquals(processesWith("/bin/sh -c", marker).length, 1);
    assertEquals((await client.sessions()).filter((s) => s.name === "term").length, 1);
    assertEquals(await Deno.readLink(join(dirs.dockHome, "current")), `versions/0.1.0-${b.release.id}`);

    // A release whose daemon cannot start: the box comes back on the one before and says why.
    const mark = (await client.emit({ type: "test.mark" })).id!;
    await client.upgrade((await Deno.open(await broken(b, out))).readable);
    const failed = await seen("box.upgrade.failed", mark);
    assertStringIncludes(String(failed.data?.error), "this release cannot start");
    assertEquals((await client.info()).build, started.to);
    assertEquals([(await service()).state, (await service()).pid], ["running", before.service]);
  } finally {
    await Deno.remove(out, { recursive: true });
  }
});

Deno.test("dock upgrade sends a box this laptop's package; dock status says which boxes are behind", async () => {
  const out = await Deno.makeTempDir({ prefix: "dock-upgrade-test-" });
  const dirs = await makeDirs();
  try {
    // The box runs an older release, installed as `dock add ssh` installs one.
    const { old, box: started } = await startOlderBox(dirs, out);
    await using box = started;
    await using agent = await startAgent(dirs);
    const client = new AgentClient({ url: agent.url, token: agent.token });
    try {
      await client.addLocal("local");
      const cli = (args: string[]) => runCli("dock", args, { env: laptopEnv(dirs, agent), cwd: dirs.home });
      const before = await cli(["status"]);
      assertEquals(before.code, 0, before.stderr);
      assertStringIncludes(before.stdout, "0.0.9+aaaaaaaaaaaa (behind: dock upgrade)");
      // The agent says so in the box's status (GET /v1/status), what the CLI and the app read.
      assertEquals((await client.status()).boxes.map((b) => [b.name, b.behind]), [["local", true]]);

      // An unknown box is refused before anything streams.
      const unknown = await fetch(`${agent.url}/v1/boxes/nope/upgrade`, {
        method: "POST",
        headers: { authorization: `Bearer ${agent.token}` },
      });
      assertEquals([unknown.status, (await unknown.json()).error.code], [404, "not_found"]);

      const upgraded = await cli(["upgrade", "--all", "--json"]);
      assertEquals(upgraded.code, 0, upgraded.stderr + upgraded.stdout);
      const lines = upgraded.stdout.trim().split("\n").map((line) => JSON.parse(line));
      assertEquals([...new Set(lines.map((line) => line.step))], ["connect", "package", "upload", "restart"]);
      // Both releases run the same Deno: the package went without it, and the box linked its own.
      assert(lines.some((line) => /^without its Deno runtime/.test(line.line ?? "")), upgraded.stdout);
      const sent = lines.filter((line) => line.total !== undefined).at(-1);
      assert(sent.total < old.bytes / 4, `${sent.total} bytes sent, the whole package is ${old.bytes}`);
      const done = lines.at(-1);
      assertEquals([done.done, done.error, done.box.name, done.box.online], [true, undefined, "local", true]);
      // The harness's own connection to the box may be the old daemon's: ask until the new one answers.
      const build = await until(async () => (await box.client.info().catch(() => undefined))?.build);
      assertEquals(done.box.build, build);
      assert(build.startsWith("0.1.0+") && build !== "0.1.0+aaaaaaaaaaaa", build);
      const runtimes = [...Deno.readDirSync(join(dirs.dockHome, "versions"))].map((entry) =>
        Deno.statSync(join(dirs.dockHome, "versions", entry.name, "bin", "deno")).ino
      );
      assertEquals([runtimes.length, new Set(runtimes).size], [2, 1]);
      // The session outlived the old daemon, and nothing is behind any more.
      assertEquals((await box.client.session("keep")).exited, false);
      const after = await cli(["status"]);
      assertStringIncludes(after.stdout, build);
      assert(!after.stdout.includes("behind"), after.stdout);
      assertEquals((await client.status()).boxes.map((b) => [b.name, b.behind]), [["local", false]]);

      // Again: the box runs this laptop's build, so nothing is sent.
      const again = await cli(["upgrade", "local"]);
      assertEquals(again.code, 0, again.stderr);
      assertStringIncludes(again.stderr, `package: local runs ${build} already`);
      assertStringIncludes(again.stdout, `local: ${build}`);
    } finally {
      client.close();
    }
  } finally {
    await Deno.remove(out, { recursive: true });
  }
});

Deno.test("dock upgrade --self installs a package as the laptop's dock and the agent comes back on it", async () => {
  const target = hostTarget();
  assert(target);
  const out = await Deno.makeTempDir({ prefix: "dock-upgrade-test-" });
  const dirs = await makeDirs();
  try {
    const [a, b] = await Promise.all([release("aaaaaaaaaaaa"), release("bbbbbbbbbbbb")]);
    await installPackage(dirs.dockHome, a);
    await Deno.symlink("../current/bin/dock", join(dirs.dockHome, "bin", "dock"));
    const dock = join(dirs.dockHome, "bin", "dock");
    const env = laptopEnv(dirs, { port: freePort() }, { DOCK_PROXY_PORT: String(freePort()) });
    const cli = async (...args: string[]) => {
      const output = await new Deno.Command(dock, { args, env, clearEnv: true, cwd: dirs.home }).output();
      const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
      return { code: output.code, stdout: text(output.stdout), stderr: text(output.stderr) };
    };
    try {
      // The first command starts the agent, from the package, through the launcher.
      const before = await cli("status", "--json");
      assertEquals(
        before.code,
        0,
        before.stderr + await Deno.readTextFile(join(dirs.state, "client", "agent.log")).catch(() => ""),
      );
      assertEquals(JSON.parse(before.stdout).build, "0.1.0+aaaaaaaaaaaa");
      const upgraded = await cli("upgrade", "--self", b.file, "--json");
      assertEquals(upgraded.code, 0, upgraded.stderr + upgraded.stdout);
      const started = JSON.parse(upgraded.stdout.trim().split("\n")[0]);
      assertEquals([started.from, started.to], ["0.1.0+aaaaaaaaaaaa", "0.1.0+bbbbbbbbbbbb"]);
      const after = await cli("status", "--json");
      assertEquals(JSON.parse(after.stdout).build, "0.1.0+bbbbbbbbbbbb");
      assertEquals(await Deno.readLink(join(dirs.dockHome, "current")), `versions/0.1.0-${b.release.id}`);
      // The same release again is refused, and changes nothing.
      const again = await cli("upgrade", "--self", b.file);
      assertEquals(again.code, 1);
      assertStringIncludes(again.stderr, "this laptop runs 0.1.0-");
    } finally {
      stopProcessesOf(dirs.state);
    }
  } finally {
    await Deno.remove(out, { recursive: true });
  }
});
