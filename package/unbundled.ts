/**
 * What a package runs from its sources rather than its bundles, and so how its launcher starts a
 * command. The modules of `cli/` it leaves as sources (build.ts bundles the rest of `cli/`) run the
 * servers, which start workers and processes by their own files' paths; `cli/lazy.ts` loads them from
 * the sources when it runs from a bundle. The commands that load sources needing `deno.json` run with
 * it; every other command runs from its bundle without it, with V8 flags for a short run.
 *
 * @module
 */

/** Their names as `cli/lazy.ts`'s `load()` is given them. */
export const UNBUNDLED: readonly string[] = ["./serve.ts", "./run_agent.ts"];

/**
 * The modules outside `cli/` a command loads through `lazy.ts` whose imports need `deno.json` (its
 * import map, for npm packages), and the command that does: `package/build_test.ts` fails naming any
 * other such load.
 */
export const CONFIG_SOURCES: Readonly<Record<string, string>> = {
  "../core/mcp.ts": "mcp",
  "../daemon/env.ts": "secret",
  "../daemon/integrations.ts": "integrations",
  "../core/config.ts": "schemas",
  "../plugins/manifest.ts": "schemas",
};

/**
 * The commands that load sources needing the package's `deno.json`: the servers (the modules above)
 * and those of {@linkcode CONFIG_SOURCES}. The launcher (build.ts) runs these as they are; every other
 * command runs with `--no-config` (finding and reading `deno.json`, the lock and the npm resolution cost
 * ~1 ms of a ~20 ms command: the bundles need none of it) and {@linkcode COMMAND_V8_FLAGS}. The same
 * names for `dock` and `dockd`: each has some of them.
 */
export const SOURCE_COMMANDS: readonly string[] = [
  ...["agent", "up", "serve"],
  ...new Set(Object.values(CONFIG_SOURCES)),
];

/**
 * V8's flags for a command the launcher runs without the config, which lives a few milliseconds.
 * `--no-lazy`: functions are compiled with their module, so the code cache holds them; by default V8
 * compiles each on its first call, in every run (measured with `dock status` from a package: 1.5–2 ms
 * of a ~25 ms command). `--single-threaded`: no compiler or GC helper threads to start (~0.4 ms). A
 * server gains nothing from either and would lose its concurrent GC.
 */
export const COMMAND_V8_FLAGS = "--no-lazy,--single-threaded";
