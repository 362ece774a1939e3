/**
 * What a person should look at (issue 16): `GET review`, the worktrees with work to review (commits
 * their base has not, uncommitted changes, an agent that finished since anyone last attached to it),
 * and `POST preview`, which puts a worktree's dev server in front of them (`preview.open`, which the
 * app opens and `dock` prints).
 *
 * A worktree whose agent still runs is work in progress, left out unless `all` is asked. The git
 * questions for each worktree run a few at a time: a box with fifty worktrees answers in about the time
 * the same git commands take by hand.
 *
 * @module
 */
import { DockError } from "../client/errors.ts";
import type { PreviewOpen, PreviewRequest, ReviewItem, ReviewReason, Session } from "../client/wire.ts";
import type { EventBus } from "../core/events.ts";
import * as git from "./git.ts";
import type { Locations } from "./locations.ts";
import type { Sessions } from "./sessions.ts";
import type { Worktrees } from "./worktrees.ts";

/** Git questions asked at once. */
const PARALLEL = 8;

/** Dependencies of {@linkcode Review}. */
export interface ReviewOptions {
  locations: Pick<Locations, "get">;
  worktrees: Pick<Worktrees, "list" | "get">;
  sessions: Pick<Sessions, "list" | "seenAt">;
  bus: Pick<EventBus, "publish">;
  /** The box's name, for private URLs. */
  box: () => string;
}

/** The review list and previews. */
export class Review {
  #o: ReviewOptions;

  constructor(options: ReviewOptions) {
    this.#o = options;
  }

  /** The worktrees with work to review; with `all`, those whose agents still work too. */
  async list(options: { all?: boolean; location?: string } = {}): Promise<ReviewItem[]> {
    if (options.location) this.#o.locations.get(options.location);
    const worktrees = this.#o.worktrees.list(options.location).filter((w) => !w.main);
    const sessions = this.#o.sessions.list();
    // Each location's default branch once per listing: the base of worktrees that recorded none.
    const defaults = new Map<string, Promise<string>>();
    const defaultBranch = (location: string) => {
      let branch = defaults.get(location);
      if (!branch) {
        branch = git.defaultBranch(this.#o.locations.get(location).path);
        defaults.set(location, branch);
      }
      return branch;
    };
    const items: (ReviewItem | null)[] = new Array(worktrees.length).fill(null);
    let next = 0;
    const worker = async () => {
      while (next < worktrees.length) {
        const index = next++;
        const w = worktrees[index];
        const base = w.base || await defaultBranch(w.location);
        const [status, ahead] = await Promise.all([
          git.worktreeStatus(w.path).catch(() => null),
          git.commitsAhead(w.path, base).catch(() => null),
        ]);
        const own = sessions.filter((s) => s.location === w.location && s.worktree === w.name && s.agent);
        const agents = own.map((s) => ({
          name: s.name,
          agent: s.agent,
          agent_state: s.agent_state,
          unseen: this.#unseen(s),
        }));
        const reasons: ReviewReason[] = [];
        if ((ahead ?? 0) > 0) reasons.push("commits");
        if (status?.dirty) reasons.push("changes");
        if (agents.some((a) => a.unseen)) reasons.push("finished");
        const working = own.some((s) => s.agent_state === "running" && !s.exited);
        if (!reasons.length || (working && !options.all)) continue;
        items[index] = {
          location: w.location,
          worktree: w.name,
          path: w.path,
          branch: w.branch,
          base,
          ahead,
          dirty: status?.dirty ?? false,
          changes: {
            staged: status?.staged ?? 0,
            modified: status?.modified ?? 0,
            untracked: status?.untracked ?? 0,
            conflicted: status?.conflicted ?? 0,
          },
          sessions: agents,
          reasons,
          working,
        };
      }
    };
    await Promise.all(Array.from({ length: Math.min(PARALLEL, worktrees.length) }, worker));
    return items.filter((item) => item !== null);
  }

  /** Announces `preview.open` for a worktree's port; answers the private URL. */
  preview(request: PreviewRequest, origin: string): PreviewOpen {
    const worktree = this.#o.worktrees.get(request.location, request.worktree);
    const port = request.port ?? worktree.ports[0];
    if (port === undefined) {
      throw new DockError("no_port", `worktree ${request.location}/${request.worktree} has no port`, {
        status: 422,
      });
    }
    const path = (request.path ?? "").replace(/^\/+/, "");
    const open: PreviewOpen = {
      location: worktree.location,
      worktree: worktree.name,
      port,
      path: `/${path}`,
      url: `http://${worktree.name}.${worktree.location}.${this.#o.box()}.localhost:1377/${path}`,
    };
    this.#o.bus.publish({ type: "preview.open", origin, data: { ...open } });
    return open;
  }

  /** Finished after the last time anyone attached to it (or never looked at). */
  #unseen(session: Session): boolean {
    if (session.agent_state !== "finished" || !session.state_time) return false;
    const seen = this.#o.sessions.seenAt(session.name);
    return seen === null || seen < session.state_time;
  }
}
