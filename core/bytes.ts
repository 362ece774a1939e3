/**
 * Byte arrays joined: what a wire format made of parts (a tar member, a PNG chunk, a chunked HTTP body)
 * is assembled from.
 *
 * @module
 */

/** `parts` one after another in one new array. */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(parts.reduce((total, part) => total + part.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}
