/**
 * How each real agent tool is run in a dock session against the scripted model server: its agent
 * preset (the model server's address in its environment), its HOME with the first-run screens already
 * answered, and what its screen shows at rest and on a permission prompt. Hooks are never written here:
 * `dockd integrations install <tool>` installs them.
 *
 * @module
 */
import { join } from "node:path";
import type { AgentPreset } from "../../client/wire.ts";
import type { Installed } from "./install.ts";
import { BUILTIN_AGENTS } from "../../daemon/agents.ts";

/** The tools the suite runs. */
export type ToolId = "claude" | "codex" | "gemini";

/** One real tool, as the suite drives it. */
export interface RealTool {
  id: ToolId;
  /** The preset a location's config gives it (its id is the tool's, so dock knows the agent). */
  preset(tools: Installed, modelUrl: string): AgentPreset;
  /** Writes what skips its first-run screens for `project`, before `integrations install`. */
  prepareHome(home: string, project: string, modelUrl: string): Promise<void>;
  /** After `integrations install`: what the person does by hand that dock does not (Codex's notify line). */
  afterInstall?(home: string, notify?: string): Promise<void>;
  /** On screen when the tool is at its prompt. */
  ready: RegExp;
  /** On screen while its permission prompt is up. */
  permission: RegExp;
  /** The keystrokes that answer its permission prompt yes, as a person types them. */
  yesKeys: string[];
  /**
   * Keys typed in tmux are submitted by an Enter of their own, once drawn and settled (Codex and Gemini
   * CLI take a fast burst of keys as a paste; Gemini turns an Enter within 40 ms of one into a newline).
   */
  enterApart: boolean;
  /**
   * The state after Esc mid-turn: `waiting` for input (Claude Code reports nothing, dock's check of the
   * pane decides; Codex fires `Interrupt`), or `finished` (Gemini CLI fires `AfterAgent` on a cancel).
   */
  interrupted: { state: "waiting"; reason: "input" } | { state: "finished" };
  /**
   * Why this tool's checks are scored (the bench prints them) but not asserted by the test, when they
   * are not: the test asserts Claude Code and Codex; the issue asks for Claude Code and one of the others.
   */
  scoredOnly?: string;
  /** Scenarios this tool cannot take, with why. */
  skip?: Record<string, string>;
}

/** dock's built-in preset's command line for `id` (its flags are part of what is tested). */
function builtin(id: string): string {
  return BUILTIN_AGENTS.find((preset) => preset.id === id)!.command;
}

/** An API key the tools accept: Claude Code approves a key by its last 20 characters. */
const KEY = "sk-ant-dock-test-0123456789abcdefghij";

const claude: RealTool = {
  id: "claude",
  preset: (tools, url) => ({
    id: "claude",
    name: "Claude Code (real)",
    command: [
      `ANTHROPIC_BASE_URL=${url}`,
      `ANTHROPIC_API_KEY=${KEY}`,
      "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
      "DISABLE_AUTOUPDATER=1",
      `'${tools.claude}'`,
      "--permission-mode",
      "default",
    ].join(" "),
    prompt_flag: "",
  }),
  async prepareHome(home, project) {
    await Deno.writeTextFile(
      join(home, ".claude.json"),
      JSON.stringify({
        hasCompletedOnboarding: true,
        customApiKeyResponses: { approved: [KEY.slice(-20)], rejected: [] },
        projects: { [project]: { hasTrustDialogAccepted: true } },
      }),
    );
  },
  ready: /\? for shortcuts/,
  permission: /Do you want to proceed\?/,
  yesKeys: ["1"],
  enterApart: false,
  interrupted: { state: "waiting", reason: "input" },
};

const codex: RealTool = {
  id: "codex",
  preset: (tools) => ({
    id: "codex",
    name: "Codex (real)",
    // The hooks `integrations install codex` wrote run once the person trusts them in Codex's /hooks
    // screen; this flag stands for that review (Codex keeps trust by hash in its own config).
    command: `DOCK_TEST_MODEL_KEY=x ${builtin("codex").replace(/^codex\b/, `'${tools.codex}'`)} ` +
      "--dangerously-bypass-hook-trust",
    prompt_flag: "",
  }),
  async prepareHome(home, project, url) {
    await Deno.mkdir(join(home, ".codex"), { recursive: true });
    await Deno.writeTextFile(
      join(home, ".codex", "config.toml"),
      [
        'model = "gpt-5-codex"',
        'model_provider = "scripted"',
        // Codex 0.169 asks before a command only when the model asks to leave the sandbox.
        'approval_policy = "on-request"',
        'sandbox_mode = "workspace-write"',
        "check_for_update_on_startup = false",
        "",
        "[model_providers.scripted]",
        'name = "scripted"',
        `base_url = "${url}/v1"`,
        'wire_api = "responses"',
        'env_key = "DOCK_TEST_MODEL_KEY"',
        "",
        `[projects.${JSON.stringify(project)}]`,
        'trust_level = "trusted"',
        "",
      ].join("\n"),
    );
  },
  async afterInstall(home, notify) {
    if (!notify) return;
    // The person adds the notify line `integrations install` printed, at the top level.
    const file = join(home, ".codex", "config.toml");
    await Deno.writeTextFile(file, `${notify}\n${await Deno.readTextFile(file)}`);
  },
  ready: /\? for shortcuts|Ask Codex to do anything/,
  permission: /Would you like to run|allow Codex to run|Yes, proceed/i,
  yesKeys: ["y"],
  enterApart: true,
  interrupted: { state: "waiting", reason: "input" },
};

const gemini: RealTool = {
  id: "gemini",
  preset: (tools, url) => ({
    id: "gemini",
    name: "Gemini CLI (real)",
    command: `GEMINI_API_KEY=x GOOGLE_GEMINI_BASE_URL=${url} '${tools.gemini}'`,
    prompt_flag: "-i",
  }),
  async prepareHome(home) {
    await Deno.mkdir(join(home, ".gemini"), { recursive: true });
    // The API key chosen as the way in (no auth dialog), no folder-trust dialog, nothing sent home.
    await Deno.writeTextFile(
      join(home, ".gemini", "settings.json"),
      JSON.stringify({
        security: { auth: { selectedType: "gemini-api-key" }, folderTrust: { enabled: false } },
        privacy: { usageStatisticsEnabled: false },
        general: { disableAutoUpdate: true, disableUpdateNag: true },
      }),
    );
  },
  ready: /Type your message/,
  permission: /Allow execution of/,
  yesKeys: ["1"],
  enterApart: true,
  interrupted: { state: "finished" },
  scoredOnly: "Gemini CLI 0.61 turns an Enter read within 40 ms of a paste into a newline; dock's send " +
    "waits until the paste is drawn and the screen is quiet, which holds on an idle box, but on a loaded " +
    "one (the whole suite in parallel) a prompt now and then stays typed, not submitted, and an Esc now " +
    "and then does not cancel",
};

/** Every tool the suite knows, by id. */
export const REAL_TOOLS: Partial<Record<ToolId, RealTool>> = { claude, codex, gemini };
