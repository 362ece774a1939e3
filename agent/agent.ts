/**
 * The laptop agent: the composition root that builds the agent's modules once and hands them to its
 * API. The agent keeps its own state under `<state>/client/` (the token, and a SQLite database with the
 * boxes, the merged event journal, the per-box cursors and the offline prompt queue).
 *
 * @module
 */
import type { AgentProcess } from "../client/wire.ts";
import { KitLibrary } from "./kits.ts";
import { EventBus, journalBoundsFromEnv } from "../core/events.ts";
import type { ClientPaths } from "../core/paths.ts";
import { type Clock, SYSTEM_CLOCK } from "../core/clock.ts";
import { type Log, STDERR_LOG } from "../core/log.ts";
import { Store } from "../core/store.ts";
import { positiveFromEnv } from "../core/knobs.ts";
import { Boxes } from "./boxes.ts";
import { SshTransports } from "./ssh_transport.ts";
import { pruneAfterStart } from "./packages.ts";
import { EventMerge } from "./merge.ts";
import { SessionIndex } from "./sessions.ts";
import { readSessions } from "./box_reads.ts";
import { Forwards } from "./forwards.ts";
import { LaptopHooks } from "./hooks.ts";
import { Proxy } from "./proxy.ts";
import { DesktopNotifier } from "./desktop_notify.ts";
import { Queue } from "./queue.ts";
import { ensureToken } from "./token.ts";
import { warmTls } from "../core/tls_warm.ts";
import { Plugins } from "../plugins/plugins.ts";
import { SharedPlugins } from "./shared_plugins.ts";
import { pluginKnobs } from "../plugins/knobs.ts";

/**
 * The environment the agent reads once, at its start (`DOCK_SSH_CONFIG` by every `dock add ssh`, the
 * ports by its listeners): reported in `GET /v1/status`, so `dock status` can say when the shell's
 * differ (issue 33: a `DOCK_SSH_CONFIG` exported after the agent started was silently ignored).
 */
export const START_ENV = ["DOCK_SSH_CONFIG", "DOCK_AGENT_PORT", "DOCK_PROXY_PORT"];

/** Knobs of {@linkcode Agent}. */
export interface AgentOptions {
  /** How often each box is checked. @default {5000} */
  healthMs?: number;
  /** Test only: pause between marking a queue item `sending` and its request. @default {0} */
  queueSendDelayMs?: number;
  /** The clock every module that orders or delays by time reads (tests: a FakeClock). @default {SYSTEM_CLOCK} */
  clock?: Clock;
  /** Where modules report what went wrong on their own (tests: a MemoryLog). @default {STDERR_LOG} */
  log?: Log;
}

/** Every module of one laptop agent. */
export class Agent {
  readonly paths: ClientPaths;
  readonly store: Store;
  readonly bus: EventBus;
  readonly boxes: Boxes;
  /** The SSH connections of boxes reached without an inbound port. */
  readonly transports: SshTransports;
  readonly merge: EventMerge;
  /** Every box's sessions as last read, for `GET /v1/sessions`. */
  readonly sessions: SessionIndex;
  readonly forwards: Forwards;
  readonly proxy: Proxy;
  readonly hooks: LaptopHooks;
  readonly queue: Queue;
  readonly plugins: Plugins;
  readonly sharedPlugins: SharedPlugins;
  readonly kits: KitLibrary;
  readonly notifier: DesktopNotifier;
  /** The clock the agent's modules read (the system's unless a test hands in its own). */
  readonly clock: Clock;
  /** Where the agent's modules report what went wrong on their own. */
  readonly log: Log;
  /** The proxy's listener: its port, or why it is not listening. */
  proxyState: { enabled: boolean; port?: number; error?: string } = { enabled: false };
  token = "";
  /** This process, as `GET /v1/status` reports it. */
  readonly process: AgentProcess = {
    pid: Deno.pid,
    started: new Date().toISOString(),
    env: Object.fromEntries(START_ENV.map((name) => [name, Deno.env.get(name) || null])),
  };
  /** Stops the process's listeners (set by whoever runs the agent): after its own upgrade. */
  stopRequested?: () => void;

  constructor(paths: ClientPaths, options: AgentOptions = {}) {
    Deno.mkdirSync(paths.client, { recursive: true, mode: 0o700 });
    this.paths = paths;
    // The composition root: the one place the system's clock and stderr are chosen.
    const clock = this.clock = options.clock ?? SYSTEM_CLOCK;
    const log = this.log = options.log ?? STDERR_LOG;
    // Its own database: the event journal (the bus adds it) and the laptop modules' own tables.
    this.store = new Store(paths.db);
    this.bus = new EventBus(this.store, { ...journalBoundsFromEnv(), log });
    this.boxes = new Boxes(this.store, this.bus, { healthMs: options.healthMs, clock });
    this.transports = new SshTransports({ store: this.store, boxes: this.boxes, paths, clock });
    this.merge = new EventMerge(this.store, this.bus, this.boxes, { clock, log });
    this.sessions = new SessionIndex({
      boxes: {
        status: () => this.boxes.statusParts(),
        read: (name, options) => readSessions(this.boxes.endpoint(name), options),
      },
      subscribe: (listener) => this.bus.subscribe(listener),
      clock,
    });
    this.forwards = new Forwards(this.boxes, this.bus, {
      maxConnections: positiveFromEnv("DOCK_FORWARD_MAX_CONNECTIONS"),
      clock,
      log,
    });
    this.proxy = new Proxy(this.boxes, this.forwards, { clock });
    this.kits = new KitLibrary({ paths, boxes: this.boxes });
    this.plugins = new Plugins({
      home: paths.home,
      state: paths.client,
      where: "laptop",
      side: "laptop",
      bus: this.bus,
      // With a local box, one plugins folder: the box's copy of a plugin gets the box's events.
      shadowed: (id, event) => this.sharedPlugins.shadowed(id, event),
      ...pluginKnobs(),
      clock,
      log,
    });
    this.sharedPlugins = new SharedPlugins({
      boxes: this.boxes,
      bus: this.bus,
      localSocket: paths.localSocket,
    });
    this.hooks = new LaptopHooks({
      bus: this.bus,
      extra: () => this.plugins.extraHooks(),
      executor: this.plugins.executor(),
      file: paths.hooksFile,
      clock,
      log,
      home: Deno.env.get("HOME") ?? "/",
      onlineBoxes: () => this.boxes.list().map((b) => b.name).filter((name) => this.boxes.online(name)),
      boxHooksFile: async (name) => (await this.boxes.client(name).hooks()).path,
      // The daemon that shares this state folder most likely shares ~/.dock too (`dock up`).
      guessShared: (name) => {
        const box = this.boxes.list().find((b) => b.name === name);
        return box?.kind === "socket" && box.address === paths.localSocket;
      },
    });
    this.notifier = new DesktopNotifier({ bus: this.bus });
    this.queue = new Queue({
      store: this.store,
      bus: this.bus,
      boxes: this.boxes,
      sendDelayMs: options.queueSendDelayMs,
      clock,
      log,
    });
  }

  /** Creates the token if needed, checks every box, and starts following them. */
  async start(): Promise<void> {
    // Its first dial of a box (pinning one being paired, too) then finds TLS set up (core/tls_warm.ts).
    warmTls();
    this.token = await ensureToken(this.paths.token);
    // Each SSH transport checks its box as soon as it is up; the refresh below does not wait for them.
    this.transports.start();
    // This release started: older ones and their packages go (agent/packages.ts), off the start's path.
    pruneAfterStart(this.paths).catch(() => {});
    await this.boxes.refresh();
    this.boxes.start();
    this.merge.start();
    await this.plugins.start();
    this.sharedPlugins.start();
    this.hooks.start();
    this.queue.start();
    // `DOCK_DESKTOP_NOTIFY=0` keeps the OS quiet (tests, a laptop that wants only the app's notices).
    if (Deno.env.get("DOCK_DESKTOP_NOTIFY") !== "0") this.notifier.start();
  }

  /** Stops following boxes and closes the store. */
  close(): void {
    this.notifier.close();
    this.queue.close();
    this.hooks.close();
    this.sharedPlugins.close();
    this.plugins.close();
    this.merge.close();
    this.sessions.close();
    this.forwards.close();
    this.transports.close();
    this.boxes.close();
    this.store.close();
  }
}
