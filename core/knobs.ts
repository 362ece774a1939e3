/**
 * Tuning and test knobs read from the environment (`DOCK_JOURNAL_BYTES`, `DOCK_LISTEN_IDLE_MS`, …): a
 * positive whole number, or undefined so the module's own default holds. One reader, so every knob
 * treats an empty, zero or malformed value the same way.
 *
 * @module
 */

/** `name` from `env` as a positive whole number; undefined when unset, empty, zero or not one. */
export function positiveFromEnv(
  name: string,
  env: { get(key: string): string | undefined } = Deno.env,
): number | undefined {
  const value = Number(env.get(name));
  return Number.isInteger(value) && value > 0 ? value : undefined;
}
