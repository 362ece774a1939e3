/**
 * Which view the page shows and which terminals are open, as signals; the address's fragment keeps the
 * view (`#board`, `#needs`, `#terminals`…) so a reload and the back button return to it.
 *
 * @module
 */
import { signal } from "@preact/signals";
import { markSeen } from "./store.ts";

/** The views, in the order of the navigation. */
export const VIEWS = [
  { id: "board", label: "Board", key: "b" },
  { id: "needs", label: "Needs you", key: "n" },
  { id: "terminals", label: "Terminals", key: "t" },
  { id: "task", label: "New task", key: "a" },
  { id: "queue", label: "Queue", key: "q" },
  { id: "events", label: "Events", key: "e" },
  { id: "automation", label: "Hooks & flows", key: "h" },
  { id: "plugins", label: "Plugins", key: "p" },
  { id: "shares", label: "Shares & units", key: "u" },
  { id: "kits", label: "Kits", key: "k" },
  { id: "settings", label: "Settings", key: "s" },
] as const;

/** A view's id. */
export type ViewId = typeof VIEWS[number]["id"];

/** The view shown. */
export const view = signal<ViewId>(viewOf(location.hash));
/** Terminals open side by side, as `box/session`. */
export const terminals = signal<{ box: string; session: string }[]>([]);

/** Shows a view. */
export function show(id: ViewId): void {
  view.value = id;
  if (location.hash !== `#${id}`) history.replaceState(null, "", `#${id}`);
}

/** Opens a session's terminal (beside the others) and shows the terminals. */
export function openTerminal(box: string, session: string): void {
  markSeen(box, session);
  if (!terminals.value.some((t) => t.box === box && t.session === session)) {
    terminals.value = [...terminals.value, { box, session }];
  }
  show("terminals");
}

/** Closes one terminal. */
export function closeTerminal(box: string, session: string): void {
  terminals.value = terminals.value.filter((t) => !(t.box === box && t.session === session));
}

function viewOf(hash: string): ViewId {
  const id = hash.replace(/^#/, "");
  return VIEWS.find((v) => v.id === id)?.id ?? "board";
}
