/**
 * Agent-tool integrations (spec 1, "Agent-tool integration"): one installer per tool, used by
 * `dock integrations install` on a laptop and `dockd integrations install` on a box. Pure file
 * operations: nothing here starts a process or touches the network.
 *
 * - Claude Code: the four skills in its user skills folder, four hooks in its `settings.json`, and dock's
 *   MCP server (`dock mcp`, or `dockd mcp` on a box) as a user-scope server in `~/.claude.json`.
 * - Cursor: one `stop` hook appended to `~/.cursor/hooks.json`, the MCP server in `~/.cursor/mcp.json`.
 * - Codex: the skills in `~/.agents/skills/`, an older copy in `$CODEX_HOME/skills/` removed, five
 *   lifecycle hooks in `$CODEX_HOME/hooks.json` (Codex runs them once the person trusts them in its
 *   `/hooks` screen), and the `notify` line and the `[mcp_servers.dock]` table returned for the person to
 *   add (dock never edits Codex's TOML).
 * - Gemini CLI: four hooks in `~/.gemini/settings.json` (its `hooks`, Claude's shape).
 *
 * Settings files belong to the person and are edited in place (`tool_settings.ts`); skills are written
 * by `skills.ts`. Running an install twice changes nothing the second time.
 *
 * @module
 */
import { which } from "../core/runner.ts";
import { join } from "../core/posix_path.ts";
import { DockError } from "../client/errors.ts";
import {
  type FileChange,
  INTEGRATION_TOOLS,
  type IntegrationTool,
  type SkillsResult,
} from "../client/wire.ts";
import { SKILLS } from "../skills/mod.ts";
import { exists, readTextOrNull } from "../core/files.ts";
import { installSkills, isDockSkill } from "./skills.ts";
import {
  claudeDir,
  claudeStateFile,
  codexHomeDir,
  cursorDir,
  geminiDir,
  type HomeOptions,
} from "./tool_homes.ts";
import { arrayField, edit, objectField, parseObject, readJsonObject, saveJson } from "./tool_settings.ts";

// Wire types (the CLI prints them); re-exported for the CLI, which loads this module only when it runs.
export type { FileChange, IntegrationTool };

/** Options of {@linkcode installIntegration}. */
export interface IntegrationOptions extends HomeOptions {
  /** The shell command hooks run, e.g. `/usr/local/bin/dock hook`; `<tool> <event>` is appended. */
  hookCommand: string;
  /**
   * dock's MCP server as argv (`dockd mcp` on a box). Default: the hook command's program with `mcp`,
   * which on a box run from a checkout is the laptop's `dock mcp`, seeing no box (the real Claude Code
   * listed no session through it).
   */
  mcpCommand?: string[];
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

/** The Claude Code hook events dock listens to (spec 1, rule 1). */
const CLAUDE_EVENTS = ["Stop", "Notification", "SessionStart", "UserPromptSubmit"] as const;

/**
 * Codex's lifecycle hooks dock listens to (`hooks.json`, Claude's shape, Codex 0.169): without them Codex
 * reports only the end of a turn (`notify`). `PermissionRequest` is its approval prompt; `Interrupt` an
 * Esc mid-turn.
 */
const CODEX_EVENTS = ["SessionStart", "UserPromptSubmit", "PermissionRequest", "Stop", "Interrupt"] as const;

/** Gemini CLI's hook events dock listens to (`settings.json` `hooks`); `Notification` is its tool permission. */
const GEMINI_EVENTS = ["SessionStart", "BeforeAgent", "AfterAgent", "Notification"] as const;

/** Seconds a tool waits for `dock hook`; it returns in milliseconds, this only bounds a wedged one. */
const HOOK_TIMEOUT = 10;

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
    case "gemini":
      return await installGemini(options);
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

/**
 * The command line of dock's MCP server beside the hook command (`… dock hook` → `… dock mcp`), as
 * argv; null when the hook command does not end in `hook` (a custom one: nothing to derive from).
 */
export function mcpArgv(hookCommand: string): string[] | null {
  const argv = shellSplit(hookCommand);
  return argv.at(-1) === "hook" ? [...argv.slice(0, -1), "mcp"] : null;
}

/** The `[mcp_servers.dock]` table for Codex's `config.toml`. */
export function codexMcpTable(argv: string[]): string {
  const [command, ...args] = argv;
  return `[mcp_servers.dock]\ncommand = ${JSON.stringify(command)}\nargs = [${
    args.map((word) => JSON.stringify(word)).join(", ")
  }]`;
}

/**
 * The edit that adds (or brings up to date) `mcpServers.dock` in a tool's JSON file, worked out before
 * anything is written; `typed` says the transport the way Claude's file does. Every other server and
 * setting stays as it is.
 */
async function planMcpServer(file: string, argv: string[], options: { typed: boolean }) {
  const current = await readJsonObject(file);
  const servers = objectField(parseObject(current.text), "mcpServers", file, "mcpServers");
  const [command, ...args] = argv;
  const wanted: Record<string, unknown> = options.typed
    ? { type: "stdio", command, args }
    : { command, args };
  const existing = servers?.dock;
  let text = current.text;
  if (!isRecord(existing)) {
    text = edit(text, ["mcpServers", "dock"], wanted);
  } else {
    for (const [key, value] of Object.entries(wanted)) {
      if (JSON.stringify(existing[key]) !== JSON.stringify(value)) {
        text = edit(text, ["mcpServers", "dock", key], value);
      }
    }
  }
  return { save: () => saveJson(file, current, text) };
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
  // Work out the edits first, so a refused file leaves no half install behind.
  const current = await readJsonObject(settings);
  const mcp = options.mcpCommand ?? mcpArgv(options.hookCommand);
  const server = mcp && await planMcpServer(claudeStateFile(options), mcp, { typed: true });
  const text = withHooks(current.text, settings, {
    tool: "claude",
    events: CLAUDE_EVENTS,
    hookCommand: options.hookCommand,
    timeout: HOOK_TIMEOUT,
    group: { matcher: "" },
  });
  const skills = await installSkills({ ...options, agent: "claude", target: "user" });
  const files = skillFiles(skills);
  const notes = skippedNotes(skills);
  files.push(await saveJson(settings, current, text));
  if (server) files.push(await server.save());
  if (files.some((file) => file.action !== "unchanged")) {
    notes.push("restart Claude Code to load the hooks, skills and dock's MCP server");
  }
  return { tool: "claude", files, notes };
}

async function installCursor(options: IntegrationOptions): Promise<IntegrationResult> {
  const file = join(cursorDir(options), "hooks.json");
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
  const mcp = options.mcpCommand ?? mcpArgv(options.hookCommand);
  const server = mcp && await planMcpServer(join(cursorDir(options), "mcp.json"), mcp, { typed: false });
  const files = [await saveJson(file, current, text)];
  if (server) files.push(await server.save());
  const notes = files.every((f) => f.action === "unchanged")
    ? []
    : ["restart Cursor's agent to load the hook and dock's MCP server"];
  return { tool: "cursor", files, notes };
}

async function installCodex(options: IntegrationOptions): Promise<IntegrationResult> {
  const codexHome = codexHomeDir(options);
  const hooksFile = join(codexHome, "hooks.json");
  const hooksJson = await readJsonObject(hooksFile);
  const hooksText = withHooks(hooksJson.text, hooksFile, {
    tool: "codex",
    events: CODEX_EVENTS,
    hookCommand: options.hookCommand,
    timeout: HOOK_TIMEOUT,
    group: {},
  });
  const skills = await installSkills({ ...options, agent: "codex", target: "user" });
  const files = skillFiles(skills);
  const notes = skippedNotes(skills);
  const hooks = await saveJson(hooksFile, hooksJson, hooksText);
  files.push(hooks);
  if (hooks.action !== "unchanged") {
    // Codex skips a new or changed hook, without a word, until the person trusts it.
    notes.push(
      `open /hooks in Codex and trust dock's hooks in ${hooksFile}: Codex runs no hook it was not told to trust`,
    );
  }
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
  const mcp = options.mcpCommand ?? mcpArgv(options.hookCommand);
  const table = mcp && codexMcpTable(mcp);
  if (table && !config.includes("[mcp_servers.dock]")) {
    notes.push(`and, for dock's MCP server, this table at the end of ${configPath}:\n${table}`);
  }
  return { tool: "codex", files, notes, notify };
}

/** Gemini CLI: dock's hooks in its user `settings.json` (timeouts there are in milliseconds). */
async function installGemini(options: IntegrationOptions): Promise<IntegrationResult> {
  const settings = join(geminiDir(options), "settings.json");
  const current = await readJsonObject(settings);
  const text = withHooks(current.text, settings, {
    tool: "gemini",
    events: GEMINI_EVENTS,
    hookCommand: options.hookCommand,
    timeout: HOOK_TIMEOUT * 1000,
    group: {},
    name: "dock",
  });
  const files = [await saveJson(settings, current, text)];
  const notes = files.every((f) => f.action === "unchanged") ? [] : ["restart Gemini CLI to load the hooks"];
  return { tool: "gemini", files, notes };
}

/** What {@linkcode withHooks} adds: one command hook per event, in Claude's shape of hooks file. */
interface HookPlan {
  tool: IntegrationTool;
  events: readonly string[];
  hookCommand: string;
  /** In the tool's own unit. */
  timeout: number;
  /** Fields of a new matcher group besides `hooks` (Claude's `matcher: ""`). */
  group: Record<string, unknown>;
  /** The hook's `name`, for tools that show one. */
  name?: string;
}

/**
 * `text` (a settings file in Claude's hooks shape: event → matcher groups → `hooks`) with dock's hook on
 * each event: ours brought up to date where found, else a group appended after the person's own.
 */
function withHooks(text: string, file: string, plan: HookPlan): string {
  for (const event of plan.events) {
    const command = `${plan.hookCommand} ${plan.tool} ${event}`;
    const hooks = objectField(parseObject(text), "hooks", file, "hooks");
    const groups = arrayField(hooks, event, file, `hooks.${event}`);
    const found = findHook(groups ?? [], plan.tool);
    const wanted: Record<string, unknown> = {
      ...(plan.name ? { name: plan.name } : {}),
      type: "command",
      command,
      timeout: plan.timeout,
    };
    if (found) {
      const [group, index, hook] = found;
      for (const [key, value] of Object.entries(wanted)) {
        if (hook[key] !== value) text = edit(text, ["hooks", event, group, "hooks", index, key], value);
      }
    } else {
      text = edit(text, ["hooks", event, -1], { ...plan.group, hooks: [wanted] });
    }
  }
  return text;
}

/** Our own hook entry: its command runs ` hook <tool> ` (whatever the path to dock was then). */
function isOurs(entry: unknown, tool: IntegrationTool): entry is Record<string, unknown> {
  return isRecord(entry) && typeof entry.command === "string" && entry.command.includes(` hook ${tool} `);
}

function findHook(
  groups: unknown[],
  tool: IntegrationTool,
): [number, number, Record<string, unknown>] | null {
  for (const [g, group] of groups.entries()) {
    if (!isRecord(group) || !Array.isArray(group.hooks)) continue;
    for (const [h, hook] of group.hooks.entries()) {
      if (isOurs(hook, tool)) return [g, h, hook];
    }
  }
  return null;
}

/** Null when the tool is here (its folder exists or its command is on PATH), else why it looks absent. */
async function toolAbsence(tool: IntegrationTool, options: IntegrationOptions): Promise<string | null> {
  const folder = tool === "claude"
    ? claudeDir(options)
    : tool === "cursor"
    ? cursorDir(options)
    : tool === "gemini"
    ? geminiDir(options)
    : codexHomeDir(options);
  if (await exists(folder)) return null;
  // Cursor's CLI is also called plain `agent`, too common a name to take as proof; it keeps ~/.cursor.
  const commands = tool === "cursor" ? ["cursor-agent", "cursor"] : [tool];
  for (const command of commands) {
    if (which(command, options.env.PATH ?? "")) return null;
  }
  return `not found here (no ${folder}, no ${commands.join(" or ")} on PATH)`;
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

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
