/**
 * `deno task package`: what a box (or a laptop) runs when nothing of dock's build tools is there, one
 * file per target: `dist/dock-<version>-<os>-<arch>.tar.gz` holding
 *
 * - `bin/deno`: the Deno runtime for that target (this one, for this machine's target; else the
 *   `@deno/<target>` npm package, checked against the registry's integrity);
 * - `src/`: dock's runtime sources (no tests, no app sources: the app is embedded), and beside them
 *   the bundles that run (`deno bundle` output, each module whole, minified: see `unbundled.ts`):
 *   every module of `cli/` as `cli/*.js`, the servers' included, which the launchers run (a command
 *   starts from three files rather than ~30 modules of sources, the daemon from one file rather than
 *   ~200);
 * - `src/node_modules/`: only what the bundles cannot hold (the native PTY addon's package, for that
 *   target), checked against `deno.lock`'s integrity, with a `deno.json` mapping it, and its lock
 *   entries for every target (`src/package/npm-lock.json`: how an installed release makes another
 *   target's package);
 * - `bin/dock`, `bin/dockd`: launchers that run with `--cached-only`, so nothing is fetched at run time;
 * - `manifest.json`: name, version, commit, target, the runtime's version, and the SHA-256 of every
 *   file (what an upgrade checks before it switches).
 *
 * The bundles are written beside the sources (`src/cli/`, `src/core/mcp.js`), so that a path a
 * bundled module makes from its own URL (`../mod.ts`, `../plugins/host_main.ts`) means what it does in
 * the sources: the plugin host's process and its workers start from their sources by such paths.
 * `deno compile` would embed everything, but downloads `denort`, which no registry here ships.
 *
 * @module
 */
import { DockError } from "../client/errors.ts";
import { VERSION } from "../client/version.ts";
import {
  BUNDLED_SOURCES,
  COMMAND_V8_FLAGS,
  ENTRY_BUNDLES,
  EXTERNAL_IMPORTS,
  KEPT_SOURCES,
  SERVER_COMMANDS,
} from "./unbundled.ts";
import { CACHE, CACHE_TEMPLATE, SERVERS_CACHE, templateFrom } from "./cache.ts";
import { membersEnd } from "./tar.ts";
import { sha256Hex } from "../core/bytes.ts";
import { exists, readJsonOrNull } from "../core/files.ts";
import { run, which } from "../core/runner.ts";
import { dirname, join } from "../core/posix_path.ts";

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

/** The folders and files of the project a running dock reads (tests, benches and app sources stay out). */
const RUNTIME_SOURCES = [
  "cli",
  "client",
  "core",
  "daemon",
  "agent",
  "plugins",
  "sdk",
  "skills",
  "package",
  "mod.ts",
];
/** Generated or build-only files among them. */
const BUILD_ONLY = [
  /_test\.ts$/,
  /^cli\/vendor\/commander\.ts$/,
  /^cli\/write_command_index\.ts$/,
  /^package\/bundler\.ts$/,
];
/** Outside those folders, what the runtime reads. */
const RUNTIME_EXTRAS = ["app/assets.generated.ts"];
/**
 * The npm packages the runtime imports (keys of deno.json's `imports`), which the bundles hold (but
 * {@linkcode EXTERNAL_IMPORTS}); the app's libraries are embedded by `deno task app`, commander is
 * vendored, the rest are for tests and type checks.
 */
const RUNTIME_IMPORTS = [
  "hono",
  "hono/",
  "zod",
  "jsonc-parser",
  "croner",
  "@lydell/node-pty",
  "uqr",
  // Imported by subpath only (`@modelcontextprotocol/sdk/server/mcp.js`): the prefix entry is the package.
  "@modelcontextprotocol/sdk/",
];

/** The import keys among `keys` that name a package (a prefix entry whose package has no entry of its own too). */
function packageKeys(keys: readonly string[]): string[] {
  return keys.filter((key) => !key.endsWith("/") || !keys.includes(key.slice(0, -1)));
}

/** `imports`' entries for `keys`; throws naming one it lacks. */
function importsOf(imports: Record<string, string>, keys: readonly string[]): Record<string, string> {
  return Object.fromEntries(keys.map((key) => {
    if (!imports[key]) throw new Error(`deno.json imports no '${key}', which the runtime needs`);
    return [key, imports[key]];
  }));
}

const ROOT = new URL("..", import.meta.url).pathname.replace(/\/$/, "");

/** Options of {@linkcode buildPackage}. */
export interface BuildOptions {
  target: Target;
  /** The folder the `.tar.gz` goes in. @default {"<project>/dist"} */
  out?: string;
  /** The npm registry for what this machine does not hold already. @default {"https://registry.npmjs.org/"} */
  registry?: string;
  /** Told each step, for a progress line. */
  progress?: (line: string) => void;
  /** The commit to name (tests make two releases of one tree). @default {the sources' git commit} */
  commit?: string;
  /** The version to name (tests make an older release). @default {client/version.ts's VERSION} */
  version?: string;
}

/** What {@linkcode buildPackage} made. */
export interface BuiltPackage {
  file: string;
  bytes: number;
  manifest: PackageManifest;
  release: PackageRelease;
  /**
   * The same package without `bin/deno` (`<name>.without-runtime.tar.gz`), for a machine that has that
   * runtime installed already (an upgrade between two releases on the same Deno: ~3 MB, not ~43).
   */
  withoutRuntime: { file: string; bytes: number };
  /**
   * The same package compressed with zstd (`<name>.tar.zst`), when this machine has `zstd`
   * ({@linkcode packZstd}): without the archive's end, which its sender adds (package/tar.ts).
   */
  zstd?: { file: string; bytes: number };
  /** A copy of its `cache.template` beside the archives, when it has one ({@linkcode keepCacheTemplate}). */
  cacheTemplate?: string;
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
 * Builds the package for `options.target`. A dock that runs from an installed package (a laptop after
 * `dock upgrade --self`) has no checkout to build from: its package for its own target is the release it
 * runs, packed again; another target's is made from it (see {@linkcode packInstalled}).
 */
export async function buildPackage(options: BuildOptions): Promise<BuiltPackage> {
  const installed = await runningRelease();
  if (installed) return await packInstalled(installed, options);
  const progress = options.progress ?? (() => {});
  const registry = registryOf(options);
  const target = targetName(options.target);
  const version = options.version ?? VERSION;
  if (!/^\d+(\.\d+){0,3}$/.test(version)) throw new Error(`not a version: ${version}`);
  const name = packageName({ version, target });
  const staging = await Deno.makeTempDir({ prefix: "dock-package-" });
  try {
    const root = join(staging, name);
    progress(`sources`);
    const commit = options.commit ?? await sourceCommit();
    await copySources(join(root, "src"), { commit, version });
    progress(`npm packages for ${target}`);
    const lock = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.lock"))) as DenoLock;
    const config = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json"))) as {
      imports: Record<string, string>;
    };
    // Every npm package the runtime imports, for the bundler; then only those the bundles import stay.
    const src = join(root, "src");
    const bundling = importsOf(config.imports, RUNTIME_IMPORTS);
    await writeRuntimeConfig(src, bundling, lock);
    const placed = npmFolders(npmClosure(bundling, lock, options.target));
    for (const { pkg, folder } of placed) {
      await placeNpmPackage(pkg, join(src, "node_modules", folder), registry);
    }
    progress(`bundles`);
    const bundles = await bundleRuntime(src);
    await writeNotices(src, placed);
    await keepOnly(src, [...bundles, ...await keptSources(src)]);
    const external = importsOf(config.imports, EXTERNAL_IMPORTS);
    await writeRuntimeConfig(src, external, lock);
    const kept = new Set(npmFolders(npmClosure(external, lock, options.target)).map(({ folder }) => folder));
    // The top folders of what goes (a nested one goes with the package it is in).
    for (
      const { folder } of placed.filter(({ folder }) =>
        !kept.has(folder) && !folder.includes("/node_modules/")
      )
    ) {
      await Deno.remove(join(src, "node_modules", folder), { recursive: true });
      // A scope's folder goes with its last package.
      if (folder.startsWith("@")) {
        await Deno.remove(join(src, "node_modules", dirname(folder))).catch(() => {});
      }
    }
    progress(`deno runtime for ${target}`);
    const deno = await placeRuntime(options.target, join(root, "bin", "deno"), registry, progress);
    for (const program of ["dock", "dockd"] as const) {
      await Deno.writeTextFile(join(root, "bin", program), launcher(program), { mode: 0o755 });
    }
    progress(`caches`);
    await makeCacheTemplate(root);
    return await seal(staging, name, { version, commit, target, deno }, options);
  } finally {
    await Deno.remove(staging, { recursive: true });
  }
}

/** The npm registry a build fetches from: the option, `NPM_CONFIG_REGISTRY`, or npm's own. */
function registryOf(options: BuildOptions): string {
  return (options.registry ?? Deno.env.get("NPM_CONFIG_REGISTRY") ?? "https://registry.npmjs.org/")
    .replace(/\/?$/, "/");
}

/**
 * Finishes the package staged at `<staging>/<name>`: hashes every file into `manifest.json`, writes
 * `release.json`, and archives it into `options.out`: whole, without its runtime, and compressed with
 * zstd where this machine has it.
 */
async function seal(
  staging: string,
  name: string,
  stamp: Pick<PackageRelease, "version" | "commit" | "target" | "deno">,
  options: BuildOptions,
): Promise<BuiltPackage> {
  const root = join(staging, name);
  const progress = options.progress ?? (() => {});
  progress(`manifest`);
  const files = await hashTree(root);
  const id = (await sha256Hex(new TextEncoder().encode(JSON.stringify(files)))).slice(0, 16);
  const release: PackageRelease = { name: "dock", id, ...stamp, runtime: files["bin/deno"] };
  // Small, so a box's installed release is read in one line over SSH.
  await Deno.writeTextFile(join(root, "release.json"), JSON.stringify(release) + "\n");
  const manifest: PackageManifest = { ...release, files };
  await Deno.writeTextFile(join(root, "manifest.json"), JSON.stringify(manifest, null, 2) + "\n");
  const out = options.out ?? join(ROOT, "dist");
  await Deno.mkdir(out, { recursive: true });
  const file = join(out, `${name}.tar.gz`);
  progress(`archive`);
  await must(run("tar", ["-czf", file, "-C", staging, name], { timeoutMs: 300_000 }), "tar");
  const lean = join(out, withoutRuntimeName(release));
  await must(
    run("tar", ["-czf", lean, `--exclude=${name}/bin/deno`, "-C", staging, name], { timeoutMs: 300_000 }),
    "tar",
  );
  return {
    file,
    bytes: (await Deno.stat(file)).size,
    manifest,
    release,
    withoutRuntime: { file: lean, bytes: (await Deno.stat(lean)).size },
    zstd: await packZstd(join(out, zstdName(release)), ["-C", staging, name]),
    cacheTemplate: await keepCacheTemplate(root, out, packageName(release)),
  };
}

/**
 * Archives what `tarArgs` name as `file` compressed with zstd, when this machine has `zstd`; else
 * undefined. What `dock add ssh` sends a box that has `zstd` too: measured on the linux-x64 package,
 * 36.9 MB rather than gzip's 43.0, and its 110 MB unpacked in 0.12 s rather than 0.60 (a box unpacking
 * runs the decompressor on one core, on the first contact with it). Level 9 in threads: level 19 saves
 * 4 MB more for 20× the build time.
 */
async function packZstd(
  file: string,
  tarArgs: string[],
): Promise<{ file: string; bytes: number } | undefined> {
  if (!which("zstd")) return undefined;
  const tar = `${file}.tar`;
  try {
    await must(run("tar", ["-cf", tar, ...tarArgs], { timeoutMs: 300_000 }), "tar");
    // Without the archive's end: `dock add ssh` sends the rest (package/tar.ts).
    await Deno.truncate(tar, await membersEnd(tar));
    await must(run("zstd", ["-q", "-9", "-T0", "-f", "-o", file, tar], { timeoutMs: 300_000 }), "zstd");
  } finally {
    await Deno.remove(tar).catch(() => {});
  }
  return { file, bytes: (await Deno.stat(file)).size };
}

/**
 * Keeps a copy of the package's `cache.template` (if it has one) beside its archives in `out`, as
 * `<name>.cache-template/`: what `dock add ssh` makes a box's caches of, without unpacking the archive.
 */
async function keepCacheTemplate(root: string, out: string, name: string): Promise<string | undefined> {
  const template = join(root, CACHE_TEMPLATE);
  if (!await exists(template)) return undefined;
  const kept = join(out, `${name}.cache-template`);
  await Deno.remove(kept, { recursive: true }).catch(() => {});
  await Deno.mkdir(kept, { recursive: true });
  await copyTree(template, kept);
  return kept;
}

/** Copies the files and folders under `from` into the folder `into`. */
async function copyTree(from: string, into: string): Promise<void> {
  for await (const entry of Deno.readDir(from)) {
    if (entry.isDirectory) {
      await Deno.mkdir(join(into, entry.name));
      await copyTree(join(from, entry.name), join(into, entry.name));
    } else if (entry.isFile) await Deno.copyFile(join(from, entry.name), join(into, entry.name));
  }
}

/** An installed release this code runs from: its folder (`…/versions/<folder>`) and its manifest. */
export interface RunningRelease {
  root: string;
  manifest: PackageManifest;
}

/**
 * The installed release this code runs from (`<release>/src/package/build.ts`, a `manifest.json` beside
 * `src/`), or null in a checkout (its `.git` is there). Read once: a process does not move, and a
 * package request asks twice (the kept package's fingerprint, then the build).
 */
export function runningRelease(): Promise<RunningRelease | null> {
  return running ??= (async () => {
    if (await exists(join(ROOT, ".git"))) return null;
    const root = dirname(ROOT);
    const manifest = await readJsonOrNull<PackageManifest>(join(root, "manifest.json"));
    return manifest?.name === "dock" && manifest.files ? { root, manifest } : null;
  })();
}

let running: Promise<RunningRelease | null> | undefined;

/**
 * The package of an installed release, packed again from its folder: exactly the files its manifest
 * names, with `manifest.json` and `release.json` (not the transpile cache the launcher keeps beside
 * them), so that a box checks it as it would the original. For another target see
 * {@linkcode retargetInstalled}.
 */
export async function packInstalled(installed: RunningRelease, options: BuildOptions): Promise<BuiltPackage> {
  const { manifest, root } = installed;
  if (manifest.target !== targetName(options.target)) return await retargetInstalled(installed, options);
  (options.progress ?? (() => {}))(`the installed release ${manifest.id}`);
  const { files: _, ...release } = manifest;
  const name = packageName(manifest);
  const out = options.out ?? join(ROOT, "dist");
  await Deno.mkdir(out, { recursive: true });
  const folder = root.split("/").at(-1)!;
  const listed = ["manifest.json", "release.json", ...Object.keys(manifest.files)].sort();
  const list = await Deno.makeTempFile({ prefix: "dock-pack-" });
  try {
    const listOf = (names: string[]) =>
      Deno.writeTextFile(list, names.map((name) => `${folder}/${name}`).join("\n") + "\n");
    const pack = async (file: string, names: string[]) => {
      await listOf(names);
      await must(run("tar", ["-czf", file, "-C", dirname(root), "-T", list], { timeoutMs: 300_000 }), "tar");
      return (await Deno.stat(file)).size;
    };
    const file = join(out, `${name}.tar.gz`);
    const bytes = await pack(file, listed);
    const lean = join(out, withoutRuntimeName(manifest));
    const leanBytes = await pack(lean, listed.filter((name) => name !== "bin/deno"));
    await listOf(listed);
    const zstd = await packZstd(join(out, zstdName(manifest)), ["-C", dirname(root), "-T", list]);
    const cacheTemplate = await keepCacheTemplate(root, out, name);
    return {
      file,
      bytes,
      manifest,
      release,
      withoutRuntime: { file: lean, bytes: leanBytes },
      zstd,
      cacheTemplate,
    };
  } finally {
    await Deno.remove(list).catch(() => {});
  }
}

/**
 * The package of an installed release for another target (a macOS laptop's dock reaching a Linux box):
 * the same sources and bundles, which hold nothing of a platform, with that target's Deno runtime and
 * native npm packages (the PTY addon) in place of this one's, fetched from `options.registry` and
 * checked, as a build from a checkout does, against the lock the release carries ({@linkcode NPM_LOCK}).
 * Same version and commit; its own id.
 */
async function retargetInstalled(installed: RunningRelease, options: BuildOptions): Promise<BuiltPackage> {
  const { manifest, root } = installed;
  const target = targetName(options.target);
  const progress = options.progress ?? (() => {});
  const lock = await readJsonOrNull<DenoLock>(join(root, "src", NPM_LOCK));
  if (!lock?.npm) {
    throw new DockError(
      "needs_sources",
      `this dock runs from a ${manifest.target} package without ${NPM_LOCK} (built before it was there), ` +
        `which cannot make one for ${target}: upgrade it, or run dock from a checkout of its sources`,
      { status: 422 },
    );
  }
  progress(`the installed release ${manifest.id}, for ${target}`);
  const { imports } = JSON.parse(await Deno.readTextFile(join(root, "src", "deno.json"))) as {
    imports: Record<string, string>;
  };
  const ours = npmClosure(imports, lock, parseTarget(manifest.target));
  const theirs = npmClosure(imports, lock, options.target);
  const onlyIn = (packages: NpmPackage[], other: NpmPackage[]) =>
    packages.filter((pkg) => !other.some((o) => o.name === pkg.name && o.version === pkg.version));
  const leave = onlyIn(ours, theirs).map((pkg) => `src/node_modules/${pkg.name}/`);
  const name = packageName({ version: manifest.version, target });
  const staging = await Deno.makeTempDir({ prefix: "dock-package-" });
  try {
    const into = join(staging, name);
    for (const file of Object.keys(manifest.files)) {
      if (file === "bin/deno" || leave.some((folder) => file.startsWith(folder))) continue;
      await Deno.mkdir(dirname(join(into, file)), { recursive: true });
      await Deno.copyFile(join(root, file), join(into, file));
    }
    const registry = registryOf(options);
    for (const pkg of onlyIn(theirs, ours)) {
      progress(`npm package ${pkg.name}@${pkg.version}`);
      await placeNpmPackage(pkg, join(into, "src", "node_modules", pkg.name), registry);
    }
    progress(`deno runtime for ${target}`);
    const deno = await placeRuntime(options.target, join(into, "bin", "deno"), registry, progress);
    return await seal(
      staging,
      name,
      { version: manifest.version, commit: manifest.commit, target, deno },
      options,
    );
  } finally {
    await Deno.remove(staging, { recursive: true });
  }
}

/**
 * The launcher `bin/<program>`: dock from this package, with this package's Deno, offline. It runs on
 * every command and every agent turn (hooks), so it starts no process but Deno: a subshell or a
 * `dirname` costs ~1 ms each (the first launcher's four cost ~3 ms of a ~25 ms command). Only a link
 * other than the one dock installs costs a `readlink`.
 */
export function launcher(program: "dock" | "dockd"): string {
  return `#!/bin/sh
# ${program}: dock's launcher (written by package/build.ts). Runs dock's command line from this package
# with its own Deno and dependencies, --cached-only: nothing is fetched at run time.
self=$0
case $self in */*) ;; *) self=./$self ;; esac
# A bin folder on PATH may hold a link to this file: find the package through it (no readlink -f on
# older macOS). The link dock installs, ~/.dock/bin/${program} -> ../current/bin/${program}, is known
# by being the same file (a test, no process).
while [ -L "$self" ]; do
  installed=\${self%/*}/../current/bin/${program}
  if [ "$self" -ef "$installed" ]; then
    self=$installed
    continue
  fi
  link=$(readlink "$self")
  case $link in /*) self=$link ;; *) self=\${self%/*}/$link ;; esac
done
# cd in this shell rather than $(cd …; pwd): no subshell. Back to the caller's folder before exec.
unset CDPATH
here=$PWD
cd -P "\${self%/*}/.." || exit 1
root=$PWD
cd "$here" || exit 1
# How dock starts itself again (hooks, service units): through the folder it was started from.
case $0 in */*) cd "\${0%/*}" || exit 1 ;; esac
bin=$PWD
cd "$here" || exit 1
# Transpiled modules are cached inside the package: one cache per version, dropped with it.
export DENO_NO_UPDATE_CHECK=1
export DOCK_BIN="$bin"
# A server, or a command that loads sources needing deno.json (package/unbundled.ts), runs as it is.
# Any other runs for milliseconds from its bundle: without the config, and with V8 compiling functions
# as it loads them (then they come from the code cache) and starting no helper threads. V8 takes no
# code compiled under other flags: the servers' caches are their own (package/cache.ts).
case $1 in
${SERVER_COMMANDS.join(" | ")})
  fast=
  export DENO_DIR="\${DOCK_DENO_DIR:-$root/${CACHE}/${SERVERS_CACHE}}"
  ;;
*)
  fast="--no-config --v8-flags=${COMMAND_V8_FLAGS}"
  export DENO_DIR="\${DOCK_DENO_DIR:-$root/${CACHE}}"
  ;;
esac
exec "$root/bin/deno" run -A --cached-only $fast "$root/src/cli/${program}.js" "$@"
`;
}

/**
 * Writes the runtime's bundles beside their sources in `<src>` (see `package/unbundled.ts`): every
 * module of `cli/` is bundled alone, one file with everything it imports statically, since each may be
 * loaded by name (`cli/lazy.ts`); so is each of `BUNDLED_SOURCES`, in its own folder. Not split into
 * shared chunks: loading a command's dozen chunks cost more than the whole rest of its work (measured:
 * a hook 1 ms more as seven chunks than as one file; `dock status` 1.43× → 1.23× an empty run with its
 * three files whole). What two bundles share is then there twice, which a command line bears:
 * constants, stateless helpers, clients whose objects carry their methods, and commander, whose
 * objects from either copy work together (it compares error codes, not classes); `DockError` is
 * recognised across copies by its brand. The servers' bundles share nothing they could not: each runs
 * in a process of its own (`dock up`'s two keep to their own modules).
 */
async function bundleRuntime(src: string): Promise<string[]> {
  const folders = new Map<string, string[]>([["cli", []]]);
  for await (const entry of Deno.readDir(join(src, "cli"))) {
    if (entry.isFile && entry.name.endsWith(".ts")) folders.get("cli")!.push(`cli/${entry.name}`);
  }
  for (const file of [...BUNDLED_SOURCES, ...ENTRY_BUNDLES.map((entry) => `../${entry}`)]) {
    const path = file.replace(/^\.\.\//, "");
    const folder = dirname(path);
    folders.set(folder, [...folders.get(folder) ?? [], path]);
  }
  const external = EXTERNAL_IMPORTS.flatMap((key) => ["--external", key]);
  for (const [folder, entries] of folders) {
    await denoBundle(src, ["--minify", ...external, "--outdir", folder, ...entries.sort()]);
  }
  return [...folders.values()].flat().map((entry) => entry.replace(/\.ts$/, ".js"));
}

/**
 * Makes `<root>/cache.template` (package/cache.ts): Deno's caches after what a fresh box runs first, as
 * the launcher runs it: `dockd serve` started (a server: its caches in the servers' folder) and `dockd
 * pair` asked of it (a command, with a command's flags). A real start, not the daemon's modules only
 * loaded: what it compiles as it starts is cached too (the runtime's own modules it loads then, Node's
 * timers and fetch among them: ~20 ms of a start). Made with this machine's Deno, for any target, in a
 * home of its own: its analysis of the modules holds for all; V8 refuses compiled code that is not for
 * it, and Deno then compiles again, as it would have.
 */
async function makeCacheTemplate(staged: string): Promise<void> {
  // The URLs Deno keys its caches by are real paths (macOS's /tmp is /private/tmp).
  const root = await Deno.realPath(staged);
  const dir = join(root, CACHE_TEMPLATE);
  const home = await Deno.makeTempDir({ prefix: "dock-package-cache-" });
  const env = (denoDir: string) => ({
    DENO_DIR: denoDir,
    DENO_NO_UPDATE_CHECK: "1",
    DOCK_BIN: join(root, "bin"),
    DOCK_LISTEN: "127.0.0.1:0",
    HOME: home,
    PATH: Deno.env.get("PATH") ?? "",
  });
  const dockd = join(root, "src", "cli", "dockd.js");
  const stop = new AbortController();
  const daemon = run(
    Deno.execPath(),
    ["run", "-A", "--cached-only", "--config", join(root, "src", "deno.json"), dockd, "serve"],
    { env: env(join(dir, SERVERS_CACHE)), clearEnv: true, signal: stop.signal, timeoutMs: 300_000 },
  );
  const fast = ["--no-config", `--v8-flags=${COMMAND_V8_FLAGS}`];
  // The daemon goes once `dockd pair` has its answer (or none).
  const pair = run(
    Deno.execPath(),
    ["run", "-A", "--cached-only", ...fast, dockd, "pair", "--json", "--host", "127.0.0.1", "--wait", "60"],
    { env: env(dir), clearEnv: true, timeoutMs: 120_000 },
  ).finally(() => stop.abort());
  const [asked, served] = await Promise.all([pair, daemon]).finally(() =>
    Deno.remove(home, { recursive: true }).catch(() => {})
  );
  if (asked.code !== 0) {
    throw new Error(`the cache template's dockd pair failed: ${asked.output}\ndockd serve: ${served.output}`);
  }
  templateFrom(dir, root);
}

/**
 * {@linkcode KEPT_SOURCES} and every source they import (paths from `src`). Throws when one imports
 * an npm package: the package's `node_modules/` holds only {@linkcode EXTERNAL_IMPORTS}.
 */
async function keptSources(src: string): Promise<string[]> {
  const kept = new Set<string>();
  for (const entry of KEPT_SOURCES) {
    const info = await must(
      run(Deno.execPath(), ["info", "--json", entry], { cwd: src, group: false }),
      "deno info",
    );
    for (const { specifier } of (JSON.parse(info.stdout) as { modules: { specifier: string }[] }).modules) {
      if (specifier.startsWith("node:")) continue;
      if (!specifier.startsWith(`file://${src}/`)) {
        throw new Error(`${entry} imports ${specifier}, which a package would not hold`);
      }
      kept.add(specifier.slice(`file://${src}/`.length));
    }
  }
  return [...kept];
}

/**
 * Writes `<src>/NOTICES.md`: the licence of every npm package under `<src>/node_modules` and of the
 * vendored commander (the bundles hold their code, the package not their folders).
 */
async function writeNotices(src: string, placed: { pkg: NpmPackage; folder: string }[]): Promise<void> {
  // Each package once (one nested in several dependents is the same package), in name order.
  const folders = [...new Map(placed.map(({ pkg, folder }) => [pkg.key, { pkg, folder }])).values()]
    .sort((a, b) => a.pkg.name.localeCompare(b.pkg.name) || a.pkg.version.localeCompare(b.pkg.version))
    .map(({ folder }) => join(src, "node_modules", folder));
  folders.push(join(src, "cli", "vendor", "commander"));
  const sections: string[] = [];
  for (const folder of folders) {
    // The vendored copy has no package.json: its name and the version deno.json pins.
    const { name, version } =
      await readJsonOrNull<{ name: string; version: string }>(join(folder, "package.json")) ??
        { name: "commander", version: npmSpecifier(await vendoredCommander()).version };
    const licence = [...Deno.readDirSync(folder)].find((entry) => /^licen[cs]e/i.test(entry.name));
    const text = licence ? await Deno.readTextFile(join(folder, licence.name)) : "(no licence file)";
    sections.push(`## ${name} ${version}\n\n\`\`\`\n${text.trim()}\n\`\`\`\n`);
  }
  await Deno.writeTextFile(
    join(src, "NOTICES.md"),
    `# Notices\n\nThe npm packages dock's bundles hold, and their licences.\n\n${sections.join("\n")}`,
  );
}

/** The npm specifier of the commander `cli/vendor/commander/` is a copy of (the project's deno.json). */
async function vendoredCommander(): Promise<string> {
  const config = JSON.parse(await Deno.readTextFile(join(ROOT, "deno.json"))) as {
    imports: Record<string, string>;
  };
  return config.imports.commander;
}

/**
 * Removes from `<src>` every file but `files` (paths from it), the package's own `deno.json`,
 * `package.json`, {@linkcode NPM_LOCK} and `NOTICES.md`; leaves `node_modules/` to the caller.
 */
async function keepOnly(src: string, files: string[]): Promise<void> {
  const keep = new Set([...files, "deno.json", "package.json", NPM_LOCK, "NOTICES.md"]);
  const walk = async (dir: string, prefix: string): Promise<boolean> => {
    let empty = true;
    for await (const entry of Deno.readDir(dir)) {
      const path = `${prefix}${entry.name}`;
      if (path === "node_modules") empty = false;
      else if (entry.isDirectory && !await walk(join(dir, entry.name), `${path}/`)) empty = false;
      else if (entry.isDirectory) await Deno.remove(join(dir, entry.name));
      else if (keep.has(path)) empty = false;
      else await Deno.remove(join(dir, entry.name));
    }
    return empty;
  };
  await walk(src, "");
}

/**
 * Runs `deno bundle ARGS` for Deno in `cwd` (quiet, for Deno as the platform); throws with its output
 * when it fails. Its esbuild comes from the npm registry on first use (`package/bundler.ts`).
 */
export async function denoBundle(cwd: string, args: string[]): Promise<void> {
  await must(
    run(Deno.execPath(), ["bundle", "--quiet", "--platform", "deno", ...args], {
      cwd,
      timeoutMs: 300_000,
      env: { DENO_NO_UPDATE_CHECK: "1" },
    }),
    "deno bundle",
  );
}

/** The commit of the project's sources, `-dirty` when they have changes, `unknown` outside git. */
async function sourceCommit(): Promise<string> {
  const head = await run("git", ["-C", ROOT, "rev-parse", "--short=12", "HEAD"], { group: false });
  if (head.code !== 0) return "unknown";
  const status = await run("git", ["-C", ROOT, "status", "--porcelain", "--", ...RUNTIME_SOURCES], {
    group: false,
  });
  return head.stdout.trim() + (status.stdout.trim() ? "-dirty" : "");
}

/** The runtime sources as they are in the work tree (new files included, deleted ones left out). */
async function runtimeSources(): Promise<string[]> {
  const listed = await must(
    run(
      "git",
      [
        "-C",
        ROOT,
        "ls-files",
        "-z",
        "--cached",
        "--others",
        "--exclude-standard",
        "--",
        ...RUNTIME_SOURCES,
        ...RUNTIME_EXTRAS,
      ],
      { group: false },
    ),
    "git ls-files",
  );
  const files: string[] = [];
  for (const file of new Set(listed.stdout.split("\0"))) {
    if (!file || BUILD_ONLY.some((re) => re.test(file))) continue;
    if (await exists(join(ROOT, file))) files.push(file); // else deleted in the work tree, not yet in git
  }
  return files.sort();
}

/**
 * What a package built now would hold of this project, as one SHA-256 (hex): every runtime source's path
 * and bytes, and deno.json and deno.lock. Equal fingerprints, equal packages (for one target): a kept
 * package need not be built again, dirty work tree or not.
 */
export async function sourceFingerprint(): Promise<string> {
  const installed = await runningRelease();
  if (installed) return `release:${installed.manifest.id}`;
  const parts: Uint8Array[] = [];
  const encoder = new TextEncoder();
  for (const file of [...await runtimeSources(), "deno.json", "deno.lock"]) {
    parts.push(encoder.encode(`${file}\0`), await Deno.readFile(join(ROOT, file)), encoder.encode("\0"));
  }
  const all = new Uint8Array(parts.reduce((total, part) => total + part.byteLength, 0));
  let offset = 0;
  for (const part of parts) {
    all.set(part, offset);
    offset += part.byteLength;
  }
  return await sha256Hex(all);
}

/** Copies the runtime sources (as they are in the work tree, new files included) to `into`, stamping the build. */
async function copySources(into: string, stamp: { commit: string; version: string }): Promise<void> {
  for (const file of await runtimeSources()) {
    await Deno.mkdir(dirname(join(into, file)), { recursive: true });
    await Deno.copyFile(join(ROOT, file), join(into, file));
  }
  // The build's version and commit, for `dockd --version` and `GET info` (see client/version.ts).
  const file = join(into, "client", "version.ts");
  let text = await Deno.readTextFile(file);
  for (const [name, value] of [["COMMIT", stamp.commit], ["VERSION", stamp.version]]) {
    const stamped = text.replace(
      new RegExp(`export const ${name} = "[^"]*";`),
      `export const ${name} = ${JSON.stringify(value)};`,
    );
    if (stamped === text && !text.includes(`export const ${name} = ${JSON.stringify(value)};`)) {
      throw new Error(`client/version.ts has no ${name} constant to stamp`);
    }
    text = stamped;
  }
  await Deno.writeTextFile(file, text);
}

interface DenoLock {
  npm: Record<
    string,
    {
      integrity: string;
      dependencies?: string[];
      optionalDependencies?: string[];
      os?: string[];
      cpu?: string[];
    }
  >;
}

/** One npm package as it goes into `node_modules/`. */
export interface NpmPackage {
  /** Its key in the lock (`name@version`, with the peers it resolved with). */
  key: string;
  name: string;
  version: string;
  integrity: string;
  /** The keys of the packages in the closure that depend on it. */
  dependents: string[];
  /** Whether the project imports it itself. */
  imported: boolean;
}

/**
 * The package's own `deno.json` (the `runtime` imports only, node_modules as placed), its `package.json`,
 * and those packages' lock entries for every target ({@linkcode NPM_LOCK}).
 */
async function writeRuntimeConfig(
  src: string,
  runtime: Record<string, string>,
  lock: DenoLock,
): Promise<void> {
  await Deno.writeTextFile(
    join(src, "deno.json"),
    JSON.stringify(
      {
        // node_modules is placed by the build, for the target; Deno must read it as it is and never
        // write a lockfile into an installed package.
        nodeModulesDir: "manual",
        lock: false,
        unstable: ["worker-options", "no-legacy-abort"],
        imports: runtime,
      },
      null,
      2,
    ) + "\n",
  );
  const dependencies = Object.fromEntries(
    packageKeys(Object.keys(runtime)).map((key) => {
      const { name, version } = npmSpecifier(runtime[key]);
      lockEntryOf(lock, name, version); // throws when the lock lacks it
      return [name, version];
    }),
  );
  await Deno.writeTextFile(
    join(src, "package.json"),
    JSON.stringify({ private: true, dependencies }, null, 2) + "\n",
  );
  const entries = npmClosure(runtime, lock).map((pkg) => [pkg.key, lock.npm[pkg.key]]);
  await Deno.writeTextFile(
    join(src, NPM_LOCK),
    JSON.stringify({ npm: Object.fromEntries(entries.sort(([a], [b]) => a < b ? -1 : 1)) }, null, 2) + "\n",
  );
}

/**
 * Where a package keeps the lock entries of its npm packages for every target (under `src/`): what
 * {@linkcode retargetInstalled} checks another target's native packages against, with no `deno.lock`.
 */
export const NPM_LOCK = "package/npm-lock.json";

/**
 * The lock's key of `name@version`: the lock adds the peers it resolved with to a package that has some
 * (`@modelcontextprotocol/sdk@1.32.2_zod@4.6.7`).
 */
function lockEntryOf(lock: DenoLock, name: string, version: string): string {
  const exact = `${name}@${version}`;
  if (lock.npm[exact]) return exact;
  const withPeers = Object.keys(lock.npm).find((key) => key.startsWith(`${exact}_`));
  if (!withPeers) throw new Error(`deno.lock has no ${exact}`);
  return withPeers;
}

/** A lock key as the package's name and version (`@scope/name@1.2.3_peer@4.5.6` → `@scope/name`, `1.2.3`). */
export function lockKey(key: string): { name: string; version: string } {
  const at = key.indexOf("@", key.startsWith("@") ? 1 : 0);
  return { name: key.slice(0, at), version: key.slice(at + 1).split("_")[0] };
}

/** `npm:hono@4.13.19` (or `npm:/hono@4.13.19/`) as name and version. */
function npmSpecifier(specifier: string): { name: string; version: string } {
  const match = /^npm:\/?((?:@[^/]+\/)?[^@/]+)@([^/]+)\/?$/.exec(specifier);
  if (!match) throw new Error(`not an exact npm specifier: ${specifier}`);
  return { name: match[1], version: match[2] };
}

/**
 * The npm packages `imports` names and what they depend on, for `target` (optional ones of other platforms
 * left out), or for every platform.
 */
export function npmClosure(imports: Record<string, string>, lock: DenoLock, target?: Target): NpmPackage[] {
  const found = new Map<string, NpmPackage>();
  const visit = (key: string, dependent?: string) => {
    const known = found.get(key);
    if (known) {
      if (dependent) known.dependents.push(dependent);
      else known.imported = true;
      return;
    }
    const entry = lock.npm[key];
    if (!entry) throw new Error(`deno.lock has no ${key}`);
    if (target && entry.os && !entry.os.includes(target.os)) return;
    if (target && entry.cpu && !entry.cpu.includes(target.arch)) return;
    const { name, version } = lockKey(key);
    found.set(key, {
      key,
      name,
      version,
      integrity: entry.integrity,
      dependents: dependent ? [dependent] : [],
      imported: !dependent,
    });
    for (const dependency of [...entry.dependencies ?? [], ...entry.optionalDependencies ?? []]) {
      // The lock names a dependency by name when one version of it is locked, else by name@version.
      visit(
        lock.npm[dependency]
          ? dependency
          : Object.keys(lock.npm).find((k) => k.startsWith(`${dependency}@`))!,
        key,
      );
    }
  };
  for (const key of packageKeys(Object.keys(imports))) {
    const { name, version } = npmSpecifier(imports[key]);
    visit(lockEntryOf(lock, name, version));
  }
  return [...found.values()];
}

/**
 * Where each of `packages` goes under `node_modules/`, as Node's resolution finds it: at its name, or,
 * for a name the closure holds at more than one version, one version there (one the project imports
 * itself, else the one most packages depend on) and each other inside every package that depends on it
 * (`<dependent's folder>/node_modules/<name>`). A flat folder per name would hold only one of them, and a
 * bundle could get the other version than its importer asked for (content-type 1.0.5 for the MCP SDK,
 * 2.1.0 for express).
 */
export function npmFolders(packages: NpmPackage[]): { pkg: NpmPackage; folder: string }[] {
  const byKey = new Map(packages.map((pkg) => [pkg.key, pkg]));
  const flat = new Map<string, NpmPackage>();
  const rank = (pkg: NpmPackage) => pkg.imported ? Infinity : pkg.dependents.length;
  for (const pkg of packages) {
    const other = flat.get(pkg.name);
    if (!other || rank(pkg) > rank(other)) flat.set(pkg.name, pkg);
  }
  const foldersOf = (pkg: NpmPackage, depth: number): string[] => {
    if (flat.get(pkg.name) === pkg) return [pkg.name];
    if (depth > 8) throw new Error(`npm packages nest too deep at ${pkg.key}`);
    return pkg.dependents.flatMap((key) =>
      foldersOf(byKey.get(key)!, depth + 1).map((folder) => `${folder}/node_modules/${pkg.name}`)
    );
  };
  return packages.flatMap((pkg) => foldersOf(pkg, 0).map((folder) => ({ pkg, folder })));
}

/**
 * Puts `pkg` at `into`, without what is never loaded at run time ({@linkcode prunable}): from this
 * project's node_modules when Deno installed it here (Deno checked it against the lock then), else its
 * tarball from `registry`, checked against the lock's integrity.
 */
async function placeNpmPackage(pkg: NpmPackage, into: string, registry: string): Promise<void> {
  await fetchNpmPackage(pkg, into, registry);
  await pruneNpmPackage(into);
}

async function fetchNpmPackage(pkg: NpmPackage, into: string, registry: string): Promise<void> {
  const installed = join(
    ROOT,
    "node_modules",
    ".deno",
    `${pkg.name.replace("/", "+")}@${pkg.version}`,
    "node_modules",
    pkg.name,
  );
  if (await exists(join(installed, "package.json"))) {
    await Deno.mkdir(dirname(into), { recursive: true });
    await must(run("cp", ["-R", installed, into], { group: false }), `copy ${pkg.name}`);
    return;
  }
  const base = pkg.name.split("/").pop();
  await placeTarball(`${registry}${pkg.name}/-/${base}-${pkg.version}.tgz`, pkg.integrity, into);
}

/**
 * Whether a file of an npm package (its path from the package's folder) is never loaded at run time:
 * type declarations, source maps, documents (licences stay), the package's own test suite. About 1,500
 * of the ~3,700 files under node_modules and 6 MB of 20: fewer files for a box to unpack.
 */
export function prunable(path: string): boolean {
  if (/^(test|tests|__tests__)\//.test(path)) return true;
  const name = path.slice(path.lastIndexOf("/") + 1);
  return /\.d\.[cm]?ts$/.test(name) || name.endsWith(".map") || /\.(md|markdown)$/i.test(name);
}

/** Removes what {@linkcode prunable} names from the npm package at `folder`. */
async function pruneNpmPackage(folder: string): Promise<void> {
  const walk = async (dir: string, prefix: string): Promise<void> => {
    for await (const entry of Deno.readDir(dir)) {
      const path = `${prefix}${entry.name}`;
      if (entry.isDirectory) {
        if (prunable(`${path}/`)) await Deno.remove(join(dir, entry.name), { recursive: true });
        else await walk(join(dir, entry.name), `${path}/`);
      } else if (prunable(path)) await Deno.remove(join(dir, entry.name));
    }
  };
  await walk(folder, "");
}

/** Downloads an npm tarball, checks it against `integrity` (`sha512-<base64>`), and unpacks its `package/` at `into`. */
async function placeTarball(url: string, integrity: string, into: string): Promise<void> {
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${url}: ${response.status} ${response.statusText}`);
  const bytes = new Uint8Array(await response.arrayBuffer());
  const [algorithm, expected] = integrity.split(/-(.*)/s);
  if (algorithm !== "sha512") throw new Error(`${url}: integrity '${algorithm}' is not sha512`);
  const actual = btoa(String.fromCharCode(...new Uint8Array(await crypto.subtle.digest("SHA-512", bytes))));
  if (actual !== expected) throw new Error(`${url}: integrity mismatch (the registry served other bytes)`);
  await Deno.mkdir(into, { recursive: true });
  await must(
    run("tar", ["-xzf", "-", "-C", into, "--strip-components=1", "--no-same-owner"], {
      stdin: bytes,
      group: false,
    }),
    `unpack ${url}`,
  );
}

/**
 * Puts the Deno runtime for `target` at `into` and returns its version: this very runtime when it is
 * that target's, else `@deno/<target>` from the registry at this runtime's version, or (a registry may
 * lag for some targets) the newest release of the same minor below it.
 */
async function placeRuntime(
  target: Target,
  into: string,
  registry: string,
  progress: (line: string) => void,
): Promise<string> {
  await Deno.mkdir(dirname(into), { recursive: true });
  const host = hostTarget();
  if (host && targetName(host) === targetName(target)) {
    await Deno.copyFile(Deno.execPath(), into);
    await Deno.chmod(into, 0o755);
    return Deno.version.deno;
  }
  const name = `@deno/${targetName(target)}${target.os === "linux" ? "-glibc" : ""}`;
  const response = await fetch(`${registry}${name.replace("/", "%2f")}`);
  if (!response.ok) throw new Error(`${registry}${name}: ${response.status} ${response.statusText}`);
  const packument = await response.json() as {
    versions: Record<string, { dist: { tarball: string; integrity: string } }>;
  };
  const version = pickRuntimeVersion(Object.keys(packument.versions), Deno.version.deno);
  if (!version) {
    throw new Error(`${name}: the registry has no ${Deno.version.deno} nor an earlier release of its minor`);
  }
  if (version !== Deno.version.deno) {
    progress(`${name}: the registry has no ${Deno.version.deno}; using ${version}`);
  }
  const unpacked = `${into}.npm`;
  await placeTarball(
    packument.versions[version].dist.tarball,
    packument.versions[version].dist.integrity,
    unpacked,
  );
  await Deno.rename(join(unpacked, "deno"), into);
  await Deno.chmod(into, 0o755);
  await Deno.remove(unpacked, { recursive: true });
  return version;
}

/** `wanted` when listed, else the newest listed release of its major.minor below it. */
export function pickRuntimeVersion(listed: string[], wanted: string): string | undefined {
  if (listed.includes(wanted)) return wanted;
  const [major, minor, patch] = wanted.split(".").map(Number);
  return listed
    .filter((version) => /^\d+\.\d+\.\d+$/.test(version))
    .map((version) => version.split(".").map(Number))
    .filter(([a, b, c]) => a === major && b === minor && c < patch)
    .sort((x, y) => y[2] - x[2])
    .map((parts) => parts.join("."))[0];
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

async function must(
  pending: Promise<{ code: number; output: string }>,
  what: string,
): Promise<{ code: number; output: string; stdout: string }> {
  const result = await pending as { code: number; output: string; stdout: string };
  if (result.code !== 0) {
    throw new Error(`${what} failed (exit ${result.code}): ${result.output.slice(-2000)}`);
  }
  return result;
}
