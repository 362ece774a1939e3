/**
 * Agent-tool integrations and skills on disk (spec 1, "Agent-tool integration" and "Skills"). Used by
 * `dock integrations install` on a laptop and `dockd integrations install` on a box, and by the
 * `skills` commands. Pure file operations: nothing here starts a process or touches the network.
 *
 * - Claude Code: the four skills in its user skills folder and four hooks in its `settings.json`.
 * - Cursor: one `stop` hook appended to `~/.cursor/hooks.json`.
 * - Codex: the skills in `~/.agents/skills/`, an older copy in `$CODEX_HOME/skills/` removed, and the
 *   `notify` line returned for the person to add (dock never edits Codex's TOML).
 *
 * Settings files belong to the person, so every edit goes through jsonc-parser's `modify`, which
 * rewrites only the spans it changes: comments, key order and indentation survive. A file that is
 * not strict JSON is refused and left byte-identical, and the previous contents of any file we
 * change are kept in `<file>.dock-backup`. Running an install twice changes nothing the second time.
 *
 * @module
 */
import { which } from "../core/runner.ts";
import {
  applyEdits,
  type FormattingOptions,
  modify,
  parse,
  type ParseError,
  printParseErrorCode,
} from "jsonc-parser";
import { dirname, isAbsolute, join, resolve } from "node:path";
import { DockError } from "../client/errors.ts";
import {
  type FileChange,
  INTEGRATION_TOOLS,
  type IntegrationTool,
  type SkillAgent,
  type SkillChange,
  type SkillCopy,
  type SkillsResult,
  type SkillState,
  type SkillTarget,
} from "../client/wire.ts";
import { SKILLS } from "../skills/mod.ts";
import { exists, statOrNull, writeAtomic } from "../core/files.ts";

// The skill records are wire types (the box API answers with them); re-exported for this module's users.
export type {
  FileChange,
  IntegrationTool,
  SkillAgent,
  SkillChange,
  SkillCopy,
  SkillsResult,
  SkillState,
  SkillTarget,
};

/** Where an install looks: the home folder and the environment (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`, `PATH`). */
export interface HomeOptions {
  /** The user's home folder. */
  home: string;
  /** The environment the tools see. */
  env: Record<string, string | undefined>;
}

/** Options of {@linkcode installIntegration}. */
export interface IntegrationOptions extends HomeOptions {
  /** The shell command hooks run, e.g. `/usr/local/bin/dock hook`; `<tool> <event>` is appended. */
  hookCommand: string;
}

/** What installing one tool's integration did. */
export interface IntegrationResult {
  tool: IntegrationTool;
  files: FileChange[];
  /** Things to tell the person (restart the tool, a file left alone, …). */
  notes: string[];
  /** Codex only: the `notify = [...]` line for `config.toml`. */
  notify?: string;
  /** `installAll` only: true when the tool was not found here and nothing was written. */
  skipped?: boolean;
  /** `installAll` only: why this tool's install was refused (the others still ran). */
  error?: string;
}

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

/** The Claude Code hook events dock listens to (spec 1, rule 1). */
const CLAUDE_EVENTS = ["Stop", "Notification", "SessionStart", "UserPromptSubmit"] as const;

/** Seconds a tool waits for `dock hook`; it returns in milliseconds, this only bounds a wedged one. */
const HOOK_TIMEOUT = 10;

/** The front-matter marker that makes a SKILL.md dock's own (`metadata: author: dock`). */
const MARKER_AUTHOR = "dock";

// ---------------------------------------------------------------------------------------------------
// Integrations

/** Installs one tool's integration (spec 1, rules 1–4); idempotent, keeps every existing setting. */
export async function installIntegration(
  tool: IntegrationTool,
  options: IntegrationOptions,
): Promise<IntegrationResult> {
  switch (tool) {
    case "claude":
      return await installClaude(options);
    case "cursor":
      return await installCursor(options);
    case "codex":
      return await installCodex(options);
    default:
      throw new DockError("usage", `unknown tool '${tool}': expected ${INTEGRATION_TOOLS.join(", ")} or all`);
  }
}

/**
 * Installs every tool found here (its folder exists or its command is on `PATH`); a tool not found is
 * reported `skipped` rather than given folders it never reads. A refused file fails only its own tool.
 */
export async function installAll(options: IntegrationOptions): Promise<IntegrationResult[]> {
  const results: IntegrationResult[] = [];
  for (const tool of INTEGRATION_TOOLS) {
    const absent = await toolAbsence(tool, options);
    if (absent !== null) {
      results.push({ tool, files: [], notes: [absent], skipped: true });
      continue;
    }
    try {
      results.push(await installIntegration(tool, options));
    } catch (error) {
      if (!(error instanceof DockError)) throw error;
      results.push({ tool, files: [], notes: [], error: error.message });
    }
  }
  return results;
}

/** The `notify = [...]` line for Codex's `config.toml` that runs `<hookCommand> codex notify`. */
export function codexNotifyLine(hookCommand: string): string {
  const argv = [...shellSplit(hookCommand), "codex", "notify"];
  // JSON string escapes are a subset of TOML basic-string escapes, so JSON.stringify quotes for TOML.
  return `notify = [${argv.map((word) => JSON.stringify(word)).join(", ")}]`;
}

async function installClaude(options: IntegrationOptions): Promise<IntegrationResult> {
  const dir = claudeDir(options);
  const settings = join(dir, "settings.json");
  // Work out the settings edit first, so a refused file leaves no half install behind.
  const current = await readJsonObject(settings);
  let text = current.text;
  for (const event of CLAUDE_EVENTS) {
    const command = `${options.hookCommand} claude ${event}`;
    const hooks = objectField(parseObject(text), "hooks", settings, "hooks");
    const groups = arrayField(hooks, event, settings, `hooks.${event}`);
    const found = findClaudeHook(groups ?? []);
    if (found) {
      const [group, index, hook] = found;
      const path = ["hooks", event, group, "hooks", index];
      if (hook.type !== "command") text = edit(text, [...path, "type"], "command");
      if (hook.command !== command) text = edit(text, [...path, "command"], command);
      if (hook.timeout !== HOOK_TIMEOUT) text = edit(text, [...path, "timeout"], HOOK_TIMEOUT);
    } else {
      const entry = { matcher: "", hooks: [{ type: "command", command, timeout: HOOK_TIMEOUT }] };
      text = edit(text, ["hooks", event, -1], entry);
    }
  }
  const skills = await installSkills({ ...options, agent: "claude", target: "user" });
  const files = skillFiles(skills);
  const notes = skippedNotes(skills);
  files.push(await saveJson(settings, current, text));
  if (files.some((file) => file.action !== "unchanged")) {
    notes.push("restart Claude Code to load the hooks and skills");
  }
  return { tool: "claude", files, notes };
}

async function installCursor(options: IntegrationOptions): Promise<IntegrationResult> {
  const file = join(options.home, ".cursor", "hooks.json");
  const current = await readJsonObject(file);
  const command = `${options.hookCommand} cursor stop`;
  let text = current.text;
  const value = parseObject(text);
  if (value.version === undefined) text = edit(text, ["version"], 1);
  const hooks = objectField(value, "hooks", file, "hooks");
  const stop = arrayField(hooks, "stop", file, "hooks.stop") ?? [];
  const index = stop.findIndex((entry) => isOurs(entry, "cursor"));
  if (index >= 0) {
    const entry = stop[index] as Record<string, unknown>;
    if (entry.command !== command) text = edit(text, ["hooks", "stop", index, "command"], command);
    if (entry.timeout !== HOOK_TIMEOUT) text = edit(text, ["hooks", "stop", index, "timeout"], HOOK_TIMEOUT);
  } else {
    // Appended after the person's own stop hooks (spec 1, rule 2): theirs keep running first.
    text = edit(text, ["hooks", "stop", -1], { command, timeout: HOOK_TIMEOUT });
  }
  const change = await saveJson(file, current, text);
  const notes = change.action === "unchanged" ? [] : ["restart Cursor's agent to load the hook"];
  return { tool: "cursor", files: [change], notes };
}

async function installCodex(options: IntegrationOptions): Promise<IntegrationResult> {
  const skills = await installSkills({ ...options, agent: "codex", target: "user" });
  const files = skillFiles(skills);
  const notes = skippedNotes(skills);
  const codexHome = codexHomeDir(options);
  // Older dock versions wrote skills into $CODEX_HOME/skills, which Codex still reads (deprecated),
  // so every skill would be listed twice. Only our own copies go; anything else there is the person's.
  for (const skill of SKILLS) {
    const dir = join(codexHome, "skills", skill.id);
    const text = await readTextOrNull(join(dir, "SKILL.md"));
    if (text === null) continue;
    if (isDockSkill(text, skill.id)) {
      await Deno.remove(dir, { recursive: true });
      files.push({ path: dir, action: "removed" });
    } else {
      notes.push(`left ${dir} alone: its SKILL.md is not dock's`);
    }
  }
  if (files.some((file) => file.action !== "unchanged")) notes.push("restart Codex to load the skills");
  const notify = codexNotifyLine(options.hookCommand);
  const configPath = join(codexHome, "config.toml");
  const config = await readTextOrNull(configPath) ?? "";
  const lines = config.split(/\r?\n/).map((line) => line.trim());
  if (lines.includes(notify)) {
    notes.push(`${configPath} already has the notify line`);
  } else if (lines.some((line) => /^notify\s*=/.test(line))) {
    notes.push(
      `${configPath} sets notify already; Codex runs one notify program, so replace that line with:`,
    );
  } else {
    notes.push(`add this line to ${configPath}, at the top level (above the first [table]):`);
  }
  return { tool: "codex", files, notes, notify };
}

/** Our own hook entry: its command runs ` hook <tool> ` (whatever the path to dock was then). */
function isOurs(entry: unknown, tool: IntegrationTool): entry is Record<string, unknown> {
  return isRecord(entry) && typeof entry.command === "string" && entry.command.includes(` hook ${tool} `);
}

function findClaudeHook(groups: unknown[]): [number, number, Record<string, unknown>] | null {
  for (const [g, group] of groups.entries()) {
    if (!isRecord(group) || !Array.isArray(group.hooks)) continue;
    for (const [h, hook] of group.hooks.entries()) {
      if (isOurs(hook, "claude")) return [g, h, hook];
    }
  }
  return null;
}

/** Null when the tool is here (its folder exists or its command is on PATH), else why it looks absent. */
async function toolAbsence(tool: IntegrationTool, options: IntegrationOptions): Promise<string | null> {
  const folder = tool === "claude"
    ? claudeDir(options)
    : tool === "cursor"
    ? join(options.home, ".cursor")
    : codexHomeDir(options);
  if (await exists(folder)) return null;
  // Cursor's CLI is also called plain `agent`, too common a name to take as proof; it keeps ~/.cursor.
  const commands = tool === "cursor" ? ["cursor-agent", "cursor"] : [tool];
  for (const command of commands) {
    if (which(command, options.env.PATH ?? "")) return null;
  }
  return `not found here (no ${folder}, no ${commands.join(" or ")} on PATH)`;
}

// ---------------------------------------------------------------------------------------------------
// JSON settings files

interface JsonFile {
  path: string;
  /** The file's text, or what a new file starts from. */
  text: string;
  /** The bytes as read; null when the file did not exist. */
  original: string | null;
}

/** Reads a settings file that must be a strict JSON object; missing (or blank) starts from `{}`. */
async function readJsonObject(path: string): Promise<JsonFile> {
  const original = await readTextOrNull(path);
  if (original === null || original.trim() === "") return { path, text: "{}", original };
  let value: unknown;
  try {
    // Strict JSON: the tools parse these files as JSON, so a comment we kept would break them anyway.
    value = JSON.parse(original);
  } catch (error) {
    throw new DockError(
      "invalid_settings",
      `${path}: not valid JSON (${
        syntaxProblem(original, error)
      }); dock left it untouched — fix it and install again`,
      { status: 422, cause: error },
    );
  }
  if (!isRecord(value)) {
    throw new DockError(
      "invalid_settings",
      `${path}: expected a JSON object at the top; dock left it untouched`,
      { status: 422 },
    );
  }
  return { path, text: original, original };
}

/** Writes `text` if it differs, after backing up the previous bytes to `<file>.dock-backup`. */
async function saveJson(path: string, file: JsonFile, text: string): Promise<FileChange> {
  if (file.original !== null && text === file.original) return { path, action: "unchanged" };
  if (file.original === null) {
    await Deno.mkdir(dirname(path), { recursive: true });
    // A new file: write it whole and pretty rather than as the edit fragments of "{}".
    await writeAtomic(path, JSON.stringify(JSON.parse(text), null, 2) + "\n", 0o644);
    return { path, action: "created" };
  }
  // Write through a symlink (dotfiles managers link these), so the link stays a link.
  const real = await Deno.realPath(path);
  const mode = (await Deno.stat(real)).mode ?? 0o644;
  await writeAtomic(`${path}.dock-backup`, file.original, mode & 0o777);
  const body = file.original.trim() === "" ? JSON.stringify(JSON.parse(text), null, 2) + "\n" : text;
  await writeAtomic(real, body, mode & 0o777);
  return { path, action: "updated" };
}

function edit(text: string, path: (string | number)[], value: unknown): string {
  return applyEdits(text, modify(text, path, value, { formattingOptions: formatting(text) }));
}

/** Formatting of new fragments: the file's own indentation and line ends. */
function formatting(text: string): FormattingOptions {
  const eol = text.includes("\r\n") ? "\r\n" : "\n";
  const indent = /^([ \t]+)\S/m.exec(text)?.[1] ?? "  ";
  return indent.startsWith("\t")
    ? { insertSpaces: false, tabSize: 4, eol }
    : { insertSpaces: true, tabSize: indent.length, eol };
}

function parseObject(text: string): Record<string, unknown> {
  return JSON.parse(text) as Record<string, unknown>;
}

function objectField(
  parent: Record<string, unknown>,
  key: string,
  file: string,
  field: string,
): Record<string, unknown> | undefined {
  const value = parent[key];
  if (value === undefined) return undefined;
  if (!isRecord(value)) {
    throw new DockError(
      "invalid_settings",
      `${file}: ${field}: expected an object; dock left the file untouched`,
      {
        status: 422,
      },
    );
  }
  return value;
}

function arrayField(
  parent: Record<string, unknown> | undefined,
  key: string,
  file: string,
  field: string,
): unknown[] | undefined {
  const value = parent?.[key];
  if (value === undefined) return undefined;
  if (!Array.isArray(value)) {
    throw new DockError(
      "invalid_settings",
      `${file}: ${field}: expected an array; dock left the file untouched`,
      {
        status: 422,
      },
    );
  }
  return value;
}

/** "InvalidSymbol at line 3, column 5", or the parser's own words when jsonc sees no error. */
function syntaxProblem(text: string, error: unknown): string {
  const errors: ParseError[] = [];
  parse(text, errors, { disallowComments: true, allowTrailingComma: false, allowEmptyContent: false });
  if (errors.length === 0) return error instanceof Error ? error.message : String(error);
  const { offset } = errors[0];
  const before = text.slice(0, offset);
  const line = before.split("\n").length;
  const column = offset - (before.lastIndexOf("\n") + 1) + 1;
  return `${printParseErrorCode(errors[0].error)} at line ${line}, column ${column}`;
}

// ---------------------------------------------------------------------------------------------------
// Skills

/** Every skill × agent × target copy and its state (spec 1, Skills rule 2). */
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

/** `$CLAUDE_CONFIG_DIR` (it moves the whole `~/.claude`), else `~/.claude`. */
function claudeDir(options: HomeOptions): string {
  const dir = options.env.CLAUDE_CONFIG_DIR;
  return dir ? expandHome(dir, options.home) : join(options.home, ".claude");
}

function codexHomeDir(options: HomeOptions): string {
  const dir = options.env.CODEX_HOME;
  return dir ? expandHome(dir, options.home) : join(options.home, ".codex");
}

function expandHome(path: string, home: string): string {
  if (path === "~") return home;
  if (path.startsWith("~/")) return join(home, path.slice(2));
  return isAbsolute(path) ? path : resolve(path);
}

function skillFiles(result: SkillsResult): FileChange[] {
  const files: FileChange[] = [];
  for (const change of result.changes) {
    if (change.action === "created" || change.action === "updated" || change.action === "unchanged") {
      files.push({ path: join(change.path, "SKILL.md"), action: change.action });
    }
  }
  return files;
}

function skippedNotes(result: SkillsResult): string[] {
  return result.changes.filter((c) => c.action === "skipped").map((c) => `left ${c.path} alone: ${c.reason}`);
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

// ---------------------------------------------------------------------------------------------------
// Small helpers

async function readTextOrNull(path: string): Promise<string | null> {
  try {
    return await Deno.readTextFile(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory) return null;
    throw error;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Splits a shell command line into words (quotes and backslashes; no expansion). */
export function shellSplit(command: string): string[] {
  const words: string[] = [];
  let word = "";
  let inWord = false;
  for (let i = 0; i < command.length; i++) {
    const c = command[i];
    if (c === "'") {
      const end = command.indexOf("'", i + 1);
      if (end < 0) throw new DockError("usage", `unclosed ' in hook command: ${command}`);
      word += command.slice(i + 1, end);
      i = end;
      inWord = true;
    } else if (c === '"') {
      inWord = true;
      for (i++; i < command.length && command[i] !== '"'; i++) {
        if (command[i] === "\\" && i + 1 < command.length && '"\\$`'.includes(command[i + 1])) i++;
        word += command[i];
      }
      if (i >= command.length) throw new DockError("usage", `unclosed " in hook command: ${command}`);
    } else if (c === "\\" && i + 1 < command.length) {
      word += command[++i];
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) words.push(word);
      word = "";
      inWord = false;
    } else {
      word += c;
      inWord = true;
    }
  }
  if (inWord) words.push(word);
  return words;
}
