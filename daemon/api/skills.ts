/**
 * Routes of skills (spec 1 "Skills", 4.2): list the copies and their state, install and uninstall them
 * for the daemon's user, in the user's folders or in a location's repository. Installing or removing
 * runs the `before:skills.install` / `before:skills.uninstall` gates first and announces
 * `skills.installed` / `skills.removed` after, with identifiers and paths only.
 *
 * `location` names a location (its registered repository) or `LOC/WT`, one of its worktrees: a
 * project copy in a linked worktree is that worktree's own, and its exclude lines go to the main
 * repository's `.git/info/exclude` (git reads that one file for every worktree).
 *
 * @module
 */
import { DockError } from "../../client/errors.ts";
import type { SkillsEventData, SkillsRequest, SkillsResult, SkillTarget } from "../../client/wire.ts";
import { skillsRequest } from "../../client/schemas.ts";
import { SKILLS } from "../../skills/mod.ts";
import type { EventBus } from "../../core/events.ts";
import type { BoxPaths } from "../../core/paths.ts";
import type { Locations } from "../locations.ts";
import type { Worktrees } from "../worktrees.ts";
import { installSkills, listSkills, uninstallSkills } from "../skills.ts";
import type { HomeOptions } from "../tool_homes.ts";
import { body, json, requestOrigin, type Route, RouteTable } from "../../core/http.ts";

const SKILL_IDS = SKILLS.map((skill) => skill.id);

const SKILLS_REQUEST = skillsRequest(SKILL_IDS);

type SkillsRequestBody = SkillsRequest;

/** A request resolved against the box: defaults filled in, the location turned into its folder. */
interface Resolved {
  skills: string[];
  agent: "claude" | "codex" | "all";
  target: SkillTarget;
  location?: string;
  /** The location's folder, for the project target. */
  repo?: string;
  commit: boolean;
}

/** Options of {@linkcode skillRoutes}. */
export interface SkillRoutesOptions {
  /** The environment the agent tools see (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`). @default {the daemon's} */
  env?: Record<string, string | undefined>;
}

/** What the skills routes use of the box. */
export interface SkillRoutesBackend {
  paths: Pick<BoxPaths, "userHome">;
  bus: Pick<EventBus, "publish">;
  locations: Pick<Locations, "get">;
  worktrees: Pick<Worktrees, "get">;
}

/** The skills routes, for the daemon's user (`box.paths.userHome`). */
export function skillRoutes(box: SkillRoutesBackend, options: SkillRoutesOptions = {}): RouteTable {
  const where: HomeOptions = { home: box.paths.userHome, env: options.env ?? Deno.env.toObject() };
  // One install or uninstall at a time: two racing would each rewrite `.git/info/exclude` from what
  // they read, and one's lines would be lost.
  let queue: Promise<unknown> = Promise.resolve();
  const serialized = <T>(work: () => Promise<T>): Promise<T> => {
    const next = queue.then(work, work);
    queue = next.catch(() => {});
    return next;
  };

  return new RouteTable("skills")
    .add("GET", "/skills", async (c) => {
      const location = c.req.query("location") || undefined;
      const repo = location === undefined ? undefined : locationPath(box, location);
      const copies = await listSkills({ ...where, repo });
      return json(copies.map((copy) => copy.target === "project" ? { ...copy, location } : copy));
    })
    .route(change(box, where, "install", serialized))
    .route(change(box, where, "uninstall", serialized));
}

/** `POST skills/install` or `skills/uninstall`, gated by `before:skills.<action>`. */
function change(
  box: SkillRoutesBackend,
  where: HomeOptions,
  action: "install" | "uninstall",
  serialized: <T>(work: () => Promise<T>) => Promise<T>,
): Route<Resolved> {
  return {
    method: "POST",
    path: `/skills/${action}`,
    input: async (c) => resolveRequest(box, await body(c, SKILLS_REQUEST) ?? {}),
    gates: [{
      action: `skills.${action}`,
      // The gate sees what will be done (defaults filled in), before anything is touched; a refusal
      // throws its 403 straight to the caller.
      describe: (request) => {
        const [location, worktree] = request.location?.split("/") ?? [];
        return {
          target: {
            skills: request.skills,
            agent: request.agent,
            target: request.target,
            location: request.location,
            commit: request.commit,
          },
          location,
          worktree,
        };
      },
    }],
    handler: async (c, request) => {
      const result = await serialized(() =>
        action === "install"
          ? installSkills({
            ...where,
            skills: request.skills,
            agent: request.agent,
            target: request.target,
            repo: request.repo,
            commit: request.commit,
          })
          : uninstallSkills({
            ...where,
            skills: request.skills,
            agent: request.agent,
            target: request.target,
            repo: request.repo,
          })
      );
      announce(
        box,
        action === "install" ? "skills.installed" : "skills.removed",
        request,
        result,
        requestOrigin(c),
      );
      return json(result);
    },
  };
}

/**
 * Fills in the defaults and checks what fits together; the location's folder comes from the box.
 * Install and uninstall take the same fields (spec 4.2). `commit` says the project copies are for git:
 * an install with it leaves the addition visible to git (not in `.git/info/exclude`), and an uninstall
 * always leaves its removal visible (tracked copies show as deleted, their exclude lines go), so on
 * uninstall it is accepted, checked as on install, and changes nothing more. Neither makes a commit.
 */
function resolveRequest(
  box: SkillRoutesBackend,
  request: SkillsRequestBody,
): Resolved {
  const target = request.target ?? (request.location === undefined ? "user" : "project");
  if (target === "project" && request.location === undefined) {
    throw new DockError("invalid_request", "location: the project target needs a location (LOC or LOC/WT)", {
      status: 400,
      detail: { field: "location" },
    });
  }
  if (target === "user" && request.location !== undefined) {
    throw new DockError("invalid_request", "location: only the project target takes a location", {
      status: 400,
      detail: { field: "location" },
    });
  }
  if (request.commit && target !== "project") {
    throw new DockError("invalid_request", "commit: only the project target is committed", {
      status: 400,
      detail: { field: "commit" },
    });
  }
  return {
    skills: request.skills?.length ? [...new Set(request.skills)] : SKILL_IDS,
    agent: request.agent ?? "all",
    target,
    location: request.location,
    repo: request.location === undefined ? undefined : locationPath(box, request.location),
    commit: request.commit ?? false,
  };
}

/** The folder of `LOC` (the registered repository) or `LOC/WT`; 404 when either is unknown. */
function locationPath(box: SkillRoutesBackend, spec: string): string {
  const [location, worktree, extra] = spec.split("/");
  if (!location || worktree === "" || extra !== undefined) {
    throw new DockError("invalid_request", `location: expected LOC or LOC/WT, got ${JSON.stringify(spec)}`, {
      status: 400,
      detail: { field: "location" },
    });
  }
  if (worktree === undefined) return box.locations.get(location).path;
  return box.worktrees.get(location, worktree).path;
}

/** Announces what changed; a request that changed nothing announces nothing. */
function announce(
  box: SkillRoutesBackend,
  type: "skills.installed" | "skills.removed",
  request: Resolved,
  result: SkillsResult,
  origin: string,
): void {
  const changed = result.changes
    .filter((c) => c.action === "created" || c.action === "updated" || c.action === "removed")
    .map((c) => ({ skill: c.skill, agent: c.agent, path: c.path, action: c.action }));
  const files = result.files.filter((f) => f.action !== "unchanged").map((f) => f.path);
  if (changed.length === 0 && files.length === 0) return;
  const data: SkillsEventData = {
    skills: request.skills,
    agent: request.agent,
    target: request.target,
    ...(request.location === undefined ? {} : { location: request.location }),
    changed,
    files,
  };
  box.bus.publish({ type, origin, data: { ...data } });
}
