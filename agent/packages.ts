/**
 * The packages this laptop sends to boxes (`dock add ssh`, `dock upgrade`): one per target, built from
 * the sources this agent runs (`package/build.ts`) and kept under `<client>/packages/` until those
 * sources change, so that a second box of the same kind costs no build.
 *
 * @module
 */
import { exists } from "../core/files.ts";
import { sha256Hex } from "../core/bytes.ts";
import { sleep } from "../client/timers.ts";
import { run } from "../core/runner.ts";
import { cacheMembers } from "../package/cache.ts";
import { END_OF_ARCHIVE, type TarMember, tarMembers } from "../package/tar.ts";
import { Turns } from "./turns.ts";
import type { ClientPaths } from "../core/paths.ts";
import { join } from "../core/posix_path.ts";
import { pruneReleases, runningFolder } from "../package/install.ts";
import { buildPackage, type BuiltPackage } from "../package/build.ts";
import {
  packageName,
  type PackageRelease,
  parseTarget,
  type Target,
  targetName,
  withoutRuntimeName,
  zstdName,
} from "../package/release.ts";
import { sourceFingerprint } from "../package/sources.ts";

/** A file to send and its size. */
export interface PackageFile {
  file: string;
  bytes: number;
}

/**
 * A package ready to send, the same without its runtime (for a box that has that runtime), and the same
 * compressed with zstd (for a box that has `zstd`; built where the laptop has it).
 */
export interface KeptPackage extends PackageFile {
  release: PackageRelease;
  withoutRuntime?: PackageFile;
  /** Without the archive's end, which its sender adds ({@linkcode zstdEnd}). */
  zstd?: PackageFile;
  /** Its Deno caches as built, to make a box's of ({@linkcode zstdEnd}). */
  cacheTemplate?: string;
}

/**
 * The target of a machine by its OS and architecture as `uname -s`/`uname -m` or `Deno.build` say them
 * (`Linux`/`linux`, `x86_64`/`amd64`, `aarch64`/`arm64`), or null when dock has no package for it.
 */
export function targetOfMachine(os: string, arch: string): Target | null {
  const system = /^linux$/i.test(os) ? "linux" : /^darwin$/i.test(os) ? "darwin" : undefined;
  const cpu = ["x86_64", "amd64"].includes(arch)
    ? "x64"
    : ["aarch64", "arm64"].includes(arch)
    ? "arm64"
    : undefined;
  return system && cpu ? parseTarget(`${system}-${cpu}`) : null;
}

/** What a box reports as its `build` when it runs `release`: `version+commit`, as `client/version.ts`. */
export function buildOf(release: Pick<PackageRelease, "version" | "commit">): string {
  return `${release.version}+${release.commit}`;
}

/** Builds into one folder for one target, one at a time (see {@linkcode packageFor}). */
const builds = new Turns();

/**
 * The package of this dock for `target`, under `<client>/packages/`: built again when the sources it
 * would hold changed since (`sources`, which a caller may start computing early). One request at a time per target: two boxes added
 * at once would otherwise build into the same files; the second finds the first's package kept.
 */
export function packageFor(
  paths: Pick<ClientPaths, "client">,
  target: Target,
  sources: Promise<string> = sourceFingerprint(),
): Promise<KeptPackage> {
  const folder = join(paths.client, "packages");
  // Handled here, awaited in its turn: a failure while it waits is not an unhandled rejection.
  sources.catch(() => {});
  return builds.run(`${folder}\0${targetName(target)}`, () => keptOrBuilt(folder, target, sources));
}

async function keptOrBuilt(
  folder: string,
  target: Target,
  fingerprint: Promise<string>,
): Promise<KeptPackage> {
  const sources = await fingerprint;
  const keptFile = join(folder, `dock-${targetName(target)}.kept.json`);
  try {
    const kept = JSON.parse(await Deno.readTextFile(keptFile)) as {
      sources: string;
      release: PackageRelease;
      /** Whether that build made the zstd archive (else one there is an older build's). */
      zstd?: boolean;
    };
    const file = join(folder, `${packageName(kept.release)}.tar.gz`);
    const template = join(folder, `${packageName(kept.release)}.cache-template`);
    if (kept.sources === sources && await exists(file)) {
      const sized = async (path: string, wanted: unknown) =>
        wanted && await exists(path) ? { file: path, bytes: (await Deno.stat(path)).size } : undefined;
      return {
        file,
        bytes: (await Deno.stat(file)).size,
        release: kept.release,
        withoutRuntime: await sized(join(folder, withoutRuntimeName(kept.release)), kept.release.runtime),
        zstd: await sized(join(folder, zstdName(kept.release)), kept.zstd),
        cacheTemplate: await exists(template) ? template : undefined,
      };
    }
  } catch { /* none kept yet */ }
  await Deno.mkdir(folder, { recursive: true, mode: 0o700 });
  const built = await buildPackage({ target, out: folder });
  await Deno.writeTextFile(
    keptFile,
    JSON.stringify({ sources, release: built.release, zstd: built.zstd !== undefined }) + "\n",
  );
  return built;
}

/**
 * Keeps a package just built and installed on this machine (`deno task install`) as the package cache's
 * for its target, so that the agent it installed, whose sources are that release, builds nothing for the
 * first `dock add ssh` or `dock upgrade` (packing its own release again took ~38 s of a 42.6 s first add).
 * The files are linked where they can be (the same file system), else copied.
 */
export async function keepInstalled(
  paths: Pick<ClientPaths, "client">,
  built: Pick<BuiltPackage, "file" | "release" | "withoutRuntime" | "zstd" | "cacheTemplate">,
  options: { sources?: string } = {},
): Promise<string> {
  const folder = join(paths.client, "packages");
  await Deno.mkdir(folder, { recursive: true, mode: 0o700 });
  const release = built.release;
  await linkOrCopy(built.file, join(folder, `${packageName(release)}.tar.gz`));
  await linkOrCopy(built.withoutRuntime.file, join(folder, withoutRuntimeName(release)));
  if (built.zstd) await linkOrCopy(built.zstd.file, join(folder, zstdName(release)));
  const template = join(folder, `${packageName(release)}.cache-template`);
  await Deno.remove(template, { recursive: true }).catch(() => {});
  if (built.cacheTemplate) await linkTree(built.cacheTemplate, template);
  // What sourceFingerprint() says in the installed release (package/sources.ts).
  const kept = {
    sources: options.sources ?? `release:${release.id}`,
    release,
    zstd: built.zstd !== undefined,
  };
  await Deno.writeTextFile(join(folder, `dock-${release.target}.kept.json`), JSON.stringify(kept) + "\n");
  return folder;
}

/**
 * Removes what the package cache holds of releases other than those its `*.kept.json` name (a new
 * release's package replaces the one before on each build): after the agent of a new release started.
 * Answers the names removed.
 */
export async function pruneKept(paths: Pick<ClientPaths, "client">): Promise<string[]> {
  const folder = join(paths.client, "packages");
  const entries = await Array.fromAsync(Deno.readDir(folder)).catch(() => []);
  const keep = new Set<string>();
  for (const entry of entries.filter((e) => e.name.endsWith(".kept.json"))) {
    keep.add(entry.name);
    try {
      const { release } = JSON.parse(await Deno.readTextFile(join(folder, entry.name))) as {
        release: PackageRelease;
      };
      const name = packageName(release);
      for (
        const file of [
          `${name}.tar.gz`,
          withoutRuntimeName(release),
          zstdName(release),
          `${name}.cache-template`,
        ]
      ) {
        keep.add(file);
      }
    } catch { /* unreadable: its target is built again */ }
  }
  const removed: string[] = [];
  for (const entry of entries) {
    if (keep.has(entry.name)) continue;
    await Deno.remove(join(folder, entry.name), { recursive: true }).catch(() => {});
    removed.push(entry.name);
  }
  return removed;
}

/** Links `from` as `to` (replacing it), or copies it across file systems. */
async function linkOrCopy(from: string, to: string): Promise<void> {
  if (from === to) return;
  await Deno.remove(to).catch(() => {});
  await Deno.link(from, to).catch(() => Deno.copyFile(from, to));
}

/** `from`'s tree again as `into`, each file linked or copied. */
async function linkTree(from: string, into: string): Promise<void> {
  await Deno.mkdir(into, { recursive: true });
  for await (const entry of Deno.readDir(from)) {
    if (entry.isDirectory) await linkTree(join(from, entry.name), join(into, entry.name));
    else if (entry.isFile) await linkOrCopy(join(from, entry.name), join(into, entry.name));
  }
}

/**
 * What follows a package's zstd archive (which is kept without its end) on its way to a box: the box's
 * Deno caches for the release installed at `root` there (a real path; none without a template), and
 * the archive's end, as one zstd frame (package/tar.ts). Kept in the template's folder by `root`: boxes
 * share a few homes (`/home/ubuntu`, `/root`), and a box added again is sent the same.
 */
export async function zstdEnd(kept: Pick<KeptPackage, "cacheTemplate">, root: string): Promise<Uint8Array> {
  if (!kept.cacheTemplate) return await compressedEnd([]);
  const made = join(kept.cacheTemplate, `end-${await sha256Hex(root, 8)}.zst`);
  try {
    return await Deno.readFile(made);
  } catch { /* made below */ }
  const bytes = await compressedEnd(await cacheMembers(kept.cacheTemplate, root, "dock"));
  // Whole or not at all, for an add at once to another box of the same home.
  const aside = `${made}.${crypto.randomUUID()}`;
  await Deno.writeFile(aside, bytes).then(() => Deno.rename(aside, made)).catch(() =>
    Deno.remove(aside).catch(() => {})
  );
  return bytes;
}

/** `members` and the archive's end as one zstd frame. */
async function compressedEnd(members: TarMember[]): Promise<Uint8Array> {
  const tar = await Deno.makeTempFile({ prefix: "dock-end-" });
  try {
    await Deno.writeFile(tar, tarMembers(members, Math.floor(Date.now() / 1000)));
    await Deno.writeFile(tar, END_OF_ARCHIVE, { append: true });
    const zstd = await run("zstd", ["-q", "-1", "-f", "-o", `${tar}.zst`, tar], { timeoutMs: 60_000 });
    if (zstd.code !== 0) throw new Error(`zstd: ${zstd.stderr.trim()}`);
    return await Deno.readFile(`${tar}.zst`);
  } finally {
    await Deno.remove(tar).catch(() => {});
    await Deno.remove(`${tar}.zst`).catch(() => {});
  }
}

/** The size of the reads an upload makes of its file. */
const UPLOAD_CHUNK = 1024 * 1024;

/** One line of a streamed box operation (`add-ssh`, `upgrade`): the `upload` step's bytes. */
export interface UploadProgress {
  step: string;
  line: string;
  sent: number;
  total: number;
}

/**
 * Sends `kept` (a package, or one without its runtime), then `after`'s bytes when given
 * ({@linkcode zstdEnd}), through `send` (which reads the stream it is given to its end), yielding how
 * many bytes went, at most every quarter second, until `send` settles; returns what `send` returned.
 */
export async function* upload<T>(
  kept: PackageFile,
  send: (data: ReadableStream<Uint8Array>) => Promise<T>,
  after?: Promise<Uint8Array>,
): AsyncGenerator<UploadProgress, T> {
  let total = kept.bytes;
  let sent = 0;
  // Settles once the file is read: its last progress line goes then, not at the next tick.
  const read = Promise.withResolvers<void>();
  const file = await Deno.open(kept.file);
  // Read in large chunks: each chunk costs the stream's machinery, and 64 KiB ones (a file's default)
  // cost ~15 ms of a 36 MB upload here. `after` (made while the file goes) follows it.
  const counted = new ReadableStream<Uint8Array>({
    async pull(controller) {
      const buffer = new Uint8Array(UPLOAD_CHUNK);
      let n: number | null;
      try {
        n = await file.read(buffer);
      } catch (error) {
        file.close();
        throw error;
      }
      if (n !== null) {
        sent += n;
        controller.enqueue(buffer.subarray(0, n));
        return;
      }
      file.close();
      if (after) {
        const bytes = await after;
        total += bytes.length;
        sent += bytes.length;
        controller.enqueue(bytes);
      }
      controller.close();
      read.resolve();
    },
    cancel() {
      file.close();
    },
  });
  const sending = send(counted);
  let finished = false;
  sending.finally(() => finished = true).catch(() => {});
  let shown = -1;
  let readAll = false;
  read.promise.then(() => readAll = true);
  while (!finished) {
    // A bar's pace (not a wait for anything): what was sent, at most every quarter second, and once
    // all of it went.
    const tick = new AbortController();
    await Promise.race([sending.catch(() => {}), ...readAll ? [] : [read.promise], sleep(250, tick.signal)]);
    tick.abort();
    if (sent > shown) {
      shown = sent;
      yield { step: "upload", line: `${megabytes(sent)} of ${megabytes(total)}`, sent, total };
    }
  }
  return await sending;
}

/** Bytes as the progress lines say them. */
export function megabytes(bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`;
}

/**
 * Once an agent runs from an installed release (it started: the install or upgrade worked), the
 * releases under `<home>/versions/` but this one and the one before, and the package cache's files of
 * releases it no longer names, are removed. Nothing in a checkout. Answers what went.
 */
export async function pruneAfterStart(paths: Pick<ClientPaths, "client" | "home">): Promise<string[]> {
  const running = await runningFolder(paths.home);
  if (!running) return [];
  return [...await pruneReleases(paths.home, [running]), ...await pruneKept(paths)];
}
