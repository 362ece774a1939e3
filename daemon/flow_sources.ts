/**
 * Where the box's flows come from (spec 2.5, 2.6): the box's `~/.dock/flows.json` (any project, or one
 * `where.location`) and each location's effective config (repository, kit, box layer merged by id: a flow
 * replaced by id never runs; a replacement with `enabled: false` switches it off on this box). The file
 * is checked by its signature every `watchMs` and configs are read again when older than a second, so
 * edits take effect within a second. The engine (`flows.ts`) asks here which flows an event may start.
 *
 * @module
 */
import { dirname } from "../core/posix_path.ts";
import type { FlowConfig, FlowInfo, FlowSource, FlowsState } from "../client/wire.ts";
import { type Clock, every } from "../core/clock.ts";
import type { Log } from "../core/log.ts";
import { FLOWS_FILE } from "../core/config.ts";
import { readUserFileSync } from "../core/user_files.ts";
import { FileSignature } from "../core/files.ts";
import { OncePerBatch } from "../core/turn.ts";
import type { Locations } from "./locations.ts";

/** How long a location's config flows are reused before the config is read again. */
export const CONFIG_TTL_MS = 1000;

/** A flow that can run, with where it is written. */
export interface Candidate {
  flow: FlowConfig;
  scope: string;
  source: FlowSource;
  /** Where a `module` step's path is resolved and must stay inside. */
  moduleBase?: string;
  moduleRoot?: string;
}

/**
 * A flow in force on the box, as {@linkcode FlowSources.effective} lists it for trigger sources other than
 * the bus (schedules, the forge): enabled and not replaced by id in a later layer. `scope` is `box` (a box
 * flow for any project, or one whose `where.location` is a pattern) or `repo:<location>`.
 */
export type EffectiveFlow = Readonly<Candidate>;

/**
 * Why an effective flow cannot run on this box, from a trigger source (a schedule croner refuses, a forge
 * flow without the forge tool), or undefined. `GET flows` shows the first reason as `inactive_reason`.
 */
export type InactiveReason = (flow: FlowConfig, scope: string) => string | undefined;

/** What {@linkcode FlowSources} reads. */
export interface FlowSourcesOptions {
  /** `~/.dock/flows.json`. */
  file: string;
  locations: Pick<Locations, "list" | "get" | "config">;
  /** Orders the config cache's age and the file's checks. */
  clock: Clock;
  /** Told when the flows file stops parsing (the last good flows stay). */
  log: Log;
}

/** The box file's flows and each location's config flows, kept current. */
export class FlowSources {
  #o: FlowSourcesOptions;
  #fileFlows: FlowConfig[] = [];
  #fileError: string | undefined;
  #file: FileSignature;
  #configFlows = new Map<string, { candidates: Candidate[]; infos: FlowInfo[]; at: number }>();
  // A read that began before a config.changed must not cache what it read.
  #configGeneration = 0;
  #inactive: InactiveReason[] = [];
  #stopWatching?: () => void;
  /** The file is checked once for a batch of events the bus delivers together. */
  #batch = new OncePerBatch();

  constructor(options: FlowSourcesOptions) {
    this.#o = options;
    this.#file = new FileSignature(options.file);
    this.refresh();
  }

  /** Checks the flows file every `watchMs` from now on. */
  watch(watchMs: number): void {
    this.#stopWatching?.();
    this.#stopWatching = every(this.#o.clock, watchMs, () => this.refresh());
  }

  /** Stops checking the file. */
  close(): void {
    this.#stopWatching?.();
  }

  /**
   * {@linkcode refresh} once per batch of events (`OncePerBatch`): this stat and the hooks file's, each
   * once per event, were 3–9% of dockd's busy samples taking `POST events` as fast as it could
   * (`--cpu-prof`).
   */
  refreshInBatch(): void {
    this.#batch.run(() => this.refresh());
  }

  /** Checks the flows file's signature and reads it again when it changed; the last good flows stay. */
  refresh(): void {
    const now = this.#file.changed();
    if (!now) return;
    if (now === "missing") {
      this.#fileFlows = [];
      this.#fileError = undefined;
      return;
    }
    try {
      this.#fileFlows =
        readUserFileSync(this.#o.file, FLOWS_FILE, { missing: "absent", code: "invalid_flows" })
          ?.flows ?? [];
      this.#fileError = undefined;
    } catch (error) {
      this.#fileError = error instanceof Error ? error.message : String(error);
      this.#o.log.error(`flows: ${this.#fileError} (the last good flows stay in force)`);
    }
  }

  /** Forgets every cached config: an edit through the API takes effect for the very next event. */
  configChanged(): void {
    this.#configFlows.clear();
    this.#configGeneration++;
  }

  /** Forgets one location's cached config, so the next read is of the config as it is now. */
  forget(location: string): void {
    this.#configFlows.delete(location);
  }

  /** The box file's flows, as candidates. */
  fileCandidates(): Candidate[] {
    const dir = dirname(this.#o.file);
    return this.#fileFlows.map((flow) => {
      const location = (flow.trigger.where as { location?: string } | undefined)?.location;
      return {
        flow,
        scope: location && !location.endsWith("*") ? `repo:${location}` : "box",
        source: "box",
        moduleBase: dir,
        moduleRoot: dir,
      };
    });
  }

  /** A location's flows: the effective ones as candidates, and every layer's for the listing. */
  async locationFlows(location: string): Promise<{ candidates: Candidate[]; infos: FlowInfo[] }> {
    const cached = this.#configFlows.get(location);
    if (cached && this.#o.clock.now() - cached.at < CONFIG_TTL_MS) return cached;
    const generation = this.#configGeneration;
    const config = await this.#o.locations.config(location).catch(() => null);
    const scope = `repo:${location}`;
    const layers: [FlowSource, FlowConfig[]][] = [
      ["repo", config?.repo?.flows ?? []],
      ["kit", config?.kit?.flows ?? []],
      ["local", config?.local?.flows ?? []],
    ];
    const infos: FlowInfo[] = [];
    const winner = new Map<string, FlowSource>();
    for (const [source, flows] of layers) for (const flow of flows) winner.set(flow.id, source);
    for (const [source, flows] of layers) {
      for (const flow of flows) {
        infos.push({ ...flow, scope, source, overridden: winner.get(flow.id) !== source });
      }
    }
    let root: string | undefined;
    try {
      root = this.#o.locations.get(location).path;
    } catch { /* forgotten meanwhile */ }
    const candidates: Candidate[] = (config?.effective.flows ?? []).map((flow) => ({
      flow,
      scope,
      source: winner.get(flow.id) ?? "repo",
      moduleRoot: root,
    }));
    const entry = { candidates, infos, at: this.#o.clock.now() };
    if (generation === this.#configGeneration) this.#configFlows.set(location, entry);
    return entry;
  }

  /** `GET flows`: every flow on the box with its scope, source and whether it is overridden. */
  async list(): Promise<FlowsState> {
    this.refresh();
    const flows: FlowInfo[] = this.fileCandidates().map(({ flow, scope }) => ({
      ...flow,
      scope,
      source: "box",
      overridden: false,
    }));
    for (const location of this.#o.locations.list()) {
      this.#configFlows.delete(location.name); // a listing reads the configs as they are now
      flows.push(...(await this.locationFlows(location.name)).infos);
    }
    for (const info of flows) {
      if (info.enabled !== true || info.overridden) continue;
      const reason = this.#inactive.map((why) => why(info, info.scope)).find((r) => r !== undefined);
      if (reason !== undefined) info.inactive_reason = reason;
    }
    const state: FlowsState = { path: this.#o.file, flows };
    if (this.#fileError) state.error = this.#fileError;
    return state;
  }

  /** Adds a trigger source's explanation of why a flow cannot run, shown by `GET flows`. */
  explainInactive(reason: InactiveReason): void {
    this.#inactive.push(reason);
  }

  /**
   * Every flow in force on the box for trigger sources other than the bus: the box's file and each
   * location's effective config (the candidates the event path uses), enabled ones only. Configs are
   * read again when older than a second, as for events.
   */
  async effective(): Promise<EffectiveFlow[]> {
    this.refresh();
    const all: Candidate[] = [...this.fileCandidates()];
    for (const location of this.#o.locations.list()) {
      all.push(...(await this.locationFlows(location.name)).candidates);
    }
    return all.filter((candidate) => candidate.flow.enabled === true);
  }
}
