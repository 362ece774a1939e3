/**
 * The plugin host of one process (the box daemon, or the laptop agent), as the rest of dock sees it: a
 * small façade over its four parts, each the one owner of its concern —
 * `registry.ts` (the plugin folders, their manifests, which are enabled with what grant, the consent
 * check), `supervisor.ts` (the host process and its workers: calls, deadlines, failures, events, gates),
 * `context.ts` (what a worker's `ctx.api` / `ctx.emit` / `ctx.kv` do) and `assets.ts` (`ui` and theme
 * files).
 *
 * @module
 */
import { join } from "../core/posix_path.ts";
import type {
  DockEvent,
  PanelApiRequest,
  PanelApiResult,
  PluginConfig,
  PluginFile,
  PluginInfo,
  PluginPermissions,
  PluginTestEvent,
  PluginTestEventResult,
} from "../client/wire.ts";
import { DockError } from "../client/errors.ts";
import { isGate } from "../core/hooks.ts";
import { effectiveConfig } from "./plugin_config.ts";
import { removePluginFolder, writePluginFiles } from "./install.ts";
import { describePermissions } from "../client/plugin.ts";
import { type Clock, every } from "../core/clock.ts";
import type { EventBus } from "../core/events.ts";
import { errorText, type Log } from "../core/log.ts";
import type { ExtraHook, HookExecutor } from "../core/hooks.ts";
import { shellExecutor } from "../core/hooks.ts";
import type { ModuleHostStats } from "./module_host.ts";
import { pluginFile, pluginThemes } from "./assets.ts";
import { PluginContext } from "./context.ts";
import { PluginRegistry } from "./registry.ts";
import { PluginSupervisor, type StepRun } from "./supervisor.ts";
import type { ApiSide } from "./scopes.ts";

export type { StepRun } from "./supervisor.ts";

/** Options of {@linkcode Plugins}. */
export interface PluginsOptions {
  /** `DOCK_HOME`: plugins are in its `plugins/`. */
  home: string;
  /** The process's own state folder (the box's, or the laptop's): grants, data, logs. */
  state: string;
  /** `laptop`, or the box's name (`PluginInfo.where`). */
  where: string;
  /** Which API `ctx.api` reaches. */
  side: ApiSide;
  bus: EventBus;
  /** What deadlines, idle stops and the folders' scan run on (the composition root's). */
  clock: Clock;
  /** The process's own log (what no plugin's log owns). */
  log: Log;
  /** V8 heap cap per worker and host, MB. @default {128} */
  memoryMb?: number;
  /** Resident memory at which the host process is killed, MB. @default {1024} */
  rssLimitMb?: number;
  /** How long a worker is kept after its last call; never more than 10 s. @default {10 s} */
  idleMs?: number;
  /** How long the host process is kept with no worker. @default {idleMs when set, else 5 minutes} */
  hostIdleMs?: number;
  /** @default {4} */
  concurrency?: number;
  /** How often plugin folders are checked for changes. @default {500} */
  scanMs?: number;
  /** Folders module hooks of hooks files and configs may be in (so one host covers them). */
  baseRead?: () => string[];
  /** Whether another process's copy of plugin `id` handles `event` instead (see `agent/shared_plugins.ts`). */
  shadowed?: (id: string, event: DockEvent) => boolean;
  /** Resolves a secret reference of a plugin's settings (`ctx.secrets`). @default {`env://NAME` only} */
  resolveSecret?: (reference: string) => Promise<string | undefined>;
  /** MB a plugin's data folder may hold; past them it is read-only to the plugin. @default {100} */
  dataQuotaMb?: number;
}

/** The plugins of one process and their sandboxed workers. */
export class Plugins {
  readonly dir: string;
  #o: PluginsOptions;
  #registry: PluginRegistry;
  #supervisor: PluginSupervisor;
  #context: PluginContext;
  #stopScan = () => {};
  #unsubscribe?: () => void;

  constructor(options: PluginsOptions) {
    this.#o = options;
    this.#registry = new PluginRegistry({
      home: options.home,
      state: options.state,
      where: options.where,
      bus: options.bus,
      log: options.log,
      resolveSecret: options.resolveSecret,
      dataQuotaBytes: options.dataQuotaMb === undefined ? undefined : options.dataQuotaMb * 1024 * 1024,
      onReload: (plugin) => this.#supervisor.stopWorkers(plugin),
    });
    this.dir = this.#registry.dir;
    this.#context = new PluginContext({ registry: this.#registry, bus: options.bus, side: options.side });
    this.#supervisor = new PluginSupervisor({
      registry: this.#registry,
      bus: options.bus,
      where: options.where,
      dir: join(options.state, "plugin-host"),
      clock: options.clock,
      log: options.log,
      onRequest: (spec, op, args) => this.#context.answer(spec, op, args),
      memoryMb: options.memoryMb,
      rssLimitMb: options.rssLimitMb,
      idleMs: options.idleMs,
      hostIdleMs: options.hostIdleMs,
      concurrency: options.concurrency,
      baseRead: options.baseRead,
      shadowed: options.shadowed,
    });
  }

  /** Reads the plugin folders and the grants, follows the bus, and checks the folders for changes. */
  async start(): Promise<void> {
    await this.#registry.load();
    await this.scan();
    this.#unsubscribe = this.#o.bus.subscribe((event) => this.#supervisor.onEvent(event));
    this.#stopScan = every(this.#o.clock, this.#o.scanMs ?? 500, () => {
      this.scan().catch((error) => this.#o.log.error(`plugins: ${errorText(error)}`));
    });
  }

  /** Stops following events and kills the host (calls in flight fail). */
  close(): void {
    this.#stopScan();
    this.#unsubscribe?.();
    this.#supervisor.close();
  }

  /** Where `ctx.api` calls go: the process's own API app (set once it is built). */
  connectApi(api: (request: Request) => Promise<Response>): void {
    this.#context.connectApi(api);
  }

  /** The host's counters (generations, restarts, workers). */
  hostStats(): ModuleHostStats {
    return this.#supervisor.stats();
  }

  /** Checks every plugin folder now; a changed one is read again and its workers stopped. */
  scan(): Promise<void> {
    return this.#registry.scan();
  }

  /** Every plugin folder, valid or not. */
  list(): PluginInfo[] {
    return this.#registry.all().map((plugin) =>
      this.#registry.info(plugin, this.#supervisor.running(plugin))
    );
  }

  /** One plugin, with its newest log lines. */
  get(id: string, logLines = 100): PluginInfo {
    const plugin = this.#registry.get(id);
    return {
      ...this.#registry.info(plugin, this.#supervisor.running(plugin)),
      log: plugin.log.tail(logLines),
    };
  }

  /**
   * Enables a plugin, granting `permissions`, which must be exactly what it asks for (the caller shows
   * them and confirms): a manifest that changed since it was shown is refused with 409.
   */
  async enable(id: string, permissions: PluginPermissions | undefined, origin = "api"): Promise<PluginInfo> {
    const granted = await this.#registry.consent(id, permissions);
    const plugin = this.#registry.get(id);
    const gates = (plugin.manifest?.hooks ?? []).filter((hook) => isGate(hook)).map((hook) => hook.on);
    if (this.#o.side === "laptop" && gates.length > 0) {
      // Gates run where the API they guard acts: the box's. Saying "enabled" here would promise a guard
      // that never runs.
      throw new DockError(
        "gates_not_run_here",
        `plugin '${id}' has gates (${gates.join(", ")}), and gates never run on the laptop: they guard a ` +
          "box's API, so enable it on a box (dock plugin install … --box B)",
        { status: 422 },
      );
    }
    await this.#registry.setEnabled(plugin, granted);
    this.#supervisor.stopWorkers(plugin);
    plugin.log.write("info", `enabled, granted ${describePermissions(granted)}`);
    this.#o.bus.publish({ type: "plugin.enabled", origin, data: { id, where: this.#o.where } });
    return this.#registry.info(plugin, this.#supervisor.running(plugin));
  }

  /** Disables a plugin: its workers stop and it receives nothing. */
  async disable(id: string, origin = "api"): Promise<PluginInfo> {
    const plugin = this.#registry.get(id);
    await this.#registry.setDisabled(plugin);
    this.#supervisor.halt(plugin);
    plugin.log.write("info", "disabled");
    this.#o.bus.publish({ type: "plugin.disabled", origin, data: { id, where: this.#o.where } });
    return this.#registry.info(plugin, this.#supervisor.running(plugin));
  }

  /** A plugin's settings: its schema, what is stored (a secret as its reference), what `ctx.config` gets. */
  async config(id: string): Promise<PluginConfig> {
    const plugin = this.#registry.get(id);
    const schema = plugin.manifest?.config;
    const values = await this.#registry.storedConfig(plugin);
    return {
      id,
      ...(schema ? { schema: schema as unknown as Record<string, unknown> } : {}),
      values,
      effective: effectiveConfig(schema, values),
    };
  }

  /** Replaces a plugin's settings (checked against its schema); its workers restart with them. */
  async setConfig(id: string, values: unknown, origin = "api"): Promise<PluginConfig> {
    const plugin = this.#registry.get(id);
    await this.#registry.setConfig(plugin, values);
    this.#supervisor.stopWorkers(plugin);
    // The keys only: a value may be a reference to a secret, and what changed is enough to say.
    plugin.log.write("info", `config set: ${Object.keys(values as object).join(", ") || "(empty)"}`);
    this.#o.bus.publish({ type: "plugin.configured", origin, data: { id, where: this.#o.where } });
    return await this.config(id);
  }

  /** Sends one test event to one plugin only (never the bus), and says what each module did. */
  async testEvent(id: string, request: PluginTestEvent, origin = "api"): Promise<PluginTestEventResult> {
    const plugin = this.#registry.get(id);
    const event: DockEvent = {
      type: request.type,
      time: new Date().toISOString(),
      origin: `test:${origin}`,
      data: request.data ?? {},
    };
    const delivered = await this.#supervisor.testEvent(plugin, event);
    return { id, event, delivered };
  }

  /**
   * Installs (or replaces) a plugin's files, sent over the API (`dock plugin install`): written whole at
   * once, then read like any plugin folder. Installing grants nothing: the caller enables it next, with
   * the permissions the user confirmed; a replaced plugin that now asks for more is off until then.
   */
  async install(id: string, files: PluginFile[], origin = "api"): Promise<PluginInfo> {
    await writePluginFiles(this.dir, id, files);
    await this.scan();
    const plugin = this.#registry.get(id);
    plugin.log.write("info", `installed (${files.length} files)`);
    this.#o.bus.publish({ type: "plugin.installed", origin, data: { id, where: this.#o.where } });
    return this.#registry.info(plugin, this.#supervisor.running(plugin));
  }

  /** Removes a plugin: disabled, its settings forgotten, its folder removed (its data folder is kept). */
  async remove(id: string, origin = "api"): Promise<{ id: string; where: string; removed: true }> {
    const plugin = this.#registry.get(id);
    await this.#registry.forget(plugin);
    this.#supervisor.halt(plugin);
    await removePluginFolder(this.dir, id);
    await this.scan();
    this.#o.bus.publish({ type: "plugin.uninstalled", origin, data: { id, where: this.#o.where } });
    return { id, where: this.#o.where, removed: true };
  }

  /** True when the plugin is enabled and may run (what serving its panel without a token needs). */
  isOn(id: string): boolean {
    const plugin = this.#registry.all().find((p) => p.id === id);
    return plugin !== undefined && this.#registry.offReason(plugin) === null;
  }

  /** A file of a plugin's folder listed in its `ui` (or `themes`): never outside it. */
  file(id: string, path: string): Promise<Response> {
    return pluginFile(this.#registry.get(id), path);
  }

  /** Themes of enabled plugins, each `{ ...theme, id: "<plugin>/<file>", plugin }`. */
  themes(): Promise<Record<string, unknown>[]> {
    return pluginThemes(this.#registry.all().filter((p) => this.#registry.offReason(p) === null));
  }

  /** Runs a plugin's `fetch` with `request`; the plugin sees the path after `/fn` (`subpath`). */
  fetch(id: string, subpath: string, request: Request): Promise<Response> {
    return this.#supervisor.fetch(this.#registry.get(id), subpath, request);
  }

  /** A call a plugin's `ui` panel asks the app to make (`POST plugins/{id}/ui-api`), as its `ctx.api`. */
  panelApi(id: string, request: PanelApiRequest): Promise<PanelApiResult> {
    return this.#context.panelApi(id, request);
  }

  /** Enabled plugins' gates (module and shell) and shell hooks, for the host's hooks engine. */
  extraHooks(): ExtraHook[] {
    return this.#supervisor.extraHooks();
  }

  /** Runs module hooks of hooks files and configs in the sandbox; shell hooks go to `shell`. */
  executor(shell: HookExecutor = shellExecutor): HookExecutor {
    return this.#supervisor.executor(shell);
  }

  /** Runs a flow's `module` step in the sandbox (see {@linkcode PluginSupervisor.runStep}). */
  runStep(options: StepRun): Promise<unknown> {
    return this.#supervisor.runStep(options);
  }
}
