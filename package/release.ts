/**
 * A package's release record: the targets dock packages for and their names, what `release.json` and
 * `manifest.json` say, the archives' file names, and a tree's hashes. What the box (installing a
 * package: `install.ts`) and the agent (choosing and sending one) read; small and free of the builder
 * (`build.ts`), which only a build loads.
 *
 * @module
 */
import { sha256Hex } from "../core/bytes.ts";
import { join } from "../core/posix_path.ts";

/** A platform a package is built for. */
export interface Target {
  os: "linux" | "darwin";
  arch: "x64" | "arm64";
}

/** Every target a package is built for: linux (glibc) and macOS, x64 and arm64. */
export const TARGETS: readonly Target[] = [
  { os: "linux", arch: "x64" },
  { os: "linux", arch: "arm64" },
  { os: "darwin", arch: "x64" },
  { os: "darwin", arch: "arm64" },
];

/** `linux-x64`, as file names and `manifest.json` write a target. */
export function targetName(target: Target): string {
  return `${target.os}-${target.arch}`;
}

/** Reads `linux-x64` and the like; throws naming the known ones. */
export function parseTarget(name: string): Target {
  const target = TARGETS.find((candidate) => targetName(candidate) === name);
  if (!target) throw new Error(`unknown target '${name}'; known: ${TARGETS.map(targetName).join(", ")}`);
  return target;
}

/** This machine's target, when it is one dock packages for. */
export function hostTarget(): Target | undefined {
  const arch = Deno.build.arch === "x86_64" ? "x64" : Deno.build.arch === "aarch64" ? "arm64" : undefined;
  return TARGETS.find((target) => target.os === Deno.build.os && target.arch === arch);
}

/** What `release.json` at a package's root says: which build, for which target. */
export interface PackageRelease {
  name: "dock";
  /** What tells two builds apart: the first 16 hex digits of the SHA-256 over every file's. */
  id: string;
  version: string;
  /** The git commit the sources came from (`-dirty` when the work tree had changes), or `unknown`. */
  commit: string;
  target: string;
  /** The Deno runtime's version in `bin/deno`. */
  deno: string;
  /**
   * The SHA-256 (hex) of `bin/deno`: a machine with an installed release naming the same one is sent
   * the package without it (absent from releases built before).
   */
  runtime?: string;
}

/** What `manifest.json` at a package's root says: the release and every file's SHA-256. */
export interface PackageManifest extends PackageRelease {
  /** Every file's SHA-256 (hex), by its path inside the package (`manifest.json` itself not listed). */
  files: Record<string, string>;
}

/** The folder (and archive) name of a release's package: `dock-0.1.0-linux-x64`. */
export function packageName(release: Pick<PackageRelease, "version" | "target">): string {
  return `dock-${release.version}-${release.target}`;
}

/** The file name of a package compressed with zstd (see {@linkcode BuiltPackage.zstd}). */
export function zstdName(release: Pick<PackageRelease, "version" | "target">): string {
  return `${packageName(release)}.tar.zst`;
}

/** The file name of a package without its runtime (see {@linkcode BuiltPackage.withoutRuntime}). */
export function withoutRuntimeName(release: Pick<PackageRelease, "version" | "target">): string {
  return `${packageName(release)}.without-runtime.tar.gz`;
}

/**
 * The SHA-256 (hex) of every file under `root`, by its path from there; a file `known` names is taken
 * at its word, not read (a runtime linked from a release checked when it was installed: 95 MB).
 */
export async function hashTree(
  root: string,
  known: Record<string, string> = {},
): Promise<Record<string, string>> {
  const hashes: Record<string, string> = {};
  const walk = async (folder: string, prefix: string) => {
    for await (const entry of Deno.readDir(folder)) {
      const path = join(folder, entry.name);
      const name = `${prefix}${entry.name}`;
      if (entry.isDirectory) await walk(path, `${name}/`);
      else if (entry.isFile) hashes[name] = known[name] ?? await sha256Hex(await Deno.readFile(path));
    }
  };
  await walk(root, "");
  return Object.fromEntries(Object.entries(hashes).sort(([a], [b]) => a < b ? -1 : 1));
}
