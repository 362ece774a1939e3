/**
 * A prompt an agent tool put back in its input box after an interrupt, found and cleared before dock's
 * next send. Claude Code 2.1 (measured on 2.1.332 by tests/real_agents/): Esc before the model has
 * answered ends the turn and puts the interrupted prompt back in the input box; the next `send` was
 * pasted after it, and the model got both prompts run together, with the first one's script (a turn of
 * 120 s instead of an instant one). A denied permission prompt puts nothing back (measured on the same
 * version): the box is then empty and nothing is cleared.
 *
 * The box is cleared only when it shows exactly the prompt dock itself sent last, so text a person typed
 * there (alone or after the restored prompt) is never discarded.
 *
 * @module
 */
import type { Session } from "../client/wire.ts";
import { answerTool } from "./answers.ts";
import { exact, type Tmux } from "./tmux.ts";

/** Per tool: the key that empties its input box (typed through `Tmux.typeKeys`' named keys). */
export const CLEAR_INPUT: Readonly<Record<string, string>> = {
  // Ctrl-U deletes back to the line's start; a prompt put back is one line (multi-line ones are not
  // tracked: `trackedPrompt`). Esc twice would also clear, but opens the rewind menu on an empty box.
  claude: "C-u",
};

/** Longest prompt remembered for the check (a longer one is not looked for, and never cleared). */
export const TRACKED_PROMPT_BYTES = 4096;

/** Whether `text` is a prompt whose restoring can be recognized: one line, not longer than the limit. */
export function trackedPrompt(text: string): boolean {
  return text.trim() !== "" && !/[\r\n]/.test(text) && text.length <= TRACKED_PROMPT_BYTES;
}

/**
 * What the input box of `tool` shows on `screen` (Claude Code: the lines from the last `❯` line to the
 * rule under it, joined, spaces collapsed), or null when none is found.
 */
export function inputBoxText(tool: string, screen: string): string | null {
  if (!(tool in CLEAR_INPUT)) return null;
  const lines = screen.split("\n");
  const start = lines.findLastIndex((line) => /^❯(\s|$)/.test(line));
  if (start < 0) return null;
  const box: string[] = [];
  for (const line of lines.slice(start)) {
    if (/^─{4,}/.test(line.trim())) break;
    box.push(line);
  }
  return collapse(box.join(" ").replace(/^❯/, ""));
}

/** Whether `tool`'s input box on `screen` holds exactly `prompt`, put back after an interrupt. */
export function showsRestored(tool: string, screen: string, prompt: string): boolean {
  const shown = inputBoxText(tool, screen);
  return shown !== null && shown !== "" && shown === collapse(prompt);
}

function collapse(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/** Per agent session, the last prompt dock submitted, and the check before the next one. */
export class RestoredInputs {
  /** One line of at most 4 KiB per session (`trackedPrompt`); a session's entry is replaced by each send. */
  #last = new Map<string, string>();

  /**
   * Before `next` is typed into `session`: when an interrupt left it waiting for input and its input
   * box shows, exactly, the prompt dock sent last, types the tool's key that empties the box, so `next`
   * arrives alone. Remembers `next` for the send after.
   */
  async clearBefore(
    session: Session,
    next: string,
    tmux: Pick<Tmux, "capture" | "command">,
  ): Promise<boolean> {
    const last = this.#last.get(session.name);
    if (trackedPrompt(next)) this.#last.set(session.name, next);
    else this.#last.delete(session.name);
    const tool = answerTool(session);
    if (!last || !tool || !(tool in CLEAR_INPUT)) return false;
    if (session.agent_state !== "waiting" || session.reason !== "input") return false;
    const screen = await tmux.capture(session.name, 0).catch(() => "");
    if (!showsRestored(tool, screen, last)) return false;
    await tmux.command(["send-keys", "-t", exact(session.name), CLEAR_INPUT[tool]]);
    return true;
  }

  /** Forgets a session that is gone. */
  forget(name: string): void {
    this.#last.delete(name);
  }
}
