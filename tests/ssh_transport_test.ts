/**
 * Whole-system test of the SSH transport (agent/ssh_transport.ts) against a real OpenSSH server on
 * loopback (tests/ssh_box.ts): the laptop reaches the box at 127.0.0.2, where sshd listens but the box's
 * daemon does not (it listens on 127.0.0.1 only), so its TLS port is closed to the laptop, as behind NAT.
 * `dock add ssh` finds the port closed and pairs through one SSH connection; the box is used through it;
 * killing that `ssh` loses the box only until the transport reconnects, and the event stream resumes.
 */
import { join } from "node:path";
import { assert, assertEquals } from "./assert.ts";
import type { AddSshProgress } from "../client/wire.ts";
import { AgentClient } from "../client/agent.ts";
import { BoxClient } from "../client/box.ts";
import { makeDirs, makeRepo, processesWith, startAgent } from "./harness.ts";
import { until, untilEvent } from "./wait.ts";
import { untilGone } from "./process_exits.ts";
import { startSshBox } from "./ssh_box.ts";

Deno.test("dock add ssh reaches a box whose port is closed through one SSH connection, which reconnects", async () => {
  await using box = await startSshBox({ address: "127.0.0.2" });
  await box.trust();
  const dirs = await makeDirs();
  await using _laptop = { [Symbol.asyncDispose]: () => Deno.remove(dirs.root, { recursive: true }) };
  await using agent = await startAgent(dirs, { env: { DOCK_SSH_CONFIG: box.clientConfig } });
  const client = new AgentClient({ url: agent.url, token: agent.token });
  // The box's one ssh: a ControlMaster under the agent's state (its socket named by the box once paired).
  const sshPids = () => processesWith("ssh ", `ControlPath=${join(dirs.state, "client", "ssh")}/`);
  const control = join(dirs.state, "client", "ssh", "devbox.sock");
  try {
    const lines: AddSshProgress[] = [];
    for await (const progress of client.addSsh({ host: "testbox", name: "devbox" })) lines.push(progress);
    const said = lines.map((line) => `${line.step}: ${line.line ?? line.error ?? ""}`).join("\n");
    const done = lines.at(-1)!;
    assertEquals(done.error, undefined, said);
    assert(
      said.includes(`pair: 127.0.0.2:${box.tlsPort} does not answer from here: the box is reached over SSH`),
      said,
    );
    assertEquals([done.box?.name, done.box?.online, done.box?.transport], ["devbox", true, "ssh"], said);
    // The daemon does listen, on the box's loopback; the laptop's own dial of the box fails.
    (await Deno.connect({ hostname: "127.0.0.1", port: box.tlsPort })).close();
    let direct = "connected";
    await Deno.connect({ hostname: "127.0.0.2", port: box.tlsPort }).then((c) => c.close(), (e) => {
      direct = (e as Error).name;
    });
    assertEquals(direct, "ConnectionRefused");
    // The box's address here is the forward, TLS pinned to its CA as any paired box.
    const status = (await client.status()).boxes.find((b) => b.name === "devbox")!;
    assertEquals([status.transport, status.kind, status.online], ["ssh", "tls", true]);
    assert(/^https:\/\/127\.0\.0\.1:\d+$/.test(status.address), status.address);
    assert(!status.address.endsWith(`:${box.tlsPort}`), status.address);
    const info = await client.box("devbox").info();
    assert(info.build.length > 0);
    assertEquals(sshPids().length, 1, "one ssh for the box");
    assert((await Deno.lstat(control)).isSocket, "its ControlMaster socket");
    const [first] = sshPids();

    // The box's events reach the laptop through it; then ssh dies: the transport connects again and the
    // stream resumes where it was.
    const onBox = new BoxClient({ socket: join(box.home, ".local", "state", "dock", "box", "dockd.sock") });
    await using _onBox = { [Symbol.asyncDispose]: () => Promise.resolve(onBox.close()) };
    const repo = await makeRepo(box.root, "before");
    await onBox.addLocation({ name: "before", path: repo });
    const seen = await untilEvent(
      client,
      (event) => event.type === "location.added" && event.box === "devbox",
      { timeoutMs: 30_000 },
    );
    Deno.kill(first, "SIGKILL");
    const second = await until(async () => {
      const now = sshPids().filter((pid) => pid !== first);
      return now.length === 1 && (await client.box("devbox").info()).build === info.build && now[0];
    }, { timeoutMs: 60_000 });
    assert(second !== first);
    const after = await makeRepo(box.root, "after");
    await onBox.addLocation({ name: "after", path: after });
    const resumed = await untilEvent(
      client,
      (event) =>
        event.type === "location.added" && event.box === "devbox" &&
        (event.data as { location?: string }).location === "after",
      { after: seen.id, timeoutMs: 60_000 },
    );
    assert(resumed.id! > seen.id!);
    assertEquals((await client.status()).boxes.find((b) => b.name === "devbox")?.transport, "ssh");

    // Forgotten: the box is told through the transport, which then ends.
    const forgotten = await client.removeBox("devbox");
    assertEquals(forgotten.revoked, true);
    await untilGone(sshPids, { timeoutMs: 20_000, what: "the transport's ssh" });
  } finally {
    client.close();
  }
});

Deno.test("without systemd, dock add ssh leaves a crontab @reboot entry that brings the box back; forget removes it", async () => {
  await using box = await startSshBox({ crontab: true });
  await box.trust();
  const dirs = await makeDirs();
  await using _laptop = { [Symbol.asyncDispose]: () => Deno.remove(dirs.root, { recursive: true }) };
  await using agent = await startAgent(dirs, { env: { DOCK_SSH_CONFIG: box.clientConfig } });
  const client = new AgentClient({ url: agent.url, token: agent.token });
  try {
    const lines: AddSshProgress[] = [];
    for await (const progress of client.addSsh({ host: "testbox", name: "devbox" })) lines.push(progress);
    const said = lines.map((line) => `${line.step}: ${line.line ?? line.error ?? ""}`);
    assertEquals(lines.at(-1)!.error, undefined, said.join("\n"));
    assert(
      said.includes(
        "service: no systemd user session here: dockd runs under nohup, and a crontab @reboot entry starts it after a reboot",
      ),
      said.join("\n"),
    );
    const entries = (await Deno.readTextFile(box.crontab)).trim().split("\n");
    assertEquals(entries.length, 1, entries.join("\n"));
    const [entry] = entries;
    assert(entry.startsWith("@reboot ") && entry.endsWith(` # dock:dockd ${box.home}`), entry);
    const build = (await client.box("devbox").info()).build;

    // A reboot: everything of the box's dock dies; then cron runs the entry, with cron's bare environment.
    const daemons = () => processesWith("", `${box.home}/.dock/`);
    const before = daemons();
    assert(before.length > 0, "the box's dockd runs");
    for (const pid of before) Deno.kill(pid, "SIGKILL");
    await untilGone(daemons, { what: "the box's dock processes" });
    await until(async () => {
      const status = (await client.status()).boxes.find((b) => b.name === "devbox");
      return status?.online === false || (await client.box("devbox").info().then(() => false, () => true));
    }, { on: client, timeoutMs: 30_000 });
    const command = entry.slice("@reboot ".length).replaceAll("\\%", "%");
    const rebooted = new Deno.Command("sh", {
      args: ["-c", command],
      clearEnv: true,
      env: { PATH: "/usr/bin:/bin", SHELL: "/bin/sh", LOGNAME: "root" },
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).spawn();
    rebooted.unref();
    const back = await until(() => client.box("devbox").info(), { on: client, timeoutMs: 60_000 });
    assertEquals(back.build, build);
    assert(daemons().length > 0);

    // Forgotten: the box's crontab loses the entry (over SSH), and keeps nothing else of dock.
    await client.removeBox("devbox");
    assertEquals((await Deno.readTextFile(box.crontab)).trim(), "");
  } finally {
    client.close();
  }
});
