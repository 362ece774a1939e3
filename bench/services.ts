/**
 * The service sections of `deno task bench` (4 to 6), each on its own fresh box and each against a
 * plain counterpart measured in the same run:
 *
 * 4. **Service start.** `client.createWorktree` with `setup: "true"` and one autostart HTTP server
 *    on `$PORT`, until the server answers 200 (polled with `fetch` every 5 ms), against the same
 *    server command started directly with `sh -c` (and, to split the daemon's own share from the
 *    shells it runs, through the daemon's service wrapper chain by hand). The server is python3's
 *    `http.server` when python3 is installed, else a `deno eval` `Deno.serve` one-liner
 *    (`--server=deno` forces the latter). A server-sent events subscription timestamps the
 *    request's steps (setup finished, service started) as they arrive.
 * 5. **Daemon memory.** The daemon's `VmRSS` idle with one location (the baseline), after creating
 *    20 worktrees and after starting their 40 cheap services (`sleep 600` and a shell loop), with the
 *    services' own resident memory as context.
 * 6. **Listening ports.** `client.listeningServices()` and `client.ports()` with 50 listening ports
 *    of the box's worktrees (40 owned by services inside port blocks, 10 by a process working in a
 *    worktree's folder, attributed by its working directory), against reading `/proc/net/tcp{,6}`
 *    (the kernel part of the same work), `ss -ltnp` (the same attribution to processes, by a C
 *    tool), and the daemon's own scan (`portsInUse`) called in this process without HTTP.
 *
 * @module
 */
import { join } from "node:path";
import type { BoxClient } from "../client/box.ts";
import type { DockEvent } from "../client/wire.ts";
import { type PortService, portsInUse, type PortWorktree, socketOwners } from "../daemon/procs.ts";
import { freePort, killProcessesUnder, makeRepo, startBox, type TestBox } from "../tests/harness.ts";
import { ms, type Row, summarize, time } from "./stats.ts";

const DENO = Deno.execPath();
/** The daemon's service wrapper (daemon/services.ts): $1 login shell, $2 command, $3 log, $4 exit file. */
const WRAPPER = '"$1" -l -c "$2" >>"$3" 2>&1 </dev/null; echo $? >"$4"';
/** How often the HTTP readiness poll tries. */
const POLL_MS = 5;

/** Options shared by the service sections. */
export interface ServiceBenchOptions {
  /** Divide the counts for a smoke run. */
  quick: boolean;
  /** Force the `deno eval` server even where python3 exists. */
  denoServer: boolean;
}

/** The small programs the service sections run: an HTTP server and a many-port listener. */
interface Programs {
  /** Which server section 4 uses, for the table. */
  serverName: string;
  /** Shell command of the HTTP server on `$PORT`. */
  server: string;
  /** Which runtime the listeners use, for the table. */
  listenerName: string;
  /** Shell command listening on ports `BASE`..`BASE+COUNT-1` (BASE 0: as many ephemeral ports). */
  listener: (base: string, count: number) => string;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const decode = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
/** A difference with its sign: `+4.20`, `-1.30`. */
const signed = (value: number) => `${value < 0 ? "-" : "+"}${ms(Math.abs(value))}`;

/** The real python3 interpreter (not a pyenv shim, which a login shell's PATH may not even reach). */
async function findPython(): Promise<string | null> {
  try {
    const output = await new Deno.Command("python3", {
      args: ["-c", "import sys; print(sys.executable)"],
      stdout: "piped",
      stderr: "null",
    }).output();
    const path = decode(output.stdout).trim();
    return output.success && path ? path : null;
  } catch {
    return null; // not installed
  }
}

/** Writes the listener scripts into `dir` and picks the programs. */
async function programs(dir: string, denoServer: boolean): Promise<Programs> {
  const python = denoServer ? null : await findPython();
  const denoServe =
    `exec "${DENO}" eval --no-config 'Deno.serve({ hostname: "127.0.0.1", port: Number(Deno.env.get("PORT")), onListen() {} }, () => new Response("ok"))'`;
  if (python) {
    const script = join(dir, "listen.py");
    await Deno.writeTextFile(
      script,
      [
        "import socket, sys, time",
        "base, count = int(sys.argv[1]), int(sys.argv[2])",
        'socks = [socket.create_server(("127.0.0.1", base + i if base else 0)) for i in range(count)]',
        'sys.stdout.write(" ".join(str(s.getsockname()[1]) for s in socks) + "\\n")',
        "sys.stdout.flush()",
        "time.sleep(100000)",
        "",
      ].join("\n"),
    );
    return {
      serverName: `python3 \`http.server\` (${python})`,
      server: `exec "${python}" -m http.server "$PORT" --bind 127.0.0.1`,
      listenerName: "python3 sockets",
      listener: (base, count) => `exec "${python}" "${script}" ${base} ${count}`,
    };
  }
  const script = join(dir, "listen.ts");
  await Deno.writeTextFile(
    script,
    [
      "const [base, count] = Deno.args.map(Number);",
      "const listeners = Array.from({ length: count }, (_, i) =>",
      '  Deno.listen({ hostname: "127.0.0.1", port: base ? base + i : 0 }));',
      'console.log(listeners.map((l) => l.addr.port).join(" "));',
      "setInterval(() => {}, 1 << 30);",
      "",
    ].join("\n"),
  );
  return {
    serverName: "`deno eval` `Deno.serve`" + (denoServer ? " (--server=deno)" : " (no python3)"),
    server: denoServe,
    listenerName: "one `deno run` per group",
    listener: (base, count) => `exec "${DENO}" run --no-config -A "${script}" ${base} ${count}`,
  };
}

/** Polls `http://127.0.0.1:PORT/` every {@linkcode POLL_MS} until it answers 200. */
async function waitForHttp(port: number, timeoutMs = 20_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  const url = `http://127.0.0.1:${port}/`;
  while (true) {
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
      await response.body?.cancel();
      if (response.status === 200) return;
    } catch { /* not listening yet */ }
    if (performance.now() > deadline) throw new Error(`nothing answered on port ${port} in ${timeoutMs} ms`);
    await sleep(POLL_MS);
  }
}

/** Starts a box with a repository whose committed `.dock/config.json` is `config`, added as `app`. */
async function boxWithConfig(config: unknown): Promise<{ box: TestBox; repo: string }> {
  // The production watch interval (the harness's default is faster, for tests).
  const box = await startBox({ env: { DOCK_WATCH_MS: "1000" } });
  try {
    const repo = await makeRepo(join(box.dirs.home, "work"), "app", {
      ".dock/config.json": JSON.stringify(config),
    });
    await box.client.addLocation({ name: "app", path: repo });
    return { box, repo };
  } catch (error) {
    await box[Symbol.asyncDispose]();
    throw error;
  }
}

/** Stops every running service of the given worktrees (concurrently), then kills any leftover. */
async function stopServices(box: TestBox, worktrees: string[]): Promise<void> {
  await Promise.all(worktrees.map(async (worktree) => {
    for (const service of await box.client.services("app", worktree)) {
      if (service.state !== "stopped") await box.client.serviceAction("app", worktree, service.name, "stop");
    }
  }));
  killProcessesUnder(box.dirs.root);
}

// ---------------------------------------------------------------------------------------------------
// 4. From create to a service answering HTTP

/** Event arrivals of one subscription, timestamped on arrival in this process. */
class Arrivals {
  #seen: { event: DockEvent; at: number }[] = [];
  #controller = new AbortController();
  #done: Promise<void>;

  private constructor(client: BoxClient, after: number) {
    this.#done = (async () => {
      for await (const event of client.events({ after, signal: this.#controller.signal })) {
        this.#seen.push({ event, at: performance.now() });
      }
    })().catch(() => {}); // the stream ends with an error when the box goes away first
  }

  /** Subscribes and waits until the subscription is live (a marker event came through). */
  static async open(client: BoxClient): Promise<Arrivals> {
    const start = (await client.emit({ type: "bench.start" })).id!;
    const arrivals = new Arrivals(client, start);
    const marker = (await client.emit({ type: "bench.marker" })).id!;
    const deadline = Date.now() + 10_000;
    while (!arrivals.#seen.some((seen) => seen.event.id === marker)) {
      if (Date.now() > deadline) throw new Error("the event stream did not deliver a marker");
      await sleep(2);
    }
    return arrivals;
  }

  /** When the first event of `type` about `worktree` arrived (waiting up to 5 s for it). */
  async at(type: string, worktree: string): Promise<number> {
    const deadline = Date.now() + 5000;
    for (;;) {
      const seen = this.#seen.find((s) => s.event.type === type && s.event.data?.worktree === worktree);
      if (seen) return seen.at;
      if (Date.now() > deadline) throw new Error(`no ${type} event for ${worktree}`);
      await sleep(5);
    }
  }

  async close(): Promise<void> {
    this.#controller.abort();
    await this.#done;
  }
}

/** Section 4. */
export async function benchServiceStart(options: ServiceBenchOptions): Promise<Row[]> {
  const n = options.quick ? 3 : 10;
  const scratch = await Deno.makeTempDir({ prefix: "dock-bench-" });
  try {
    const programsUsed = await programs(scratch, options.denoServer);
    const { box } = await boxWithConfig({
      setup: "true",
      services: [{ name: "web", run: programsUsed.server, autostart: true }],
    });
    await using _ = box;
    const { client } = box;
    const arrivals = await Arrivals.open(client);
    const plainDir = join(scratch, "plain");
    await Deno.mkdir(plainDir);
    const plainEnv = { ...Deno.env.toObject(), HOME: box.dirs.home };

    const api = async (name: string) => {
      const started = performance.now();
      const wt = await client.createWorktree("app", { name });
      const answered = performance.now();
      await waitForHttp(wt.ports[0]);
      const ready = performance.now();
      const setupDone = await arrivals.at("worktree.setup.finished", name);
      const serviceStarted = await arrivals.at("service.started", name);
      await client.serviceAction("app", name, "web", "stop");
      return {
        total: ready - started,
        request: answered - started,
        setup: setupDone - answered,
        launch: serviceStarted - setupDone,
        listen: ready - serviceStarted,
      };
    };
    // The same server started by hand: `sh -c` with PORT set.
    const plain = async () => {
      const port = freePort();
      const started = performance.now();
      const child = new Deno.Command("sh", {
        args: ["-c", programsUsed.server],
        cwd: plainDir,
        env: { ...plainEnv, PORT: String(port) },
        stdin: "null",
        stdout: "null",
        stderr: "null",
      }).spawn();
      try {
        await waitForHttp(port);
        return performance.now() - started;
      } finally {
        child.kill("SIGTERM");
        await child.status;
      }
    };
    // Through the daemon's wrapper chain by hand: detached `sh -c WRAPPER` → `/bin/sh -l -c` → server.
    let wrapped = 0;
    const plainWrapped = async () => {
      const port = freePort();
      const log = join(scratch, `wrapped-${wrapped++}.log`);
      const started = performance.now();
      const child = new Deno.Command("/bin/sh", {
        args: ["-c", WRAPPER, "dock-service", "/bin/sh", programsUsed.server, log, `${log}.exit`],
        cwd: plainDir,
        env: { ...plainEnv, PORT: String(port) },
        stdin: "null",
        stdout: "null",
        stderr: "null",
        detached: true,
      }).spawn();
      try {
        await waitForHttp(port);
        return performance.now() - started;
      } finally {
        Deno.kill(-child.pid, "SIGTERM");
        await child.status;
      }
    };

    // Warm-up: one of each, not counted.
    await api("warm");
    await plain();
    await plainWrapped();

    const samples: Awaited<ReturnType<typeof api>>[] = [];
    const plainSamples: number[] = [];
    const wrappedSamples: number[] = [];
    for (let i = 0; i < n; i++) {
      // Alternate which goes first.
      if (i % 2 === 0) {
        samples.push(await api(`s-${i}`));
        plainSamples.push(await plain());
      } else {
        plainSamples.push(await plain());
        samples.push(await api(`s-${i}`));
      }
      wrappedSamples.push(await plainWrapped());
    }
    await arrivals.close();
    await stopServices(box, ["warm", ...samples.map((_, i) => `s-${i}`)]);

    const apiSummary = summarize(samples.map((s) => s.total));
    const plainSummary = summarize(plainSamples);
    const wrappedSummary = summarize(wrappedSamples);
    const paired = summarize(samples.map((s, i) => s.total - plainSamples[i])).p50;
    const step = (label: string, values: number[], note: string): Row => ({
      label: `4. &nbsp;&nbsp;${label}`,
      summary: summarize(values),
      note,
    });
    return [
      {
        label: "4. service start: `createWorktree` → HTTP 200 on `$PORT` (setup `true`, 1 autostart)",
        summary: apiSummary,
        baseline: plainSummary,
        note: `${programsUsed.serverName}; p50 ${signed(apiSummary.p50 - plainSummary.p50)} ms, p90 ${
          signed(apiSummary.p90 - plainSummary.p90)
        } ms vs plain; median paired ${signed(paired)} ms; polled every ${POLL_MS} ms`,
      },
      step("create request, to its answer", samples.map((s) => s.request), "step (git worktree add etc.)"),
      step(
        "answer → `worktree.setup.finished` arrives",
        samples.map((s) => s.setup),
        "step: setup `true` through a login shell",
      ),
      step(
        "setup finished → `service.started` arrives",
        samples.map((s) => s.launch),
        "step: autostart (config, env, spawn)",
      ),
      step(
        "`service.started` → HTTP 200",
        samples.map((s) => s.listen),
        "step: wrapper, login shell, server start",
      ),
      {
        label: "4. plain: wrapper chain by hand (`sh -c` wrapper → `/bin/sh -l -c` → server, detached)",
        summary: wrappedSummary,
        baseline: plainSummary,
        note: `what the daemon spawns, without the daemon; p50 ${
          signed(wrappedSummary.p50 - plainSummary.p50)
        } ms vs plain`,
      },
      {
        label: "4. plain: `sh -c` server with `PORT` set → HTTP 200",
        summary: plainSummary,
        isBaseline: true,
      },
    ];
  } finally {
    killProcessesUnder(scratch);
    await Deno.remove(scratch, { recursive: true }).catch(() => {});
  }
}

// ---------------------------------------------------------------------------------------------------
// 5. Daemon memory with many worktrees and services

/** A field of `/proc/<pid>/status` in kB (`VmRSS`, `VmHWM`), or 0 when the process is gone. */
function statusKb(pid: number, field: string): number {
  try {
    const text = Deno.readTextFileSync(`/proc/${pid}/status`);
    return Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(text)?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** `count` readings of the daemon's VmRSS in MiB, `gapMs` apart. */
async function rssSamples(pid: number, count = 5, gapMs = 100): Promise<number[]> {
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    if (i) await sleep(gapMs);
    samples.push(statusKb(pid, "VmRSS") / 1024);
  }
  return samples;
}

/** The `Pss` of a process in kB (its shared pages divided among their users), 0 when unknown. */
function pssKb(pid: number): number {
  try {
    const text = Deno.readTextFileSync(`/proc/${pid}/smaps_rollup`);
    return Number(/^Pss:\s+(\d+) kB/m.exec(text)?.[1] ?? 0);
  } catch {
    return 0;
  }
}

/** The live processes of the given process groups, their summed VmRSS and Pss in MiB. */
function groupsRss(pgids: Set<number>): { processes: number; mib: number; pss: number } {
  let processes = 0;
  let kb = 0;
  let pss = 0;
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const stat = Deno.readTextFileSync(`/proc/${entry.name}/stat`);
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      if (fields[0] === "Z" || !pgids.has(Number(fields[2]))) continue;
      processes++;
      kb += statusKb(Number(entry.name), "VmRSS");
      pss += pssKb(Number(entry.name));
    } catch { /* gone meanwhile */ }
  }
  return { processes, mib: kb / 1024, pss: pss / 1024 };
}

/** Section 5. */
export async function benchDaemonMemory(options: ServiceBenchOptions): Promise<Row[]> {
  const worktrees = options.quick ? 4 : 20;
  const { box } = await boxWithConfig({
    services: [
      { name: "sleeper", run: "sleep 600" },
      { name: "loop", run: "while true; do sleep 5; done" },
    ],
  });
  await using _ = box;
  const { client } = box;
  const pid = box.process.pid;
  const names = Array.from({ length: worktrees }, (_, i) => `m-${i}`);
  try {
    // Let the daemon settle after start-up and the location's first scan.
    await sleep(1000);
    const idle = await rssSamples(pid);

    const createStarted = performance.now();
    for (const name of names) await client.createWorktree("app", { name });
    const createMs = performance.now() - createStarted;
    await sleep(500);
    const afterWorktrees = await rssSamples(pid);

    const startTimes: number[] = [];
    let afterFirst: number[] = [];
    for (const name of names) {
      for (const service of ["sleeper", "loop"]) {
        startTimes.push(await time(() => client.serviceAction("app", name, service, "start")));
      }
      if (name === names[0]) {
        // The first two services alone: what starting services at all costs, apart from each one.
        await sleep(500);
        afterFirst = await rssSamples(pid);
      }
    }
    // Read before any listing: each `GET …/services` scans the box's ports, which leaves garbage behind.
    await sleep(500);
    const afterServices = await rssSamples(pid);
    const peak = statusKb(pid, "VmHWM") / 1024;
    const listed = (await Promise.all(names.map((name) => client.services("app", name)))).flat();
    const running = listed.filter((s) => s.state === "running" && s.pid !== null);
    if (running.length !== worktrees * 2) {
      throw new Error(`${running.length} of ${worktrees * 2} services running: ${JSON.stringify(listed)}`);
    }
    await sleep(500);
    const afterListing = await rssSamples(pid);
    const groups = groupsRss(new Set(running.map((s) => s.pid!)));

    const idleSummary = summarize(idle);
    const worktreesSummary = summarize(afterWorktrees);
    const servicesSummary = summarize(afterServices);
    const listingSummary = summarize(afterListing);
    const more = (summary: { p50: number }) => `${signed(summary.p50 - idleSummary.p50)} MiB over idle`;
    const startSummary = summarize(startTimes);
    const firstSummary = summarize(afterFirst);
    const perService = (servicesSummary.p50 - firstSummary.p50) / (running.length - 2);
    return [
      {
        label: `5. daemon RSS: the same, after the ${worktrees} \`client.services\` calls that verified them`,
        summary: listingSummary,
        baseline: idleSummary,
        unit: "MiB",
        note: `${more(listingSummary)}; all ${running.length} "running"; each call scans the box's ports ` +
          "(uncollected garbage counts in RSS)",
      },
      {
        label: `5. daemon RSS: ${worktrees} worktrees × 2 services running (${worktrees * 2})`,
        summary: servicesSummary,
        baseline: idleSummary,
        unit: "MiB",
        note: `${more(servicesSummary)}; ${signed(perService * 1024)} KiB per service after the first two; ` +
          `starts took p50 ${ms(startSummary.p50)} ms each; peak RSS (VmHWM) then ${ms(peak)} MiB`,
      },
      {
        label: `5. daemon RSS: ${worktrees} worktrees, the first one's 2 services running`,
        summary: firstSummary,
        baseline: idleSummary,
        unit: "MiB",
        note: `${more(firstSummary)}; ${signed(firstSummary.p50 - worktreesSummary.p50)} MiB over ` +
          "no service running: the one-time cost of starting services at all",
      },
      {
        label: `5. daemon RSS: ${worktrees} worktrees, no service running`,
        summary: worktreesSummary,
        baseline: idleSummary,
        unit: "MiB",
        note: `${more(worktreesSummary)}; ${worktrees} creates took ${ms(createMs)} ms in all`,
      },
      {
        label: "5. daemon RSS: idle, 1 location, no worktree",
        summary: idleSummary,
        isBaseline: true,
        unit: "MiB",
        note: `VmRSS of pid ${pid}, 5 readings 100 ms apart per row`,
      },
      {
        label: `5. context: the ${running.length} service process groups, total RSS`,
        summary: summarize([groups.mib]),
        unit: "MiB",
        note: `${groups.processes} processes, ${ms(groups.mib / running.length)} MiB per service ` +
          "(`sleep 600` and a `sleep 5` loop, each under the wrapper and a login shell); " +
          `shared pages counted once (Pss): ${ms(groups.pss)} MiB in all`,
      },
    ];
  } finally {
    await stopServices(box, names).catch((error) => console.error("stopping services:", error));
  }
}

// ---------------------------------------------------------------------------------------------------
// 6. GET services and GET ports with 50 listening ports

/** Runs `ss -ltnp`; returns its listening lines, or null when ss is not installed. */
async function ss(): Promise<number | null> {
  try {
    const output = await new Deno.Command("ss", { args: ["-ltnp"], stdout: "piped", stderr: "null" })
      .output();
    return decode(output.stdout).split("\n").filter((line) => line.startsWith("LISTEN")).length;
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return null;
    throw error;
  }
}

/** Open file descriptors on the box, summed over every process (what the socket-owner scan walks). */
function countFds(): { processes: number; fds: number } {
  let processes = 0;
  let fds = 0;
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    processes++;
    try {
      for (const _ of Deno.readDirSync(`/proc/${entry.name}/fd`)) fds++;
    } catch { /* gone, or not ours */ }
  }
  return { processes, fds };
}

/** Section 6. */
export async function benchPorts(options: ServiceBenchOptions): Promise<Row[]> {
  const n = options.quick ? 10 : 50;
  const warmup = options.quick ? 3 : 10;
  const blockWorktrees = 4;
  const portsEach = 10;
  const cwdPorts = 10;
  const scratch = await Deno.makeTempDir({ prefix: "dock-bench-" });
  let cwdListener: Deno.ChildProcess | undefined;
  let cwdReader: ReadableStreamDefaultReader<string> | undefined;
  try {
    const used = await programs(scratch, options.denoServer);
    const { box } = await boxWithConfig({
      ports: portsEach,
      services: [{ name: "listen", run: used.listener('"$DOCK_PORT"', portsEach) }],
    });
    await using _ = box;
    const { client } = box;
    const names = Array.from({ length: blockWorktrees + 1 }, (_, i) => `l-${i}`);
    const created = [];
    for (const name of names) created.push(await client.createWorktree("app", { name }));
    try {
      // Services listening on their whole port block, in the first worktrees.
      for (const name of names.slice(0, blockWorktrees)) {
        await client.serviceAction("app", name, "listen", "start");
      }
      // A process the box did not start, working in the last worktree's folder: attributed by cwd.
      const cwdWorktree = created[blockWorktrees];
      const sub = join(cwdWorktree.path, "sub");
      await Deno.mkdir(sub);
      cwdListener = new Deno.Command("sh", {
        args: ["-c", `${used.listener("0", cwdPorts)} 2>"${join(scratch, "cwd-listener.err")}"`],
        cwd: sub,
        stdin: "null",
        stdout: "piped",
        stderr: "null",
      }).spawn();
      let listenerExit = "";
      cwdListener.status.then((status) => {
        let stderr = "";
        try {
          stderr = Deno.readTextFileSync(join(scratch, "cwd-listener.err")).trim();
        } catch { /* never written */ }
        listenerExit = `; the listener exited: ${JSON.stringify(status)} ${stderr}`;
      });
      // Its one line of output: the ports it listens on. The pipe stays open until it is killed: a
      // listener whose stdout is closed under it can die of a broken pipe.
      cwdReader = cwdListener.stdout.pipeThrough(new TextDecoderStream()).getReader();
      let line = "";
      while (!line.includes("\n")) {
        const { value, done } = await cwdReader.read();
        if (done) break;
        line += value;
      }
      const cwdPortList = line.trim().split(" ").filter(Boolean).map(Number);
      if (cwdPortList.length !== cwdPorts) {
        throw new Error(`the cwd listener printed '${line}'${listenerExit}`);
      }

      // Wait until all 50 are listening and attributed as intended.
      const expected = blockWorktrees * portsEach + cwdPorts;
      const deadline = Date.now() + 20_000;
      let ours = 0;
      for (;;) {
        const ports = await client.ports();
        const block = ports.filter((p) => p.via === "block" && p.service === "listen").length;
        const byCwd = ports.filter((p) => p.via === "cwd" && cwdPortList.includes(p.port)).length;
        ours = block + byCwd;
        if (block === blockWorktrees * portsEach && byCwd === cwdPorts) break;
        if (Date.now() > deadline) {
          throw new Error(
            `only ${block} block ports with a service and ${byCwd} cwd ports of ${expected}; cwd listener ` +
              `ports ${cwdPortList.join(" ")}: ${
                JSON.stringify(ports.filter((p) => cwdPortList.includes(p.port) || p.via !== "block"))
              }${listenerExit}`,
          );
        }
        await sleep(100);
      }
      const allPorts = (await client.ports()).length;
      const grouped = await client.listeningServices();
      const groupedPorts = grouped.reduce((sum, entry) => sum + entry.ports.length, 0);
      const servicesBytes = JSON.stringify(grouped).length;

      // The daemon's scan in this process, on the same worktrees and services (no HTTP, no database).
      const worktrees: PortWorktree[] = (await client.locations()).flatMap((location) =>
        location.worktrees.map((w) => ({ location: w.location, name: w.name, path: w.path, ports: w.ports }))
      );
      const services: PortService[] = [];
      for (const name of names) {
        for (const service of await client.services("app", name)) {
          if (service.pid !== null) {
            services.push({ location: "app", worktree: name, name: service.name, pgid: service.pid });
          }
        }
      }
      const hasSs = (await ss()) !== null;

      const runs: Record<string, () => Promise<unknown>> = {
        services: () => client.listeningServices(),
        ports: () => client.ports(),
        proc: () => {
          Deno.readTextFileSync("/proc/net/tcp");
          Deno.readTextFileSync("/proc/net/tcp6");
          return Promise.resolve();
        },
        scan: () => Promise.resolve(portsInUse(worktrees, services)),
        owners: () => Promise.resolve(socketOwners()),
      };
      if (hasSs) runs.ss = ss;
      const samples: Record<string, number[]> = Object.fromEntries(Object.keys(runs).map((k) => [k, []]));
      for (const run of Object.values(runs)) for (let i = 0; i < warmup; i++) await run();
      for (let i = 0; i < n; i++) {
        // Interleaved, so a noisy moment hits every kind alike.
        for (const [kind, run] of Object.entries(runs)) samples[kind].push(await time(run));
      }
      const { processes, fds } = countFds();
      const summary = Object.fromEntries(Object.entries(samples).map(([k, v]) => [k, summarize(v)]));
      const reference = hasSs ? summary.ss : summary.proc;
      const p99 = (kind: string) => `p99 ${ms(summary[kind].p99)} ms (≈ max of ${n})`;
      const rows: Row[] = [
        {
          label: "6. `client.listeningServices()` (`GET /v1/services`)",
          summary: summary.services,
          baseline: reference,
          note:
            `${used.listenerName} listeners; ${
              p99("services")
            }; ${groupedPorts} ports in ${grouped.length} worktrees, ${servicesBytes} B; ` +
            `ratio vs ${hasSs ? "`ss -ltnp`" : "/proc read (ss not installed)"}`,
        },
        {
          label: "6. `client.ports()` (`GET /v1/ports`)",
          summary: summary.ports,
          baseline: reference,
          note: `${p99("ports")}; ${allPorts} listening ports on the box, ${ours} of them the ` +
            `worktrees' (${blockWorktrees * portsEach} service-owned in blocks, ${cwdPorts} by cwd)`,
        },
        {
          label: "6. &nbsp;&nbsp;the daemon's scan in this process: `portsInUse()`",
          summary: summary.scan,
          baseline: summary.proc,
          note: `${p99("scan")}; no HTTP, JSON or database; ratio vs /proc read`,
        },
        {
          label: "6. &nbsp;&nbsp;of which the socket-owner walk: `socketOwners()`",
          summary: summary.owners,
          baseline: summary.proc,
          note: `${
            p99("owners")
          }; readlink of every fd: ${fds} fds of ${processes} processes; ratio vs /proc read`,
        },
      ];
      if (hasSs) {
        rows.push({
          label: "6. plain: `ss -ltnp` (spawned)",
          summary: summary.ss,
          baseline: summary.proc,
          note: `${p99("ss")}; the same process attribution, by a C tool; ratio vs /proc read`,
        });
      }
      rows.push({
        label: "6. plain: read `/proc/net/tcp` + `/proc/net/tcp6` in this process",
        summary: summary.proc,
        isBaseline: true,
        note: `${p99("proc")}; the kernel part of the work` + (hasSs ? "" : "; `ss` is not installed"),
      });
      return rows;
    } finally {
      await stopServices(box, names).catch((error) => console.error("stopping services:", error));
    }
  } finally {
    if (cwdListener) {
      try {
        cwdListener.kill("SIGKILL");
      } catch { /* already gone */ }
      await cwdListener.status;
      await cwdReader?.cancel().catch(() => {});
    }
    killProcessesUnder(scratch);
    await Deno.remove(scratch, { recursive: true }).catch(() => {});
  }
}
