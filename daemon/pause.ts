/**
 * Pause and resume of a worktree: every process of its services and sessions is stopped with
 * SIGSTOP and continued with SIGCONT. The paused flag lives in the worktree's record, so it survives a
 * daemon restart; the processes stay stopped meanwhile because the kernel, not dockd, holds them so.
 *
 * @module
 */
import { DockError } from "../client/errors.ts";
import type { Worktree } from "../client/wire.ts";
import type { EventBus } from "../core/events.ts";
import type { Worktrees } from "./worktrees.ts";

/** Something that runs processes in worktrees (services, sessions) and can stop or continue them. */
export interface Pausable {
  /** Sends the signal to every process group it runs in the worktree; returns how many. */
  signalWorktree(worktree: Worktree, signal: "SIGSTOP" | "SIGCONT"): number | Promise<number>;
}

/** Pauses and resumes worktrees. */
export class Pauses {
  readonly participants: Pausable[] = [];
  #bus: EventBus;
  #worktrees: Worktrees;

  constructor(bus: EventBus, worktrees: Worktrees) {
    this.#bus = bus;
    this.#worktrees = worktrees;
  }

  /** Stops every process of the worktree's services and sessions. Pausing twice is a no-op. */
  pause(location: string, name: string, origin: string): Promise<Worktree> {
    return this.#set(location, name, true, origin);
  }

  /** Continues them. */
  resume(location: string, name: string, origin: string): Promise<Worktree> {
    return this.#set(location, name, false, origin);
  }

  async #set(location: string, name: string, paused: boolean, origin: string): Promise<Worktree> {
    const worktree = this.#worktrees.get(location, name);
    if (worktree.paused === paused) return worktree;
    if (paused && worktree.setup.state === "running") {
      throw new DockError("busy", `worktree '${location}/${name}' is still running its setup`, {
        status: 409,
      });
    }
    // Record first: a crash in between leaves the flag saying what was asked for.
    this.#worktrees.setPaused(location, name, paused);
    let groups = 0;
    for (const participant of this.participants) {
      groups += await participant.signalWorktree(worktree, paused ? "SIGSTOP" : "SIGCONT");
    }
    this.#bus.publish({
      type: paused ? "worktree.paused" : "worktree.resumed",
      origin,
      data: { location, worktree: name, groups },
    });
    return this.#worktrees.get(location, name);
  }
}
