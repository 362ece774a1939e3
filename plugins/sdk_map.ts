/**
 * How a plugin's `import … from "@dock/plugin"` resolves where it runs: the plugin host is started with an
 * import map naming the SDK of the dock that runs it (`sdk/`, shipped in every package), and the SDK's
 * folder is readable by the host and every worker (the host's read is what a worker's static imports are
 * checked against: measured on Deno 2.9.6, without it a plugin importing `definePlugin` fails to load with
 * "Requires read access to …/mod.ts"). The author's editor resolves the same specifier through the
 * plugin folder's own `deno.json`, which the host never reads (it runs with `--no-config`).
 *
 * @module
 */
import { join } from "../core/posix_path.ts";

/** The SDK's folder (its sources are public: reading them gives a plugin nothing). */
export const SDK_DIR: string = decodeURIComponent(new URL("../sdk", import.meta.url).pathname);

/** The specifiers a plugin may import the SDK by, and the SDK's files they name. */
export function sdkImportMap(): { imports: Record<string, string> } {
  const mod = `file://${join(SDK_DIR, "mod.ts")}`;
  const testing = `file://${join(SDK_DIR, "testing.ts")}`;
  const imports: Record<string, string> = {};
  // `npm:` as written without a version too (the name it is published under): the host reaches no
  // registry (--no-remote, --no-npm). No `jsr:` form: JSR is not reachable where dock is built and tested.
  for (const name of ["@dock/plugin", "npm:@dock/plugin"]) {
    imports[name] = mod;
    imports[`${name}/testing`] = testing;
  }
  return { imports };
}

/** Writes the import map into the host's private folder; returns its path. */
export async function writeSdkImportMap(dir: string): Promise<string> {
  const path = join(dir, "import-map.json");
  // Written aside and renamed into place: host processes start while another is being launched (a heap bomb's
  // host restarts as others start), and one that read the file mid-rewrite failed on an empty JSON (seen in a
  // full run: "EOF while parsing a value at line 1 column 0").
  const temporary = `${path}.${crypto.randomUUID()}.tmp`;
  await Deno.writeTextFile(temporary, JSON.stringify(sdkImportMap()), { mode: 0o600 });
  await Deno.rename(temporary, path);
  return path;
}
