/**
 * Task templates' variables (spec 2.8): `{{var}}` in a template's branch, prompt, command and base.
 *
 * @module
 */

/** `{{var}}` replaced by its value (unknown ones left as they are). */
export function fill(text: string, values: Record<string, string>): string {
  return text.replace(/\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}/g, (all, id) => values[id] ?? all);
}
