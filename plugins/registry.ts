/**
 * Which plugins there are and which may run: the folders in `~/.dock/plugins/<id>/` (each manifest read
 * and checked, its modules and files kept inside the folder), which of them are enabled and with what
 * grant (`<state>/plugins.json`, kept across restarts), and the consent check that enabling passes. What
 * moves a plugin along its lifecycle (`plugin_state.ts`) but a failure; the supervisor runs what this says
 * may run.
 *
 * @module
 */
import { dirname, join } from "../core/posix_path.ts";
import type { PluginInfo, PluginPermissions } from "../client/wire.ts";
import { DockError } from "../client/errors.ts";
import { describePermissions } from "../client/plugin.ts";
import { consentOf } from "./consent.ts";
import type { EventBus } from "../core/events.ts";
import { errorText, type Log } from "../core/log.ts";
import { readTextOrNull, writeAtomic } from "../core/files.ts";
import { ConfigError } from "../core/user_files.ts";
import {
  grantCovers,
  MANIFEST_FILE,
  normalizePermissions,
  PLUGIN_ID,
  type PluginManifest,
  readManifest,
  satisfies,
} from "./manifest.ts";
import {
  folderSignature,
  inside,
  lstatOrNull,
  symlinkOut,
  unchanged,
  unchangedSync,
  walkFolder,
} from "./folder_check.ts";
import { listedState, Plugin, type PluginPhaseChange } from "./plugin_state.ts";
import type { WorkerContext, WorkerGrant, WorkerSpec } from "./protocol.ts";
import { VERSION } from "../client/version.ts";
import {
  checkConfig,
  type ConfigValues,
  effectiveConfig,
  envSecret,
  readConfig,
  secretReferences,
  writeConfig,
} from "./plugin_config.ts";

/** A manifest that asks for nothing: one object, so grantCovers' answer for it is kept. */
const NO_PERMISSIONS: PluginPermissions = Object.freeze({});

/** Bytes a plugin's data folder may hold; past them it is read-only to the plugin. */
export const DATA_QUOTA_BYTES = 100 * 1024 * 1024;
/** How often a data folder's size is measured (a walk of it), at most. */
const MEASURE_MS = 2000;

interface EnabledFile {
  enabled: Record<string, { permissions: PluginPermissions; time: string }>;
}

/** Options of {@linkcode PluginRegistry}. */
export interface RegistryOptions {
  /** `DOCK_HOME`: plugins are in its `plugins/`. */
  home: string;
  /** The process's own state folder: grants (`plugins.json`), data folders, logs. */
  state: string;
  /** `laptop`, or the box's name (`PluginInfo.where`). */
  where: string;
  bus: EventBus;
  /** The process's own log (a grants file that does not parse; a plugin's log or store that fails). */
  log: Log;
  /** Resolves a secret reference (a box's vaults); `env://NAME` from the process's environment by default. */
  resolveSecret?: (reference: string) => Promise<string | undefined>;
  /** dock's version, which `engines.dock` is checked against. @default {VERSION} */
  version?: string;
  /** Bytes a data folder may hold. @default {DATA_QUOTA_BYTES} */
  dataQuotaBytes?: number;
  /** A plugin's files changed, or it went away: its workers must stop. */
  onReload(plugin: Plugin): void;
  /** Told of each change of a plugin's phase (tests watch the lifecycle through it). */
  onPhase?(change: PluginPhaseChange): void;
}

/** The plugin folders of one process, their manifests and their grants. */
export class PluginRegistry {
  readonly dir: string;
  readonly dataRoot: string;
  readonly logs: string;
  /** Where each plugin's settings are kept (`<id>.json`): outside its data folder, which it may write. */
  readonly configDir: string;
  #o: RegistryOptions;
  #plugins = new Map<string, Plugin>();
  #enabled: EnabledFile = { enabled: {} };
  #enabledPath: string;
  #scanning: Promise<void> | null = null;
  #again: Promise<void> | null = null;

  constructor(options: RegistryOptions) {
    this.#o = options;
    this.dir = join(options.home, "plugins");
    this.#enabledPath = join(options.state, "plugins.json");
    this.dataRoot = join(options.state, "plugins");
    this.logs = join(options.state, "plugin-logs");
    this.configDir = join(options.state, "plugin-config");
  }

  /** Reads the grants (`plugins.json`); one that does not parse leaves every plugin off. */
  async load(): Promise<void> {
    const text = await readTextOrNull(this.#enabledPath);
    try {
      if (text) this.#enabled = { enabled: JSON.parse(text).enabled ?? {} };
    } catch (error) {
      this.#o.log.error(
        `plugins: ${this.#enabledPath} does not parse (${errorText(error)}); all plugins off`,
      );
    }
  }

  /** Every plugin folder, in name order. */
  all(): Plugin[] {
    return [...this.#plugins.values()];
  }

  /** The plugin `id`, or a 404. */
  get(id: string): Plugin {
    const plugin = PLUGIN_ID.test(id) ? this.#plugins.get(id) : undefined;
    if (!plugin) throw new DockError("not_found", `no plugin '${id}' in ${this.dir}`, { status: 404 });
    return plugin;
  }

  /** The plugin a worker belongs to (none for a hook file's or a flow step's module). */
  pluginOf(spec: WorkerSpec): Plugin | undefined {
    return spec.label.startsWith("plugin:")
      ? this.#plugins.get(spec.label.slice("plugin:".length))
      : undefined;
  }

  /** What the plugin was granted (empty when it is not enabled). */
  granted(plugin: Plugin): Required<PluginPermissions> {
    return normalizePermissions(this.#enabled.enabled[plugin.id]?.permissions);
  }

  // -------------------------------------------------------------------------------------------------
  // Folders

  /** Checks every plugin folder now; a changed one is read again and its workers stopped. */
  scan(): Promise<void> {
    if (!this.#scanning) {
      this.#scanning = this.#scan().finally(() => this.#scanning = null);
      return this.#scanning;
    }
    // A scan asked for while one runs may be asked because of a change that one read too early to see
    // (a plugin removed or installed a moment ago): it runs once more after it, and every such ask
    // meanwhile shares that one (seen: a removed plugin still listed after its removal's own scan).
    this.#again ??= this.#scanning.catch(() => {}).then(() => {
      this.#again = null;
      return this.scan();
    });
    return this.#again;
  }

  async #scan(): Promise<void> {
    const seen = new Set<string>();
    let entries: Deno.DirEntry[] = [];
    try {
      entries = await Array.fromAsync(Deno.readDir(this.dir));
    } catch {
      // no plugins folder: no plugins
    }
    for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      if (!PLUGIN_ID.test(entry.name)) continue;
      const dir = join(this.dir, entry.name);
      const signature = await folderSignature(dir);
      if (signature === null) continue;
      seen.add(entry.name);
      let plugin = this.#plugins.get(entry.name);
      if (plugin && plugin.signature === signature) continue;
      // Read first, then put in place: a listing meanwhile sees the old state or the new, never half.
      const fresh = plugin ??
        new Plugin(entry.name, dir, this.logs, join(this.dataRoot, entry.name), this.#o.log, this.#o.onPhase);
      const loaded = await this.#load(fresh);
      plugin = this.#plugins.get(entry.name) ?? fresh;
      this.#plugins.set(entry.name, plugin);
      this.#o.onReload(plugin);
      // Its files changed: what failed is tried again (the dev loop: a fixed syntax error needs no
      // enable), and what the old files got wrong is no longer said.
      Object.assign(plugin, loaded, { signature, folderStamps: undefined, lastError: undefined });
      plugin.move(loaded.manifest ? "read" : "reject");
      this.#o.bus.publish({
        type: "plugin.changed",
        origin: "dock",
        data: { id: plugin.id, where: this.#o.where },
      });
    }
    for (const plugin of this.#plugins.values()) {
      // Those with live workers (between calls too: work may go on after an answer): the rest are
      // checked before their next call.
      if (seen.has(plugin.id) && plugin.workers.size > 0) await this.guard(plugin);
    }
    for (const [id, plugin] of this.#plugins) {
      if (seen.has(id)) continue;
      this.#o.onReload(plugin);
      this.#plugins.delete(id);
      this.#o.bus.publish({ type: "plugin.removed", origin: "dock", data: { id, where: this.#o.where } });
    }
  }

  /** A plugin folder's manifest (every module it names checked to be inside), or why it does not load. */
  async #load(
    plugin: Plugin,
  ): Promise<{ manifest: PluginManifest | undefined; invalid: string | undefined; realDir: string }> {
    let realDir = plugin.realDir;
    try {
      realDir = await Deno.realPath(plugin.dir);
      const manifest = await readManifest(join(plugin.dir, MANIFEST_FILE), plugin.id);
      const version = this.#o.version ?? VERSION;
      const range = manifest.engines?.dock;
      if (range !== undefined && !satisfies(version, range)) {
        throw new DockError(
          "invalid_plugin",
          `${join(plugin.dir, MANIFEST_FILE)}: engines.dock is '${range}', and this is dock ${version}; ` +
            "install a version of the plugin made for it",
        );
      }
      // Deno checks a path as given, not where a symlink leads: a link in the folder to ~/.ssh would be
      // readable through the folder's own grant. A plugin holding one does not run.
      const escape = await symlinkOut(plugin.dir, realDir);
      if (escape) {
        throw new DockError(
          "invalid_plugin",
          `${plugin.dir}: ${escape}; a plugin's files stay in its folder`,
        );
      }
      // Every module it names must really be inside its folder (a symlink out is refused here).
      for (const module of modulesOf(manifest)) await this.modulePath({ dir: plugin.dir, realDir }, module);
      return { manifest, invalid: undefined, realDir };
    } catch (error) {
      const invalid = error instanceof ConfigError || error instanceof DockError
        ? error.message
        : `${join(plugin.dir, MANIFEST_FILE)}: ${(error as Error).message}`;
      return { manifest: undefined, invalid, realDir };
    }
  }

  /** The real path of a module a plugin names: never outside its folder. */
  async modulePath(plugin: { dir: string; realDir: string }, module: string): Promise<string> {
    const path = join(plugin.dir, module);
    let real: string;
    try {
      real = await Deno.realPath(path);
    } catch {
      throw new DockError(
        "invalid_plugin",
        `${join(plugin.dir, MANIFEST_FILE)}: module ${module} does not exist`,
      );
    }
    if (!inside(real, plugin.realDir)) {
      throw new DockError(
        "invalid_plugin",
        `${join(plugin.dir, MANIFEST_FILE)}: module ${module} leads outside the plugin's folder`,
      );
    }
    return real;
  }

  // -------------------------------------------------------------------------------------------------
  // Enabling: the consent check

  /**
   * The permissions a plugin may be enabled with: exactly what it asks for (the caller showed them and
   * confirmed), else 409 (its manifest changed since it was shown); 422 when it does not load. Without
   * `permissions` (a bare `POST …/enable`, spec 4.1) only a plugin that asks for nothing beyond reading
   * its own folder is enabled; any other answers 409 `permissions_required` with what must be confirmed.
   */
  async consent(
    id: string,
    permissions: PluginPermissions | undefined,
  ): Promise<Required<PluginPermissions>> {
    await this.scan();
    const plugin = this.get(id);
    if (!plugin.manifest) {
      throw new DockError("invalid_plugin", plugin.invalid ?? "the plugin does not load", { status: 422 });
    }
    const asked = normalizePermissions(plugin.manifest.permissions);
    if (permissions === undefined) {
      if (Object.values(asked).every((values) => values.length === 0)) return asked;
      throw new DockError(
        "permissions_required",
        `plugin '${id}' asks for ${describePermissions(asked, consentOf(asked))}; ` +
          "confirm exactly that in the body's permissions",
        { status: 409, detail: { permissions: asked } },
      );
    }
    if (JSON.stringify(normalizePermissions(permissions)) !== JSON.stringify(asked)) {
      throw new DockError(
        "permissions_changed",
        `plugin '${id}' asks for ${describePermissions(asked, consentOf(asked))}; confirm exactly that`,
        { status: 409, detail: { permissions: asked } },
      );
    }
    return asked;
  }

  /** Records a grant (after {@linkcode PluginRegistry.consent}), its data folders made, and clears a failure. */
  async setEnabled(plugin: Plugin, granted: Required<PluginPermissions>): Promise<void> {
    await Deno.mkdir(plugin.data, { recursive: true, mode: 0o700 });
    for (const path of [...granted.read, ...granted.write]) {
      if (path !== ".") {
        await Deno.mkdir(join(plugin.data, path), { recursive: true, mode: 0o700 }).catch(() => {});
      }
    }
    this.#enabled.enabled[plugin.id] = { permissions: granted, time: new Date().toISOString() };
    await this.#saveEnabled();
    plugin.move("enable");
  }

  /** Forgets a plugin's grant and its settings (it was removed; its data folder is kept). */
  async forget(plugin: Plugin): Promise<void> {
    await this.setDisabled(plugin);
    await Deno.remove(this.configPath(plugin)).catch(() => {});
  }

  /** Forgets a plugin's grant. */
  async setDisabled(plugin: Plugin): Promise<void> {
    delete this.#enabled.enabled[plugin.id];
    await this.#saveEnabled();
  }

  async #saveEnabled(): Promise<void> {
    await Deno.mkdir(dirname(this.#enabledPath), { recursive: true, mode: 0o700 });
    await writeAtomic(this.#enabledPath, JSON.stringify(this.#enabled, null, 2) + "\n", 0o600);
  }

  /**
   * Checks, before each call and at each scan while it has workers, that no symlink under the plugin's folder or its data
   * folder leads out of it (Deno follows one under a granted path: measured, a worker read a file outside
   * through a link in its data folder), and measures the data folder against its quota (every
   * {@linkcode MEASURE_MS} at most). What changes stops its workers: they restart with the grant that
   * follows (read-only data while over quota); while unsafe its calls are refused (the next one checks
   * again, as does each scan). Returns why it may not run, or null: at once, awaiting nothing, when its
   * stamps say nothing changed (a warm call's path); a promise when something must be walked or measured.
   *
   * A data folder its workers are granted nothing of is not theirs to read: a link there leads them
   * nowhere, so it is looked at only when it is measured (and before every call while a link was found).
   */
  guard(plugin: Plugin): string | null | Promise<string | null> {
    return this.#unchangedSince(plugin) ? null : this.#guard(plugin);
  }

  /**
   * Whether the guard's last look still holds: it found nothing, no measure is due, and neither folder the
   * workers may reach has a directory changed since (a stat of each, synchronous; false when there are
   * more than `unchanged` stats synchronously, so the full guard does it).
   */
  #unchangedSince(plugin: Plugin): boolean {
    if (plugin.unsafe !== undefined || performance.now() - plugin.measuredAt >= MEASURE_MS) return false;
    if (plugin.manifest && !unchangedSync(plugin.folderStamps)) return false;
    return !this.#dataReachable(plugin) ? plugin.dataStamps !== undefined : unchangedSync(plugin.dataStamps);
  }

  /** Whether a plugin's workers are granted anything in its data folder (to read or to write). */
  #dataReachable(plugin: Plugin): boolean {
    const grant = this.#enabled.enabled[plugin.id]?.permissions;
    return (grant?.read?.length ?? 0) > 0 || (grant?.write?.length ?? 0) > 0;
  }

  async #guard(plugin: Plugin): Promise<string | null> {
    let unsafe: string | null = null;
    if (plugin.manifest && !await unchanged(plugin.folderStamps)) {
      const found = await walkFolder(plugin.dir, plugin.realDir, false).catch((e) => ({
        escape: `${(e as Error).message}`,
        stamps: undefined,
      }));
      plugin.folderStamps = found.escape ? undefined : found.stamps;
      if (found.escape) unsafe = `${plugin.dir}: ${found.escape}`;
    }
    const measure = performance.now() - plugin.measuredAt >= MEASURE_MS;
    // The quick check first: a call on a warm path costs a stat per directory, no realPath, no walk.
    const dataChanged = this.#dataReachable(plugin)
      ? !await unchanged(plugin.dataStamps)
      : plugin.dataStamps === undefined;
    const dataInfo = !unsafe && (measure || dataChanged) ? lstatOrNull(plugin.data) : null;
    if (dataInfo?.isSymlink) unsafe = `${plugin.data} is a symlink`;
    const realData = dataInfo?.isDirectory ? await Deno.realPath(plugin.data).catch(() => null) : null;
    if (!unsafe && realData) {
      const found = await walkFolder(plugin.data, realData, measure).catch((e) => ({
        escape: `${(e as Error).message}`,
        bytes: plugin.dataBytes,
        stamps: undefined,
      }));
      plugin.dataStamps = found.escape ? undefined : found.stamps;
      if (found.escape) unsafe = `${plugin.data}: ${found.escape}`;
      if (measure) {
        plugin.dataBytes = found.bytes;
        plugin.measuredAt = performance.now();
      }
    }
    const quota = this.#o.dataQuotaBytes ?? DATA_QUOTA_BYTES;
    const overQuota = plugin.dataBytes > quota;
    if ((unsafe ?? undefined) !== plugin.unsafe || overQuota !== plugin.overQuota) {
      if (unsafe && unsafe !== plugin.unsafe) plugin.log.write("error", `not run: ${unsafe}`);
      if (overQuota && !plugin.overQuota) {
        plugin.log.write(
          "error",
          `its data folder holds ${plugin.dataBytes} bytes, over its ${quota}: read-only until it is below`,
        );
      }
      plugin.unsafe = unsafe ?? undefined;
      plugin.overQuota = overQuota;
      this.#o.onReload(plugin);
    }
    return unsafe;
  }

  /** Why a plugin may not run now, or null when it may. */
  offReason(plugin: Plugin): string | null {
    if (!plugin.manifest) return plugin.invalid ?? "its manifest does not load";
    const grant = this.#enabled.enabled[plugin.id];
    if (!grant) return "not enabled";
    if (!grantCovers(grant.permissions, plugin.manifest.permissions ?? NO_PERMISSIONS)) {
      return `it now asks for ${
        describePermissions(
          normalizePermissions(plugin.manifest.permissions),
          consentOf(plugin.manifest.permissions),
        )
      }, more than was granted; enable it again`;
    }
    return null;
  }

  /** Loaded and not failed, enabled, and covered by its grant. */
  runnable(plugin: Plugin): boolean {
    return plugin.phase === "loaded" && this.offReason(plugin) === null;
  }

  /** What a plugin's workers get: its folder, and in its data folder what it was granted. */
  workerGrant(plugin: Plugin): WorkerGrant {
    const grant = this.granted(plugin);
    const inData = (p: string) => p === "." ? plugin.data : join(plugin.data, p);
    return {
      read: [plugin.realDir, ...grant.read.map(inData), ...grant.write.map(inData)],
      write: plugin.overQuota ? [] : grant.write.map(inData),
      net: grant.net,
      env: grant.env,
    };
  }

  /** Every runnable plugin's grant: a host is started with them all, so enabling one rarely restarts it. */
  knownGrants(): WorkerGrant[] {
    return this.all().filter((p) => this.runnable(p)).map((p) => this.workerGrant(p));
  }

  // -------------------------------------------------------------------------------------------------
  // Settings and secrets

  /** Where a plugin's settings are kept. */
  configPath(plugin: Plugin): string {
    return join(this.configDir, `${plugin.id}.json`);
  }

  /** A plugin's stored settings (secret ones as their references). */
  storedConfig(plugin: Plugin): Promise<ConfigValues> {
    return readConfig(this.configPath(plugin));
  }

  /** Checks `values` against the plugin's `config` schema and stores them (all at once, replacing). */
  async setConfig(plugin: Plugin, values: unknown): Promise<ConfigValues> {
    if (!plugin.manifest) {
      throw new DockError("invalid_plugin", plugin.invalid ?? "the plugin does not load", { status: 422 });
    }
    const checked = checkConfig(plugin.manifest.config, values);
    await writeConfig(this.configPath(plugin), checked);
    return checked;
  }

  /**
   * What the plugin's workers get in `ctx`: its settings with defaults, its secrets resolved (a reference
   * that does not resolve is left out and said in its log, by key and scheme only), its data folder.
   */
  async workerContext(plugin: Plugin): Promise<WorkerContext> {
    const schema = plugin.manifest?.config;
    const stored = schema ? await this.storedConfig(plugin) : {};
    const secrets: Record<string, string> = {};
    for (const [key, reference] of Object.entries(secretReferences(schema, stored))) {
      const value = await (this.#o.resolveSecret ?? envSecret)(reference).catch(() => undefined);
      if (value === undefined) {
        plugin.log.write("warn", `secret ${key} (${reference.split(":")[0]}://…) did not resolve`);
      } else secrets[key] = value;
    }
    return { config: effectiveConfig(schema, stored), secrets, dataDir: plugin.data };
  }

  /** A plugin as the API lists it; `running` says whether one of its workers runs now. */
  info(plugin: Plugin, running: boolean): PluginInfo {
    const manifest = plugin.manifest;
    const grant = this.#enabled.enabled[plugin.id];
    const off = this.offReason(plugin);
    const state = listedState({
      phase: plugin.phase,
      off,
      unsafe: plugin.unsafe,
      starting: plugin.starting,
      running,
    });
    const error = plugin.failed ?? (off && off !== "not enabled" ? off : undefined) ??
      (plugin.unsafe ? `${plugin.unsafe}; it runs again once that is gone` : plugin.lastError);
    return {
      id: plugin.id,
      ...(manifest ? { name: manifest.name, version: manifest.version } : {}),
      ...(manifest?.description ? { description: manifest.description } : {}),
      where: this.#o.where,
      path: plugin.dir,
      enabled: grant !== undefined,
      state,
      ...(error ? { error } : {}),
      ...(manifest ? { permissions: normalizePermissions(manifest.permissions) } : {}),
      ...(grant ? { granted: grant.permissions } : {}),
      ...consentOf(manifest?.permissions),
      ...(manifest?.main ? { main: manifest.main } : {}),
      ...(manifest?.hooks ? { hooks: manifest.hooks } : {}),
      ...(manifest?.themes ? { themes: manifest.themes } : {}),
      ...(manifest?.ui ? { ui: manifest.ui } : {}),
      counters: { ...plugin.counters },
    };
  }
}

/** The key of a plugin module's worker. */
export function workerKey(plugin: Plugin, module: string): string {
  return `plugin:${plugin.id}:${module}`;
}

/** Every module a manifest names (main and module hooks). */
export function modulesOf(manifest: PluginManifest | undefined): Set<string> {
  const modules = new Set<string>();
  if (manifest?.main) modules.add(manifest.main);
  for (const hook of manifest?.hooks ?? []) if (hook.module) modules.add(hook.module);
  return modules;
}
