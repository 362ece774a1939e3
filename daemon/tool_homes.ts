/**
 * Where the agent tools keep their files on this machine: Claude Code's `~/.claude` (moved whole by
 * `CLAUDE_CONFIG_DIR`), Codex's `~/.codex` (`CODEX_HOME`) and Cursor's `~/.cursor`. The integration
 * installers and the skills on disk both find their folders here.
 *
 * @module
 */
import { isAbsolute, join, resolve } from "../core/posix_path.ts";

/** Where an install looks: the home folder and the environment (`CLAUDE_CONFIG_DIR`, `CODEX_HOME`, `PATH`). */
export interface HomeOptions {
  /** The user's home folder. */
  home: string;
  /** The environment the tools see. */
  env: Record<string, string | undefined>;
}

/** `$CLAUDE_CONFIG_DIR` (it moves the whole `~/.claude`), else `~/.claude`. */
export function claudeDir(options: HomeOptions): string {
  const dir = options.env.CLAUDE_CONFIG_DIR;
  return dir ? expandHome(dir, options.home) : join(options.home, ".claude");
}

/**
 * Claude Code's own state file, where user-scope MCP servers live (`mcpServers`): `~/.claude.json`, or
 * `.claude.json` inside `$CLAUDE_CONFIG_DIR` when that moves its configuration.
 */
export function claudeStateFile(options: HomeOptions): string {
  const dir = options.env.CLAUDE_CONFIG_DIR;
  return dir ? join(expandHome(dir, options.home), ".claude.json") : join(options.home, ".claude.json");
}

/** `$CODEX_HOME`, else `~/.codex`. */
export function codexHomeDir(options: HomeOptions): string {
  const dir = options.env.CODEX_HOME;
  return dir ? expandHome(dir, options.home) : join(options.home, ".codex");
}

/** `~/.cursor` (Cursor has no variable to move it). */
export function cursorDir(options: HomeOptions): string {
  return join(options.home, ".cursor");
}

/** `~/.gemini`, where Gemini CLI keeps its user `settings.json`. */
export function geminiDir(options: HomeOptions): string {
  return join(options.home, ".gemini");
}

function expandHome(path: string, home: string): string {
  if (path === "~") return home;
  if (path.startsWith("~/")) return join(home, path.slice(2));
  return isAbsolute(path) ? path : resolve(path);
}
