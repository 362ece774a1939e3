/**
 * The box: the composition root that builds every domain module of the daemon once, in dependency
 * order, and hands them to the API. Nothing else constructs them.
 *
 * @module
 */
import type { Location } from "../client/wire.ts";
import { EventBus, journalBoundsFromEnv } from "../core/events.ts";
import { Exec } from "./exec.ts";
import { Locations } from "./locations.ts";
import type { BoxPaths } from "../core/paths.ts";
import { canBind, PortAllocator } from "./ports.ts";
import { killAll } from "../core/runner.ts";
import { SecretResolver } from "./secrets.ts";
import { type BoxSettings, loadSettings } from "./settings.ts";
import { positiveFromEnv } from "../core/knobs.ts";
import { Store } from "../core/store.ts";
import { BOX_SCHEMA } from "./schema.ts";
import { Kits } from "./kits.ts";
import { Review } from "./review.ts";
import { Shares } from "./shares.ts";
import { Units } from "./units.ts";
import { PairingStore } from "./pairing.ts";
import { PhoneCompanion } from "./phone.ts";
import { Worktrees } from "./worktrees.ts";
import { Services } from "./services.ts";
import { boxCgroups, type CgroupSupport } from "./cgroups.ts";
import { Pauses } from "./pause.ts";
import { Guard, readGuardFile } from "./guard.ts";
import { groupRss, memoryPercent, processes } from "./procs.ts";
import { Sessions } from "./sessions.ts";
import { AgentStates } from "./agent_state.ts";
import { ExitWatcher } from "./exit_watcher.ts";
import { SendLedger } from "./send_ledger.ts";
import { Tasks } from "./tasks.ts";
import { Tmux } from "./tmux.ts";
import { replaySpool, spoolDir } from "./spool.ts";
import { dirname, join } from "../core/posix_path.ts";
import { Hooks } from "./hooks.ts";
import { Flows } from "./flows.ts";
import { Schedules } from "./flow_schedule.ts";
import { type Clock, every, SYSTEM_CLOCK } from "../core/clock.ts";
import { errorText, type Log, STDERR_LOG } from "../core/log.ts";
import { Forge } from "./forge.ts";
import { Plugins } from "../plugins/plugins.ts";
import { pluginKnobs } from "../plugins/knobs.ts";
import { Upgrades } from "./upgrade.ts";

/** The box's TCP+TLS listener for laptops, once it listens (see `serveTls`). */
export interface TlsListener {
  /** The address it is bound to (`0.0.0.0`, `::`, or one address). */
  hostname: string;
  /** The port it actually listens on (the one `DOCK_LISTEN` named, or the one the system chose for 0). */
  port: number;
  /** The addresses its certificate is valid for: the hosts a pairing link may name. */
  addresses: string[];
  /** The box CA's SHA-256 fingerprint, the `fp` of pairing links. */
  fingerprint: string;
}

/** What the box's modules share besides its paths: time and where they report. */
export interface BoxOptions {
  /** What every module that orders or delays something by time reads. @default {SYSTEM_CLOCK} */
  clock?: Clock;
  /** Where modules report what no caller hears. @default {STDERR_LOG} */
  log?: Log;
}

/** Every domain module of one box daemon. */
export class Box {
  /** The clock handed to every module that orders or delays something by time. */
  readonly clock: Clock;
  /** The log handed to every module that reports on its own. */
  readonly log: Log;
  readonly paths: BoxPaths;
  readonly settings: BoxSettings;
  readonly store: Store;
  readonly bus: EventBus;
  readonly ports: PortAllocator;
  readonly secrets: SecretResolver;
  readonly locations: Locations;
  readonly kits: Kits;
  readonly review: Review;
  readonly shares: Shares;
  readonly units: Units;
  readonly worktrees: Worktrees;
  readonly exec: Exec;
  readonly services: Services;
  readonly pauses: Pauses;
  readonly guard: Guard;
  readonly tmux: Tmux;
  readonly agentStates: AgentStates;
  readonly exits: ExitWatcher;
  readonly sendLedger: SendLedger;
  readonly sessions: Sessions;
  readonly tasks: Tasks;
  readonly pairing: PairingStore;
  /** The phone companion: its setting, paired phones and listener. */
  readonly phone: PhoneCompanion;
  /** `POST upgrade`: a new package taken, and the hand-over to its daemon. */
  readonly upgrades: Upgrades;
  readonly hooks: Hooks;
  readonly flows: Flows;
  readonly schedules: Schedules;
  readonly forge: Forge;
  readonly plugins: Plugins;
  /** The laptop listener once it listens; null while it does not (off, failed, or not yet started). */
  tls: TlsListener | null = null;
  /** Why the laptop listener is not running (`DOCK_LISTEN=off`, a taken port, no openssl), for `dockd pair`. */
  tlsDown: string | null = null;
  /** When the box was built (milliseconds since the epoch, on its clock). */
  readonly started: number;
  #stopSpool?: () => void;
  #replaying = false;

  constructor(paths: BoxPaths, options: BoxOptions = {}) {
    this.clock = options.clock ?? SYSTEM_CLOCK;
    this.log = options.log ?? STDERR_LOG;
    this.started = this.clock.now();
    Deno.mkdirSync(paths.box, { recursive: true, mode: 0o700 });
    this.paths = paths;
    this.settings = loadSettings(paths);
    this.store = new Store(paths.db, { schema: BOX_SCHEMA });
    this.bus = new EventBus(this.store, { ...journalBoundsFromEnv(), log: this.log });
    this.pairing = new PairingStore(this.store, { clock: this.clock });
    this.phone = new PhoneCompanion({ store: this.store, bus: this.bus, clock: this.clock, log: this.log });
    this.upgrades = new Upgrades({ paths, bus: this.bus, clock: this.clock });
    // Candidates are checked with a bind probe instead of reading /proc/net/tcp*: the kernel walks its
    // whole TCP table for that read (≈4 ms each, measured), the probe costs microseconds per port.
    this.ports = new PortAllocator(this.store, {
      range: this.settings.portRange,
      listening: () => new Set(),
      probe: canBind,
    });
    this.secrets = new SecretResolver({ clock: this.clock });
    this.locations = new Locations(this.store, this.bus, this.clock);
    this.kits = new Kits({
      store: this.store,
      bus: this.bus,
      locations: this.locations,
      paths,
      clock: this.clock,
    });
    this.worktrees = new Worktrees({
      store: this.store,
      bus: this.bus,
      ports: this.ports,
      locations: this.locations,
      settings: this.settings,
      paths,
      secrets: this.secrets,
      clock: this.clock,
      log: this.log,
    });
    this.exec = new Exec(this.worktrees);
    this.services = new Services({
      store: this.store,
      bus: this.bus,
      locations: this.locations,
      worktrees: this.worktrees,
      paths,
      backoffMs: positiveFromEnv("DOCK_SERVICE_BACKOFF_MS"),
      logBytes: positiveFromEnv("DOCK_SERVICE_LOG_BYTES"),
      clock: this.clock,
      log: this.log,
    });
    // Removing a worktree stops its services first; a worktree ready after setup starts its autostarts.
    this.worktrees.removalSteps.push((worktree) => this.services.stopAll(worktree));
    this.worktrees.readySteps.push((worktree) => this.services.autostart(worktree));
    this.tmux = new Tmux({
      socket: join(paths.box, "tmux.sock"),
      configFile: join(paths.box, "tmux.conf"),
      clock: this.clock,
    });
    this.agentStates = new AgentStates({ store: this.store, bus: this.bus, clock: this.clock });
    this.exits = new ExitWatcher({
      store: this.store,
      bus: this.bus,
      tmux: this.tmux,
      states: this.agentStates,
      pollMs: positiveFromEnv("DOCK_EXIT_POLL_MS"),
      clock: this.clock,
      log: this.log,
    });
    this.sendLedger = new SendLedger({ store: this.store, clock: this.clock });
    this.sessions = new Sessions({
      store: this.store,
      bus: this.bus,
      tmux: this.tmux,
      locations: this.locations,
      worktrees: this.worktrees,
      states: this.agentStates,
      exits: this.exits,
      ledger: this.sendLedger,
      dir: join(paths.box, "sessions"),
      clock: this.clock,
    });
    this.units = new Units({
      store: this.store,
      bus: this.bus,
      paths,
      secrets: this.secrets,
      box: () => this.settings.name,
      backoffMs: positiveFromEnv("DOCK_SERVICE_BACKOFF_MS"),
      logBytes: positiveFromEnv("DOCK_SERVICE_LOG_BYTES"),
      clock: this.clock,
      log: this.log,
    });
    this.shares = new Shares({
      store: this.store,
      bus: this.bus,
      worktrees: this.worktrees,
      paths,
      clock: this.clock,
      log: this.log,
    });
    // A removed worktree's shares end first: nothing public may outlive what it showed.
    this.worktrees.removalSteps.push((worktree) => this.shares.closeAll(worktree));
    this.review = new Review({
      locations: this.locations,
      worktrees: this.worktrees,
      sessions: this.sessions,
      bus: this.bus,
      box: () => this.settings.name,
    });
    this.tasks = new Tasks({
      bus: this.bus,
      locations: this.locations,
      worktrees: this.worktrees,
      sessions: this.sessions,
    });
    this.plugins = new Plugins({
      home: paths.home,
      state: paths.box,
      where: this.settings.name,
      side: "box",
      bus: this.bus,
      // Plugins' secret settings resolve as env.json's references do (spec 2.5), vaults included.
      resolveSecret: async (ref) => {
        const resolved = await this.secrets.resolve(ref);
        return resolved.ok ? resolved.value : undefined;
      },
      ...pluginKnobs(),
      // Module hooks of hooks.json and of locations' configs: one host covers where they may be.
      baseRead: () => [
        dirname(paths.hooksFile),
        paths.worktrees,
        ...this.locations.list().map((l) => l.path),
      ],
      clock: this.clock,
      log: this.log,
    });
    this.hooks = new Hooks({
      extra: () => this.plugins.extraHooks(),
      executor: this.plugins.executor(),
      bus: this.bus,
      file: paths.hooksFile,
      boxName: this.settings.name,
      home: paths.userHome,
      locations: this.locations,
      worktrees: this.worktrees,
      sessionPlace: (name) => {
        try {
          const session = this.sessions.get(name);
          return { location: session.location, worktree: session.worktree };
        } catch {
          return null;
        }
      },
      concurrency: positiveFromEnv("DOCK_HOOK_CONCURRENCY"),
      clock: this.clock,
      log: this.log,
    });
    this.flows = new Flows({
      store: this.store,
      bus: this.bus,
      file: paths.flowsFile,
      boxName: this.settings.name,
      home: paths.userHome,
      locations: this.locations,
      worktrees: this.worktrees,
      exec: this.exec,
      sessions: this.sessions,
      module: (options) => this.plugins.runStep(options),
      clock: this.clock,
      log: this.log,
    });
    this.schedules = new Schedules({
      flows: this.flows,
      store: this.store,
      locations: this.locations,
      worktrees: this.worktrees,
      clock: aheadBy(this.clock, positiveFromEnv("DOCK_CLOCK_OFFSET_MS") ?? 0),
      log: this.log,
    });
    this.forge = new Forge({
      flows: this.flows,
      worktrees: this.worktrees,
      store: this.store,
      pollMs: positiveFromEnv("DOCK_FORGE_POLL_MS"),
      clock: this.clock,
      log: this.log,
    });
    // Removing a worktree ends its sessions too (after its services, before archive).
    this.worktrees.removalSteps.push((worktree) => this.sessions.removeAll(worktree));
    this.pauses = new Pauses(this.bus, this.worktrees);
    this.pauses.participants.push({ signalWorktree: (w, signal) => this.services.signalAll(w, signal) });
    this.pauses.participants.push({ signalWorktree: (w, signal) => this.sessions.signalWorktree(w, signal) });
    this.guard = new Guard({
      settings: () => readGuardFile(paths.guardFile),
      intervalMs: positiveFromEnv("DOCK_GUARD_INTERVAL_MS"),
      clock: this.clock,
      log: this.log,
      actions: {
        memoryPercent,
        totalMemory: () => Deno.systemMemoryInfo().total,
        services: () => {
          const procs = processes();
          return Promise.resolve(
            this.services.running().map((s) => ({ ...s, rss: groupRss(s.pgid, procs) })),
          );
        },
        stopService: async (s) => void await this.services.stop(s.location, s.worktree, s.name, "guard"),
        agents: () => this.sessions.agentUsage(),
        pauseAgent: (agent) => this.sessions.pauseSession(agent.session),
        announce: (data) => this.bus.publish({ type: "guard.acted", origin: "guard", data }),
      },
    });
  }

  /** Brings state in line with the disk and starts the background watchers. */
  async start(options: { watchMs?: number; cgroups?: Promise<CgroupSupport> } = {}): Promise<void> {
    // Begun by the caller when it could (before the daemon's modules loaded), else here, beside the rest.
    const detecting = options.cgroups ?? boxCgroups(this.paths);
    this.worktrees.recoverInterrupted();
    await Promise.all(this.locations.list().map((l) => this.worktrees.reconcile(l.name)));
    this.worktrees.watch(options.watchMs ?? 1000);
    const cgroups = await detecting;
    await this.services.adopt({ cgroups });
    await this.units.adopt({ cgroups });
    await this.sessions.start();
    await this.exits.start();
    await this.shares.start({ cgroups });
    await this.replaySpool();
    // A hook that timed out on a busy daemon spools too: pick such reports up soon after.
    this.#stopSpool = every(this.clock, 2000, () => {
      this.replaySpool().catch((error) => this.log.error(`spool: ${errorText(error)}`));
    });
    this.guard.start();
    await this.plugins.start();
    this.hooks.start();
    this.flows.start();
    this.schedules.start();
    this.forge.start();
  }

  /**
   * Ingests the agent reports `dock hook` spooled while the daemon was down, in the order they
   * happened. Run at start and once more when the socket listens (a hook may spool in between).
   */
  async replaySpool(): Promise<number> {
    if (this.#replaying) return 0; // one replay at a time: two would read the same files
    this.#replaying = true;
    try {
      return await replaySpool(spoolDir(this.paths.state), (report) => {
        this.agentStates.ingest(report);
        return Promise.resolve();
      });
    } finally {
      this.#replaying = false;
    }
  }

  /**
   * Forgets a location: what dock runs in its worktrees (services, sessions) is stopped first, since
   * nothing would manage it afterwards; the repository and its worktrees' files stay.
   */
  async forgetLocation(name: string, origin: string): Promise<Location> {
    const location = this.location(name);
    for (const worktree of location.worktrees) {
      await this.services.stopAll(worktree, origin);
      await this.sessions.removeAll(worktree, origin);
    }
    this.locations.remove(name, origin);
    await this.kits.forget(name);
    return location;
  }

  /** Every location with its worktrees (`GET locations`). */
  locationList(): Location[] {
    const worktrees = this.worktrees.list();
    return this.locations.list().map((location) => this.#withWorktrees(location.name, worktrees));
  }

  /** One location with its worktrees. */
  location(name: string): Location {
    this.locations.get(name);
    return this.#withWorktrees(name, this.worktrees.list(name));
  }

  #withWorktrees(name: string, all: ReturnType<Worktrees["list"]>): Location {
    const record = this.locations.get(name);
    const worktrees = all.filter((w) => w.location === name);
    return {
      name: record.name,
      path: record.path,
      default_branch: worktrees.find((w) => w.main)?.branch ?? null,
      created: record.created,
      worktrees,
    };
  }

  /** Stops watchers and children and closes the store. */
  async close(): Promise<void> {
    await this.phone.close();
    this.worktrees.stop();
    this.services.close();
    this.units.close();
    this.shares.close();
    this.guard.stop();
    this.hooks.close();
    this.schedules.close();
    this.forge.close();
    this.flows.close();
    this.plugins.close();
    this.#stopSpool?.();
    this.exits.close();
    this.sessions.close();
    // The tmux client kept ready for keys has been given nothing: its input ends and it runs nothing.
    await this.tmux.close();
    killAll();
    await this.worktrees.settled().catch(() => {});
    this.store.close();
  }
}

/**
 * `clock`, `offsetMs` ahead. DOCK_CLOCK_OFFSET_MS (tests and bench only) puts the schedules' clock this
 * far ahead, so a minute boundary comes within seconds instead of a real minute's wait.
 */
function aheadBy(clock: Clock, offsetMs: number): Clock {
  if (offsetMs === 0) return clock;
  return { now: () => clock.now() + offsetMs, after: (ms, fn) => clock.after(ms, fn) };
}
