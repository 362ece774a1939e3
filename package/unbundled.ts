/**
 * What a package runs from bundles and what from sources, and so how its launcher starts a command.
 * Everything a command runs is bundled (build.ts): every module of `cli/`, the servers' included, and
 * every module outside `cli/` a command loads by path ({@linkcode BUNDLED_SOURCES}). Left out: the npm
 * packages a bundle cannot hold ({@linkcode EXTERNAL_IMPORTS}), which the package's `node_modules/`
 * keeps, and the few sources something starts or imports by their paths ({@linkcode KEPT_SOURCES}); the
 * package holds no other source.
 *
 * Why: a box unpacks every file of a package, and creating a file cost ~0.6 ms on the Firecracker VM
 * this was measured on (the package's 2,965 files took 2.2 s to unpack, its bytes as one file 0.02 s).
 * Bundled, the npm packages' ~2,700 files and dock's ~250 are a few dozen bundles, and the daemon
 * starts from one file of JavaScript rather than ~200 modules to transpile.
 *
 * @module
 */

/**
 * The npm packages the bundles import rather than hold (deno.json's keys): node-pty loads its native
 * addon by a path from its own folder. Build.ts places them (and what they depend on) in the package's
 * `node_modules/`, with a `deno.json` that maps them.
 */
export const EXTERNAL_IMPORTS: readonly string[] = ["@lydell/node-pty"];

/**
 * The modules outside `cli/` that a command loads by path (`cli/lazy.ts`): each is bundled beside its
 * source (`core/mcp.js`), where `lazy.ts` finds it. `package/build_test.ts` fails naming a load not
 * listed, or one listed that nothing loads.
 */
export const BUNDLED_SOURCES: readonly string[] = [
  "../client/box.ts",
  "../core/clock.ts",
  "../core/config.ts",
  "../core/mcp.ts",
  "../core/paths.ts",
  "../core/runner.ts",
  "../core/self_command.ts",
  "../core/service_install.ts",
  "../daemon/env.ts",
  "../daemon/integrations.ts",
  "../daemon/secrets.ts",
  "../plugins/install.ts",
  "../plugins/manifest.ts",
  "../plugins/plugin_config.ts",
];

/**
 * Modules bundled beside their sources that no command loads by `load()`: what an installer runs with
 * the package's own Deno before any of its caches exist (`package/cache.ts`).
 */
export const ENTRY_BUNDLES: readonly string[] = ["package/place_cache.ts"];

/**
 * The sources a package keeps (with what they import, from `src/`): the plugin host's process and its
 * workers, which the daemon starts by their paths (`plugins/module_host.ts`) with no config and no npm;
 * the SDK whose types a plugin imports by its path (`dock plugin new`); and the package builder, which
 * a dock running from the package uses (bundled) and a person can run with the package's own Deno.
 */
export const KEPT_SOURCES: readonly string[] = [
  // The daemon's tmux clients started ahead run on a worker thread, from this module's source.
  "daemon/tmux_clients_worker.ts",
  "plugins/host_main.ts",
  "plugins/worker_main.ts",
  // The plugin SDK, which the plugin host maps `@dock/plugin` to (plugins/sdk_map.ts).
  "sdk/mod.ts",
  "sdk/testing.ts",
  "mod.ts",
  "package/build.ts",
];

/**
 * The commands that run a server, which the launcher runs with the package's `deno.json` (the
 * daemon's bundle imports {@linkcode EXTERNAL_IMPORTS} through it) and V8's defaults. Every other
 * command runs with `--no-config` (finding and reading `deno.json`, the lock and the npm resolution
 * cost ~1 ms of a ~20 ms command: a bundle needs none of it) and {@linkcode COMMAND_V8_FLAGS}. The same
 * names for `dock` and `dockd`: each has some of them.
 */
export const SERVER_COMMANDS: readonly string[] = ["agent", "up", "serve", "mcp"];

/**
 * V8's flags for a command the launcher runs without the config, which lives a few milliseconds.
 * `--no-lazy`: functions are compiled with their module, so the code cache holds them; by default V8
 * compiles each on its first call, in every run (measured with `dock status` from a package: 1.5–2 ms
 * of a ~25 ms command). `--single-threaded`: no compiler or GC helper threads to start (~0.4 ms). A
 * server gains nothing from either and would lose its concurrent GC.
 */
export const COMMAND_V8_FLAGS = "--no-lazy,--single-threaded";
