/**
 * The page's theme: System, Light, Dark or one of the laptop's theme files (`GET /v1/themes`), applied
 * as CSS variables and kept in localStorage (this browser's choice, across reloads and tabs; the page's
 * CSP governs what loads, not storage). The token stays in sessionStorage: a theme is no secret.
 *
 * @module
 */
import { signal } from "@preact/signals";

const KEY = "dock.theme";

/** The theme applied: null for the system's. */
export const theme = signal<Record<string, unknown> | null>(null);

/** A theme's name as the header's button says it. */
export function themeName(value: Record<string, unknown> | null): string {
  if (!value) return "System";
  return String(value.name ?? value.id ?? "custom");
}

/**
 * Applies a theme and keeps it: `scheme` (`light`/`dark`) picks the base palette; `colors` (or top-level
 * keys starting with `--`) set CSS variables.
 */
export function applyTheme(value: Record<string, unknown> | null): void {
  paint(value);
  if (value) localStorage.setItem(KEY, JSON.stringify(value));
  else localStorage.removeItem(KEY);
}

/** Applies the theme kept from an earlier visit, if any (before the first paint, so nothing flashes). */
export function restoreTheme(): void {
  try {
    const kept = localStorage.getItem(KEY);
    const value = kept ? JSON.parse(kept) : null;
    paint(value && typeof value === "object" && !Array.isArray(value) ? value : null);
  } catch {
    // A kept value that no longer parses is dropped: the system's theme then.
    localStorage.removeItem(KEY);
    paint(null);
  }
}

/** The built-in themes the header's button goes through, in order. */
export const BUILT_IN: (Record<string, unknown> | null)[] = [
  null,
  { id: "light", name: "Light", scheme: "light" },
  { id: "dark", name: "Dark", scheme: "dark" },
];

/** Applies the next of the built-in themes (from a theme file: the system's). */
export function nextTheme(): void {
  const at = BUILT_IN.findIndex((t) => (t?.id ?? null) === (theme.value?.id ?? null));
  applyTheme(BUILT_IN[(at + 1) % BUILT_IN.length]);
}

function paint(value: Record<string, unknown> | null): void {
  const root = document.documentElement;
  root.removeAttribute("style");
  root.dataset.theme = typeof value?.scheme === "string" ? value.scheme : "";
  theme.value = value;
  if (!value) return;
  const colors = (typeof value.colors === "object" && value.colors ? value.colors : {}) as Record<
    string,
    unknown
  >;
  for (const [name, v] of Object.entries({ ...value, ...colors })) {
    if (typeof v !== "string") continue;
    if (name.startsWith("--")) root.style.setProperty(name, v);
    else if (name in colors) root.style.setProperty(`--${name}`, v);
  }
}
