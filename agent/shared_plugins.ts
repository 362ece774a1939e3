/**
 * Which of the laptop's plugins a local box runs already. With a local box (`dock add local`), laptop
 * and box read one `~/.dock/plugins`, and every event of the box reaches the laptop too (the merge): a
 * plugin enabled on both would handle each of the box's events twice (two notifications of one agent
 * waiting). The rule: a box's event goes to the box's copy of a shared plugin; the laptop's copy gets
 * it only while the box's copy is not enabled (so a plugin enabled on the laptop alone still hears the
 * box), and the laptop's own events (queue, laptop.*) always. Which of the box's copies are enabled is
 * asked of the box at start and again after each of its `plugin.*` events.
 *
 * @module
 */
import type { DockEvent } from "../client/wire.ts";
import type { EventBus } from "../core/events.ts";
import type { Boxes } from "./boxes.ts";

/** Options of {@linkcode SharedPlugins}. */
export interface SharedPluginsOptions {
  boxes: Boxes;
  bus: EventBus;
  /** The socket a box on this machine listens on (`dock add local` pairs it). */
  localSocket: string;
}

/** The local box's enabled plugins, as far as the laptop must know them. */
export class SharedPlugins {
  #o: SharedPluginsOptions;
  #enabled = new Set<string>();
  #box?: string;
  #refreshing?: Promise<void>;
  #again = false;
  #unsubscribe?: () => void;

  constructor(options: SharedPluginsOptions) {
    this.#o = options;
  }

  /** Asks the box now, and after each of its `plugin.*` events (and when one is paired). */
  start(): void {
    this.#unsubscribe = this.#o.bus.subscribe((event) => {
      const box = this.#sharedBox();
      if (box && event.box === box && event.type.startsWith("plugin.")) this.refresh();
      else if (event.type.startsWith("box.") && !event.box) this.refresh();
    });
    this.refresh();
  }

  /** Stops following the bus. */
  close(): void {
    this.#unsubscribe?.();
  }

  /** Whether the laptop's copy of plugin `id` must leave `event` to the box's copy. */
  shadowed(id: string, event: DockEvent): boolean {
    const box = this.#sharedBox();
    return box !== undefined && event.box === box && this.#box === box && this.#enabled.has(id);
  }

  /** Reads the local box's enabled plugins again (one read at a time; a request meanwhile reads after it). */
  refresh(): void {
    if (this.#refreshing) {
      this.#again = true;
      return;
    }
    this.#refreshing = this.#read().finally(() => {
      this.#refreshing = undefined;
      if (this.#again) {
        this.#again = false;
        this.refresh();
      }
    });
  }

  /** Settles once the reading under way (if any) is done: for tests and the status page. */
  async settled(): Promise<void> {
    while (this.#refreshing) await this.#refreshing;
  }

  async #read(): Promise<void> {
    const box = this.#sharedBox();
    if (!box) {
      this.#box = undefined;
      this.#enabled.clear();
      return;
    }
    try {
      const list = await this.#o.boxes.client(box).plugins();
      this.#enabled = new Set(list.filter((p) => p.enabled).map((p) => p.id));
      this.#box = box;
    } catch {
      // Offline: its copies run nothing, and its events do not arrive either; asked again when it is back.
      this.#enabled.clear();
    }
  }

  /** The paired box that shares this machine's plugins folder (its socket is the local one). */
  #sharedBox(): string | undefined {
    return this.#o.boxes.list().find((b) => b.kind === "socket" && b.address === this.#o.localSocket)?.name;
  }
}
