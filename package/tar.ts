/**
 * The little of the tar format a package's zstd archive needs. That archive is kept without its end
 * (the two zero blocks that close a tar archive, and the padding after them): `dock add ssh` sends it
 * followed by a second zstd frame of its own making ({@linkcode tarMembers} then
 * {@linkcode END_OF_ARCHIVE}), which zstd decompresses as one stream and tar reads as one archive. What
 * it adds is what only the laptop knows when it sends: Deno's caches for where the box will install the
 * release (package/cache.ts).
 *
 * @module
 */
import { concatBytes } from "../core/bytes.ts";
import { readRange } from "../core/files.ts";

/** What closes a tar archive: two zero blocks. */
export const END_OF_ARCHIVE: Uint8Array<ArrayBuffer> = new Uint8Array(1024);

/**
 * Where the members of the tar archive at `file` end: its length without the end-of-archive blocks and
 * the padding after them (read from the members' headers, since a member's data may end in zeros).
 */
export async function membersEnd(file: string): Promise<number> {
  const size = (await Deno.stat(file)).size;
  let at = 0;
  while (at + 512 <= size) {
    const header = await readRange(file, at, 512);
    if (header.every((byte) => byte === 0)) return at;
    at += 512 + Math.ceil(octal(header.subarray(124, 136)) / 512) * 512;
  }
  throw new Error(`${file}: not a whole tar archive (no end after ${at} bytes)`);
}

/** One member of {@linkcode tarMembers}: a folder when it has no bytes. */
export interface TarMember {
  /** Its path in the archive, at most 100 bytes (`dock/cache/v8_code_cache_v2`). */
  path: string;
  bytes?: Uint8Array;
}

/**
 * `members` as tar (ustar) members, without the archive's end: regular files of mode 0644 and folders
 * of 0755, dated `mtime` (seconds), owned by nobody in particular (the box's tar makes them its user's).
 */
export function tarMembers(members: TarMember[], mtime: number): Uint8Array<ArrayBuffer> {
  const blocks = members.map((member) => {
    const data = member.bytes ?? new Uint8Array();
    const padded = Math.ceil(data.length / 512) * 512;
    const out = new Uint8Array(512 + padded);
    const header = out.subarray(0, 512);
    const name = new TextEncoder().encode(member.path + (member.bytes ? "" : "/"));
    if (name.length > 100) throw new Error(`tar: path too long: ${member.path}`);
    header.set(name, 0);
    field(header, 100, 8, member.bytes ? 0o644 : 0o755);
    field(header, 108, 8, 0);
    field(header, 116, 8, 0);
    field(header, 124, 12, data.length);
    field(header, 136, 12, mtime);
    header.set(new TextEncoder().encode("        "), 148); // the checksum counts itself as spaces
    header[156] = (member.bytes ? "0" : "5").charCodeAt(0);
    header.set(new TextEncoder().encode("ustar\x0000"), 257);
    const sum = header.reduce((total, byte) => total + byte, 0);
    header.set(new TextEncoder().encode(`${sum.toString(8).padStart(6, "0")}\x00 `), 148);
    out.set(data, 512);
    return out;
  });
  return concatBytes(blocks);
}

/** Writes `value` in octal into the `length`-byte field at `offset`, NUL-terminated. */
function field(header: Uint8Array, offset: number, length: number, value: number): void {
  const text = value.toString(8).padStart(length - 1, "0");
  if (text.length > length - 1) throw new Error(`tar: ${value} does not fit a ${length}-byte field`);
  header.set(new TextEncoder().encode(`${text}\x00`), offset);
}

/** A numeric header field: octal digits, padded with spaces or NULs. */
function octal(bytes: Uint8Array): number {
  const text = new TextDecoder().decode(bytes).replace(/[\0 ]+/g, "");
  if (!/^[0-7]*$/.test(text)) throw new Error(`tar: not an octal field: ${JSON.stringify(text)}`);
  return text ? parseInt(text, 8) : 0;
}
