/**
 * The page's performance marks, read by the app's bench (bench/app.ts) through the User Timing API:
 * `dock:board` when the board has drawn a new count of sessions (`detail`: the count), and `dock:diff-shown`
 * when a review's diff is on screen (`detail`: its changed lines).
 * Each name keeps only its last mark, so the buffer stays bounded however long the page runs.
 *
 * @module
 */

/** The marks the page sets. */
export type MarkName = "dock:board" | "dock:diff-shown";

/** Sets `name`'s mark now (replacing its previous one), with an optional number as its detail. */
export function mark(name: MarkName, detail?: number): void {
  performance.clearMarks(name);
  performance.mark(name, { detail });
}
