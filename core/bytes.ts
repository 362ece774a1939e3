/**
 * Byte arrays joined (what a wire format made of parts, a tar member, a PNG chunk, a chunked HTTP body,
 * is assembled from), written as hex, hashed, and compared as secrets.
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

/** `bytes` as lowercase hex, two digits each. */
export function hex(bytes: Uint8Array): string {
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

/** The SHA-256 of `data` (text as UTF-8) in lowercase hex; `bytes` of it when given (its first). */
export async function sha256Hex(data: string | Uint8Array<ArrayBuffer>, bytes = 32): Promise<string> {
  const input = typeof data === "string" ? new TextEncoder().encode(data) : data;
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-256", input), 0, bytes);
  return hex(digest);
}

/** Compares two secrets in constant time (for equal lengths); `b` may be given encoded already. */
export function sameSecret(a: string, b: string | Uint8Array): boolean {
  const x = new TextEncoder().encode(a);
  const y = typeof b === "string" ? new TextEncoder().encode(b) : b;
  if (x.length !== y.length) return false;
  let diff = 0;
  for (let i = 0; i < x.length; i++) diff |= x[i] ^ y[i];
  return diff === 0;
}
