/**
 * Hooks and `before:` gates (spec 2.5, 2.9, 6). STUB: the engine lands in this session; the gate
 * signature below is the contract the API routes call.
 *
 * @module
 */

/** Who asked for a gated action, and where. */
export interface GateContext {
  /** The request's origin (`X-Dock-Origin`, default `api`). */
  origin: string;
  /** The location the action targets, when there is one: its config's gates run too. */
  location?: string;
  /** The worktree the action targets, when there is one (gates run in it). */
  worktree?: string;
}

/** Runs hooks on events and gates before actions. */
export class Hooks {
  /**
   * Runs every `before:<action>` gate; resolves when all allow, throws a 403 DockError
   * (`gate_refused` with the first line of the gate's stderr, or `gate_timeout`) when one refuses.
   * `target` is what the gate receives on stdin as `target` (identifiers; for session.send the text).
   */
  gate(_action: string, _target: Record<string, unknown>, _context: GateContext): Promise<void> {
    return Promise.resolve();
  }
}
