/**
 * The packages this laptop sends to boxes (`dock add ssh`, `dock upgrade`): one per target, built from
 * the sources this agent runs (`package/build.ts`) and kept under `<client>/packages/` until those
 * sources change, so that a second box of the same kind costs no build.
 *
 * @module
 */
import { exists } from "../core/files.ts";
import { Turns } from "../core/turns.ts";
import type { ClientPaths } from "../core/paths.ts";
import { join } from "../core/posix_path.ts";
import {
  buildPackage,
  packageName,
  type PackageRelease,
  parseTarget,
  sourceFingerprint,
  type Target,
  targetName,
  withoutRuntimeName,
  zstdName,
} from "../package/build.ts";

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
  zstd?: PackageFile;
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
    if (kept.sources === sources && await exists(file)) {
      const sized = async (path: string, wanted: unknown) =>
        wanted && await exists(path) ? { file: path, bytes: (await Deno.stat(path)).size } : undefined;
      return {
        file,
        bytes: (await Deno.stat(file)).size,
        release: kept.release,
        withoutRuntime: await sized(join(folder, withoutRuntimeName(kept.release)), kept.release.runtime),
        zstd: await sized(join(folder, zstdName(kept.release)), kept.zstd),
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

/** One line of a streamed box operation (`add-ssh`, `upgrade`): the `upload` step's bytes. */
export interface UploadProgress {
  step: string;
  line: string;
  sent: number;
  total: number;
}

/**
 * Sends `kept` (a package, or one without its runtime) through `send` (which reads the stream it is
 * given to its end), yielding how many bytes went, at most every quarter second, until `send` settles;
 * returns what `send` returned.
 */
export async function* upload<T>(
  kept: PackageFile,
  send: (data: ReadableStream<Uint8Array>) => Promise<T>,
): AsyncGenerator<UploadProgress, T> {
  const total = kept.bytes;
  let sent = 0;
  const counted = (await Deno.open(kept.file)).readable.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        sent += chunk.byteLength;
        controller.enqueue(chunk);
      },
    }),
  );
  const sending = send(counted);
  let finished = false;
  sending.finally(() => finished = true).catch(() => {});
  let shown = -1;
  while (!finished) {
    // A bar's pace (not a wait for anything): what was sent, at most every quarter second.
    await Promise.race([sending.catch(() => {}), new Promise((resolve) => setTimeout(resolve, 250))]);
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
