/**
 * Agent presets (spec 2.5 `agents`): the five built-ins, each offered only when its command is
 * installed on the box, and a location's config adding presets or replacing built-ins by id.
 *
 * @module
 */
import type { AgentPreset, DockConfig } from "../client/wire.ts";
import { pathTools } from "./tools.ts";

/** The built-in presets. `prompt_flag` empty: the first prompt is the last argument. */
export const BUILTIN_AGENTS: readonly AgentPreset[] = [
  { id: "claude", name: "Claude Code", command: "claude", prompt_flag: "" },
  // Codex 0.169 otherwise serves every TUI from one background server, started with the first session's
  // environment: its hooks then report every session as that one (DOCK_SESSION), measured on the real tool.
  { id: "codex", name: "Codex", command: "codex --no-daemon", prompt_flag: "" },
  { id: "opencode", name: "opencode", command: "opencode", prompt_flag: "--prompt" },
  { id: "gemini", name: "Gemini CLI", command: "gemini", prompt_flag: "-i" },
  { id: "cursor", name: "Cursor", command: "cursor-agent", prompt_flag: "" },
];

/**
 * The presets offered: built-ins and config presets whose program is installed.
 * `installed` defaults to a lookup of the daemon's cached PATH listings (`tools.ts`).
 */
export function availableAgents(
  config: DockConfig = {},
  installed: (cmd: string) => boolean = installedNow(),
) {
  const byId = new Map<string, AgentPreset>(BUILTIN_AGENTS.map((a) => [a.id, a]));
  for (const preset of config.agents ?? []) byId.set(preset.id, preset);
  return [...byId.values()].filter((preset) => installed(program(preset.command)));
}

/** The command line that starts `preset` with a first prompt: `[command, flag?]` plus the prompt. */
export function agentArgs(preset: AgentPreset, prompt: string | undefined): string[] {
  if (prompt === undefined || prompt === "") return [];
  return preset.prompt_flag ? [preset.prompt_flag, prompt] : [prompt];
}

/** The program a shell command line runs first (`FOO=1 npx claude --x` → `npx`). */
export function program(command: string): string {
  const words = command.trim().split(/\s+/).filter((w) => !/^[A-Za-z_][A-Za-z0-9_]*=/.test(w));
  return (words[0] ?? "").replace(/^["']|["']$/g, "");
}

function installedNow(): (command: string) => boolean {
  const which = pathTools.lookup();
  return (command) => command !== "" && which(command) !== null;
}
