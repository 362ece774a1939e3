/**
 * Duration strings as the spec writes them (`30s`, `1m`, `2h`, `1h30m`, `500ms`).
 *
 * @module
 */
import { DockError } from "./errors.ts";

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Parses a duration string (or a number of seconds) into milliseconds; throws on anything else. */
export function parseDuration(input: string | number, field = "timeout"): number {
  if (typeof input === "number") {
    if (!Number.isFinite(input) || input < 0) {
      throw new DockError(
        "invalid_duration",
        `${field}: must be a non-negative number of seconds, got ${input}`,
      );
    }
    return Math.round(input * 1000);
  }
  const text = input.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h|d)/g)];
  if (!parts.length || parts.map((p) => p[0]).join("") !== text) {
    throw new DockError(
      "invalid_duration",
      `${field}: must be a duration such as 30s, 10m or 1h, got ${JSON.stringify(input)}`,
    );
  }
  return parts.reduce((sum, [, amount, unit]) => sum + Number(amount) * UNIT_MS[unit], 0);
}

/** Formats milliseconds the way people write durations (`1h30m`, `45s`, `250ms`). */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  let seconds = Math.round(ms / 1000);
  const hours = Math.floor(seconds / 3600);
  seconds -= hours * 3600;
  const minutes = Math.floor(seconds / 60);
  seconds -= minutes * 60;
  return [hours && `${hours}h`, minutes && `${minutes}m`, seconds && `${seconds}s`].filter(Boolean).join(
    "",
  ) ||
    "0s";
}
