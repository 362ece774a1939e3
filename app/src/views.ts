/**
 * Which view the page shows and which terminals are open, as signals; the address's fragment keeps the
 * view (`#board`, `#needs`, `#terminals`…) so a reload and the back button return to it.
 *
 * @module
 */
import { signal } from "@preact/signals";
import { markSeen } from "./store.ts";

/**
 * The views, in the order of the navigation. `agentOnly`: what only the laptop agent answers, or what a
 * phone may not read (a box's hooks and flows, its shares and units, the laptop's queue, plugins, kits,
 * themes and settings: its scope refuses them, `daemon/api/phone.ts`).
 */
export const VIEWS = [
  { id: "board", label: "Board", key: "b", agentOnly: false },
  { id: "needs", label: "Needs you", key: "n", agentOnly: false },
  { id: "terminals", label: "Terminals", key: "t", agentOnly: false },
  { id: "review", label: "Review", key: "r", agentOnly: true },
  { id: "task", label: "New task", key: "a", agentOnly: true },
  { id: "queue", label: "Queue", key: "q", agentOnly: true },
  { id: "events", label: "Events", key: "e", agentOnly: false },
  { id: "automation", label: "Hooks & flows", key: "h", agentOnly: true },
  { id: "plugins", label: "Plugins", key: "p", agentOnly: true },
  { id: "shares", label: "Shares & units", key: "u", agentOnly: true },
  { id: "kits", label: "Kits", key: "k", agentOnly: true },
  { id: "settings", label: "Settings", key: "s", agentOnly: true },
] as const;

/** The views the page offers: all of them through the agent, the others on a phone. */
export function viewsFor(agent: boolean): readonly (typeof VIEWS)[number][] {
  return VIEWS.filter((v) => agent || !v.agentOnly);
}

/** A view's id. */
export type ViewId = typeof VIEWS[number]["id"];

/** The view shown. */
export const view = signal<ViewId>(viewOf(location.hash));
/** Terminals open side by side, as `box/session`, oldest first; they stay attached while other views show. */
export const terminals = signal<{ box: string; session: string }[]>([]);
/** Terminals kept attached at once: opening one more detaches the oldest (each holds a socket and a tmux client). */
export const TERMINAL_POOL = 8;
/** The worktree the review view shows. */
export const reviewing = signal<{ box: string; location: string; worktree: string } | null>(null);

/** Shows a worktree's review (its commits, diff and actions). */
export function openReview(box: string, location: string, worktree: string): void {
  reviewing.value = { box, location, worktree };
  show("review");
}

/** Shows a view. */
export function show(id: ViewId): void {
  view.value = id;
  if (location.hash !== `#${id}`) history.replaceState(null, "", `#${id}`);
}

/** Opens a session's terminal (beside the others) and shows the terminals. */
export function openTerminal(box: string, session: string): void {
  markSeen(box, session);
  if (!terminals.value.some((t) => t.box === box && t.session === session)) {
    terminals.value = [...terminals.value, { box, session }].slice(-TERMINAL_POOL);
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
