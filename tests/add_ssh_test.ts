/**
 * Whole-system test of `dock add ssh` (agent/add_ssh.ts) against a real OpenSSH server on loopback
 * (tests/ssh_box.ts): an unknown host key stops with its fingerprint; once trusted, the package is
 * uploaded, installed under the box's `~/.dock`, its daemon started and paired through SSH; running it
 * again changes nothing that works.
 */
import { join } from "node:path";
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import type { AddSshProgress } from "../client/wire.ts";
import { AgentClient } from "../client/agent.ts";
import { BoxClient } from "../client/box.ts";
import { installPackage, makeDirs, runCli, startAgent, startBox } from "./harness.ts";
import { startSshBox } from "./ssh_box.ts";
import { isAlive } from "../daemon/procs.ts";
import { packageName } from "../package/release.ts";
import { which } from "../core/runner.ts";

Deno.test("dock add ssh installs dock on a machine over SSH and pairs it; again, it changes nothing", async () => {
  await using box = await startSshBox();
  const dirs = await makeDirs();
  await using _laptop = { [Symbol.asyncDispose]: () => Deno.remove(dirs.root, { recursive: true }) };
  await using agent = await startAgent(dirs, { env: { DOCK_SSH_CONFIG: box.clientConfig } });
  const client = new AgentClient({ url: agent.url, token: agent.token });
  const add = async (host: string, name?: string) => {
    const lines: AddSshProgress[] = [];
    for await (const progress of client.addSsh({ host, name })) lines.push(progress);
    return lines;
  };
  try {
    // The host key is not known here: nothing else happens, and the fingerprint is shown.
    const refused = await add("testbox");
    const last = refused.at(-1)!;
    assertEquals(last.done, true);
    assertStringIncludes(
      last.error ?? "",
      "connect: the box's host key is not known here; it presents SHA256:",
    );
    // How to accept it keeps the SSH config dock used (`-F`): without it, `testbox` names nothing.
    assertStringIncludes(last.error ?? "", `connecting once: ssh -F ${box.clientConfig} testbox`);
    assertEquals((await client.status()).boxes, []);

    await box.trust();
    // A box whose ~/.dock cannot be made: the install step fails, and says so with what the box said.
    await Deno.writeTextFile(join(box.home, ".dock"), "not a folder\n");
    const blocked = (await add("testbox")).at(-1)!;
    assertEquals(blocked.done, true);
    assertStringIncludes(blocked.error ?? "", "install: ");
    assertStringIncludes(blocked.error ?? "", "mkdir: cannot create directory");
    assertEquals((await client.status()).boxes, []);
    await Deno.remove(join(box.home, ".dock"));

    // Two at once, as two commands would: one installs; the other waits for it, then finds it done.
    const both = await Promise.all([add("testbox", "devbox"), add("testbox", "devbox")]);
    const waiting = "another dock add ssh testbox runs; waiting for it";
    const waited = both.findIndex((lines) => lines.some((line) => line.line === waiting));
    assert(waited >= 0, "one of them waited");
    const added = both[1 - waited];
    assertEquals(added.some((line) => line.line === waiting), false);
    const second = both[waited].map((line) => `${line.step}: ${line.line ?? line.error ?? ""}`);
    assertEquals(both[waited].at(-1)!.box?.name, "devbox", second.join("\n"));
    assert(second.some((line) => /^upload: the box has [0-9a-f]{16} already$/.test(line)), second.join("\n"));
    assert(second.includes("pair: paired already as 'devbox'"), second.join("\n"));
    const done = added.at(-1)!;
    assertEquals(done.error, undefined, JSON.stringify(added));
    assertEquals([done.done, done.box?.name, done.box?.online], [true, "devbox", true]);
    const steps = [...new Set(added.map((line) => line.step))];
    assertEquals(steps, ["connect", "package", "upload", "install", "service", "pair"]);
    const upload = added.filter((line) => line.step === "upload");
    assertEquals(upload.at(-1)!.sent, upload.at(-1)!.total);
    // Installed where the issue says, and reachable through the agent.
    const release = JSON.parse(await Deno.readTextFile(join(box.home, ".dock", "current", "release.json")));
    // Sent compressed with zstd where both ends have it (the laptop and the box are this machine), else gzip.
    const packages = join(dirs.state, "client", "packages");
    const withZstd = which("zstd") !== null;
    const firstSent = join(packages, `${packageName(release)}.tar.${withZstd ? "zst" : "gz"}`);
    // With zstd, the archive's end follows it, holding the box's Deno caches (agent/packages.ts).
    const uploaded = upload.at(-1)!;
    assertEquals(uploaded.sent, uploaded.total);
    if (withZstd) assert((uploaded.total ?? 0) > (await Deno.stat(firstSent)).size, JSON.stringify(uploaded));
    else assertEquals(uploaded.total, (await Deno.stat(firstSent)).size);
    assertEquals(added.some((line) => line.line?.startsWith("compressed with zstd: ")), withZstd);
    // The box's login shell does not find dockd: how to make it so is said once, at the install.
    const hint = "on the box, add ~/.dock/bin to your PATH to type dockd there: " +
      `echo 'export PATH="$HOME/.dock/bin:$PATH"' >> ~/.profile`;
    assertEquals(added.filter((line) => line.line === hint).map((line) => line.step), ["install"]);
    assertEquals((await Deno.lstat(join(box.home, ".dock", "bin", "dockd"))).isSymlink, true);
    // Deno's caches were placed before the daemon first started (package/cache.ts): it found them.
    assert((await Deno.stat(join(box.home, ".dock", "current", "cache", "v8_code_cache_v2"))).isFile);
    assertEquals((await Array.fromAsync(Deno.readDir(join(box.home, ".dock")))).map((e) => e.name).sort(), [
      "bin",
      "current",
      "dockd.log",
      "versions",
    ]);
    const info = await client.box("devbox").info();
    assertEquals(info.build, `${release.version}+${release.commit}`);

    // Again: the same release runs and the pairing works, so nothing is uploaded, restarted or re-paired.
    const again = await add("testbox");
    const lines = again.map((line) => `${line.step}: ${line.line ?? line.error ?? ""}`);
    assertEquals(again.at(-1)!.error, undefined, lines.join("\n"));
    assertEquals(again.at(-1)!.box?.name, "devbox");
    assert(lines.includes(`upload: the box has ${release.id} already`), lines.join("\n"));
    assert(lines.includes("service: dockd runs already"), lines.join("\n"));
    assert(lines.includes("pair: paired already as 'devbox'"), lines.join("\n"));
    const onBox = new BoxClient({ socket: join(box.home, ".local", "state", "dock", "box", "dockd.sock") });
    try {
      assertEquals((await onBox.laptops()).length, 1);
    } finally {
      onBox.close();
    }
    assertEquals((await client.status()).boxes.map((b) => b.name), ["devbox"]);
    // The SSH destination is kept as the SSH config resolved it (`testbox` is a Host of a config that
    // `ssh dock-devbox` does not read): its address, port and user.
    const [written] = (await client.sshConfig()).hosts;
    assertEquals({ ...written, user: undefined }, {
      host: "dock-devbox",
      box: "devbox",
      hostname: "127.0.0.1",
      port: box.port,
      user: undefined,
    });
    assert(written.user, "the user ssh logged in as");

    // A bystander: another home's dockd run from an installed package by the same user (as another test's
    // box is). Restarting this box's daemon below must leave it alone.
    const bystanderDirs = await makeDirs();
    await installPackage(bystanderDirs.dockHome, {
      file: join(packages, `${packageName(release)}.tar.gz`),
      release,
    });
    await using bystander = await startBox({
      dirs: bystanderDirs,
      launcher: join(bystanderDirs.dockHome, "bin", "dockd"),
    });

    // Another release on the same Deno (its id changed here, as a new build's would): the package goes
    // without the runtime, which the box keeps (the same file, linked), and the daemon restarts on it.
    const currentRelease = join(box.home, ".dock", "current", "release.json");
    await Deno.writeTextFile(currentRelease, JSON.stringify({ ...release, id: "f".repeat(16) }));
    const runtime = join(box.home, ".dock", "current", "bin", "deno");
    const runtimeBefore = (await Deno.stat(runtime)).ino;
    const upgraded = await add("testbox");
    const upgradedLines = upgraded.map((line) => `${line.step}: ${line.line ?? line.error ?? ""}`);
    assertEquals(upgraded.at(-1)!.error, undefined, upgradedLines.join("\n"));
    assert(upgradedLines.includes(`upload: without its Deno runtime: the box has Deno ${release.deno}`));
    const sent = upgraded.filter((line) => line.step === "upload" && line.total !== undefined).at(-1)!;
    assert(
      sent.total! < upload.at(-1)!.total! / 4,
      `${sent.total} bytes, the whole package ${upload.at(-1)!.total}`,
    );
    assertEquals((await Deno.stat(runtime)).ino, runtimeBefore);
    assertEquals(JSON.parse(await Deno.readTextFile(currentRelease)).id, release.id);
    assertEquals((await client.box("devbox").info()).build, info.build);
    // The bystander's daemon is the same process, still answering.
    assert(isAlive(bystander.process.pid), "the other home's dockd was stopped");
    assertEquals((await bystander.client.info()).build, info.build);

    // A box without zstd is sent the gzip package: here a release on another runtime, so all of it goes.
    // Its login shell finds dockd now: no hint.
    await box.hide(["zstd"]);
    await Deno.writeTextFile(join(box.home, ".profile"), 'export PATH="$HOME/.dock/bin:$PATH"\n');
    await Deno.writeTextFile(
      currentRelease,
      JSON.stringify({ ...release, id: "e".repeat(16), runtime: "0".repeat(64) }),
    );
    const gzipped = await add("testbox");
    const gzippedLines = gzipped.map((line) => `${line.step}: ${line.line ?? line.error ?? ""}`);
    assertEquals(gzipped.at(-1)!.error, undefined, gzippedLines.join("\n"));
    assert(!gzippedLines.some((line) => line.includes("zstd")), gzippedLines.join("\n"));
    assert(
      gzippedLines.includes(`install: ~/.dock/versions/${release.version}-${release.id}, ~/.dock/bin/dockd`),
    );
    assert(!gzippedLines.some((line) => line.includes("to your PATH")), gzippedLines.join("\n"));
    const whole = gzipped.filter((line) => line.step === "upload" && line.total !== undefined).at(-1)!;
    assertEquals(
      whole.total,
      (await Deno.stat(join(packages, `${packageName(release)}.tar.gz`))).size,
    );
    assertEquals(JSON.parse(await Deno.readTextFile(currentRelease)).id, release.id);
    assertEquals((await client.box("devbox").info()).build, info.build);

    // The command line shows the same steps and the box it added.
    const cli = await runCli("dock", ["add", "ssh", "testbox"], {
      env: {
        PATH: Deno.env.get("PATH") ?? "/usr/bin:/bin",
        HOME: dirs.home,
        DOCK_HOME: dirs.dockHome,
        DOCK_STATE_DIR: dirs.state,
        DOCK_AGENT_PORT: String(agent.port),
        NO_COLOR: "1",
      },
      cwd: dirs.home,
    });
    assertEquals(cli.code, 0, cli.stderr);
    assertStringIncludes(cli.stderr, "pair: paired already as 'devbox'");
    assertStringIncludes(cli.stdout, "added box devbox (");
  } finally {
    client.close();
  }
});

Deno.test("dock add ssh refuses a destination that could reach ssh as an option, and a missing key", async () => {
  const dirs = await makeDirs();
  await using _laptop = { [Symbol.asyncDispose]: () => Deno.remove(dirs.root, { recursive: true }) };
  await using agent = await startAgent(dirs);
  const client = new AgentClient({ url: agent.url, token: agent.token });
  try {
    for (const host of ["-oProxyCommand=touch /tmp/x", "a b", "user@", "h:99999", "h\u0000x"]) {
      const response = await fetch(`${agent.url}/v1/boxes/add-ssh`, {
        method: "POST",
        headers: { authorization: `Bearer ${agent.token}`, "content-type": "application/json" },
        body: JSON.stringify({ host }),
      });
      assertEquals(response.status, 400, host);
      assertEquals((await response.json()).error.code, "invalid_request");
    }
    const response = await fetch(`${agent.url}/v1/boxes/add-ssh`, {
      method: "POST",
      headers: { authorization: `Bearer ${agent.token}`, "content-type": "application/json" },
      body: JSON.stringify({ host: "testbox", identity: join(dirs.root, "nope") }),
    });
    assertEquals(response.status, 400);
    assertStringIncludes((await response.json()).error.message, "identity: no such file");
  } finally {
    client.close();
  }
});
