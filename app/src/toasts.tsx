/**
 * Toasts: the events a person should see where they are, not only in the event log: the resource guard
 * acting (`guard.acted`: what it stopped or paused), port forwards made or gone (`forward.*`), and
 * secrets resolved or failing (`secret.*`, never a value: the events carry none).
 *
 * @module
 */
import { signal } from "@preact/signals";
import type { DockEvent } from "../../client/wire.ts";
import { after } from "./clock.ts";

/** A toast on screen. */
export interface Toast {
  id: number;
  type: string;
  text: string;
  bad: boolean;
}

/** The toasts shown, oldest first (at most {@linkcode TOAST_LIMIT}). */
export const toasts = signal<Toast[]>([]);

const TOAST_LIMIT = 4;
/** How long a toast stays (a failure stays until dismissed). */
const TOAST_MS = 8000;
let counter = 0;

function list(value: unknown, item: (entry: Record<string, unknown>) => string): string {
  return Array.isArray(value) ? value.map((v) => item(v as Record<string, unknown>)).join(", ") : "";
}

/** What an event says as a toast, or null for events that stay in the log. */
export function toastText(event: DockEvent): { text: string; bad: boolean } | null {
  const data = (event.data ?? {}) as Record<string, unknown>;
  const on = event.box ? ` on ${event.box}` : "";
  const where = typeof data.worktree === "string" ? ` (${data.location}/${data.worktree})` : "";
  switch (event.type) {
    case "guard.acted": {
      const stopped = list(data.stopped, (s) => `${s.location}/${s.worktree}/${s.service}`);
      const paused = list(data.paused, (p) => String(p.session));
      const parts = [stopped && `stopped ${stopped}`, paused && `paused ${paused}`].filter(Boolean);
      return { text: `Memory guard${on}: ${parts.join("; ") || "acted"}`, bad: true };
    }
    case "forward.created":
      return { text: `Forwarding localhost:${data.local} to ${data.box}:${data.remote}`, bad: false };
    case "forward.removed":
      return { text: `Forward localhost:${data.local} to ${data.box}:${data.remote} stopped`, bad: false };
    case "secret.failed":
      return {
        text: `Secret ${data.variable}${on}${where} did not resolve: ${data.error ?? "unknown error"}`,
        bad: true,
      };
    case "secret.resolved":
      return { text: `Secret ${data.variable}${on}${where} resolved from ${data.scheme}`, bad: false };
  }
  return null;
}

/** Shows an event as a toast when it is one of those that matter where the person is. */
export function toastEvent(event: DockEvent): void {
  const said = toastText(event);
  if (!said) return;
  const toast = { id: ++counter, type: event.type, ...said };
  toasts.value = [...toasts.value, toast].slice(-TOAST_LIMIT);
  if (!toast.bad) after(TOAST_MS, () => dismiss(toast.id));
}

/** Removes a toast. */
export function dismiss(id: number): void {
  toasts.value = toasts.value.filter((t) => t.id !== id);
}

/** The toasts, bottom right. */
export function Toasts() {
  if (toasts.value.length === 0) return null;
  return (
    <div class="toasts" role="status" aria-live="polite">
      {toasts.value.map((t) => (
        <div key={t.id} class={`toast ${t.bad ? "bad" : ""}`} data-type={t.type}>
          <span>{t.text}</span>
          <button type="button" class="icon" aria-label="Dismiss" onClick={() => dismiss(t.id)}>×</button>
        </div>
      ))}
    </div>
  );
}
