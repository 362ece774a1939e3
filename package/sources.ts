/**
 * What a package holds of this project's sources, read from the checkout (or from the installed
 * release this code runs from): which files, their commit, and one fingerprint of them all. The agent
 * asks the fingerprint to know whether a kept package is still this code's; the builder copies them.
 *
 * @module
 */
import type { PackageManifest } from "./release.ts";
import { sha256Hex } from "../core/bytes.ts";
import { exists, readJsonOrNull } from "../core/files.ts";
import { run } from "../core/runner.ts";
import { dirname, join } from "../core/posix_path.ts";

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

/** The project's folder (an installed release's `src/`). */
export const ROOT = new URL("..", import.meta.url).pathname.replace(/\/$/, "");

/** An installed release this code runs from: its folder (`…/versions/<folder>`) and its manifest. */
export interface RunningRelease {
  root: string;
  manifest: PackageManifest;
}

/**
 * The installed release this code runs from (`<release>/src/package/sources.ts`, a `manifest.json` beside
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

/** The commit of the project's sources, `-dirty` when they have changes, `unknown` outside git. */
export async function sourceCommit(): Promise<string> {
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
export async function copySources(into: string, stamp: { commit: string; version: string }): Promise<void> {
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

/** Awaits a process run by `core/runner.ts`; throws with the end of its output when it failed. */
export async function must(
  pending: Promise<{ code: number; output: string }>,
  what: string,
): Promise<{ code: number; output: string; stdout: string }> {
  const result = await pending as { code: number; output: string; stdout: string };
  if (result.code !== 0) {
    throw new Error(`${what} failed (exit ${result.code}): ${result.output.slice(-2000)}`);
  }
  return result;
}
