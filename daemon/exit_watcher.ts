/**
 * The exit watcher: marks a session `exited` (with its exit code) when its program ends, and ends its
 * agent's turn (`running` or `waiting` becomes `finished`). tmux keeps a
 * dead pane and its status (`remain-on-exit`), so the watcher asks tmux for its panes every `pollMs`
 * and announces `session.exited` for each session whose pane is dead or gone. A tmux server that stays
 * unreachable for a few seconds counts as gone, and its sessions with it.
 *
 * @module
 */
import { type Clock, every } from "../core/clock.ts";
import type { EventBus } from "../core/events.ts";
import { errorText, type Log } from "../core/log.ts";
import type { Store } from "../core/store.ts";
import type { AgentStates } from "./agent_state.ts";
import type { Pane, Tmux } from "./tmux.ts";

/** Failed pane lists in a row before the tmux server counts as gone. */
const UNREACHABLE_POLLS = 6;
/** How long a dead pane may go without a status before it is judged without one. */
const STATUS_WAIT_MS = 3000;

/** Dependencies of {@linkcode ExitWatcher}. */
export interface ExitWatcherOptions {
  store: Store;
  bus: Pick<EventBus, "publish">;
  tmux: Pick<Tmux, "panes" | "nudge">;
  /** Ends the turn of an agent whose program ended. */
  states: Pick<AgentStates, "endTurn">;
  /** How often tmux is asked which programs ended. @default {500} */
  pollMs?: number;
  /** Times the polls, and how long a dead pane may go without a status. */
  clock: Clock;
  /** Told of a tmux server that stays unreachable, and of a poll that failed. */
  log: Log;
}

/** Watches tmux for sessions whose program ended. */
export class ExitWatcher {
  #o: ExitWatcherOptions;
  #stopPolling = () => {};
  #polling = false;
  #deadSince = new Map<string, number>();
  /**
   * Sessions whose tmux session is being made (the row exists first), and how many lists of panes had
   * begun when their making ended: a list begun before that cannot judge them. Counted, not timed: the
   * order is what matters, and a count cannot tie or step back.
   */
  #creating = new Map<string, number | null>();
  /** Lists of panes begun so far. */
  #lists = 0;
  #unreachable = 0;
  /** The first poll judges what ended while the daemon was down (the cause `restart`). */
  #started = false;
  #listeners = new Set<() => void>();

  constructor(options: ExitWatcherOptions) {
    this.#o = options;
  }

  /** Calls `listener` whenever a session is marked exited; returns the unsubscribe. */
  onChange(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** A session's row is written and tmux is making its session: no poll judges it until it is made. */
  making(name: string): void {
    this.#creating.set(name, null);
  }

  /** tmux made the session: lists of panes taken from now on judge it. */
  made(name: string): void {
    this.#creating.set(name, this.#lists);
  }

  /** tmux could not make the session (its row is gone again). */
  abandoned(name: string): void {
    this.#creating.delete(name);
  }

  /** Marks what ended while nobody watched, then watches. */
  async start(): Promise<void> {
    await this.#poll();
    this.#started = true;
    this.#stopPolling();
    this.#stopPolling = every(this.#o.clock, this.#o.pollMs ?? 500, () => void this.#poll());
  }

  /** Stops watching (sessions run on in tmux). */
  close(): void {
    this.#stopPolling();
  }

  async #poll(): Promise<void> {
    if (this.#polling) return;
    this.#polling = true;
    try {
      const open = this.#o.store.all<{ name: string }>("SELECT name FROM sessions WHERE exited = 0");
      if (!open.length) return;
      const list = ++this.#lists;
      let listed: Pane[];
      try {
        listed = await this.#o.tmux.panes();
        this.#unreachable = 0;
      } catch (error) {
        // One failed connection says little (a busy server); a server that stays unreachable for a few
        // seconds is gone, and so are the programs it ran.
        if (++this.#unreachable < UNREACHABLE_POLLS) return;
        this.#o.log.error(`tmux server unreachable; its sessions count as exited: ${errorText(error)}`);
        listed = [];
      }
      const panes = new Map(listed.map((p) => [p.session, p]));
      for (const row of open) {
        // Its row is written before tmux makes the session: a list taken before that says nothing.
        const made = this.#creating.get(row.name);
        if (made !== undefined) {
          if (made === null || list <= made) continue;
          this.#creating.delete(row.name); // judged by every list from now on
        }
        const pane = panes.get(row.name);
        if (pane && !pane.dead) continue;
        if (pane && pane.deadStatus === null) {
          // Dead but no status yet: nudge tmux to reap it, and give up on the status after a while.
          const since = this.#deadSince.get(row.name) ?? this.#o.clock.now();
          this.#deadSince.set(row.name, since);
          this.#o.tmux.nudge(pane.server);
          if (this.#o.clock.now() - since < STATUS_WAIT_MS) continue;
        }
        this.#deadSince.delete(row.name);
        const code = pane?.deadStatus ?? null;
        // A program that ended ended its turn too: no tool reports that (Claude fires no Stop when it
        // dies mid-turn), and a session left `running` would hold `wait` and the queue until a timeout.
        this.#o.store.transaction(() => {
          this.#o.store.run("UPDATE sessions SET exited = 1, exit_code = ? WHERE name = ?", code, row.name);
          this.#o.states.endTurn(row.name, this.#started ? "exit" : "restart");
        });
        this.#o.bus.publish({
          type: "session.exited",
          origin: "dockd",
          data: { session: row.name, exit_code: code },
        });
        for (const listener of [...this.#listeners]) listener();
      }
    } catch (error) {
      this.#o.log.error(`session watcher: ${errorText(error)}`);
    } finally {
      this.#polling = false;
    }
  }
}
