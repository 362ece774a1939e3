/**
 * dock's skills on disk (spec 1, "Skills"): the SKILL.md copies in each agent tool's folders, for the
 * person (`user`) or a repository (`project`). Listing says of each copy whether it is installed,
 * outdated, missing or foreign (a SKILL.md that is not dock's); install and uninstall touch only
 * dock's own copies, and a project install keeps its folders out of git through `.git/info/exclude`.
 * Pure file operations: nothing here starts a process or touches the network.
 *
 * @module
 */
import { dirname, join, relative, resolve, sep } from "../core/posix_path.ts";
import { DockError } from "../client/errors.ts";
import type {
  SkillAgent,
  SkillChange,
  SkillCopy,
  SkillsResult,
  SkillState,
  SkillTarget,
} from "../client/wire.ts";
import { SKILLS } from "../skills/mod.ts";
import { exists, readTextOrNull, statOrNull, writeAtomic } from "../core/files.ts";
import { claudeDir, type HomeOptions } from "./tool_homes.ts";

/** Options of {@linkcode listSkills}. */
export interface ListSkillsOptions extends HomeOptions {
  /** A repository: also report its project-target copies. */
  repo?: string;
}

/** Options of {@linkcode installSkills}. */
export interface InstallSkillsOptions extends HomeOptions {
  /** Skill ids. @default {every skill} */
  skills?: string[];
  /** Which tool's folders. */
  agent: SkillAgent | "all";
  /** The user's folders or a repository's. */
  target: SkillTarget;
  /** The repository, required for the project target. */
  repo?: string;
  /** Project target: leave the folders out of `.git/info/exclude`, so they can be committed. @default {false} */
  commit?: boolean;
}

/** Options of {@linkcode uninstallSkills}. */
export interface UninstallSkillsOptions extends HomeOptions {
  /** Skill ids. @default {every skill} */
  skills?: string[];
  /** Which tool's folders. @default {"all"} */
  agent?: SkillAgent | "all";
  /** Which target. @default {"user", and "project" too when `repo` is given} */
  target?: SkillTarget;
  /** The repository, for the project target. */
  repo?: string;
}

/** A SKILL.md's YAML front matter: top-level scalars and the one-level `metadata` map. */
export interface FrontMatter {
  fields: Record<string, string>;
  metadata: Record<string, string>;
  /** The Markdown after the closing `---`. */
  body: string;
}

/** The front-matter marker that makes a SKILL.md dock's own (`metadata: author: dock`). */
const MARKER_AUTHOR = "dock";

export async function listSkills(options: ListSkillsOptions): Promise<SkillCopy[]> {
  const repo = options.repo === undefined ? undefined : resolve(options.repo);
  const targets: SkillTarget[] = repo === undefined ? ["user"] : ["user", "project"];
  const where = { ...options, repo };
  const copies: SkillCopy[] = [];
  for (const skill of SKILLS) {
    for (const agent of ["claude", "codex"] as const) {
      for (const target of targets) {
        const path = skillDir(skill.id, agent, target, where);
        const text = await readTextOrNull(join(path, "SKILL.md"));
        const version = text === null ? null : skillVersion(text);
        const state: SkillState = text === null
          ? "missing"
          : !isDockSkill(text, skill.id)
          ? "foreign"
          : text === skill.text
          ? "installed"
          : "outdated";
        copies.push({ skill: skill.id, agent, target, path, state, version, latest: skill.version });
      }
    }
  }
  return copies;
}

/**
 * Writes skills for one or both agents. A folder whose SKILL.md is someone else's is skipped, never
 * overwritten. The project target excludes the folders in `.git/info/exclude` unless `commit`.
 */
export async function installSkills(options: InstallSkillsOptions): Promise<SkillsResult> {
  const skills = pickSkills(options.skills);
  const agents = pickAgents(options.agent);
  const repo = options.target === "project" ? await requireRepo(options.repo) : undefined;
  const where = { ...options, repo };
  if (repo !== undefined) {
    await refuseLinksOut(
      repo,
      skills.flatMap((skill) => agents.map((agent) => skillDir(skill.id, agent, "project", where))),
    );
  }
  const changes: SkillChange[] = [];
  for (const skill of skills) {
    for (const agent of agents) {
      const path = skillDir(skill.id, agent, options.target, where);
      const file = join(path, "SKILL.md");
      const text = await readTextOrNull(file);
      const base = { skill: skill.id, agent, target: options.target, path };
      if (text !== null && !isDockSkill(text, skill.id)) {
        changes.push({ ...base, action: "skipped", reason: "its SKILL.md is not dock's" });
      } else if (text === skill.text) {
        changes.push({ ...base, action: "unchanged" });
      } else {
        await Deno.mkdir(path, { recursive: true });
        await writeAtomic(file, skill.text, 0o644);
        changes.push({ ...base, action: text === null ? "created" : "updated" });
      }
    }
  }
  const result: SkillsResult = { changes, files: [], notes: [] };
  if (repo !== undefined) {
    const paths = changes.filter((c) => c.action !== "skipped").map((c) => excludePattern(repo, c.path));
    await updateExclude(repo, paths, options.commit ? "remove" : "add", result);
  }
  return result;
}

/** Deletes skill folders whose SKILL.md is dock's skill of that name; any other folder is skipped. */
export async function uninstallSkills(options: UninstallSkillsOptions): Promise<SkillsResult> {
  const skills = pickSkills(options.skills);
  const agents = pickAgents(options.agent ?? "all");
  const repo = options.repo === undefined ? undefined : await requireRepo(options.repo);
  const targets: SkillTarget[] = options.target
    ? [options.target]
    : repo === undefined
    ? ["user"]
    : ["user", "project"];
  if (targets.includes("project") && repo === undefined) await requireRepo(undefined);
  const where = { ...options, repo };
  if (repo !== undefined && targets.includes("project")) {
    await refuseLinksOut(
      repo,
      skills.flatMap((skill) => agents.map((agent) => skillDir(skill.id, agent, "project", where))),
    );
  }
  const changes: SkillChange[] = [];
  for (const target of targets) {
    for (const skill of skills) {
      for (const agent of agents) {
        const path = skillDir(skill.id, agent, target, where);
        const text = await readTextOrNull(join(path, "SKILL.md"));
        const base = { skill: skill.id, agent, target, path };
        if (text === null) {
          const there = await exists(path);
          changes.push(
            there
              ? { ...base, action: "skipped", reason: "it has no SKILL.md" }
              : { ...base, action: "missing" },
          );
        } else if (!isDockSkill(text, skill.id)) {
          changes.push({ ...base, action: "skipped", reason: "its SKILL.md is not dock's" });
        } else {
          await Deno.remove(path, { recursive: true });
          changes.push({ ...base, action: "removed" });
        }
      }
    }
  }
  const result: SkillsResult = { changes, files: [], notes: [] };
  if (repo !== undefined) {
    const removed = changes.filter((c) => c.target === "project" && c.action === "removed");
    if (removed.length) {
      await updateExclude(repo, removed.map((c) => excludePattern(repo, c.path)), "remove", result);
    }
  }
  return result;
}

/** Parses a SKILL.md's front matter; null when the text does not open with a `---` block. */
export function parseFrontMatter(text: string): FrontMatter | null {
  const match = /^---\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/.exec(text);
  if (!match) return null;
  const fields: Record<string, string> = {};
  const metadata: Record<string, string> = {};
  let inMetadata = false;
  for (const line of match[1].split(/\r?\n/)) {
    if (/^\s*(#|$)/.test(line)) continue;
    const pair = /^(\s*)([A-Za-z0-9_-]+):\s*(.*)$/.exec(line);
    if (!pair) continue;
    const [, indent, key, raw] = pair;
    if (indent === "") {
      inMetadata = key === "metadata";
      if (inMetadata && raw.startsWith("{")) {
        Object.assign(metadata, flowMapping(raw));
        inMetadata = false;
      } else if (!inMetadata) {
        fields[key] = scalar(raw);
      }
    } else if (inMetadata) {
      metadata[key] = scalar(raw);
    }
  }
  return { fields, metadata, body: text.slice(match[0].length) };
}

/** True when `text` is dock's skill `id`: its front matter names it and carries dock's marker. */
export function isDockSkill(text: string, id: string): boolean {
  const front = parseFrontMatter(text);
  return front !== null && front.fields.name === id && front.metadata.author === MARKER_AUTHOR;
}

/** A SKILL.md's `metadata.version` as a number, or null. */
export function skillVersion(text: string): number | null {
  const raw = parseFrontMatter(text)?.metadata.version;
  const version = raw === undefined ? NaN : Number(raw);
  return Number.isFinite(version) ? version : null;
}

function scalar(raw: string): string {
  const value = raw.replace(/\s+#.*$/, "").trim();
  if (value.startsWith('"') && value.endsWith('"') && value.length >= 2) {
    try {
      return JSON.parse(value);
    } catch {
      return value.slice(1, -1);
    }
  }
  if (value.startsWith("'") && value.endsWith("'") && value.length >= 2) {
    return value.slice(1, -1).replaceAll("''", "'");
  }
  return value;
}

/** `{ author: dock, version: "1" }` (no nesting, no commas inside values: enough for a marker). */
function flowMapping(raw: string): Record<string, string> {
  const map: Record<string, string> = {};
  for (const part of raw.trim().replace(/^\{|\}$/g, "").split(",")) {
    const eq = part.indexOf(":");
    if (eq > 0) map[part.slice(0, eq).trim()] = scalar(part.slice(eq + 1));
  }
  return map;
}

function pickSkills(ids: string[] | undefined): typeof SKILLS {
  if (ids === undefined || ids.length === 0) return SKILLS;
  return ids.map((id) => {
    const skill = SKILLS.find((s) => s.id === id);
    if (!skill) {
      throw new DockError(
        "not_found",
        `skill '${id}' not found; dock's skills: ${SKILLS.map((s) => s.id).join(", ")}`,
        {
          status: 404,
        },
      );
    }
    return skill;
  });
}

function pickAgents(agent: SkillAgent | "all"): SkillAgent[] {
  if (agent === "all") return ["claude", "codex"];
  if (agent === "claude" || agent === "codex") return [agent];
  throw new DockError("invalid_request", `agent: expected claude, codex or all, got '${agent}'`, {
    status: 400,
    detail: { field: "agent" },
  });
}

async function requireRepo(repo: string | undefined): Promise<string> {
  if (repo === undefined || repo === "") {
    throw new DockError("invalid_request", "the project target needs a repository (--location)", {
      status: 400,
      detail: { field: "location" },
    });
  }
  const path = resolve(repo);
  if (!(await statOrNull(path))?.isDirectory) {
    throw new DockError("not_found", `repository folder '${path}' not found`, { status: 404 });
  }
  return path;
}

function skillDir(
  id: string,
  agent: SkillAgent,
  target: SkillTarget,
  options: HomeOptions & { repo?: string },
): string {
  if (target === "project") {
    return join(options.repo!, agent === "claude" ? ".claude" : ".agents", "skills", id);
  }
  return agent === "claude"
    ? join(claudeDir(options), "skills", id)
    : join(options.home, ".agents", "skills", id);
}

/**
 * Refuses project skill folders reached through a symlink that leaves the repository (a `.claude` linked
 * to the person's own `~/.claude`, say) or leads nowhere, and folders on the way that are files: writing
 * or deleting there would act outside the repository, or fail half way. Every folder of a request is
 * checked before anything is written, so a refused request changes nothing.
 */
async function refuseLinksOut(repo: string, dirs: string[]): Promise<void> {
  const root = await Deno.realPath(repo);
  for (const dir of dirs) {
    const parts = relative(repo, join(dir, "SKILL.md")).split(sep);
    let current = repo;
    for (const [index, part] of parts.entries()) {
      current = join(current, part);
      const shown = relative(repo, current);
      let info: Deno.FileInfo;
      try {
        info = await Deno.lstat(current);
      } catch {
        break; // nothing further exists: what is made below it is made here, inside
      }
      if (info.isSymlink) {
        const real = await Deno.realPath(current).catch(() => null);
        if (real !== null && (real === root || real.startsWith(root + sep))) {
          info = await Deno.stat(current);
        } else {
          const to = await Deno.readLink(current).catch(() => "?");
          throw new DockError(
            "outside_repository",
            `'${shown}' in ${repo} is a symlink ${
              real === null ? "to nothing" : "out of the repository"
            } (to ${to}): project skills are never written or removed through it`,
            { status: 409, detail: { path: current } },
          );
        }
      }
      const folder = index < parts.length - 1;
      if (folder !== info.isDirectory) {
        throw new DockError(
          folder ? "not_a_folder" : "not_a_file",
          `'${shown}' in ${repo} is ${folder ? "not a folder" : "a folder"}`,
          { status: 409, detail: { path: current } },
        );
      }
    }
  }
}

// ---------------------------------------------------------------------------------------------------
// .git/info/exclude

/** `/.claude/skills/dock/`: anchored at the repository root, folders only. */
function excludePattern(repo: string, dir: string): string {
  return `/${dir.slice(repo.length + 1).split("\\").join("/")}/`;
}

/** Adds (or removes) exclude lines, once each; a folder that is not a git repository gets a note. */
async function updateExclude(
  repo: string,
  patterns: string[],
  mode: "add" | "remove",
  result: SkillsResult,
): Promise<void> {
  const gitDir = await commonGitDir(repo);
  if (gitDir === null) {
    if (mode === "add") {
      result.notes.push(`${repo} is not a git repository: nothing added to .git/info/exclude`);
    }
    return;
  }
  const file = join(gitDir, "info", "exclude");
  const original = await readTextOrNull(file);
  const lines = original === null || original === "" ? [] : original.replace(/\r?\n$/, "").split(/\r?\n/);
  const present = new Set(lines.map((line) => line.trim()));
  let next: string[];
  if (mode === "add") {
    const missing = [...new Set(patterns)].filter((p) => !present.has(p));
    if (missing.length === 0) return;
    next = [...lines, ...missing];
  } else {
    const drop = new Set(patterns);
    next = lines.filter((line) => !drop.has(line.trim()));
    if (next.length === lines.length) return;
  }
  await Deno.mkdir(dirname(file), { recursive: true });
  await writeAtomic(file, next.length ? next.join("\n") + "\n" : "", 0o644);
  result.files.push({ path: file, action: original === null ? "created" : "updated" });
}

/** The repository's common git folder: `.git` itself, or for a linked worktree the main one's. */
async function commonGitDir(repo: string): Promise<string | null> {
  const dotGit = join(repo, ".git");
  const info = await statOrNull(dotGit);
  if (info === null) return null;
  if (info.isDirectory) return dotGit;
  const pointer = /^gitdir:\s*(.+?)\s*$/m.exec(await readTextOrNull(dotGit) ?? "");
  if (!pointer) return null;
  const gitDir = resolve(repo, pointer[1]);
  const common = (await readTextOrNull(join(gitDir, "commondir")))?.trim();
  return common ? resolve(gitDir, common) : gitDir;
}
