/**
 * Plugin host benchmarks (issue #12), on the real plugin host (`plugins/plugins.ts` with its host
 * process and workers) driven by an event bus and an API app in this process, as the daemon and the
 * agent drive it:
 *
 * 1. **Event → module hook**, warm worker: an event published on the bus until the plugin's handler has
 *    run (its call answered), against a shell hook (`/bin/sh -c true` through the hooks engine's shell
 *    executor) beside it. Goal p50 ≤ 1 ms, p99 ≤ 5 ms.
 * 2. **`fetch` through `/v1/plugins/{id}/fn/`**, warm, against a bare `Deno.serve` answering the same
 *    JSON in this process (goal: p50 within 1 ms of it); cold, with the worker (and so the host) stopped
 *    (goal ≤ 150 ms).
 * 3. **50 installed, enabled, idle plugins**: workers and host processes (goal 0), and this process's
 *    memory before and after they are loaded.
 * 4. **1,000 events/s for 10 s through 10 plugins, each subscribed**: delivered and lost, the bus's own
 *    delivery lag (publish → a plain subscriber) with the plugins and without, and the host's memory
 *    per warm worker.
 * 5. **A runaway plugin**: from its deadline to the next event handled by another plugin (goal ≤ 2 s).
 *
 * `deno run -A bench/plugins.ts [--quick] [part…]` runs it alone; warm figures once folders are 2 s old.
 * @module
 */
import { join } from "node:path";
import { sleep, SYSTEM_CLOCK } from "../core/clock.ts";
import { STDERR_LOG } from "../core/log.ts";
import { Hono } from "hono";
import { EventBus } from "../core/events.ts";
import { mount } from "../core/http.ts";
import { shellExecutor } from "../core/hooks.ts";
import { Store } from "../core/store.ts";
import { Plugins, type PluginsOptions } from "../plugins/plugins.ts";
import { pluginRoutes } from "../plugins/routes.ts";
import { AgentClient } from "../client/agent.ts";
import { makeDirs, startAgent, startBox } from "../tests/harness.ts";
import { busLag } from "./bus_lag.ts";
import { startJsonServer } from "./floor.ts";
import { type Row, summarize, table } from "./stats.ts";

/** Options of {@linkcode benchPlugins}. */
export interface PluginsBenchOptions {
  quick?: boolean;
  /** Only these parts. @default {all} */
  only?: string[];
}

/** What {@linkcode pluginHost} made: the real plugin host on a store and bus of its own. */
export interface PluginHost {
  store: Store;
  bus: EventBus;
  plugins: Plugins;
}

/**
 * The real plugin host in this process, wired as the daemon wires it (plugins in `home`, its state in
 * `state`); folders scanned once a minute, so a scan never lands in a measurement. Not started yet.
 */
export async function pluginHost(
  home: string,
  state: string,
  options: Pick<PluginsOptions, "side"> & Partial<PluginsOptions>,
): Promise<PluginHost> {
  await Deno.mkdir(state, { recursive: true });
  const store = new Store(join(state, "bench.db"));
  const bus = new EventBus(store);
  const plugins = new Plugins({
    home,
    state,
    where: "bench",
    bus,
    clock: SYSTEM_CLOCK,
    log: STDERR_LOG,
    scanMs: 60_000,
    ...options,
  });
  return { store, bus, plugins };
}

interface Rig {
  root: string;
  bus: EventBus;
  plugins: Plugins;
  store: Store;
  close(): Promise<void>;
}

async function rig(
  files: Record<string, Record<string, string>>,
  idle: { idleMs?: number; hostIdleMs?: number } = {},
  side: "box" | "laptop" = "box",
): Promise<Rig> {
  const root = await Deno.makeTempDir({ prefix: "dock-bench-plugins-" });
  const home = join(root, "home");
  const state = join(root, "state");
  for (const [id, plugin] of Object.entries(files)) {
    await Deno.mkdir(join(home, "plugins", id), { recursive: true });
    for (const [name, text] of Object.entries(plugin)) {
      await Deno.writeTextFile(join(home, "plugins", id, name), text);
    }
  }
  const { store, bus, plugins } = await pluginHost(home, state, { side, ...idle });
  await plugins.start();
  for (const info of plugins.list()) await plugins.enable(info.id, info.permissions ?? {});
  return {
    root,
    bus,
    plugins,
    store,
    async close() {
      plugins.close();
      store.close();
      await Deno.remove(root, { recursive: true });
    },
  };
}

function manifest(id: string, hooks: { on: string; timeout?: string }[], scopes: string[] = []): string {
  return JSON.stringify({
    id,
    name: id,
    version: "1.0.0",
    main: "main.ts",
    hooks: hooks.map((hook) => ({ ...hook, module: "main.ts" })),
    permissions: { scopes },
  });
}

/** Waits for the first event on `bus` matching `predicate`. */
function nextEvent(bus: EventBus, predicate: (type: string, data: Record<string, unknown>) => boolean) {
  return new Promise<number>((resolve) => {
    const stop = bus.subscribe((event) => {
      if (predicate(event.type, event.data ?? {})) {
        stop();
        resolve(performance.now());
      }
    });
  });
}

async function eventToHandler(n: number, side: "box" | "laptop" = "box"): Promise<Row[]> {
  const r = await rig(
    {
      echo: {
        "dock-plugin.json": manifest("echo", [{ on: "bench.ping" }], ["events:emit"]),
        "main.ts":
          // The handler stamps when it started, on the clock every process shares (epoch milliseconds).
          `export default { async event(ev, ctx) { const at = performance.timeOrigin + performance.now(); await ctx.emit("bench.pong", { i: ev.data.i, at }); } };`,
      },
    },
    {},
    side,
  );
  try {
    // One way: from publishing to the handler's own stamp (both read the system clock at sub-millisecond
    // resolution). Round trip: until the handler's emit is back on the bus.
    const roundTrips: number[] = [];
    const oneWay: number[] = [];
    // 20 events to warm, then a wait until its folders are 2 s old: not events (`ctx.emit` has a rate).
    const settled = performance.now() + FOLDER_SETTLE_MS;
    for (let i = 0; i < n + 20; i++) {
      if (i === 20) await sleep(SYSTEM_CLOCK, Math.max(0, settled - performance.now()));
      let handlerAt = 0;
      const answered = new Promise<number>((resolve) => {
        const stop = r.bus.subscribe((event) => {
          if (event.type === "bench.pong" && event.data?.i === i) {
            stop();
            handlerAt = event.data.at as number;
            resolve(performance.now());
          }
        });
      });
      const started = performance.now();
      const startedEpoch = performance.timeOrigin + started;
      r.bus.publish({ type: "bench.ping", origin: "bench", data: { i } });
      const at = await answered;
      if (i >= 20) {
        roundTrips.push(at - started);
        oneWay.push(handlerAt - startedEpoch);
      }
    }
    const shell: number[] = [];
    for (let i = 0; i < Math.min(n, 200) + 5; i++) {
      const started = performance.now();
      await shellExecutor.run({ on: "bench.ping", run: "true" }, "{}", { env: { PATH: "/usr/bin:/bin" } });
      if (i >= 5) shell.push(performance.now() - started);
    }
    const shellSummary = summarize(shell);
    const trip = summarize(roundTrips);
    return [
      { label: "plugins: shell hook, event → done (`sh -c true`)", summary: shellSummary, isBaseline: true },
      {
        label: `plugins: module hook, event → handler running (warm, ${side})`,
        summary: summarize(oneWay),
        baseline: shellSummary,
        note: "goal p50 ≤ 1 ms, p99 ≤ 5 ms",
      },
      {
        label: "plugins: module hook, event → handler → its ctx.emit back on the bus",
        summary: trip,
        baseline: shellSummary,
      },
    ];
  } finally {
    await r.close();
  }
}

async function fetchThroughPlugin(n: number, cold: number): Promise<Row[]> {
  const r = await rig({
    fn: {
      "dock-plugin.json": manifest("fn", []),
      "main.ts": `export default { fetch() { return Response.json({ ok: true }); } };`,
    },
  }, { idleMs: 200, hostIdleMs: 600_000 });
  const app = new Hono();
  mount(app, "/v1", [pluginRoutes(r.plugins)]);
  const server = Deno.serve({ port: 0, hostname: "127.0.0.1", onListen: () => {} }, app.fetch);
  const bare = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    () => Response.json({ ok: true }),
  );
  const url = `http://127.0.0.1:${server.addr.port}/v1/plugins/fn/fn/`;
  const bareUrl = `http://127.0.0.1:${bare.addr.port}/`;
  try {
    const get = async (target: string) => {
      const started = performance.now();
      const response = await fetch(target);
      await response.json();
      return performance.now() - started;
    };
    const settled = performance.now() + FOLDER_SETTLE_MS; // as in `fetchOverTheWire`
    for (let i = 0; i < 50 || performance.now() < settled; i++) {
      await get(url);
      await get(bareUrl);
    }
    const warm: number[] = [];
    const plain: number[] = [];
    for (let i = 0; i < n; i++) {
      plain.push(await get(bareUrl));
      warm.push(await get(url));
    }
    const colds: number[] = [];
    for (let i = 0; i < cold; i++) {
      // The worker stops after 200 ms idle; the host stays: the next call starts a worker.
      while (r.plugins.get("fn", 0).state !== "idle") await new Promise((resolve) => setTimeout(resolve, 50));
      colds.push(await get(url));
    }
    const coldHost = await coldProcessFetch(cold);
    const bareSummary = summarize(plain);
    return [
      { label: "plugins: bare Deno.serve, GET small JSON", summary: bareSummary, isBaseline: true },
      {
        label: "plugins: GET /v1/plugins/{id}/fn/, warm worker",
        summary: summarize(warm),
        baseline: bareSummary,
        note: "goal: p50 ≤ 1 ms over the bare server",
      },
      {
        label: "plugins: GET /v1/plugins/{id}/fn/, cold (worker stopped)",
        summary: summarize(colds),
        note: "goal ≤ 150 ms",
      },
      {
        label: "plugins: GET /v1/plugins/{id}/fn/, cold (host process and worker stopped)",
        summary: summarize(coldHost),
        note: "after the host's own idle time",
      },
    ];
  } finally {
    await server.shutdown();
    await bare.shutdown();
    await r.close();
  }
}

/** Cold calls when the host process has stopped too (its idle time is a millisecond here). */
async function coldProcessFetch(count: number): Promise<number[]> {
  const r = await rig({
    fn: {
      "dock-plugin.json": manifest("fn", []),
      "main.ts": `export default { fetch() { return Response.json({ ok: true }); } };`,
    },
  }, { idleMs: 100, hostIdleMs: 1 });
  const app = new Hono();
  mount(app, "/v1", [pluginRoutes(r.plugins)]);
  try {
    const samples: number[] = [];
    for (let i = 0; i < count; i++) {
      while (r.plugins.hostStats().pid !== undefined) await new Promise((resolve) => setTimeout(resolve, 50));
      const started = performance.now();
      const response = await app.fetch(new Request("http://127.0.0.1/v1/plugins/fn/fn/"));
      await response.json();
      samples.push(performance.now() - started);
    }
    return samples;
  } finally {
    await r.close();
  }
}

async function idlePlugins(count: number): Promise<Row[]> {
  const mib = (bytes: number) => bytes / 1024 / 1024;
  // The same rig empty first, so what is measured is the plugins, not the modules loading.
  const empty = await rig({});
  await empty.close();
  const before = Deno.memoryUsage().rss;
  const files: Record<string, Record<string, string>> = {};
  for (let i = 0; i < count; i++) {
    files[`idle-${i}`] = {
      "dock-plugin.json": manifest(`idle-${i}`, [{ on: "never.happens" }]),
      "main.ts": `export default { event() {} };`,
    };
  }
  const r = await rig(files);
  try {
    // Events that none of them subscribe to: still nothing starts.
    for (let i = 0; i < 100; i++) r.bus.publish({ type: "bench.other", origin: "bench", data: {} });
    await new Promise((resolve) => setTimeout(resolve, 200));
    const stats = r.plugins.hostStats();
    const after = Deno.memoryUsage().rss;
    return [{
      label: `plugins: ${count} installed, enabled, idle plugins`,
      summary: summarize([mib(after - before)]),
      unit: "MiB",
      note: `${stats.workers} workers, ${stats.pid === undefined ? 0 : 1} host processes (goal 0); ` +
        `this process +${mib(after - before).toFixed(1)} MiB for their manifests and state`,
    }];
  } finally {
    await r.close();
  }
}

async function eventStorm(seconds: number, rate: number, pluginCount: number): Promise<Row[]> {
  const lag = async (withPlugins: boolean) => {
    const files: Record<string, Record<string, string>> = {};
    if (withPlugins) {
      for (let i = 0; i < pluginCount; i++) {
        files[`sub-${i}`] = {
          "dock-plugin.json": manifest(`sub-${i}`, [{ on: "storm.*" }]),
          "main.ts": `let seen = 0; export default { event() { seen++; } };`,
        };
      }
    }
    const r = await rig(files);
    try {
      const { lags, achieved } = await busLag(r.bus, { seconds, rate, type: "storm.tick" });
      const total = seconds * rate;
      // Let the plugins finish what was queued, then count.
      const deadline = performance.now() + 60_000;
      const done = () => r.plugins.list().every((p) => p.counters.calls + p.counters.dropped >= total);
      while (!done() && performance.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const list = r.plugins.list();
      const delivered = list.reduce((sum, p) => sum + p.counters.calls - p.counters.failures, 0);
      const lost = list.reduce((sum, p) => sum + p.counters.dropped + p.counters.failures, 0);
      const hostPid = r.plugins.hostStats().pid;
      const hostRss = hostPid ? rssOf(hostPid) : 0;
      return {
        lags,
        achieved,
        delivered,
        lost,
        hostRss,
        workers: r.plugins.hostStats().workers,
      };
    } finally {
      await r.close();
    }
  };
  const without = await lag(false);
  const withPlugins = await lag(true);
  const expected = seconds * rate * pluginCount;
  const hostOnly = await hostBaseline();
  const perWorker = (withPlugins.hostRss - hostOnly) / Math.max(1, withPlugins.workers - 1);
  return [
    {
      label: `plugins: bus lag, ${rate}/s for ${seconds} s, no plugins`,
      summary: without.lags,
      isBaseline: true,
      note: `${without.achieved.toFixed(0)} events/s published`,
    },
    {
      label: `plugins: bus lag, ${rate}/s for ${seconds} s, ${pluginCount} plugins subscribed`,
      summary: withPlugins.lags,
      baseline: without.lags,
      note: `${withPlugins.delivered}/${expected} deliveries, ${withPlugins.lost} lost; ` +
        `host ${withPlugins.hostRss.toFixed(0)} MiB with ${withPlugins.workers} workers ` +
        `(${hostOnly.toFixed(0)} MiB with one: ≈ ${
          perWorker.toFixed(1)
        } MiB per further warm worker, target ≤ 15)`,
    },
  ];
}

/** The host's memory with one warm worker. */
async function hostBaseline(): Promise<number> {
  const r = await rig({
    one: {
      "dock-plugin.json": manifest("one", [{ on: "base.*" }]),
      "main.ts": `export default { event() {} };`,
    },
  });
  try {
    r.bus.publish({ type: "base.x", origin: "bench", data: {} });
    while (r.plugins.list()[0].counters.calls === 0 || r.plugins.hostStats().workers === 0) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
    return rssOf(r.plugins.hostStats().pid!);
  } finally {
    await r.close();
  }
}

async function runaway(): Promise<Row[]> {
  const r = await rig({
    spin: {
      "dock-plugin.json": manifest("spin", [{ on: "bench.spin", timeout: "1s" }]),
      "main.ts": `export default { event() { while (true) {} } };`,
    },
    other: {
      "dock-plugin.json": manifest("other", [{ on: "bench.*" }], ["events:emit"]),
      "main.ts":
        `export default { async event(ev, ctx) { if (ev.type === "bench.next") await ctx.emit("bench.handled", {}); } };`,
    },
  });
  try {
    // Both warm first.
    const warmed = nextEvent(r.bus, (type) => type === "bench.handled");
    r.bus.publish({ type: "bench.next", origin: "bench", data: {} });
    await warmed;
    const spinStarted = performance.now();
    r.bus.publish({ type: "bench.spin", origin: "bench", data: {} });
    const deadline = spinStarted + 1000;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, deadline - performance.now())));
    while (r.plugins.list().find((p) => p.id === "spin")!.counters.timeouts === 0) {
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const handled = nextEvent(r.bus, (type) => type === "bench.handled");
    r.bus.publish({ type: "bench.next", origin: "bench", data: {} });
    const at = await handled;
    return [{
      label: "plugins: runaway plugin, its deadline → next event handled by another",
      summary: summarize([at - deadline]),
      note: `goal ≤ 2 s; host restarts: ${r.plugins.hostStats().restarts}`,
    }];
  } finally {
    await r.close();
  }
}

function rssOf(pid: number): number {
  try {
    const status = Deno.readTextFileSync(`/proc/${pid}/status`);
    const kb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
    return kb / 1024;
  } catch {
    return 0;
  }
}

/**
 * `fetch` of a plugin written with the SDK (`import { definePlugin } from "@dock/plugin"`) on a real box:
 * warm through the box's socket against a bare `Deno.serve` on a unix socket, warm through the laptop
 * agent's relay (`/v1/boxes/local/api/plugins/{id}/fn/`) against a bare `Deno.serve` on loopback TCP, and
 * cold with the host process running (the worker stopped after its idle time).
 *
 * The goals are read against the bare server in a process of its own (floor.ts), as `bench/box_api.ts`
 * reads the box API's: dockd is another process, and on this VM each wake-up of an idle process costs
 * tens of microseconds (measured: a 5 ms pause between rounds took the in-process server's p50 from 86
 * to 255 µs). The in-process server, which wakes nothing (client and server share a thread), is printed
 * beside it.
 */
async function fetchOverTheWire(n: number, cold: number): Promise<Row[]> {
  const dirs = await makeDirs();
  const folder = join(dirs.dockHome, "plugins", "fn");
  await Deno.mkdir(folder, { recursive: true });
  await Deno.writeTextFile(join(folder, "dock-plugin.json"), manifest("fn", []));
  await Deno.writeTextFile(
    join(folder, "main.ts"),
    `import { definePlugin } from "@dock/plugin";\nexport default definePlugin({ fetch() { return Response.json({ ok: true }); } });\n`,
  );
  await using box = await startBox({ dirs, env: { DOCK_PLUGIN_IDLE_MS: "300" } });
  await using agent = await startAgent(dirs);
  const client = new AgentClient({ url: agent.url, token: agent.token, origin: "bench" });
  await client.addLocal();
  await box.client.enablePlugin("fn", {});
  const bareSocket = join(dirs.root, "bare.sock");
  const bareUnix = Deno.serve({ path: bareSocket, onListen: () => {} }, () => Response.json({ ok: true }));
  const bareTcp = Deno.serve(
    { port: 0, hostname: "127.0.0.1", onListen: () => {} },
    () => Response.json({ ok: true }),
  );
  // The floors the goals are read against: the same bare server in a process of its own, as dockd and the
  // agent are (floor.ts), so the floor pays the same wake-up of another process; the in-process ones
  // above are printed beside them.
  const floorSocket = join(dirs.root, "floor.sock");
  const floorUnix = await startJsonServer(floorSocket);
  const floorTcp = await startJsonServer("tcp");
  const unix = (path: string) => Deno.createHttpClient({ proxy: { transport: "unix", path } });
  const boxSocket = unix(box.dirs.socket);
  const bareClient = unix(bareSocket);
  const floorClient = unix(floorSocket);
  const auth = { authorization: `Bearer ${agent.token}` };
  const get = async (url: string, init: RequestInit & { client?: Deno.HttpClient } = {}) => {
    const started = performance.now();
    const response = await fetch(url, init);
    if (!response.ok) throw new Error(`${url}: ${response.status} ${await response.text()}`);
    await response.json();
    return performance.now() - started;
  };
  const paths = {
    bareSocket: () => get("http://localhost/", { client: bareClient }),
    floorSocket: () => get("http://localhost/", { client: floorClient }),
    floorTcp: () => get(`http://127.0.0.1:${floorTcp.port}/`),
    socket: () => get("http://localhost/v1/plugins/fn/fn/", { client: boxSocket }),
    // A route the daemon answers itself: what any call through the box's socket costs, plugin or not.
    route: () => get("http://localhost/v1/plugins/fn?log=0", { client: boxSocket }),
    bareTcp: () => get(`http://127.0.0.1:${bareTcp.addr.port}/`),
    relay: () => get(`${agent.url}/v1/boxes/local/api/plugins/fn/fn/`, { headers: auth }),
  };
  try {
    const samples = Object.fromEntries(Object.keys(paths).map((name) => [name, [] as number[]])) as Record<
      keyof typeof paths,
      number[]
    >;
    // 50 rounds, and until the plugin's folders are 2 s old: one changed in its last 2 s is walked before
    // every call (folder_check.ts), the first seconds after an edit, not a warm call's steady cost.
    const settled = performance.now() + FOLDER_SETTLE_MS;
    for (let i = 0; i < 50 || performance.now() < settled; i++) {
      for (const path of Object.values(paths)) await path();
    }
    // Interleaved, so load on the machine falls on all of them alike.
    for (let i = 0; i < n; i++) {
      for (const [name, path] of Object.entries(paths)) {
        samples[name as keyof typeof paths].push(await path());
      }
    }
    const colds: number[] = [];
    for (let i = 0; i < cold; i++) {
      // The worker stops after its idle time; the host process stays (its own idle is minutes).
      while ((await box.client.plugin("fn", 0)).state !== "idle") await new Promise((r) => setTimeout(r, 50));
      colds.push(await paths.socket());
    }
    const bareUnixSummary = summarize(samples.bareSocket);
    const bareTcpSummary = summarize(samples.bareTcp);
    const floorUnixSummary = summarize(samples.floorSocket);
    const floorTcpSummary = summarize(samples.floorTcp);
    const over = (path: number[], floor: { p50: number }, bare: { p50: number }) => {
      const p50 = summarize(path).p50;
      return `floor + ${(p50 - floor.p50).toFixed(2)} ms (the in-process server + ${
        (p50 - bare.p50).toFixed(2)
      })`;
    };
    return [
      {
        label: "plugins: bare Deno.serve on a unix socket in this process, GET small JSON",
        summary: bareUnixSummary,
        isBaseline: true,
      },
      {
        label:
          "plugins: floor: the same bare Deno.serve in a process of its own (json_server.ts), unix socket",
        summary: floorUnixSummary,
        isBaseline: true,
      },
      {
        label: "plugins: box socket, GET /v1/plugins/{id} (answered by the daemon itself)",
        summary: summarize(samples.route),
        baseline: floorUnixSummary,
        note: "what the daemon's API costs before any plugin runs",
      },
      {
        label: "plugins: box socket, GET /v1/plugins/{id}/fn/ (SDK plugin), warm",
        summary: summarize(samples.socket),
        baseline: floorUnixSummary,
        note: `goal: p50 ≤ floor + 0.5 ms (here ${over(samples.socket, floorUnixSummary, bareUnixSummary)})`,
      },
      {
        label: "plugins: bare Deno.serve on loopback TCP in this process, GET small JSON",
        summary: bareTcpSummary,
        isBaseline: true,
      },
      {
        label:
          "plugins: floor: the same bare Deno.serve in a process of its own (json_server.ts), loopback TCP",
        summary: floorTcpSummary,
        isBaseline: true,
      },
      {
        label: "plugins: laptop relay, GET /v1/boxes/local/api/plugins/{id}/fn/, warm",
        summary: summarize(samples.relay),
        baseline: floorTcpSummary,
        note: `goal: p50 ≤ floor + 1 ms (here ${over(samples.relay, floorTcpSummary, bareTcpSummary)})`,
      },
      {
        label: "plugins: box socket, fn cold start (host running, worker stopped)",
        summary: summarize(colds),
        note: "goal ≤ 100 ms",
      },
    ];
  } finally {
    boxSocket.close();
    bareClient.close();
    floorClient.close();
    await bareUnix.shutdown();
    await bareTcp.shutdown();
    await floorUnix.stop();
    await floorTcp.stop();
  }
}

/** When a plugin folder's stamps are trusted after its last change (folder_check.ts: 2 s), with a margin. */
const FOLDER_SETTLE_MS = 2500;

/** Every plugin figure (`only`: the parts named: `hook`, `fetch`, `wire`, `idle`, `storm`, `runaway`). */
export async function benchPlugins(options: PluginsBenchOptions = {}): Promise<Row[]> {
  const quick = options.quick ?? false;
  const only = options.only ?? [];
  const want = (part: string) => only.length === 0 || only.includes(part);
  return [
    ...want("hook") ? await eventToHandler(quick ? 200 : 1000) : [],
    ...want("hook") ? (await eventToHandler(quick ? 200 : 1000, "laptop")).slice(1, 2) : [],
    ...want("wire") ? await fetchOverTheWire(quick ? 200 : 1000, quick ? 5 : 20) : [],
    ...want("fetch") ? await fetchThroughPlugin(quick ? 200 : 1000, quick ? 5 : 20) : [],
    ...want("idle") ? await idlePlugins(50) : [],
    ...want("storm") ? await eventStorm(quick ? 2 : 10, 1000, 10) : [],
    ...want("runaway") ? await runaway() : [],
  ];
}

if (import.meta.main) {
  const only = Deno.args.filter((arg) => !arg.startsWith("--"));
  console.log(table(await benchPlugins({ quick: Deno.args.includes("--quick"), only })));
}
