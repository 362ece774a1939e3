/**
 * How each agent tool's permission prompt is answered with keystrokes (`POST sessions/{name}/answer`,
 * `dock session answer`): which keys mean yes, no and always. One table, on the box, so the CLI, the
 * app, the phone, MCP, flows and plugins all answer the same way. The keys are typed as keys, never
 * pasted: Claude Code's menu ignores a pasted `1` (TOOLCHAIN.md).
 *
 * "No" is Esc wherever the tool takes it: a menu's numbers shift with its length (Claude Code shows
 * "1. Yes / 2. No" for some tools and "1. Yes / 2. Yes, and don't ask again … / 3. No" for others), and
 * Esc is "No" in both. "Always" is typed only when the screen shows that option where the table expects
 * it, so a shorter menu never takes its number as something else.
 *
 * @module
 */
import { DockError } from "../client/errors.ts";
import type { PermissionAnswer, Session } from "../client/wire.ts";

/** How one tool's permission prompt is answered. */
export interface AnswerKeys {
  /** The keys of each answer (entries of `POST sessions/{name}/keys`). */
  keys: Record<PermissionAnswer, readonly string[]>;
  /**
   * What the screen must show for an answer to be typed (the option it picks, where the keys pick it),
   * for answers whose keys mean something else on another shape of the prompt.
   */
  shows?: Partial<Record<PermissionAnswer, RegExp>>;
  /** Where the table comes from, and what is not verified on the real tool yet. */
  source: string;
}

/**
 * The table, by tool. A menu's number key picks and confirms its option at once (no Enter): Enter after
 * it would reach the next screen.
 */
export const ANSWERS: Readonly<Record<string, AnswerKeys>> = {
  claude: {
    // Claude Code 2.1: "❯ 1. Yes / 2. Yes, and don't ask again for … / 3. No, and tell Claude what to
    // do differently (esc)". A digit picks its option at once (its issues #28749 and #27924 report the
    // times it did not, as regressions).
    keys: { yes: ["1"], always: ["2"], no: ["Escape"] },
    shows: { always: /^\s*(?:❯\s*)?2\.\s+Yes\b/m },
    source: "Claude Code 2.1 permission menu",
  },
  codex: {
    // Measured on Codex 0.169.0: "› 1. Yes, proceed (y) / 2. Yes, and don't ask again for commands that
    // start with `…` (p) / 3. No, and tell Codex what to do differently (esc)": `p`, not `a`, is always.
    keys: { yes: ["y"], always: ["p"], no: ["Escape"] },
    // A long command wraps the option's line: "(p)" may come lines later.
    shows: { always: /don't ask again[\s\S]*?\(p\)/ },
    source: "Codex 0.169.0 approval overlay (measured by the real-agent suite)",
  },
  gemini: {
    // Measured on Gemini CLI 0.61.0: "● 1. Allow once / 2. Allow for this session / 3. No, suggest
    // changes (esc)", a digit picking its option at once ("1" verified by the real-agent suite).
    keys: { yes: ["1"], always: ["2"], no: ["Escape"] },
    // Its menu is drawn inside a box: each line starts with "│" (measured on Gemini CLI 0.61.0).
    shows: { always: /^[\s│]*(?:[●❯>]\s*)?2\.\s+Allow\b/m },
    source: "Gemini CLI 0.61.0 tool confirmation (measured by the real-agent suite)",
  },
  fake: {
    // dock's fake agent (tests/fixtures/fake_agent.ts, `ASK-MENU`) draws Claude Code's menu and takes
    // the same keys.
    keys: { yes: ["1"], always: ["2"], no: ["Escape"] },
    shows: { always: /^\s*(?:❯\s*)?2\.\s+Yes\b/m },
    source: "dock's fake agent (Claude Code's menu)",
  },
};

/**
 * The tool a session runs, as the table names it: its agent preset's id when the table has it, else the
 * program its command runs (a config's own preset `claude --model opus` is Claude Code); null when none
 * is known.
 */
export function answerTool(session: Pick<Session, "agent" | "command">): string | null {
  if (session.agent && session.agent in ANSWERS) return session.agent;
  if (!session.agent) return null;
  for (const word of session.command.split(/\s+/)) {
    const program = word.replace(/^['"]|['"]$/g, "").split("/").pop() ?? "";
    if (program in ANSWERS) return program;
    if (program === "fake_agent.ts") return "fake";
  }
  return null;
}

/**
 * The keys that give `answer` to `session`'s permission prompt. 422 `answer_unknown` for a tool the
 * table does not know. With `screen` (what the pane shows now), 409 `answer_not_offered` when the
 * prompt shows no option for that answer where its keys would pick it.
 */
export function answerKeys(
  session: Pick<Session, "name" | "agent" | "command">,
  answer: PermissionAnswer,
  screen?: string,
): readonly string[] {
  const tool = answerTool(session);
  if (!tool) {
    throw new DockError(
      "answer_unknown",
      `session '${session.name}' runs ${
        session.agent ?? "no agent"
      }, whose permission prompt dock does not ` +
        `know how to answer (known: ${Object.keys(ANSWERS).join(", ")}); type its keys with \`session keys\``,
      { status: 422, detail: { session: session.name, agent: session.agent } },
    );
  }
  const table = ANSWERS[tool];
  const shows = table.shows?.[answer];
  if (screen !== undefined && shows && !shows.test(screen)) {
    throw new DockError(
      "answer_not_offered",
      `session '${session.name}': its permission prompt offers no '${answer}' option, so nothing was typed`,
      { status: 409, detail: { session: session.name, answer } },
    );
  }
  return table.keys[answer];
}
