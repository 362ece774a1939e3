/**
 * A keystroke's echo drawn as it arrives (issue 32), not on xterm.js's next animation frame.
 *
 * xterm.js parses the first write after a key at once, but draws every change on the next animation
 * frame (its render debouncer): the echo reached the page 2–4 ms after the key and was drawn 11 ms over
 * the PTY floor (bench/app.ts, 60 Hz frames). A small write into a quiet stream (an echo, a prompt) has
 * its rows drawn now instead, in place of that frame's draw (its frame is cancelled, so no row is drawn
 * twice). A stream that is busy (output arriving less than a frame apart, or in large chunks) keeps the
 * frame batching: one draw per frame however many writes.
 *
 * xterm.js has no public call that draws now (`refresh` goes through the same debouncer): the debouncer
 * is reached through its private fields, as @xterm/xterm 6.0.0 names them (its bundle keeps them). If
 * they are not there (another version), nothing changes: the frame draws as before.
 *
 * @module
 */
import type { Terminal } from "@xterm/xterm";

/** The largest write drawn at once: a key's echo from tmux is 1–40 bytes (cursor moves included). */
export const SMALL_WRITE = 256;
/** A stream is quiet when its previous write came at least this long ago: one frame at 60 Hz. */
export const QUIET_MS = 16;

/** The part of xterm.js 6.0's render debouncer (browser/RenderDebouncer.ts) drawn through. */
interface RenderDebouncer {
  _animationFrame?: number;
  _innerRefresh?: () => void;
}

/** Decides, write by write, which writes are drawn at once: small ones into a quiet stream. */
export class DrawPolicy {
  #last = -Infinity;

  /** True when a write of `bytes` at `now` (ms) is drawn at once; every write is counted. */
  drawsNow(bytes: number, now: number): boolean {
    const quiet = now - this.#last >= QUIET_MS;
    this.#last = now;
    return quiet && bytes <= SMALL_WRITE;
  }
}

/** Draws the rows xterm.js has waiting for its next frame now, and cancels that frame; false if none. */
export function drawPending(term: Terminal): boolean {
  const debouncer =
    (term as unknown as { _core?: { _renderService?: { _renderDebouncer?: RenderDebouncer } } })
      ._core?._renderService?._renderDebouncer;
  const frame = debouncer?._animationFrame;
  if (frame === undefined || typeof debouncer?._innerRefresh !== "function") return false;
  cancelAnimationFrame(frame);
  debouncer._innerRefresh();
  return true;
}

/** The part of xterm.js 6.0's DOM renderer glyph widths (browser/renderer/dom/WidthCache.ts) used here. */
interface WidthCache {
  get?(c: string, bold: boolean, italic: boolean): number;
}

/**
 * Measures the printable ASCII glyphs' widths now, off the key path: xterm.js's DOM renderer measures a
 * glyph the first time a row holds it, by forcing a layout (`offsetWidth`), inside the draw of that row:
 * a key's echo with a letter not yet shown spent ~1.2 ms of its ~2.2 ms in the page there (a Chromium
 * profile of 25 echoes under load; the bench types a–z). Reached through private fields, as xterm.js
 * 6.0.0 names them (its bundle keeps them); false when they are not there, and nothing changes.
 */
export function warmWidths(term: Terminal): boolean {
  const cache = (term as unknown as {
    _core?: { _renderService?: { _renderer?: { value?: { _widthCache?: WidthCache } } } };
  })._core?._renderService?._renderer?.value?._widthCache;
  if (typeof cache?.get !== "function") return false;
  for (let code = 0x20; code < 0x7f; code++) cache.get(String.fromCharCode(code), false, false);
  return true;
}
