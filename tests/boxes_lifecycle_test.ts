/**
 * Whole-system tests of boxes and the agent over their life (issue 33): a box paired again (after a
 * restart that moved its port, and after `dock forget`) keeps its event cursor, so an SSE client and a
 * laptop hook receive each of its events once; `dock agent status|stop|restart`, and an environment
 * changed after the agent started reported by `dock status`; the identity, port and user `dock add ssh`
 * used kept in `dock ssh-config`, so `ssh dock-BOX` works against a real sshd.
 */
import { join } from "node:path";
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { AgentClient } from "../client/agent.ts";
import type { AddSshProgress, DockEvent } from "../client/wire.ts";
import {
  type BoxDirs,
  freePort,
  laptopEnv,
  makeDirs,
  makeRepo,
  processesOf,
  runCli,
  startAgent,
  startBox,
  stopProcessesOf,
  type TestBox,
} from "./harness.ts";
import { until, untilEvent } from "./wait.ts";
import { untilGone } from "./process_exits.ts";
import { startSshBox } from "./ssh_box.ts";

/** A box named `name` listening for laptops on a loopback port the system picks (a new one each start). */
async function namedBox(name: string, dirs?: BoxDirs): Promise<TestBox> {
  if (!dirs) {
    dirs = await makeDirs();
    await Deno.mkdir(dirs.dockHome, { recursive: true });
    await Deno.writeTextFile(join(dirs.dockHome, "box.json"), JSON.stringify({ name }));
  }
  return await startBox({ dirs, env: { DOCK_LISTEN: "127.0.0.1:0" } });
}

/** `dockd pair --host 127.0.0.1`: the link it prints. */
async function pairLink(box: TestBox): Promise<string> {
  const out = await box.cli(["pair", "--host", "127.0.0.1"]);
  assertEquals(out.code, 0, out.stderr);
  const link = /dock:\/\/[^\s']+/.exec(out.stdout)?.[0];
  assert(link, `no link in: ${out.stdout}`);
  return link;
}

/** How many times each key occurs, the keys seen more than once. */
function repeated(keys: string[]): string[] {
  const counts = new Map<string, number>();
  for (const key of keys) counts.set(key, (counts.get(key) ?? 0) + 1);
  return [...counts].filter(([, n]) => n > 1).map(([key, n]) => `${key} ×${n}`);
}

Deno.test("a box paired again (moved, restarted, forgotten) keeps its cursor: no event arrives twice", async () => {
  let box = await namedBox("alpha");
  const laptop = await makeDirs();
  // A laptop hook that logs every event it runs for, box events with their box and time.
  const hookLog = join(laptop.root, "hooks.log");
  await Deno.mkdir(laptop.dockHome, { recursive: true });
  await Deno.writeTextFile(
    join(laptop.dockHome, "hooks.json"),
    JSON.stringify({
      hooks: [{ on: "*", run: `echo "$DOCK_EVENT_BOX $DOCK_EVENT_TYPE $DOCK_EVENT_TIME" >> ${hookLog}` }],
    }),
  );
  await using agent = await startAgent(laptop, { env: { DOCK_AGENT_HEALTH_MS: "200" } });
  const client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  const seen: DockEvent[] = [];
  const following = new AbortController();
  const followed = (async () => {
    try {
      for await (const event of client.events({ after: 0, signal: following.signal })) seen.push(event);
    } catch (error) {
      if (!following.signal.aborted) throw error;
    }
  })();
  const hookLines = async () =>
    (await Deno.readTextFile(hookLog).catch(() => "")).split("\n").filter(Boolean);
  // Woken by the agent's events and by the hook's writes: the event is looked for in what this wait's own
  // stream brought (the follower above may hear it after the hook has written its line).
  const arrived = (type: string, data: (d: Record<string, unknown>) => boolean) => {
    const heard: DockEvent[] = [];
    return until(async (events) => {
      heard.push(...events);
      const event = heard.find((e) => e.box === "alpha" && e.type === type && data(e.data ?? {}));
      return event && (await hookLines()).includes(`alpha ${event.type} ${event.time}`);
    }, { on: client, watch: hookLog, timeoutMs: 30_000 });
  };
  try {
    assertEquals((await client.pairBox(await pairLink(box))).name, "alpha");
    const work = join(box.dirs.home, "work");
    await client.box("alpha").addLocation({ name: "first", path: await makeRepo(work, "first") });
    await arrived("location.added", (d) => d.location === "first" || d.name === "first");

    // Twice: the box stops and comes back on another port (a reboot), and is paired again from a new link.
    for (const round of [1, 2]) {
      const before = (await client.status()).boxes.find((b) => b.name === "alpha")!.address;
      await box.stop();
      box = await namedBox("alpha", box.dirs);
      await until(async () => !(await client.refresh()).boxes.find((b) => b.name === "alpha")!.online, {
        on: client,
      });
      const again = await client.pairBox(await pairLink(box));
      assertEquals([again.name, again.online], ["alpha", true], `round ${round}`);
      assert(again.address !== before, `round ${round}: the box moved (${before})`);
      await client.box("alpha").addLocation({
        name: `round${round}`,
        path: await makeRepo(work, `round${round}`),
      });
      await arrived("location.added", (d) => d.location === `round${round}` || d.name === `round${round}`);
    }
    // A box this laptop reaches is not paired again: refused before its code is spent.
    const refused = await client.pairBox(await pairLink(box)).then(() => null, (error) => error);
    assertEquals(refused?.status, 409);

    // Third: forgotten, then paired again: the same CA resumes from the cursor kept for it.
    await client.removeBox("alpha");
    assertEquals((await client.pairBox(await pairLink(box))).name, "alpha");
    await client.box("alpha").addLocation({ name: "last", path: await makeRepo(work, "last") });
    await arrived("location.added", (d) => d.location === "last" || d.name === "last");

    const boxEvents = seen.filter((e) => e.box === "alpha");
    assertEquals(repeated(boxEvents.map((e) => `${e.type} ${e.time} ${JSON.stringify(e.data)}`)), []);
    assertEquals(boxEvents.filter((e) => e.type === "location.added").length, 4);
    const lines = (await hookLines()).filter((line) => line.startsWith("alpha "));
    assertEquals(repeated(lines), [], "the hook ran once per box event");
    assertEquals(lines.filter((line) => line.includes(" location.added ")).length, 4);
    // The laptop's own announcements: paired again in place twice (no removal), forgotten once.
    const own = seen.filter((e) => !e.box && e.data?.box === "alpha").map((e) => e.type);
    assertEquals(own.filter((t) => t === "box.changed").length, 2);
    assertEquals(own.filter((t) => t === "box.removed").length, 1);
    assertEquals(own.filter((t) => t === "box.added").length, 2);
  } finally {
    following.abort();
    await followed;
    client.close();
    await box[Symbol.asyncDispose]();
  }
});

Deno.test("dock agent status, stop and restart; a setting changed since the agent started is reported", async () => {
  const laptop = await makeDirs();
  const port = freePort();
  const base = laptopEnv(laptop, { port }, { DOCK_PROXY_PORT: String(freePort()) });
  const dock = (args: string[], extra: Record<string, string> = {}) =>
    runCli("dock", args, { env: { ...base, ...extra }, cwd: laptop.home });
  const agents = () => processesOf(laptop.state, "agent");
  try {
    let out = await dock(["agent", "status"]);
    assertEquals(out.code, 0, out.stderr);
    assertStringIncludes(out.stdout, "not running");
    assertEquals(agents(), [], "asking the status starts nothing");

    // Any command starts it, with this shell's settings.
    const sshConfig = join(laptop.root, "ssh_config");
    out = await dock(["status"], { DOCK_SSH_CONFIG: sshConfig });
    assertEquals([out.code, out.stderr], [0, ""]);
    const first = JSON.parse((await dock(["agent", "status", "--json"])).stdout);
    assertEquals(first.running, true);
    assertEquals(agents(), [first.pid]);
    assertEquals(first.env.DOCK_SSH_CONFIG, sshConfig);

    // A shell whose DOCK_SSH_CONFIG differs (here: none) is told the agent runs with another.
    out = await dock(["status"]);
    assertEquals(out.code, 0, out.stderr);
    assertStringIncludes(
      out.stderr,
      `the agent runs with DOCK_SSH_CONFIG=${sshConfig} but this shell has no DOCK_SSH_CONFIG: dock agent restart`,
    );

    // Stopped: its process is gone and its port free; stopping again is no error.
    out = await dock(["agent", "stop"]);
    assertEquals(out.code, 0, out.stderr);
    assertStringIncludes(out.stdout, `stopped the agent (pid ${first.pid}`);
    await untilGone(agents, { what: "the agent" });
    out = await dock(["agent", "stop"]);
    assertEquals([out.code, out.stdout.trim()], [0, "the agent is not running"]);

    // Restarted from this shell: a new process, this shell's settings, nothing to report.
    out = await dock(["status"], { DOCK_SSH_CONFIG: sshConfig });
    assertEquals(out.code, 0, out.stderr);
    const second = JSON.parse((await dock(["agent", "status", "--json"])).stdout);
    out = await dock(["agent", "restart"]);
    assertEquals(out.code, 0, out.stderr);
    const third = JSON.parse((await dock(["agent", "status", "--json"])).stdout);
    assert(third.pid !== second.pid, "a new process");
    assertEquals(third.env.DOCK_SSH_CONFIG, null);
    assertEquals(agents(), [third.pid]);
    out = await dock(["status"]);
    assertEquals([out.code, out.stderr], [0, ""]);

    // What `deno task install` does after installing a build: an agent running another one is stopped
    // (the next command starts the one installed); one running that very build is left alone.
    const replace = async (build: string) => {
      const module = new URL("../cli/agent.ts", import.meta.url).href;
      const code = `import { replaceAgent } from "${module}"; console.log(await replaceAgent(${
        JSON.stringify(build)
      }));`;
      const done = await new Deno.Command(Deno.execPath(), {
        args: ["eval", code],
        env: base,
        clearEnv: true,
      })
        .output();
      assertEquals(done.code, 0, new TextDecoder().decode(done.stderr));
      return new TextDecoder().decode(done.stdout).trim();
    };
    // Messages of issue 33: discover --login without tailscale says what to install, naming no API route.
    out = await dock(["discover", "--login"]);
    assert(out.code !== 0, out.stdout);
    assertStringIncludes(out.stderr, "install tailscale (https://tailscale.com/download)");
    assertEquals(out.stderr.includes("/v1/"), false, out.stderr);

    assertEquals(await replace(third.build), "null");
    assertEquals(agents(), [third.pid]);
    assertEquals(await replace("0.0.1+aaaaaaaaaaaa"), third.build);
    await untilGone(agents, { what: "the agent" });
  } finally {
    stopProcessesOf(laptop.state);
  }
});

/** The pids of the box's daemon: `dockd serve` run from a release under `home`'s `~/.dock/versions/`. */
function daemonsUnder(home: string): number[] {
  const pids: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const args = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`).split("\0");
      if (args.some((a) => a.startsWith(`${home}/.dock/versions/`)) && args.includes("serve")) {
        pids.push(Number(entry.name));
      }
    } catch { /* gone meanwhile */ }
  }
  return pids;
}

Deno.test("dock add ssh keeps --identity, port and user for ssh-config and --listen for the box; re-adding replays nothing", async () => {
  await using box = await startSshBox();
  await box.trust();
  const home = await Deno.realPath(box.home);
  const laptop = await makeDirs();
  const hookLog = join(laptop.root, "hooks.log");
  await Deno.mkdir(laptop.dockHome, { recursive: true });
  await Deno.writeTextFile(
    join(laptop.dockHome, "hooks.json"),
    JSON.stringify({
      hooks: [{ on: "*", run: `echo "$DOCK_EVENT_BOX $DOCK_EVENT_TYPE $DOCK_EVENT_TIME" >> ${hookLog}` }],
    }),
  );
  await using agent = await startAgent(laptop, { env: { DOCK_SSH_CONFIG: box.clientConfig } });
  const client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  const seen: DockEvent[] = [];
  const following = new AbortController();
  const followed = (async () => {
    try {
      for await (const event of client.events({ after: 0, signal: following.signal })) seen.push(event);
    } catch (error) {
      if (!following.signal.aborted) throw error;
    }
  })();
  const identity = join(box.root, "client_key");
  const listenPort = freePort();
  const add = async (listen?: string) => {
    const lines: string[] = [];
    let last: AddSshProgress | undefined;
    for await (
      const progress of client.addSsh({ host: "testbox", identity, ...(listen ? { listen } : {}) })
    ) {
      last = progress;
      lines.push(`${progress.step}: ${progress.line ?? progress.error ?? ""}`);
    }
    assertEquals(last?.error, undefined, lines.join("\n"));
    return { lines, box: last!.box! };
  };
  try {
    const first = await add(`127.0.0.1:${listenPort}`);
    // The daemon listens where --listen said (not the DOCK_LISTEN its sessions have), and the laptop dials it.
    assertEquals(first.box.online, true);
    assertEquals(first.box.address, `https://127.0.0.1:${listenPort}`);
    const name = first.box.name;
    const work = join(box.home, "work");
    await Deno.mkdir(work, { recursive: true });
    await client.box(name).addLocation({ name: "app", path: await makeRepo(work, "app") });
    await untilEvent(client, (e) => e.box === name && e.type === "location.added", { timeoutMs: 30_000 });

    // The key, port and user are written, so plain ssh reaches the box by dock's name for it.
    const written = await client.writeSshConfig();
    const host = written.hosts.find((h) => h.box === name)!;
    assertEquals([host.hostname, host.port, host.identity], ["127.0.0.1", box.port, identity]);
    const ssh = await new Deno.Command("ssh", {
      args: [
        "-F",
        written.file,
        "-o",
        "BatchMode=yes",
        "-o",
        `UserKnownHostsFile=${box.knownHosts}`,
        `dock-${name}`,
        "echo reached",
      ],
      env: { SSH_AUTH_SOCK: "" },
    }).output();
    assertEquals(
      new TextDecoder().decode(ssh.stdout).trim(),
      "reached",
      new TextDecoder().decode(ssh.stderr),
    );

    // Three times: the box's daemon dies (a reboot without systemd) and add ssh brings it back.
    for (const round of [1, 2, 3]) {
      for (const pid of daemonsUnder(home)) Deno.kill(pid, "SIGKILL");
      await until(
        async () => !(await client.refresh()).boxes.find((b) => b.name === name)!.online,
        { on: client, timeoutMs: 30_000 },
      );
      const again = await add();
      assert(
        again.lines.includes(`pair: paired already as '${name}'`),
        `round ${round}:\n${again.lines.join("\n")}`,
      );
      assertEquals(again.box.address, `https://127.0.0.1:${listenPort}`, "--listen is kept across restarts");
    }
    await client.box(name).addLocation({ name: "last", path: await makeRepo(work, "last") });
    const hookLines = async () =>
      (await Deno.readTextFile(hookLog).catch(() => "")).split("\n").filter(Boolean);
    const heard: DockEvent[] = [];
    await until(async (events) => {
      heard.push(...events);
      const last = heard.find((e) =>
        e.box === name && e.type === "location.added" && e.data?.location === "last"
      );
      return last && (await hookLines()).includes(`${name} location.added ${last.time}`);
    }, { on: client, watch: hookLog, timeoutMs: 30_000 });
    const boxEvents = seen.filter((e) => e.box === name);
    assertEquals(repeated(boxEvents.map((e) => `${e.type} ${e.time} ${JSON.stringify(e.data)}`)), []);
    assertEquals(boxEvents.filter((e) => e.type === "location.added").length, 2);
    assertEquals(repeated((await hookLines()).filter((line) => line.startsWith(`${name} `))), []);
    const own = seen.filter((e) => !e.box && e.data?.box === name).map((e) => e.type);
    assertEquals(
      [own.filter((t) => t === "box.added").length, own.filter((t) => t === "box.removed").length],
      [1, 0],
    );
  } finally {
    following.abort();
    await followed;
    client.close();
  }
});
