/**
 * What the terminal does to its stream (app/src/terminal.tsx), apart from xterm so it is tested alone:
 * the alternate-screen switches taken out (so tmux draws where xterm keeps scrollback), and the history
 * above the screen told from a capture of history and screen.
 *
 * @module
 */

/** The alternate-screen switches tmux's client sends: `CSI ? 1049 h`, `… l`, and the older 1047 and 47. */
// deno-lint-ignore no-control-regex
export const ALT_SCREEN = /\x1b\[\?(?:1049|1047|47)[hl]/g;

/**
 * Takes the alternate-screen switches out of a terminal stream, one chunk at a time: a switch cut across
 * two chunks is held back until the next (at most its 8 bytes).
 */
export function altScreenFilter(): (chunk: Uint8Array) => Uint8Array {
  let held = new Uint8Array(0);
  // deno-lint-ignore no-control-regex
  const partial = /^\x1b(?:\[(?:\?[0-9]{0,4})?)?$/;
  return (chunk) => {
    // Most chunks (every keystroke's echo) hold no escape at all: passed on as they are.
    if (held.length === 0 && !chunk.includes(0x1b)) return chunk;
    const bytes = new Uint8Array(held.length + chunk.length);
    bytes.set(held);
    bytes.set(chunk, held.length);
    // Latin-1 maps each byte to one char and back, so UTF-8 sequences pass through untouched.
    let text = "";
    for (let i = 0; i < bytes.length; i += 8192) {
      text += String.fromCharCode(...bytes.subarray(i, i + 8192));
    }
    text = text.replace(ALT_SCREEN, "");
    const tail = text.lastIndexOf("\x1b");
    const keep = tail >= 0 && text.length - tail < 8 && partial.test(text.slice(tail))
      ? text.length - tail
      : 0;
    held = Uint8Array.from(text.slice(text.length - keep), (c) => c.charCodeAt(0));
    return Uint8Array.from(text.slice(0, text.length - keep), (c) => c.charCodeAt(0));
  };
}

/** The history above the visible screen: `full` (history and screen) less its end, `screen`. */
export function historyAbove(full: string, screen: string): string {
  if (!screen.trim()) return full;
  return full.endsWith(screen) ? full.slice(0, full.length - screen.length) : full;
}
