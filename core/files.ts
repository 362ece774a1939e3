/**
 * Small file helpers shared by the daemon's, the agent's and the package's modules.
 *
 * @module
 */

/** File info, or null when the path does not exist (or cannot be read). */
export async function statOrNull(path: string): Promise<Deno.FileInfo | null> {
  try {
    return await Deno.stat(path);
  } catch {
    return null;
  }
}

/** True when something (even a dangling link) is at `path`. */
export async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}

/** Writes a file through a temporary sibling and a rename, so readers never see half of it. */
export async function writeAtomic(path: string, text: string, mode = 0o600): Promise<void> {
  const temp = `${path}.tmp-${crypto.randomUUID().slice(0, 8)}`;
  await Deno.writeTextFile(temp, text, { mode });
  await Deno.rename(temp, path);
}

/** A JSON file's value, or null when it is missing or not JSON (a record a crash may have cut short). */
export async function readJsonOrNull<T>(path: string): Promise<T | null> {
  try {
    return JSON.parse(await Deno.readTextFile(path)) as T;
  } catch {
    return null;
  }
}

/** A file's text, or null when it (or a folder on its path) does not exist. */
export async function readTextOrNull(path: string): Promise<string | null> {
  try {
    return await Deno.readTextFile(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotADirectory) return null;
    throw error;
  }
}

/** Up to `length` bytes of the file at `path` from byte `offset` (fewer where it ends). */
export async function readRange(path: string, offset: number, length: number): Promise<Uint8Array> {
  using file = await Deno.open(path, { read: true });
  await file.seek(offset, Deno.SeekMode.Start);
  const buffer = new Uint8Array(length);
  let read = 0;
  while (read < length) {
    const n = await file.read(buffer.subarray(read));
    if (n === null) break;
    read += n;
  }
  return buffer.subarray(0, read);
}

/** The last `bytes` of the file at `path` (all of a shorter one; none of a missing one). */
export async function readTail(path: string, bytes: number): Promise<Uint8Array> {
  const info = await statOrNull(path);
  if (!info) return new Uint8Array();
  const start = Math.max(0, info.size - bytes);
  return await readRange(path, start, info.size - start);
}

/** How long a folder must have been left alone for its mtime to vouch that a file below it is missing. */
const SETTLED_MS = 2000;

/**
 * A file's signature (mtime, size, inode; `"missing"`), cheap enough to take on every event: the
 * hooks and flows files are checked before each use so that an edit counts at once. Most boxes have
 * neither file, and a stat of a missing file throws, which cost more than the rest of the check
 * (~10% of a small `POST events`): while the file is missing, the mtime of the nearest folder above it
 * that exists answers instead, since the file (or the folder it goes in) cannot appear without
 * changing that. Only a folder unchanged for a while is trusted: the kernel stamps times from a
 * coarse clock, so a file made just after the folder's last change could leave the same mtime.
 */
export class FileSignature {
  readonly path: string;
  /** The folder whose mtime says the file is still missing, and that mtime. */
  #vouch: { folder: string; mtime: number } | undefined;
  #last = "";

  constructor(path: string) {
    this.path = path;
  }

  /**
   * The file now, when it changed since the last call (the first call counts as a change): `"missing"`
   * or `"present"`; undefined when it did not change.
   */
  changed(): "missing" | "present" | undefined {
    const signature = this.read();
    if (signature === this.#last) return undefined;
    this.#last = signature;
    return signature === "missing" ? "missing" : "present";
  }

  /**
   * Whether `signature` (from {@linkcode FileSignature.read}) is sure to change with the file's content:
   * not while its mtime is within SETTLED_MS of now, since the kernel stamps times from a coarse clock
   * and a second edit of the same size moments after the first can leave the same signature. A reader
   * that keeps what it read by signature reads a file that recent again.
   */
  settled(signature: string): boolean {
    if (signature === "missing") return true;
    return Date.now() - Number(signature.slice(0, signature.indexOf(":"))) > SETTLED_MS;
  }

  /** The signature now: equal to the last one when the file did not change. */
  read(): string {
    if (this.#vouch) {
      if (mtimeOf(this.#vouch.folder) === this.#vouch.mtime) return "missing";
      this.#vouch = undefined;
    }
    try {
      const info = Deno.statSync(this.path);
      return `${info.mtime?.getTime()}:${info.size}:${info.ino}`;
    } catch {
      // Looked at after the file: a file made meanwhile changed the folder just now, which is not trusted.
      for (let folder = parentOf(this.path); folder !== undefined; folder = parentOf(folder)) {
        const mtime = mtimeOf(folder);
        if (mtime === undefined) continue;
        if (Date.now() - mtime > SETTLED_MS) this.#vouch = { folder, mtime };
        break;
      }
      return "missing";
    }
  }
}

function parentOf(path: string): string | undefined {
  if (path === "/" || !path.includes("/")) return undefined;
  return path.slice(0, Math.max(path.lastIndexOf("/"), 1));
}

function mtimeOf(path: string): number | undefined {
  try {
    return Deno.statSync(path).mtime?.getTime();
  } catch {
    return undefined;
  }
}
