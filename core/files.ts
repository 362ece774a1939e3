/**
 * Small file helpers shared by the daemon's modules.
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
