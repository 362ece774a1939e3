/**
 * Hooks and `before:` gates (spec 2.5, 2.9, 6): the person's own scripts, run on events and before
 * actions.
 *
 * - **Hooks** run for events: the box's `~/.dock/hooks.json`, and each location's effective config
 *   (repository, kit and box layers concatenated) for that repository's events only, run in the
 *   worktree. The event bus only hands each event to a queue here; matching, reading config and
 *   spawning happen off the publishing path, with a bound on concurrent hooks, so a slow or hanging
 *   hook never slows event delivery or the API.
 * - **Gates** (`on: "before:<action>"`) run before an API request acts. Every gate must exit 0; the
 *   first that does not refuses the request with 403 `gate_refused` (the message is the first line of
 *   its stderr), and one that outlives its timeout (30 s by default) refuses with `gate_timeout`.
 *
 * `hook.*` events (a hook failed) never run hooks, so a failing `*` hook cannot feed itself.
 * The engine (matching, the watched file, the bounded runner, the executor seam) is `core/hooks.ts`.
 *
 * @module
 */
import type { DockEvent, HookConfig, Worktree } from "../client/wire.ts";
import { DockError } from "../client/errors.ts";
import type { EventBus } from "../core/events.ts";
import type { Clock } from "../core/clock.ts";
import { errorText, type Log } from "../core/log.ts";
import {
  DOCK_SETTINGS,
  eventVariables,
  type ExtraHook,
  extraShellHooksFor,
  fieldVariable,
  firstLine,
  type GateAction,
  type GateContext,
  gatesFor,
  HOOK_BACKLOG,
  type HookExecutor,
  type HookJob,
  type HookResult,
  type HooksFileState,
  hooksFor,
  HooksHost,
  isGate,
} from "../core/hooks.ts";
import { dirname, join } from "../core/posix_path.ts";
import { SerialQueue } from "./serial_queue.ts";
import type { Locations } from "./locations.ts";
import type { Worktrees } from "./worktrees.ts";

/** What the box's hooks need from the rest of the daemon. */
export interface HooksOptions {
  bus: EventBus;
  /** `~/.dock/hooks.json`. */
  file: string;
  /** The box's name (`DOCK_EVENT_BOX`, the gate's `box`). */
  boxName: string;
  /** Where box hooks run when an event has no worktree. */
  home: string;
  locations: Locations;
  worktrees: Worktrees;
  /** A session's location and worktree, by its name (null when unknown). */
  sessionPlace: (name: string) => { location: string; worktree: string } | null;
  /** @default {HOOK_CONCURRENCY} */
  concurrency?: number;
  /** What runs each hook and gate. @default {shellExecutor} */
  executor?: HookExecutor;
  /** Hooks from enabled plugins: their gates, and their shell hooks for events. */
  extra?: () => ExtraHook[];
  /** How often the hooks file is checked for edits (and `hooks.changed` announced). @default {1000} */
  watchMs?: number;
  /** Dates gate input and ages the config cache. */
  clock: Clock;
  /** Told of an event the hooks could not handle and of an environment that could not be built. */
  log: Log;
}

/** Where an event or an action happened: its location and worktree, when it has them. */
interface Place {
  location?: string;
  root?: string;
  worktree?: Worktree;
}

/** How long a location's config hooks are reused before the config is read again. */
const CONFIG_HOOKS_TTL_MS = 1000;

/** Gate target fields that hold a prompt: on the gate's stdin, never in a `DOCK_*` variable. */
const STDIN_ONLY = new Set(["text", "prompt"]);

/** Runs the box's hooks on its events and its gates before its actions. */
export class Hooks extends HooksHost {
  #o: HooksOptions;
  // Matching, reading config and queueing runs happen here, off the bus's publishing path.
  #events: SerialQueue<DockEvent>;
  #configHooks = new Map<string, { hooks: HookConfig[]; at: number }>();

  constructor(options: HooksOptions) {
    super({
      bus: options.bus,
      file: options.file,
      origin: "dockd",
      concurrency: options.concurrency,
      executor: options.executor,
      clock: options.clock,
      log: options.log,
    });
    this.#o = options;
    this.#events = new SerialQueue<DockEvent>({
      handle: (event) => this.#dispatch(event),
      backlog: HOOK_BACKLOG,
      name: "hooks",
      describe: (event) => event.type,
      log: options.log,
    });
  }

  /** Follows the event bus and watches the hooks file. */
  override start(): void {
    super.start(this.#o.watchMs);
  }

  /** The box's hooks file and its runs; events not yet dispatched count as queued. */
  override state(): HooksFileState {
    const state = super.state();
    return { ...state, runs: { ...state.runs!, queued: state.runs!.queued + this.#events.waiting } };
  }

  /**
   * Runs every `before:<action>` gate (the box's and, for an action in a location, that location's);
   * resolves when all allow, throws a 403 DockError (`gate_refused` with the first line of the gate's
   * stderr, or `gate_timeout`) when one refuses. `target` is what the gate receives on stdin as
   * `target` (identifiers; for `session.send` the text, for `session.create` the first prompt, neither
   * of them in a variable).
   */
  async gate(action: GateAction, target: Record<string, unknown>, context: GateContext): Promise<void> {
    // Where the action is, and its worktree, are looked up only once a gate is found: most requests
    // find none, and the lookups were most of a gated keystroke's gate step.
    const where = this.#actionWhere(target, context);
    let known: Place | undefined;
    const placeOf = () => known ??= where.location ? this.#placeNamed(where.location, where.worktree) : {};
    const gates: {
      hook: HookConfig;
      source: string;
      run?: (input: string) => Promise<HookResult>;
      moduleBase?: string;
      moduleRoot?: string;
    }[] = gatesFor(this.file.current(), action, context.origin)
      .map((hook) => ({ hook, source: this.file.path, ...this.#fileModules() }));
    for (const extra of this.#o.extra?.() ?? []) {
      if (extra.ownOrigin === context.origin) continue;
      for (const hook of gatesFor([extra.hook], action, context.origin)) {
        gates.push({ hook, source: extra.source, run: extra.run });
      }
    }
    if (where.location) {
      // Read now, not from the cache: a gate added a moment ago must already hold. An unknown
      // location has no config, so no gates.
      const config = await this.#o.locations.config(where.location).catch(() => null);
      for (const hook of gatesFor(config?.effective.hooks ?? [], action, context.origin)) {
        const place = placeOf();
        gates.push({
          hook,
          source: `config of location '${where.location}'`,
          ...this.#configModules(place.worktree?.path ?? place.root),
        });
      }
    }
    if (gates.length === 0) return;
    const place = placeOf();

    const base = await this.#environment(place);
    const env: Record<string, string> = {
      ...base,
      DOCK_ACTION: action,
      DOCK_EVENT_TYPE: `before:${action}`,
      DOCK_EVENT_ORIGIN: context.origin,
      DOCK_EVENT_BOX: this.#o.boxName,
    };
    for (const [key, value] of Object.entries(target)) {
      // Prompt text goes to stdin only: a variable is visible in the process table.
      if (STDIN_ONLY.has(key)) continue;
      if (typeof value === "string" || typeof value === "number" || typeof value === "boolean") {
        const name = fieldVariable(key);
        // Never over what is set above or over one of dock's own settings (see DOCK_SETTINGS).
        if (!(name in env) && !DOCK_SETTINGS.has(name)) env[name] = String(value);
      }
    }
    const stdin = JSON.stringify({
      action,
      target,
      origin: context.origin,
      box: this.#o.boxName,
      time: new Date(this.#o.clock.now()).toISOString(),
      ...(place.location ? { location: place.location } : {}),
      ...(place.worktree ? { worktree: place.worktree.name } : {}),
    });
    const cwd = place.worktree?.path ?? place.root ?? this.#o.home;
    const results = await Promise.all(gates.map(async ({ hook, source, run, moduleBase, moduleRoot }) => {
      try {
        const result = run ? await run(stdin) : await this.executor.run(hook, stdin, {
          cwd: await existingDir(cwd, this.#o.home),
          env,
          moduleBase,
          moduleRoot,
        });
        return { hook, source, result };
      } catch (error) {
        return { hook, source, error: String(error) };
      }
    }));
    for (const { hook, source, result, error } of results) {
      if (result && result.code === 0 && !result.timedOut) continue;
      const code = result?.timedOut ? "gate_timeout" : "gate_refused";
      const message = result?.timedOut
        ? `the ${hook.on} gate in ${source} did not answer within ${hook.timeout ?? "30s"}`
        : firstLine(result?.stderr ?? "") ||
          `the ${hook.on} gate in ${source} refused (${error ?? `exit code ${result?.code}`})`;
      this.#o.bus.publish({
        type: "gate.refused",
        origin: context.origin,
        data: { action, code, source, ...(place.location ? { location: place.location } : {}) },
      });
      throw new DockError(code, message, { status: 403, detail: { action, source } });
    }
  }

  protected onEvent(event: DockEvent): void {
    if (event.type.startsWith("hook.")) return;
    this.#events.push(event);
  }

  async #dispatch(event: DockEvent): Promise<void> {
    const boxHooks = hooksFor(this.file.current(), event);
    const pluginHooks = extraShellHooksFor(this.#o.extra?.() ?? [], event);
    const where = this.#eventWhere(event);
    const configHooks = where.location ? hooksFor(await this.#locationHooks(where.location), event) : [];
    if (boxHooks.length === 0 && configHooks.length === 0 && pluginHooks.length === 0) return;
    const place = where.place();
    const base = await this.#environment(place);
    const env = {
      ...base,
      ...eventVariables(event, { box: this.#o.boxName, keep: place.worktree ? base : undefined }),
    };
    const inWorktree = place.worktree?.path ?? place.root;
    const boxCwd = await existingDir(inWorktree ?? this.#o.home, this.#o.home);
    const jobs: HookJob[] = boxHooks.map((hook) => ({
      hook,
      source: this.file.path,
      event,
      cwd: boxCwd,
      env,
      ...this.#fileModules(),
    }));
    for (const { hook, source } of pluginHooks) jobs.push({ hook, source, event, cwd: boxCwd, env });
    if (configHooks.length) {
      const source = `config of location '${place.location}'`;
      const modules = this.#configModules(inWorktree);
      for (const hook of configHooks) jobs.push({ hook, source, event, cwd: boxCwd, env, ...modules });
    }
    // In one call: the event's hooks that can start together do (core/hook_exec.ts).
    this.runner.submit(...jobs);
  }

  /** Where module hooks of the hooks file are found: beside it, inside `DOCK_HOME`. */
  #fileModules(): { moduleBase: string; moduleRoot: string } {
    const dir = dirname(this.file.path);
    return { moduleBase: dir, moduleRoot: dir };
  }

  /** Where module hooks of a location's config are found: relative to `.dock/`, inside the checkout. */
  #configModules(checkout: string | undefined): { moduleBase?: string; moduleRoot?: string } {
    return checkout ? { moduleBase: join(checkout, ".dock"), moduleRoot: checkout } : {};
  }

  /** A location's effective config hooks, read at most once a second. */
  async #locationHooks(location: string): Promise<HookConfig[]> {
    const cached = this.#configHooks.get(location);
    if (cached && this.#o.clock.now() - cached.at < CONFIG_HOOKS_TTL_MS) return cached.hooks;
    const config = await this.#o.locations.config(location).catch(() => null);
    const hooks = (config?.effective.hooks ?? []).filter((hook) => !isGate(hook));
    this.#configHooks.set(location, { hooks, at: this.#o.clock.now() });
    return hooks;
  }

  /**
   * The location and worktree an event belongs to, from its `location`/`worktree`, `path` or `session`:
   * the names, and the place itself once asked for (`place()`: store reads, made only for an event some
   * hook matches).
   */
  #eventWhere(event: DockEvent): { location?: string; place: () => Place } {
    const data = event.data ?? {};
    const text = (key: string) => typeof data[key] === "string" ? data[key] as string : undefined;
    let location = text("location");
    let worktreeName = text("worktree");
    if (!location && text("session")) {
      const place = this.#o.sessionPlace(text("session")!);
      if (place) ({ location, worktree: worktreeName } = place);
    }
    if (!location && text("path")) {
      const worktree = this.#o.worktrees.containing(text("path")!);
      if (worktree) {
        const place = this.#place(worktree.location, worktree);
        return { location: place.location, place: () => place };
      }
    }
    if (!location) return { place: () => ({}) };
    const named = location;
    let place: Place | undefined;
    // A worktree gone (worktree.removed): its hooks run in the repository's root.
    return { location, place: () => place ??= this.#placeNamed(named, worktreeName) };
  }

  /** The location and worktree names an action is in: its context's, else its session's. */
  #actionWhere(
    target: Record<string, unknown>,
    context: GateContext,
  ): { location?: string; worktree?: string } {
    let location = context.location;
    let worktreeName = context.worktree;
    if (!location && typeof target.session === "string") {
      const place = this.#o.sessionPlace(target.session);
      if (place) ({ location, worktree: worktreeName } = place);
    }
    if (location?.includes("/") && !worktreeName) [location, worktreeName] = location.split("/", 2);
    return { location, worktree: worktreeName };
  }

  /** The place of a location and, when named, its worktree (the repository's root when it is gone). */
  #placeNamed(location: string, worktreeName?: string): Place {
    let worktree: Worktree | undefined;
    if (worktreeName) {
      try {
        worktree = this.#o.worktrees.get(location, worktreeName);
      } catch { /* not there (yet): the gate runs in the repository's root */ }
    }
    return this.#place(location, worktree);
  }

  #place(location: string, worktree?: Worktree): Place {
    try {
      return { location, root: this.#o.locations.get(location).path, worktree };
    } catch {
      return {}; // an unknown location has no config hooks
    }
  }

  /** The worktree's environment where there is one (unresolvable secrets left out), else the daemon's. */
  async #environment(place: Place): Promise<Record<string, string>> {
    if (place.worktree) {
      try {
        return (await this.#o.worktrees.environment(place.worktree)).env;
      } catch (error) {
        this.#o.log.error(
          `hooks: environment of ${place.worktree.location}/${place.worktree.name}: ${errorText(error)}`,
        );
      }
    }
    return Deno.env.toObject();
  }
}

/** `dir` when it exists, else `fallback` (a worktree removed a moment ago). */
async function existingDir(dir: string, fallback: string): Promise<string> {
  try {
    return (await Deno.stat(dir)).isDirectory ? dir : fallback;
  } catch {
    return fallback;
  }
}
