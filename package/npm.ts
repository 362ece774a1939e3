/**
 * The npm packages a package holds and the Deno runtime it carries: the closure of the runtime's imports
 * in `deno.lock` for a target, where each goes under `node_modules/`, and placing each checked against
 * the lock's integrity (from this project's `node_modules` or the registry). Loaded only to build.
 *
 * @module
 */
import { hostTarget, type Target, targetName } from "./release.ts";
import { must, ROOT } from "./sources.ts";
import { exists } from "../core/files.ts";
import { run } from "../core/runner.ts";
import { dirname, join } from "../core/posix_path.ts";

/** What the builder reads of `deno.lock`: its npm entries. */
export interface DenoLock {
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

/** The import keys among `keys` that name a package (a prefix entry whose package has no entry of its own too). */
export function packageKeys(keys: readonly string[]): string[] {
  return keys.filter((key) => !key.endsWith("/") || !keys.includes(key.slice(0, -1)));
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
export async function writeRuntimeConfig(
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
export function npmSpecifier(specifier: string): { name: string; version: string } {
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
export async function placeNpmPackage(pkg: NpmPackage, into: string, registry: string): Promise<void> {
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
export async function placeRuntime(
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
