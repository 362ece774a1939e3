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
 * The builder only: what the box and the agent read of a release (targets, `release.json`, file names)
 * is `release.ts`, the project's sources and their fingerprint `sources.ts`, the npm closure and the
 * runtime `npm.ts`, the launchers `launcher.ts`. Nothing but a build loads this module.
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
} from "./unbundled.ts";
import { CACHE_TEMPLATE, SERVERS_CACHE, templateFrom } from "./cache.ts";
import { membersEnd } from "./tar.ts";
import { launcher } from "./launcher.ts";
import {
  type DenoLock,
  NPM_LOCK,
  npmClosure,
  npmFolders,
  type NpmPackage,
  npmSpecifier,
  placeNpmPackage,
  placeRuntime,
  writeRuntimeConfig,
} from "./npm.ts";
import {
  hashTree,
  type PackageManifest,
  packageName,
  type PackageRelease,
  parseTarget,
  type Target,
  targetName,
  withoutRuntimeName,
  zstdName,
} from "./release.ts";
import { copySources, must, ROOT, type RunningRelease, runningRelease, sourceCommit } from "./sources.ts";
import { sha256Hex } from "../core/bytes.ts";
import { exists, readJsonOrNull } from "../core/files.ts";
import { run, which } from "../core/runner.ts";
import { dirname, join } from "../core/posix_path.ts";

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

/** `imports`' entries for `keys`; throws naming one it lacks. */
function importsOf(imports: Record<string, string>, keys: readonly string[]): Record<string, string> {
  return Object.fromEntries(keys.map((key) => {
    if (!imports[key]) throw new Error(`deno.json imports no '${key}', which the runtime needs`);
    return [key, imports[key]];
  }));
}

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
