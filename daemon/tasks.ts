/**
 * Tasks (`POST tasks`, spec 2.8): a new worktree with an agent already running in it, given its first
 * prompt. A task is both or nothing: when its session cannot start, the new worktree goes again.
 * Announced as `task.created` once both exist.
 *
 * @module
 */
import { DockError } from "../client/errors.ts";
import type { TaskRequest, TaskResult } from "../client/wire.ts";
import type { EventBus } from "../core/events.ts";
import type { Locations } from "./locations.ts";
import type { Sessions } from "./sessions.ts";
import type { Worktrees } from "./worktrees.ts";

/** Dependencies of {@linkcode Tasks}. */
export interface TasksOptions {
  bus: Pick<EventBus, "publish">;
  locations: Pick<Locations, "get">;
  worktrees: Pick<Worktrees, "create" | "remove">;
  sessions: Pick<Sessions, "create">;
}

/** Makes tasks. */
export class Tasks {
  #o: TasksOptions;

  constructor(options: TasksOptions) {
    this.#o = options;
  }

  /**
   * Refuses a request that cannot become a task, before anything is made or gated: 400 without an
   * agent (or a command), 404 for an unknown location.
   */
  check(request: TaskRequest): void {
    if (!request.agent && !request.command) {
      throw new DockError("invalid_request", "agent: a task needs an agent (or a command)", {
        status: 400,
        detail: { field: "agent" },
      });
    }
    this.#o.locations.get(request.location);
  }

  /** Makes the worktree, then the session in it; the worktree goes again when the session fails. */
  async create(request: TaskRequest, origin: string): Promise<TaskResult> {
    this.check(request);
    const worktree = await this.#o.worktrees.create(
      request.location,
      { name: request.name, branch: request.branch, base: request.base },
      origin,
    );
    try {
      const session = await this.#o.sessions.create({
        location: `${worktree.location}/${worktree.name}`,
        agent: request.agent,
        command: request.command,
        prompt: request.prompt,
        from_session: request.from_session,
      }, origin);
      this.#o.bus.publish({
        type: "task.created",
        origin,
        data: {
          location: worktree.location,
          worktree: worktree.name,
          session: session.name,
          agent: session.agent,
          from_session: request.from_session ?? null,
        },
      });
      return { worktree, session };
    } catch (error) {
      await this.#o.worktrees.remove(worktree.location, worktree.name, { force: true }, origin).catch(
        () => {},
      );
      throw error;
    }
  }
}
