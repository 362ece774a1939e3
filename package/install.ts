/**
 * Installing a package (`build.ts`) on the machine it is for, the same for a box (`POST upgrade`,
 * `daemon/upgrade.ts`) and the laptop (`dock upgrade --self`, `agent/self_upgrade.ts`): unpacked beside
 * the others under `~/.dock/versions/`, checked (its target is this machine's, every file is the one its
 * manifest names, nothing more, no links; a well-formed id and version), refused when it is the release
 * that runs or an older version, and `~/.dock/current` switched to it atomically.
 *
 * @module
 */
import { DockError } from "../client/errors.ts";
import { BUILD, compareVersions } from "../client/version.ts";
import { exists, readJsonOrNull } from "../core/files.ts";
import { join } from "../core/posix_path.ts";
import { run } from "../core/runner.ts";
import { placeCache } from "./cache.ts";
import { hashTree, hostTarget, type PackageManifest, type PackageRelease, targetName } from "./release.ts";

/** The largest package taken (today's are ~45 MB). */
export const MAX_PACKAGE_BYTES = 256 * 1024 * 1024;

/**
 * Unpacks and checks `body` (a `.tar.gz`) under `<home>/versions/`, and switches `<home>/current` to it.
 * `from` is the folder the caller runs from; `what` names the caller in refusals ("the box"). Throws 400
 * for a package that is not a good one for this machine, 409 for the same release or an older version.
 */
export async function installRelease(
  body: ReadableStream<Uint8Array>,
  home: string,
  options: { from: string; what: string },
): Promise<{ release: PackageRelease; folder: string }> {
  const versions = join(home, "versions");
  const staged = await stage(body, versions);
  const release = staged.release;
  const folder = `${release.version}-${release.id}`;
  if (folder === options.from) {
    await Deno.remove(staged.folder, { recursive: true });
    throw new DockError("same_release", `${options.what} runs ${folder} already`, { status: 409 });
  }
  if (compareVersions(release.version, BUILD.split("+")[0]) < 0) {
    await Deno.remove(staged.folder, { recursive: true });
    throw new DockError(
      "older_version",
      `the package is ${release.version}, older than the running ${BUILD.split("+")[0]}`,
      { status: 409 },
    );
  }
  await Deno.remove(join(versions, folder), { recursive: true }).catch(() => {});
  await Deno.rename(staged.folder, join(versions, folder));
  // Its first commands (the daemon an upgrade starts next) find Deno's caches made (package/cache.ts).
  placeCache(await Deno.realPath(join(versions, folder)));
  await switchCurrent(join(home, "current"), folder);
  return { release, folder };
}

/**
 * Installs a package built for this machine as the `dock` and `dockd` a person runs here
 * (`deno task install`): under `<home>/versions/` like an upgrade, `<home>/current` switched to it, and
 * `<home>/bin/dock` and `dockd` linked to `../current/bin/…`, as `dock add ssh` links them on a box, so
 * that `dock upgrade --self` can replace it later. A release installed already is not unpacked again
 * (an agent may run from it). Answers the release, its folder, and the folder to put on `PATH`.
 */
export async function installHere(
  built: { file: string; release: PackageRelease },
  home: string,
): Promise<{ release: PackageRelease; folder: string; bin: string; again: boolean }> {
  const folder = `${built.release.version}-${built.release.id}`;
  const there = await readJsonOrNull<PackageRelease>(join(home, "versions", folder, "release.json"));
  let release: PackageRelease;
  if (there?.id === built.release.id) {
    release = there;
    await switchCurrent(join(home, "current"), folder);
  } else {
    using opened = await Deno.open(built.file);
    const from = await runningFolder(home) ?? "";
    ({ release } = await installRelease(opened.readable, home, { from, what: "this machine" }));
  }
  const bin = join(home, "bin");
  await Deno.mkdir(bin, { recursive: true });
  for (const program of ["dock", "dockd"]) await replaceLink(join(bin, program), `../current/bin/${program}`);
  return { release, folder, bin, again: release === there };
}

/** The versions folder this process runs from, or null when it does not run from an installed package. */
export async function runningFolder(home: string): Promise<string | null> {
  const source = new URL("..", import.meta.url).pathname.replace(/\/$/, ""); // …/versions/X/src
  const versions = await Deno.realPath(join(home, "versions")).catch(() => null);
  if (!versions) return null;
  const real = await Deno.realPath(source).catch(() => source);
  const match = real.startsWith(`${versions}/`)
    ? /^([^/]+)\/src$/.exec(real.slice(versions.length + 1))
    : null;
  return match ? match[1] : null;
}

/** Unpacks `body` into a new folder under `versions` and checks it; returns the folder and release. */
async function stage(
  body: ReadableStream<Uint8Array>,
  versions: string,
): Promise<{ folder: string; release: PackageRelease }> {
  await Deno.mkdir(versions, { recursive: true });
  const folder = await Deno.makeTempDir({ dir: versions, prefix: ".incoming-" });
  let size = 0;
  const limited = body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        size += chunk.byteLength;
        if (size > MAX_PACKAGE_BYTES) {
          controller.error(
            new DockError("too_large", `a package is at most ${MAX_PACKAGE_BYTES} bytes`, { status: 413 }),
          );
        } else controller.enqueue(chunk);
      },
    }),
  );
  try {
    const unpacked = await run(
      "tar",
      ["-xzf", "-", "-C", folder, "--strip-components=1", "--no-same-owner", "--no-same-permissions"],
      { stdin: limited, timeoutMs: 10 * 60_000 },
    );
    if (size > MAX_PACKAGE_BYTES) {
      throw new DockError("too_large", `a package is at most ${MAX_PACKAGE_BYTES} bytes`, { status: 413 });
    }
    if (unpacked.code !== 0) {
      throw badPackage(`it does not unpack: ${unpacked.stderr.trim().split("\n")[0]}`);
    }
    const linked = await reuseRuntime(folder, versions);
    const release = await checkPackage(folder, linked ? { "bin/deno": linked } : {});
    return { folder, release };
  } catch (error) {
    await Deno.remove(folder, { recursive: true }).catch(() => {});
    throw error;
  }
}

/**
 * A package sent without its runtime (`bin/deno`, see `build.ts`): the runtime its `release.json` names
 * is linked in from an installed release naming the same one. Returns its SHA-256 when it did: that
 * release's files were checked when it was installed, so the 95 MB are not read again (~0.4 s). 409
 * `runtime_missing` when none has it: the sender then sends the whole package.
 */
async function reuseRuntime(folder: string, versions: string): Promise<string | undefined> {
  const runtime = join(folder, "bin", "deno");
  if (await exists(runtime)) return undefined;
  const wanted = (await readJsonOrNull<PackageRelease>(join(folder, "release.json")))?.runtime;
  // Not a runtime's hash: checkPackage says what is wrong.
  if (typeof wanted !== "string" || !/^[0-9a-f]{64}$/.test(wanted)) return undefined;
  for await (const entry of Deno.readDir(versions)) {
    // Dot names are packages on their way in (this one among them).
    if (!entry.isDirectory || entry.name.startsWith(".")) continue;
    const installed = join(versions, entry.name);
    if ((await readJsonOrNull<PackageRelease>(join(installed, "release.json")))?.runtime !== wanted) continue;
    try {
      await Deno.link(join(installed, "bin", "deno"), runtime);
      return wanted;
    } catch { /* that release lost its runtime: another may have it */ }
  }
  throw new DockError(
    "runtime_missing",
    "the package comes without its Deno runtime, and no release installed here has that one: send the whole package",
    { status: 409 },
  );
}

/**
 * Checks an unpacked package: `manifest.json` and `release.json` agree, the target is this machine's,
 * and the files are exactly the manifest's (same bytes, nothing more, regular files only); `known` gives
 * the hashes of files checked before (a linked runtime).
 */
export async function checkPackage(
  folder: string,
  known: Record<string, string> = {},
): Promise<PackageRelease> {
  const manifest = await readJsonOrNull<PackageManifest>(join(folder, "manifest.json"));
  const release = await readJsonOrNull<PackageRelease>(join(folder, "release.json"));
  if (!manifest || !release || manifest.name !== "dock" || typeof manifest.files !== "object") {
    throw badPackage("no dock manifest.json and release.json at its root");
  }
  for (const key of ["id", "version", "commit", "target", "deno"] as const) {
    if (typeof release[key] !== "string" || release[key] !== manifest[key]) {
      throw badPackage(`release.json and manifest.json disagree on ${key}`);
    }
  }
  if (!/^\d+(\.\d+)*$/.test(release.version) || !/^[0-9a-f]{16}$/.test(release.id)) {
    throw badPackage("its version or id is malformed");
  }
  if (release.runtime !== undefined && release.runtime !== manifest.files["bin/deno"]) {
    throw badPackage("release.json's runtime is not the bin/deno its manifest names");
  }
  const host = hostTarget();
  if (!host || release.target !== targetName(host)) {
    throw badPackage(`it is for ${release.target}; this machine is ${Deno.build.os}/${Deno.build.arch}`);
  }
  await refuseLinks(folder);
  const { ["manifest.json"]: _, ["release.json"]: __, ...found } = await hashTree(folder, known);
  const expected = manifest.files;
  for (const [file, hash] of Object.entries(expected)) {
    if (found[file] !== hash) {
      throw badPackage(`${file} ${found[file] ? "is not the file" : "is missing"} its manifest names`);
    }
  }
  const extra = Object.keys(found).filter((file) => !(file in expected));
  if (extra.length) {
    throw badPackage(`it holds files its manifest does not name: ${extra.slice(0, 3).join(", ")}`);
  }
  return release;
}

/** Refuses anything but folders and regular files under `folder` (a link could point anywhere). */
async function refuseLinks(folder: string): Promise<void> {
  for await (const entry of Deno.readDir(folder)) {
    const path = join(folder, entry.name);
    if (entry.isSymlink || (!entry.isFile && !entry.isDirectory)) {
      throw badPackage(`it holds something other than files and folders: ${entry.name}`);
    }
    if (entry.isDirectory) await refuseLinks(path);
  }
}

function badPackage(why: string): DockError {
  return new DockError("bad_package", `not a package this machine can run: ${why}`, { status: 400 });
}

/** Points `current` at `versions/<folder>`, atomically (see {@linkcode replaceLink}). */
export function switchCurrent(current: string, folder: string): Promise<void> {
  return replaceLink(current, `versions/${folder}`);
}

/** Makes `path` a link to `target`, atomically: a new link renamed over whatever was there. */
async function replaceLink(path: string, target: string): Promise<void> {
  const next = `${path}.next`;
  await Deno.remove(next).catch(() => {});
  await Deno.symlink(target, next);
  await Deno.rename(next, path);
}

/**
 * Removes the releases under `<home>/versions/` but `keep` (folder names) and, when `keep` names one
 * alone, the most recently installed of the others (the release before: what a rollback needs), after
 * a new release has started successfully (a box's daemon after an upgrade or `dock add ssh`, the laptop's
 * agent after an install). Folders being unpacked (`.incoming-…`) are left alone. Answers what it removed.
 */
export async function pruneReleases(home: string, keep: string[]): Promise<string[]> {
  const versions = join(home, "versions");
  const others: { name: string; at: number }[] = [];
  try {
    for await (const entry of Deno.readDir(versions)) {
      if (!entry.isDirectory || entry.name.startsWith(".") || keep.includes(entry.name)) continue;
      const stat = await Deno.stat(join(versions, entry.name)).catch(() => null);
      others.push({ name: entry.name, at: stat?.mtime?.getTime() ?? 0 });
    }
  } catch {
    return []; // no releases here
  }
  // Installed last = changed last: a release's folder is made (and filled) when it is unpacked.
  others.sort((a, b) => b.at - a.at);
  const doomed = (keep.length < 2 ? others.slice(1) : others).map((other) => other.name);
  for (const name of doomed) await Deno.remove(join(versions, name), { recursive: true }).catch(() => {});
  return doomed;
}
