/**
 * The laptop's hooks (spec 4.1 `GET/PUT /v1/hooks`, 2.5): `~/.dock/hooks.json` on the laptop, run for
 * every event the agent sees (its own and every box's, merged), through the same engine as the box's
 * (`daemon/hooks.ts`): `/bin/sh -c` with the event on stdin and in `DOCK_*` variables, a bounded
 * number at once, each killed with its process group at its timeout.
 *
 * Gates (`before:`) check requests to a box's API and run on the box; the laptop file's gates are
 * kept in the file but not run here.
 *
 * On a machine that is laptop and box at once (`dock up`), `~/.dock/hooks.json` is one file read by
 * both: the box runs it for its own events, so the agent skips events from a box whose hooks file is
 * this same file (asked of each box as it comes online; until then a socket box whose daemon shares
 * this state folder is taken to share it) and nothing runs twice.
 *
 * @module
 */
import type { DockEvent } from "../client/wire.ts";
import type { Clock } from "../core/clock.ts";
import type { EventBus } from "../core/events.ts";
import type { Log } from "../core/log.ts";
import {
  eventVariables,
  type ExtraHook,
  extraShellHooksFor,
  type HookExecutor,
  hooksFor,
  HooksHost,
} from "../core/hooks.ts";
import { dirname } from "../core/posix_path.ts";

/** What the laptop's hooks need from the agent. */
export interface LaptopHooksOptions {
  bus: EventBus;
  /** `~/.dock/hooks.json`. */
  file: string;
  /** Where hooks run. */
  home: string;
  /** The boxes online now. */
  onlineBoxes: () => string[];
  /** The path of a box's own hooks file (`GET hooks` on it). */
  boxHooksFile: (box: string) => Promise<string>;
  /** Whether a box probably reads this same file, until it has been asked. */
  guessShared: (box: string) => boolean;
  /** @default {1000} */
  watchMs?: number;
  /** Hooks from enabled plugins (their shell hooks run here; gates do not run on the laptop). */
  extra?: () => ExtraHook[];
  /** What runs each hook (module hooks go to the plugin host). @default {shellExecutor} */
  executor?: HookExecutor;
  /** What the hooks file's watch runs on. */
  clock: Clock;
  /** Told of a hooks file that stops parsing, a failed run, a full backlog. */
  log: Log;
}

/** Runs the laptop's hooks on the agent's events. */
export class LaptopHooks extends HooksHost {
  #o: LaptopHooksOptions;
  #shared = new Map<string, boolean>();

  constructor(options: LaptopHooksOptions) {
    super({
      bus: options.bus,
      file: options.file,
      origin: "dock",
      executor: options.executor,
      clock: options.clock,
      log: options.log,
    });
    this.#o = options;
  }

  /** Follows the agent's bus, asks each online box where its hooks file is, and watches the file. */
  override start(): void {
    super.start(this.#o.watchMs);
    for (const box of this.#o.onlineBoxes()) this.#learn(box);
  }

  /** Asks a box where its hooks file is (an older or unreachable box keeps the guess). */
  #learn(box: string): void {
    this.#o.boxHooksFile(box).then(
      (path) => this.#shared.set(box, path === this.file.path),
      () => {},
    );
  }

  // Called synchronously by the bus: only matching and queueing happen here.
  protected onEvent(event: DockEvent): void {
    if (event.type === "box.online" || event.type === "box.added") this.#learn(String(event.data?.box));
    if (event.type === "box.removed") this.#shared.delete(String(event.data?.box));
    if (event.type.startsWith("hook.")) return;
    const hooks = hooksFor(this.file.current(), event); // gates never match an event
    const pluginHooks = extraShellHooksFor(this.#o.extra?.() ?? [], event);
    if (hooks.length === 0 && pluginHooks.length === 0) return;
    if (event.box && (this.#shared.get(event.box) ?? this.#o.guessShared(event.box))) return;
    const own = Deno.env.toObject();
    const env = { ...own, ...eventVariables(event, { keep: own }) };
    const modules = { moduleBase: dirname(this.file.path), moduleRoot: dirname(this.file.path) };
    // In one call: the event's hooks that can start together do (core/hook_exec.ts).
    this.runner.submit(
      ...hooks.map((hook) => ({ hook, source: this.file.path, event, cwd: this.#o.home, env, ...modules })),
      ...pluginHooks.map(({ hook, source }) => ({ hook, source, event, cwd: this.#o.home, env })),
    );
  }
}
