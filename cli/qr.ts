/**
 * A QR code drawn in the terminal with Unicode half blocks (two modules a character, so a phone's camera
 * reads it off an ordinary terminal), by `npm:uqr`. Loaded only by `phone pair` (through `lazy.ts`): the
 * other commands load no npm package.
 *
 * @module
 */
import { renderUnicodeCompact } from "uqr";

/** `text` as a QR code in half blocks, with a quiet zone of two modules. */
export function qrCode(text: string): string {
  return renderUnicodeCompact(text, { border: 2 });
}
