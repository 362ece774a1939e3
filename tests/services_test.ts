/**
 * Whole-system tests of services: autostart after setup, crash and restart policy, surviving a
 * kill -9 of the daemon, stopping whole process trees, logs, ports in use, pause and resume, and the
 * resource guard.
 */
import { join } from "node:path";
import { assert, assertEquals, assertRejects, assertStringIncludes } from "./assert.ts";
import { DockError } from "../client/errors.ts";
import type { BoxClient } from "../client/box.ts";
import type { DockEvent } from "../client/wire.ts";
import { makeRepo, startBox, type TestBox } from "./harness.ts";
import { until, untilEvent } from "./wait.ts";
import { untilGone } from "./process_exits.ts";

const DENO = Deno.execPath();
// A tiny HTTP server on $PORT that answers with the worktree's name.
const SERVER =
  `exec "${DENO}" eval --no-config 'Deno.serve({ hostname: "127.0.0.1", port: Number(Deno.env.get("PORT")), onListen() {} }, () => new Response(Deno.env.get("DOCK_WORKTREE_NAME")))'`;

async function boxWith(
  config: unknown,
  env: Record<string, string> = {},
): Promise<{ box: TestBox; repo: string }> {
  const box = await startBox({ env: { DOCK_SERVICE_BACKOFF_MS: "100", ...env } });
  const repo = await makeRepo(join(box.dirs.home, "work"), "app", {
    ".dock/config.json": JSON.stringify(config),
  });
  await box.client.addLocation({ name: "app", path: repo });
  return { box, repo };
}

async function serviceState(client: BoxClient, wt: string, name: string) {
  return (await client.services("app", wt)).find((s) => s.name === name)!;
}

/** Whether every process of the group `pgid` is stopped (SIGSTOP) or a zombie; false when none is left. */
function allStopped(pgid: number): boolean {
  const members = groupMembers(pgid);
  // A shell that was in vfork() when the stop came waits in D for its child, which stopped before exec:
  // it cannot run until that child does, so it counts as stopped too (seen with dash as /bin/sh).
  const heldByStoppedChild = (pid: number) => members.some((m) => m.parent === pid && m.state === "T");
  return members.length > 0 &&
    members.every((m) =>
      m.state === "T" || m.state === "Z" || (m.state === "D" && heldByStoppedChild(m.pid))
    );
}

/** Processes whose command line contains `marker` (read from /proc, zombies excluded), of `program` only. */
function processesWith(marker: string, program?: string): number[] {
  const pids: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const cmdline = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`).replaceAll("\0", " ");
      const state = Deno.readTextFileSync(`/proc/${entry.name}/stat`).split(") ")[1]?.[0];
      if (program && !cmdline.startsWith(`${program} `)) continue;
      if (cmdline.includes(marker) && state !== "Z" && !cmdline.includes("dockd.ts")) {
        pids.push(Number(entry.name));
      }
    } catch { /* gone meanwhile */ }
  }
  return pids;
}

Deno.test("an autostarted service answers on the worktree's port, after setup and only when it succeeds", async () => {
  const { box } = await boxWith({
    setup: '[ "$DOCK_WORKTREE_NAME" != broken ]',
    services: [{ name: "web", run: SERVER, autostart: true }, { name: "other", run: "sleep 600" }],
  });
  await using _ = box;
  // The broken worktree first: whatever it would start after its setup failed, it would have started
  // by the time the next worktree's setup ran and its own service came up.
  const start = (await box.client.emit({ type: "test.mark" })).id!;
  await box.client.createWorktree("app", { name: "broken" });
  await untilEvent(box.client, (e) => e.type === "worktree.setup.failed" && e.data?.worktree === "broken");
  const wt = await box.client.createWorktree("app", { name: "site" });
  const body = await until(async () => {
    const response = await fetch(`http://127.0.0.1:${wt.ports[0]}/`).catch(() => null);
    return response?.ok ? await response.text() : undefined;
  });
  assertEquals(body, "site");
  const services = await box.client.services("app", "site");
  assertEquals(services.map((s) => [s.name, s.state]), [["web", "running"], ["other", "stopped"]]);
  assertEquals(services[0].ports, [wt.ports[0]]);

  const seen: DockEvent[] = [];
  await untilEvent(box.client, (e) => {
    seen.push(e);
    return e.type === "service.started" && e.data?.worktree === "site";
  }, { after: start });
  assertEquals(seen.filter((e) => e.type.startsWith("service.") && e.data?.worktree === "broken"), []);
  assertEquals((await serviceState(box.client, "broken", "web")).state, "stopped");

  const ports = await box.client.ports();
  const mine = ports.find((p) => p.port === wt.ports[0])!;
  assertEquals([mine.location, mine.worktree, mine.service, mine.via], ["app", "site", "web", "block"]);
  const grouped = await box.client.listeningServices();
  assertEquals(grouped.find((g) => g.worktree === "site")?.ports.map((p) => p.port), [wt.ports[0]]);
});

Deno.test("a crashing service is restarted with backoff, then marked failed", async () => {
  const { box } = await boxWith({
    services: [{ name: "flaky", run: "echo run $DOCK_WORKTREE_NAME; exit 3" }],
  });
  await using _ = box;
  await box.client.createWorktree("app", { name: "w" });
  const start = (await box.client.emit({ type: "test.mark" })).id!;
  await box.client.serviceAction("app", "w", "flaky", "start");
  const failed = await untilEvent(box.client, (e) => e.type === "service.failed", {
    after: start,
    timeoutMs: 20_000,
  });
  assertEquals(failed.data?.exit_code, 3);
  const service = await serviceState(box.client, "w", "flaky");
  assertEquals(service.state, "failed");
  assertEquals(service.restarts, 5);
  assertStringIncludes(service.error!, "crashed");
  const crashes = [];
  for await (const event of box.client.events({ after: start, signal: AbortSignal.timeout(500) })) {
    if (event.type === "service.crashed") crashes.push(event.data?.retry_in_ms as number);
  }
  assertEquals(crashes, [100, 200, 400, 800, 1600], "the delay doubles");
  const log = [];
  for await (const line of box.client.serviceLog("app", "w", "flaky")) log.push(line.line);
  assertEquals(log.filter((l) => l === "run w").length, 6);
  // Starting it again by hand gives it a new chance.
  const again = await box.client.serviceAction("app", "w", "flaky", "start");
  assertEquals(again.restarts, 0);
});

Deno.test("services survive kill -9 of the daemon: adopted, not duplicated, logs go on", async () => {
  const marker = `${Date.now() % 100000}${Math.floor(Math.random() * 1000)}`;
  const { box: first } = await boxWith({
    services: [{
      name: "ticker",
      run: `i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.1; done # ${marker}`,
      autostart: true,
    }],
  });
  const wt = await first.client.createWorktree("app", { name: "w" });
  await until(async () => (await serviceState(first.client, "w", "ticker")).state === "running", {
    on: first,
  });
  const before = (await serviceState(first.client, "w", "ticker")).pid;
  await first.stop({ kill: true });
  assert(processesWith(marker).length >= 1, "the service outlived the daemon");

  await using box = await startBox({ dirs: first.dirs, env: { DOCK_SERVICE_BACKOFF_MS: "100" } });
  const adopted = await serviceState(box.client, "w", "ticker");
  assertEquals([adopted.state, adopted.pid, adopted.restarts], ["running", before, 0]);
  // Exactly one wrapper and one loop run it: nothing was started twice.
  const wrappers = processesWith(marker).filter((pid) =>
    Deno.readTextFileSync(`/proc/${pid}/cmdline`).startsWith("/bin/sh\0-c")
  );
  assertEquals(wrappers.length, 1);
  const lines = async () => {
    const out: string[] = [];
    for await (const line of box.client.serviceLog("app", "w", "ticker", { tail: 5 })) out.push(line.line!);
    return Number(out.at(-1)?.split(" ")[1]);
  };
  const n = await lines();
  // The file the daemon writes the service's output to.
  const log = join(box.dirs.state, "box", "logs", "app", "w", "services", "ticker.log");
  await until(async () => (await lines()) > n + 3, { watch: log });
  // Follow mode streams what it writes next.
  const controller = new AbortController();
  const followed: string[] = [];
  for await (
    const line of box.client.serviceLog("app", "w", "ticker", {
      tail: 0,
      follow: true,
      signal: controller.signal,
    })
  ) {
    followed.push(line.line!);
    if (followed.length === 3) {
      controller.abort();
      break;
    }
  }
  assertEquals(followed.length, 3);
  assert(followed.every((l) => l.startsWith("tick ")));

  await box.client.serviceAction("app", "w", "ticker", "stop");
  await untilGone(() => processesWith(marker), { what: "the stopped service's processes" });
  void wt;
});

Deno.test("stop ends a forking service's whole tree; removal stops services before archive", async () => {
  const marker = `99${Date.now() % 100000}`;
  const { box } = await boxWith({
    services: [{
      name: "forky",
      run: `sleep ${marker}1 & sleep ${marker}2 & sh -c 'sleep ${marker}3' & wait`,
    }],
    // Archive fails while any of the service's processes is alive: services must stop before it runs.
    archive:
      `for p in /proc/[0-9]*; do tr '\\0' ' ' < $p/cmdline; echo; done 2>/dev/null | grep -v grep | grep -q "sleep ${marker}" && exit 1; true`,
  });
  await using _ = box;
  await box.client.createWorktree("app", { name: "w" });
  await box.client.serviceAction("app", "w", "forky", "start");
  await until(() => Promise.resolve(processesWith(marker, "sleep").length === 3));
  const stopped = await box.client.serviceAction("app", "w", "forky", "stop");
  assertEquals(stopped.state, "stopped");
  assertEquals(processesWith(marker).length, 0);

  await box.client.serviceAction("app", "w", "forky", "start");
  await until(() => Promise.resolve(processesWith(marker, "sleep").length === 3));
  const start = (await box.client.emit({ type: "test.mark" })).id!;
  await box.client.removeWorktree("app", "w");
  assertEquals(processesWith(marker).length, 0);
  const events = [];
  for await (const event of box.client.events({ after: start, signal: AbortSignal.timeout(400) })) {
    events.push(event.type);
  }
  assertEquals(events.indexOf("service.stopped") < events.indexOf("worktree.removed"), true);
  const unknown = await assertRejects(
    () => box.client.serviceAction("app", "app", "nope", "start"),
    DockError,
  );
  assertEquals((unknown as DockError).status, 404);
});

Deno.test("a listening port outside any block is attributed by its working directory", async () => {
  const { box } = await boxWith({});
  await using _ = box;
  const wt = await box.client.createWorktree("app", { name: "deep" });
  await Deno.mkdir(join(wt.path, "sub"));
  const server = new Deno.Command(DENO, {
    args: [
      "eval",
      "--no-config",
      'Deno.serve({ hostname: "127.0.0.1", port: 0, onListen({ port }) { console.log(port) } }, () => new Response("x"))',
    ],
    cwd: join(wt.path, "sub"),
    stdout: "piped",
    stderr: "null",
  }).spawn();
  try {
    const reader = server.stdout.pipeThrough(new TextDecoderStream()).getReader();
    const port = Number((await reader.read()).value?.trim());
    reader.releaseLock();
    const found = await until(async () => (await box.client.ports()).find((p) => p.port === port));
    assertEquals([found.location, found.worktree, found.via, found.service], ["app", "deep", "cwd", null]);
    assertEquals(found.pid, server.pid);
  } finally {
    server.kill("SIGKILL");
    await server.status;
    await server.stdout.cancel().catch(() => {});
  }
});

Deno.test("pause stops a counter from advancing; resume lets it go on; the flag survives a restart", async () => {
  const { box: first } = await boxWith({
    services: [{
      name: "counter",
      run: "i=0; while true; do i=$((i+1)); echo $i > counter; sleep 0.05; done",
      autostart: true,
    }],
  });
  const wt = await first.client.createWorktree("app", { name: "w" });
  // The same counter in a worktree left running: the clock that says how long the paused one stood still.
  const ref = await first.client.createWorktree("app", { name: "ref" });
  const counter = (path: string) => () =>
    Deno.readTextFile(join(path, "counter")).then(Number).catch(() => 0);
  const read = counter(wt.path);
  const ticks = async (n: number) => {
    const from = await counter(ref.path)();
    await until(async () => (await counter(ref.path)()) >= from + n, { watch: join(ref.path, "counter") });
  };
  await until(async () => (await read()) > 2, { watch: join(wt.path, "counter") });
  const paused = await first.client.pause("app", "w", "pause");
  assertEquals(paused.paused, true);
  // A write under way when the signal went out may still land: wait until every process is stopped.
  const group = (await serviceState(first.client, "w", "counter")).pid!; // a service leads its group
  await until(() => Promise.resolve(allStopped(group)));
  const frozen = await read();
  await ticks(8);
  assertEquals(await read(), frozen, "the counter does not advance while paused");
  const refused = await assertRejects(
    () => first.client.serviceAction("app", "w", "counter", "restart"),
    DockError,
  );
  assertEquals((refused as DockError).code, "paused");

  await first.stop({ kill: true });
  await using box = await startBox({ dirs: first.dirs });
  assertEquals((await box.client.worktree("app", "w")).paused, true);
  await ticks(6);
  assertEquals(await read(), frozen, "still frozen after the daemon restarted");
  assert(allStopped(group), "its processes are still stopped");
  assertEquals((await serviceState(box.client, "w", "counter")).state, "running");
  await box.client.pause("app", "w", "resume");
  await until(async () => (await read()) > frozen + 3, { watch: join(wt.path, "counter") });
  assertEquals((await box.client.worktree("app", "w")).paused, false);
});

/** The processes of group `pgid` (read from /proc), with their state and parent. */
function groupMembers(pgid: number): { pid: number; state: string; parent: number }[] {
  const members: { pid: number; state: string; parent: number }[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const [state, parent, group] = Deno.readTextFileSync(`/proc/${entry.name}/stat`).split(") ")[1].split(
        " ",
      );
      if (Number(group) === pgid) members.push({ pid: Number(entry.name), state, parent: Number(parent) });
    } catch { /* gone meanwhile */ }
  }
  return members;
}

/** The resident set size of a process group in bytes (`VmRSS` of each member, from /proc). */
function groupResidentBytes(pgid: number): number {
  let bytes = 0;
  for (const { pid } of groupMembers(pgid)) {
    try {
      const status = Deno.readTextFileSync(`/proc/${pid}/status`);
      bytes += Number(/^VmRSS:\s+(\d+) kB/m.exec(status)?.[1] ?? 0) * 1024;
    } catch { /* gone meanwhile */ }
  }
  return bytes;
}

Deno.test("the guard stops the service using the most memory once memory stays above its threshold", async () => {
  const total = Deno.systemMemoryInfo().total;
  // Big enough that another suite on the machine moving memory by a few percent neither keeps the first
  // episode from starting nor starts a second one once the hog is gone (seen with a hog of 8%).
  const hog = Math.min(Math.round(total * 0.125), 3 * 1024 ** 3);
  const { box } = await boxWith({
    services: [
      {
        name: "hog",
        run:
          `exec "${DENO}" eval --no-config 'const b = new Uint8Array(${hog}).fill(7); setInterval(() => b[0]++, 1000)'`,
      },
      { name: "small", run: "sleep 600" },
    ],
  }, { DOCK_GUARD_INTERVAL_MS: "100" });
  await using _ = box;
  assertEquals((await box.client.guard()).enabled, false);
  await box.client.createWorktree("app", { name: "w" });
  const used = () => {
    const info = Deno.systemMemoryInfo();
    return 100 * (info.total - info.available) / info.total;
  };
  await box.client.serviceAction("app", "w", "small", "start");
  await box.client.serviceAction("app", "w", "hog", "start");
  // Filled once the hog's own resident size is (nearly) all of it. The threshold is then half the hog's
  // share below what is used now: from the hog's size, not from a reading taken before it started, which
  // another suite on the machine may have moved meanwhile by more than the hog (seen on a loaded machine).
  const group = (await serviceState(box.client, "w", "hog")).pid!; // a service leads its group
  await until(() => Promise.resolve(groupResidentBytes(group) >= hog * 0.95), { timeoutMs: 60_000 });
  const start = (await box.client.emit({ type: "test.mark" })).id!;
  const threshold = Math.round((used() - 50 * hog / total) * 10) / 10;
  const settings = await box.client.putGuard({
    enabled: true,
    memory_percent: threshold,
    sustain: "1s",
    stop_services: true,
    pause_agents: false,
  });
  assertEquals(settings.memory_percent, threshold);
  const acted = await untilEvent(box.client, (e) => e.type === "guard.acted", {
    after: start,
    timeoutMs: 15_000,
  });
  const stopped = acted.data?.stopped as { service: string; rss: number }[];
  assertEquals(stopped.map((s) => s.service), ["hog"], "only the biggest, which is enough");
  assert(stopped[0].rss >= hog * 0.5, `rss ${stopped[0].rss} of a ${hog} byte hog`); // it may still be filling
  assertEquals(acted.origin, "guard");
  assertEquals((await serviceState(box.client, "w", "hog")).state, "stopped");
  assertEquals((await serviceState(box.client, "w", "small")).state, "running");
  // No event marks a guard tick, but the box's clock does: once an event the box stamps is a whole
  // sustain (1s) and two intervals past the act, a second act of this episode would be in the journal.
  const actedAt = Date.parse(acted.time);
  const mark = await until(async () => {
    const event = await box.client.emit({ type: "test.tick" });
    return Date.parse(event.time) >= actedAt + 1000 + 2 * 100 ? event : undefined;
  });
  let acts = 0;
  await untilEvent(box.client, (event) => {
    if (event.type === "guard.acted") acts++;
    return event.id === mark.id;
  }, { after: start });
  assertEquals(acts, 1, "never twice for one episode");

  const bad = await assertRejects(
    () => box.client.putGuard({ ...settings, memory_percent: 150 }),
    DockError,
    "memory_percent",
  );
  assertEquals((bad as DockError).status, 400);
});

Deno.test("a service's log is rotated when it grows, and its newest lines stay readable", async () => {
  const { box } = await boxWith({
    services: [{
      name: "chatty",
      run: 'i=0; while true; do i=$((i+1)); echo "line $i $(printf %080d 0)"; done',
    }],
  }, { DOCK_SERVICE_LOG_BYTES: "20000" });
  await using _ = box;
  await box.client.createWorktree("app", { name: "w" });
  await box.client.serviceAction("app", "w", "chatty", "start");
  const log = join(box.dirs.state, "box", "logs", "app", "w", "services", "chatty.log");
  await until(async () => (await Deno.stat(`${log}.1`).catch(() => null)) !== null, { watch: `${log}.1` });
  await box.client.serviceAction("app", "w", "chatty", "stop");
  // The live file may overshoot between two checks, but old output does not pile up.
  const sizes = [(await Deno.stat(log)).size, (await Deno.stat(`${log}.1`)).size];
  assert(sizes.every((size) => size < 50 * 1024 * 1024), JSON.stringify(sizes));
  assert(sizes[1] > 20000, "a rotation happens only past the limit");
  const lines: string[] = [];
  for await (const line of box.client.serviceLog("app", "w", "chatty", { tail: 50 })) lines.push(line.line!);
  assertEquals(lines.length, 50);
  const numbers = lines.filter((l) => /^line \d+ 0{80}$/.test(l)).map((l) => Number(l.split(" ")[1]));
  assert(numbers.length >= 48, "whole lines, across the rotation boundary");
  // The live file, or the rotated one when a rotation was the last thing before the stop.
  const tail = (await Deno.readTextFile(log)).trimEnd() || (await Deno.readTextFile(`${log}.1`)).trimEnd();
  const last = tail.split("\n").at(-1)!;
  assertEquals(lines.at(-1), last, "the newest line is the last one the service wrote");
});

Deno.test("a graceful stop and restart of the daemon leaves services running, once", async () => {
  const { box: first } = await boxWith({
    services: [{ name: "idle", run: "exec sleep 600", autostart: true }],
  });
  await first.client.createWorktree("app", { name: "w" });
  const running = await until(async () => {
    const s = await serviceState(first.client, "w", "idle");
    return s.state === "running" ? s : undefined;
  }, { on: first });
  await first.stop(); // SIGTERM: the daemon exits, its services do not
  await using box = await startBox({ dirs: first.dirs });
  const after = await serviceState(box.client, "w", "idle");
  assertEquals([after.state, after.pid, after.restarts], ["running", running.pid, 0]);
  assertEquals(Deno.readTextFileSync(`/proc/${running.pid}/stat`).split(") ")[1][0] !== "Z", true);
});

Deno.test("services get PORT = DOCK_PORT unless the config's env sets PORT", async () => {
  const { box } = await boxWith({
    env: { PORT: "4321" },
    services: [{ name: "show", run: 'echo "$PORT $DOCK_PORT" > port.txt; exec sleep 600', autostart: true }],
  });
  await using _ = box;
  const wt = await box.client.createWorktree("app", { name: "w" });
  // The shell creates the file empty before echo writes it: wait for its line.
  const text = await until(
    () => Deno.readTextFile(join(wt.path, "port.txt")).then((t) => t.trim() || undefined, () => undefined),
    { watch: join(wt.path, "port.txt") },
  );
  assertEquals(text.trim(), `4321 ${wt.ports[0]}`);
  await box.client.putConfig("app", { env: { OTHER: "x" } });
  await box.client.serviceAction("app", "w", "show", "restart");
  // The repository's PORT still applies (layers merge key by key).
  const again = await until(async () => {
    const t = await Deno.readTextFile(join(wt.path, "port.txt")).catch(() => "");
    return t.trim() === `4321 ${wt.ports[0]}` ? t : undefined;
  }, { watch: join(wt.path, "port.txt") });
  assertEquals(again.trim(), `4321 ${wt.ports[0]}`);
});
