/**
 * What each entry path loads at start-up, read from Deno's module graph (code dependencies only: type
 * imports and computed `import()`s are not loaded when the program starts). The ordinary commands talk
 * to the daemon and the agent through the typed client; the servers, and the libraries only servers
 * need, load only in `serve`, `agent` and `up` (see `lazy.ts`).
 */
import { assertEquals } from "../tests/assert.ts";

interface InfoModule {
  specifier: string;
  dependencies?: { code?: { specifier: string } }[];
}

/** Every module `root` (relative to this folder) loads when it starts. */
async function loaded(root: string): Promise<string[]> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["info", "--json", new URL(root, import.meta.url).href],
    stderr: "inherit",
  }).output();
  const info = JSON.parse(new TextDecoder().decode(output.stdout)) as {
    roots: string[];
    modules: InfoModule[];
    redirects?: Record<string, string>;
  };
  const modules = new Map(info.modules.map((module) => [module.specifier, module]));
  const seen = new Set<string>();
  const visit = (specifier: string) => {
    const resolved = info.redirects?.[specifier] ?? specifier;
    if (seen.has(resolved)) return;
    seen.add(resolved);
    for (const dependency of modules.get(resolved)?.dependencies ?? []) {
      if (dependency.code) visit(dependency.code.specifier);
    }
  };
  visit(info.roots[0]);
  const project = new URL("..", import.meta.url).href;
  return [...seen].map((specifier) => specifier.replace(project, "")).sort();
}

/** What only a server needs: the daemon's and the agent's modules and their libraries. */
const SERVER_ONLY = [
  /^daemon\//,
  /^agent\/(?!token\.ts$)/,
  /^npm:\/?(hono|zod|@lydell\/node-pty|jsonc-parser)@/,
  /^node:sqlite$/,
];

/** The modules `file` (in this folder) imports by a computed specifier: `load<…>("./x.ts")`. */
async function lazyImports(file: string): Promise<string[]> {
  const text = await Deno.readTextFile(new URL(file, import.meta.url));
  return [...text.matchAll(/load<[^>]*>\(\s*"\.\/([^"]+)"/g)].map((match) => match[1]);
}

for (const main of ["dock_main.ts", "dockd_main.ts"]) {
  Deno.test(`start-up: cli/${main} and each command family load no server, no node: built-in and no npm package`, async () => {
    const families = [...await lazyImports(main), ...await lazyImports("box_commands.ts")]
      .filter((file) => !["serve.ts", "serve_early.ts"].includes(file)); // `dockd serve`'s: the daemon
    // Guards against a reader that finds nothing: the box families and the laptop's are read.
    assertEquals(families.includes("worktree.ts") && families.includes("target.ts"), true);
    for (const root of [main, ...families]) {
      const modules = await loaded(`./${root}`);
      assertEquals(modules.filter((module) => SERVER_ONLY.some((pattern) => pattern.test(module))), [], root);
      // The first `node:` import loads Deno's Node compatibility layer (~45 ms; see core/posix_path.ts), and
      // an npm package is read through it: commander is the vendored copy (cli/vendor/commander.ts).
      assertEquals(modules.filter((module) => /^(node|npm):/.test(module)), [], root);
    }
    // What a bare `--help` loads: commander and the index, no family and no client.
    const modules = await loaded(`./${main}`);
    assertEquals(modules.includes("cli/vendor/commander/lib/command.js"), true);
    assertEquals(modules.filter((module) => /^client\/(box|agent)\.ts$|^cli\/target\.ts$/.test(module)), []);
  });
}

Deno.test("start-up: the hook path and --version load only their own leaves", async () => {
  // The hook is imported statically: a package bundles these into one file (entry.ts).
  assertEquals(await loaded("./dock.ts"), [
    "cli/dock.ts",
    "cli/entry.ts",
    "cli/hook.ts",
    "cli/hook_map.ts",
    "cli/lazy.ts",
    "client/version.ts",
    "core/hook_paths.ts",
  ]);
  // The top-level help: the command index, not commander.
  assertEquals(await loaded("./top_help.ts"), ["cli/commands.generated.ts", "cli/top_help.ts"]);
  assertEquals(await loaded("./hook.ts"), ["cli/hook.ts", "cli/hook_map.ts", "core/hook_paths.ts"]);
});

Deno.test("start-up: deno task compile includes every module imported by a computed specifier", async () => {
  const cli = new URL(".", import.meta.url);
  const root = new URL("..", import.meta.url);
  const relative = (url: URL) => url.href.slice(root.href.length);
  const lazy = new Set<string>();
  for await (const entry of Deno.readDir(cli)) {
    if (!entry.name.endsWith(".ts") || entry.name.endsWith("_test.ts") || entry.name === "lazy.ts") continue;
    const text = await Deno.readTextFile(new URL(entry.name, cli));
    for (const match of text.matchAll(/(?:load<[^>]*>|here|enter)\(\s*"(\.{1,2}\/[^"]+)"/g)) {
      lazy.add(relative(new URL(match[1], cli)));
    }
  }
  const config = JSON.parse(await Deno.readTextFile(new URL("deno.json", root)));
  for (const command of (config.tasks.compile as string).split("&&")) {
    const included = [...command.matchAll(/--include (\S+)/g)].map((match) => match[1]);
    assertEquals([...lazy].filter((file) => !included.includes(file)).sort(), [], command.trim());
  }
  // Guards against a reader that finds nothing.
  assertEquals(lazy.has("cli/serve.ts") && lazy.has("cli/top_help.ts") && lazy.has("cli/dock_main.ts"), true);
});

Deno.test("start-up: the box daemon and the commands load a package's release record, never its builder", async () => {
  // The builder (package/build.ts and what only it imports) loads only to build: `deno task package`,
  // the laptop agent (cli/run_agent.ts) making a box's package. The box installs packages with the release record alone.
  const builder = /^package\/(build|npm|sources|launcher)\.ts$/;
  const families = [...await lazyImports("dock_main.ts"), ...await lazyImports("dockd_main.ts")];
  for (const root of new Set(["serve.ts", "dock_main.ts", "dockd_main.ts", ...families])) {
    assertEquals((await loaded(`./${root}`)).filter((module) => builder.test(module)), [], root);
  }
  // Guards against a graph that holds no package module at all: the daemon installs with these.
  const serve = await loaded("./serve.ts");
  assertEquals(serve.includes("package/release.ts") && serve.includes("package/install.ts"), true);
});
