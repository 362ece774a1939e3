/**
 * Hand-off (spec: `POST tasks` `from_session`): a new task started from a session, recording which one it
 * continues. Apart from the New view so the palette offers it without loading that view's code.
 *
 * @module
 */
import { signal } from "@preact/signals";
import type { Session } from "../../client/wire.ts";
import { show } from "./views.ts";

/** The session the next task is handed off from, or null. */
export const handOff = signal<{ box: string; session: string; location: string } | null>(null);

/** Starts a hand-off from `session`: the New view opens on its box and location, naming it. */
export function startHandOff(box: string, session: Pick<Session, "name" | "location">): void {
  handOff.value = { box, session: session.name, location: session.location };
  show("task");
}
