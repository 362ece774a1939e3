/**
 * Task templates (spec 2.8): `{{var}}` in a template's branch, prompt, command and base, and whether a
 * template can make a task at all.
 *
 * @module
 */
import type { TaskTemplate } from "../../client/wire.ts";

/** `{{var}}` replaced by its value (unknown ones left as they are). */
export function fill(text: string, values: Record<string, string>): string {
  return text.replace(/\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g, (all, id) => values[id] ?? all);
}

/**
 * Why a template cannot make a task, or null: the agent reads a first prompt, a command does not, so a
 * template with `command` and `prompt` would always be refused (`prompt: a first prompt needs an agent`).
 * The agent lists such a template with `error` already; this covers an older agent's list too.
 */
export function templateProblem(template: TaskTemplate): string | null {
  if (template.error) return template.error;
  if (template.agent && template.command) return "command: give either agent or command, not both";
  if (template.command && template.prompt !== undefined) {
    return "prompt: a first prompt needs an agent: a command takes none";
  }
  return null;
}
