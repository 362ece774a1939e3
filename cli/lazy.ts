/**
 * How `cli/` imports a server (the box daemon, the laptop agent) only in the commands that run one.
 * Deno prepares every module a literal specifier names before the program starts, `import("./x.ts")`
 * included (measured here: +13 ms for a never-taken `import("../daemon/box.ts")`, ~+190 ms for the
 * servers, hono, zod, node:sqlite and node-pty together). A computed specifier is resolved only when
 * the import runs.
 *
 * ```ts
 * const { startBox } = await load<typeof import("./serve.ts")>("./serve.ts");
 * ```
 *
 * @module
 */

/** Imports `file` (relative to `cli/`) when called; `T` is its module type, `typeof import(file)`. */
export function load<T>(file: string): Promise<T> {
  return import(new URL(bundled(file), import.meta.url).href);
}

/**
 * What `file` is where this code runs: in a package (`cli/*.js`, this module inlined into one of them),
 * every module a command loads has its bundle beside its source, as `.js` (package/unbundled.ts).
 */
export function bundled(file: string, from: string = import.meta.url): string {
  return from.endsWith(".js") ? file.replace(/\.ts$/, ".js") : file;
}
