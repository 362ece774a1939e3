/**
 * Installing a plugin's files anywhere (`dock plugin install`): the laptop reads a plugin folder (from a
 * path, a git clone or an unpacked tarball) into a bounded list of files, and the box (or the laptop)
 * writes such a list into `~/.dock/plugins/<id>/` — strictly: no path outside the folder, no link, no
 * special file, bounded in count and bytes, and whole at once (made aside, then moved in: a scan never
 * sees half a plugin, and an update replaces the old folder in one rename).
 *
 * @module
 */
import { DockError } from "../client/errors.ts";
import type { PluginFile, PluginPermissions } from "../client/wire.ts";
import { join, relative } from "../core/posix_path.ts";
import { MANIFEST_FILE, normalizePermissions, PLUGIN_ID, readManifest } from "./manifest.ts";
import { consentOf } from "./consent.ts";
import { fromBase64, toBase64 } from "./protocol.ts";
import { run } from "../core/runner.ts";

/** Files a plugin may be installed with, at most. */
export const INSTALL_MAX_FILES = 1000;
/** Bytes a plugin's files may hold in all (its code and `ui`: dependencies are imported, not copied). */
export const INSTALL_MAX_BYTES = 8 * 1024 * 1024;
/** The body of `PUT plugins/{id}/files` at most: the files in base64 (4/3) with room for their JSON. */
export const INSTALL_MAX_BODY = Math.ceil(INSTALL_MAX_BYTES * 4 / 3) + 256 * 1024;

/** A path segment a plugin's file may have: no `..`, no empty one, no NUL, no backslash. */
const SEGMENT = /^(?!\.\.?$)[^\0/\\]{1,255}$/;

/** Checks a file's relative path: inside the folder, segment by segment. */
export function checkFilePath(path: string): string {
  const segments = path.split("/");
  if (path.length > 1024 || segments.length > 16 || !segments.every((s) => SEGMENT.test(s))) {
    throw new DockError(
      "invalid_plugin",
      `${JSON.stringify(path).slice(0, 200)}: not a path inside the plugin's folder`,
      {
        status: 400,
      },
    );
  }
  if (segments[0] === ".git") {
    throw new DockError("invalid_plugin", `${path}: a .git folder is not installed`, { status: 400 });
  }
  return path;
}

/** Folders left out when a plugin's folder is read: a clone's history and installed dependencies. */
const SKIPPED = new Set([".git", "node_modules"]);

/**
 * Reads a plugin folder into the files `PUT plugins/{id}/files` takes: every regular file (`.git` and
 * `node_modules` left out), a symlink refused (what it points to would not travel, or would leak), in
 * the bounds the box enforces (so a refusal comes before anything is sent).
 */
export async function readPluginFolder(dir: string): Promise<PluginFile[]> {
  const files: PluginFile[] = [];
  let bytes = 0;
  const walk = async (folder: string, depth: number): Promise<void> => {
    if (depth > 16) throw new DockError("invalid_plugin", `${folder}: nested too deep`, { status: 400 });
    const entries = await Array.fromAsync(Deno.readDir(folder));
    for (const entry of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      const path = join(folder, entry.name);
      if (SKIPPED.has(entry.name)) continue;
      if (entry.isSymlink) {
        throw new DockError("invalid_plugin", `${path} is a symlink; a plugin's files are plain files`, {
          status: 400,
        });
      }
      if (entry.isDirectory) {
        await walk(path, depth + 1);
        continue;
      }
      if (!entry.isFile) continue;
      const data = await Deno.readFile(path);
      bytes += data.length;
      if (files.length >= INSTALL_MAX_FILES || bytes > INSTALL_MAX_BYTES) {
        throw new DockError(
          "too_large",
          `${dir}: more than ${INSTALL_MAX_FILES} files or ${INSTALL_MAX_BYTES} bytes to install`,
          { status: 413 },
        );
      }
      const mode = (await Deno.stat(path)).mode ?? 0o644;
      files.push({
        path: checkFilePath(relative(dir, path)),
        data: toBase64(data),
        ...(mode & 0o111 ? { executable: true } : {}),
      });
    }
  };
  await walk(dir, 0);
  if (!files.some((file) => file.path === MANIFEST_FILE)) {
    throw new DockError("invalid_plugin", `${dir}: no ${MANIFEST_FILE}`, { status: 400 });
  }
  return files;
}

/**
 * Writes plugin `id`'s files into `pluginsDir/<id>/`, replacing what was there in one rename: checked
 * first (paths, count, bytes, a manifest whose `id` is `id`: the manifest itself is checked when the
 * registry loads it), written aside under a name no scan reads (`.install-…`), then moved in.
 */
export async function writePluginFiles(pluginsDir: string, id: string, files: PluginFile[]): Promise<void> {
  if (!PLUGIN_ID.test(id)) {
    throw new DockError("invalid_plugin", `${JSON.stringify(id)}: not a plugin id`, { status: 400 });
  }
  if (files.length > INSTALL_MAX_FILES) {
    throw new DockError("too_large", `more than ${INSTALL_MAX_FILES} files`, { status: 413 });
  }
  const seen = new Set<string>();
  const decoded: { path: string; data: Uint8Array; executable: boolean }[] = [];
  let bytes = 0;
  for (const file of files) {
    const path = checkFilePath(file.path);
    if (seen.has(path)) throw new DockError("invalid_plugin", `${path}: given twice`, { status: 400 });
    seen.add(path);
    let data: Uint8Array;
    try {
      data = fromBase64(file.data);
    } catch {
      throw new DockError("invalid_plugin", `${path}: its data is not base64`, { status: 400 });
    }
    bytes += data.length;
    if (bytes > INSTALL_MAX_BYTES) {
      throw new DockError("too_large", `more than ${INSTALL_MAX_BYTES} bytes of files`, { status: 413 });
    }
    decoded.push({ path, data, executable: file.executable === true });
  }
  // A file's folder may not also be a file ("a" and "a/b"): found here, not as a half-written folder.
  for (const path of seen) {
    const parts = path.split("/");
    for (let i = 1; i < parts.length; i++) {
      if (seen.has(parts.slice(0, i).join("/"))) {
        throw new DockError("invalid_plugin", `${path}: ${parts.slice(0, i).join("/")} is a file`, {
          status: 400,
        });
      }
    }
  }
  const manifest = decoded.find((file) => file.path === MANIFEST_FILE);
  if (!manifest) {
    throw new DockError("invalid_plugin", `no ${MANIFEST_FILE} among the files`, { status: 400 });
  }
  let named: unknown;
  try {
    named = JSON.parse(new TextDecoder().decode(manifest.data))?.id;
  } catch {
    named = undefined; // JSONC, or broken: the registry says what is wrong when it loads it
  }
  if (named !== undefined && named !== id) {
    throw new DockError("invalid_plugin", `${MANIFEST_FILE} names '${named}', not '${id}'`, { status: 400 });
  }
  await Deno.mkdir(pluginsDir, { recursive: true, mode: 0o700 });
  const aside = join(pluginsDir, `.install-${id}-${crypto.randomUUID()}`);
  const old = join(pluginsDir, `.old-${id}-${crypto.randomUUID()}`);
  try {
    await Deno.mkdir(aside, { mode: 0o700 });
    for (const file of decoded) {
      const target = join(aside, file.path);
      await Deno.mkdir(join(target, ".."), { recursive: true, mode: 0o700 });
      // createNew: nothing is followed or overwritten in a folder just made.
      await Deno.writeFile(target, file.data, { createNew: true, mode: file.executable ? 0o755 : 0o644 });
    }
    const folder = join(pluginsDir, id);
    const existing = await Deno.lstat(folder).catch(() => null);
    if (existing) await Deno.rename(folder, old);
    await Deno.rename(aside, folder);
  } finally {
    await Deno.remove(aside, { recursive: true }).catch(() => {});
    await Deno.remove(old, { recursive: true }).catch(() => {});
  }
}

/** Removes plugin `id`'s folder (moved aside first, so a scan sees it there or gone). */
export async function removePluginFolder(pluginsDir: string, id: string): Promise<void> {
  const folder = join(pluginsDir, id);
  const old = join(pluginsDir, `.old-${id}-${crypto.randomUUID()}`);
  await Deno.rename(folder, old);
  await Deno.remove(old, { recursive: true });
}

/** A plugin's folder on this machine, from what `dock plugin install` was given, and how to clean up. */
export interface PluginSource {
  dir: string;
  /** Removes what was fetched (a clone, an unpacked tarball); nothing for a folder given as it is. */
  cleanup(): Promise<void>;
}

/** How long a clone or an unpack may take. */
const FETCH_TIMEOUT_MS = 120_000;

/**
 * The plugin folder `source` names: a folder as it is; a tarball (`.tar.gz`, `.tgz`, `.tar`) unpacked
 * aside (its manifest at the top or in its one folder, as npm packs `package/`); a git URL cloned aside
 * (`--depth 1`). Both through `core/runner.ts`, with a deadline.
 */
export async function pluginSource(source: string): Promise<PluginSource> {
  if (source.startsWith("-") || source.includes("\0")) {
    throw new DockError("usage", `${JSON.stringify(source)}: not a folder, tarball or git URL`, {
      status: 400,
    });
  }
  const info = await Deno.stat(source).catch(() => null);
  if (info?.isDirectory) return { dir: source, cleanup: () => Promise.resolve() };
  const tarball = /\.(tar\.gz|tgz|tar)$/.test(source);
  const git = !tarball && (/^(https?|ssh|git|file):\/\//.test(source) || /^[\w.-]+@[\w.-]+:/.test(source));
  if (!(info?.isFile && tarball) && !git) {
    throw new DockError("usage", `${source}: not a folder, a tarball (.tar.gz, .tgz) or a git URL`, {
      status: 400,
    });
  }
  const temp = await Deno.makeTempDir({ prefix: "dock-plugin-" });
  const cleanup = () => Deno.remove(temp, { recursive: true }).catch(() => {});
  try {
    const into = join(temp, "src");
    await Deno.mkdir(into);
    const result = git
      ? await run("git", ["clone", "--quiet", "--depth", "1", "--", source, into], {
        timeoutMs: FETCH_TIMEOUT_MS,
      })
      : await run("tar", ["-xf", source, "-C", into, "--no-same-owner", "--no-same-permissions"], {
        timeoutMs: FETCH_TIMEOUT_MS,
      });
    if (result.code !== 0) {
      throw new DockError(
        "install_failed",
        `${git ? "git clone" : "tar"} ${source}: ${
          result.stderr.trim().slice(0, 500) || `exit ${result.code}`
        }`,
        { status: 400 },
      );
    }
    let dir = into;
    const top = await Array.fromAsync(Deno.readDir(into));
    if (!top.some((e) => e.name === MANIFEST_FILE) && top.length === 1 && top[0].isDirectory) {
      dir = join(into, top[0].name);
    }
    return { dir, cleanup };
  } catch (error) {
    await cleanup();
    throw error;
  }
}

/** The id a plugin folder's manifest gives (its `id`), else the folder's name. */
export async function folderId(dir: string): Promise<string> {
  try {
    const id = JSON.parse(await Deno.readTextFile(join(dir, MANIFEST_FILE)))?.id;
    if (typeof id === "string") return id;
  } catch { /* JSONC or broken: the manifest check says what is wrong */ }
  return dir.replace(/\/+$/, "").split("/").at(-1) ?? "";
}

/** A plugin read on this machine for `dock plugin install`: what it is, asks for, and its files. */
export interface Installable {
  id: string;
  version: string;
  /** What it asks for, as the enable call must confirm it. */
  permissions: Required<PluginPermissions>;
  /** The consent's context (each scope's class, who its commands run as). */
  consent: ReturnType<typeof consentOf>;
  files: PluginFile[];
}

/**
 * Reads what `source` names (see {@linkcode pluginSource}): its manifest checked as the box will check
 * it, and its files; `expected`, when given, is the id it must be (an update). What was fetched is
 * removed before this returns.
 */
export async function readInstallable(source: string, expected?: string): Promise<Installable> {
  const fetched = await pluginSource(source);
  try {
    const id = await folderId(fetched.dir);
    if (expected !== undefined && id !== expected) {
      throw new DockError("usage", `${source} holds plugin '${id}', not '${expected}'`, { status: 400 });
    }
    const manifest = await readManifest(join(fetched.dir, MANIFEST_FILE), id);
    const files = await readPluginFolder(fetched.dir);
    return {
      id,
      version: manifest.version,
      permissions: normalizePermissions(manifest.permissions),
      consent: consentOf(manifest.permissions),
      files,
    };
  } finally {
    await fetched.cleanup();
  }
}
