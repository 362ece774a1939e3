import { assert, assertEquals } from "../tests/assert.ts";
import { run } from "../core/runner.ts";
import { join } from "../core/posix_path.ts";
import { launcher } from "./launcher.ts";
import { lockKey, npmClosure, npmFolders, prunable } from "./npm.ts";
import { BUNDLED_SOURCES, COMMAND_V8_FLAGS, SERVER_COMMANDS } from "./unbundled.ts";

Deno.test("lockKey: a deno.lock key as name and version, scoped or not, with the peers it resolved with or not", () => {
  assertEquals(lockKey("hono@4.13.19"), { name: "hono", version: "4.13.19" });
  assertEquals(lockKey("@lydell/node-pty@1.1.0"), { name: "@lydell/node-pty", version: "1.1.0" });
  assertEquals(lockKey("@modelcontextprotocol/sdk@1.32.2_zod@4.6.7"), {
    name: "@modelcontextprotocol/sdk",
    version: "1.32.2",
  });
  assertEquals(lockKey("zod-to-json-schema@3.25.1_zod@4.6.7"), {
    name: "zod-to-json-schema",
    version: "3.25.1",
  });
});

Deno.test("npmFolders: a name at two versions goes once at the top and nested in each dependent of the other", () => {
  // As deno.lock writes it: a dependency by name where one version is locked, by name@version where two.
  const lock = {
    npm: {
      "@scope/sdk@1.0.0_zod@4.0.0": {
        integrity: "a",
        dependencies: ["content-type@1.0.5", "express", "zod"],
      },
      "express@5.0.0": { integrity: "b", dependencies: ["body-parser", "content-type@2.1.0"] },
      "body-parser@2.0.0": { integrity: "c", dependencies: ["content-type@2.1.0"] },
      "content-type@1.0.5": { integrity: "d" },
      "content-type@2.1.0": { integrity: "e" },
      "zod@4.0.0": { integrity: "f" },
      "pty@1.0.0": { integrity: "g", optionalDependencies: ["pty-linux", "pty-darwin"] },
      "pty-linux@1.0.0": { integrity: "h", os: ["linux"] },
      "pty-darwin@1.0.0": { integrity: "i", os: ["darwin"] },
    },
  };
  const imports = { "@scope/sdk": "npm:@scope/sdk@1.0.0", "zod": "npm:zod@4.0.0", "pty": "npm:pty@1.0.0" };
  const closure = npmClosure(imports, lock, { os: "linux", arch: "x64" });
  const dependents = Object.fromEntries(closure.map((pkg) => [pkg.key, pkg.dependents.sort()]));
  assertEquals(dependents, {
    "@scope/sdk@1.0.0_zod@4.0.0": [],
    "content-type@1.0.5": ["@scope/sdk@1.0.0_zod@4.0.0"],
    "express@5.0.0": ["@scope/sdk@1.0.0_zod@4.0.0"],
    "body-parser@2.0.0": ["express@5.0.0"],
    "content-type@2.1.0": ["body-parser@2.0.0", "express@5.0.0"],
    // Imported by the project and by the SDK: the project's own import wins the top folder anyway.
    "zod@4.0.0": ["@scope/sdk@1.0.0_zod@4.0.0"],
    "pty@1.0.0": [],
    "pty-linux@1.0.0": ["pty@1.0.0"],
  });
  const folders = npmFolders(closure).map(({ pkg, folder }) => `${folder} ${pkg.version}`).sort();
  assertEquals(folders, [
    "@scope/sdk 1.0.0",
    "@scope/sdk/node_modules/content-type 1.0.5",
    "body-parser 2.0.0",
    "content-type 2.1.0",
    "express 5.0.0",
    "pty 1.0.0",
    "pty-linux 1.0.0",
    "zod 4.0.0",
  ]);
  // One version imported by the project itself takes the top folder even with fewer dependents.
  const own = npmFolders(npmClosure({ ...imports, "content-type": "npm:content-type@1.0.5" }, lock));
  assertEquals(
    own.filter(({ pkg }) => pkg.name === "content-type").map(({ pkg, folder }) => `${folder} ${pkg.version}`)
      .sort(),
    [
      "body-parser/node_modules/content-type 2.1.0",
      "content-type 1.0.5",
      "express/node_modules/content-type 2.1.0",
    ],
  );
});

Deno.test("prunable: declarations, maps, documents and a package's own tests go; code and licences stay", () => {
  const gone = [
    "index.d.ts",
    "v4/core/schemas.d.cts",
    "dist/esm/types.d.mts",
    "index.js.map",
    "README.md",
    "docs/API.markdown",
    "test/",
    "tests/",
    "__tests__/",
  ];
  const kept = [
    "index.js",
    "index.cjs",
    "dist/esm/types.js",
    "LICENSE",
    "package.json",
    "lib/test/",
    "src/tests.js",
    "testing/",
    "d.ts.js",
    "db.json",
  ];
  assertEquals(gone.filter((path) => !prunable(path)), []);
  assertEquals(kept.filter((path) => prunable(path)), []);
});

Deno.test("launcher: a command runs from its bundle without the config, with V8's flags for a short run; a server as it is", async () => {
  const root = await Deno.makeTempDir({ prefix: "dock-launcher-test-" });
  try {
    const pkg = join(root, "versions", "dock-1");
    await Deno.mkdir(join(pkg, "bin"), { recursive: true });
    // A Deno that tells what it was asked to run, and with which cache.
    await Deno.writeTextFile(join(pkg, "bin", "deno"), '#!/bin/sh\nprintf "%s\\n" "$DENO_DIR" "$@"\n', {
      mode: 0o755,
    });
    for (const program of ["dock", "dockd"] as const) {
      await Deno.writeTextFile(join(pkg, "bin", program), launcher(program), { mode: 0o755 });
    }
    // As dock installs them: ~/.dock/current -> versions/…, ~/.dock/bin/X -> ../current/bin/X.
    await Deno.symlink("versions/dock-1", join(root, "current"));
    await Deno.mkdir(join(root, "bin"));
    for (const program of ["dock", "dockd"]) {
      await Deno.symlink(`../current/bin/${program}`, join(root, "bin", program));
    }
    const asked = async (program: string, ...args: string[]) => {
      const ran = await run(join(root, "bin", program), args, { env: { DOCK_DENO_DIR: "" } });
      assertEquals(ran.code, 0, ran.output);
      return ran.stdout.trimEnd().split("\n");
    };
    const real = await Deno.realPath(pkg);
    const fast = ["--no-config", `--v8-flags=${COMMAND_V8_FLAGS}`];
    assertEquals(await asked("dock", "status"), [
      `${real}/cache`,
      ...["run", "-A", "--cached-only", ...fast, `${real}/src/cli/dock.js`, "status"],
    ]);
    assertEquals((await asked("dock", "hook", "claude", "Stop")).slice(4, 6), fast);
    assertEquals((await asked("dockd", "worktree", "list")).slice(4, 7), [
      ...fast,
      `${real}/src/cli/dockd.js`,
    ]);
    for (
      const [program, command] of [["dockd", "serve"], ["dock", "agent"], ["dock", "up"], ["dock", "mcp"]]
    ) {
      assert(SERVER_COMMANDS.includes(command));
      // Their caches apart from the commands': V8 takes no code compiled under other flags.
      assertEquals(await asked(program, command), [
        `${real}/cache/servers`,
        ...["run", "-A", "--cached-only", `${real}/src/cli/${program}.js`, command],
      ]);
    }
  } finally {
    await Deno.remove(root, { recursive: true });
  }
});

Deno.test("every module outside cli/ that a command loads by its path is bundled (BUNDLED_SOURCES names exactly those)", async () => {
  const cli = new URL("../cli/", import.meta.url);
  const loaded = new Set<string>();
  for await (const entry of Deno.readDir(cli)) {
    if (!entry.name.endsWith(".ts") || entry.name.endsWith("_test.ts")) continue;
    const text = await Deno.readTextFile(new URL(entry.name, cli));
    for (const match of text.matchAll(/\bload(?:<[^>]*>)?\(\s*"(\.\.\/[^"]+)"/g)) loaded.add(match[1]);
  }
  assert(
    loaded.has("../core/runner.ts") && loaded.has("../core/mcp.ts"),
    `the scan finds the loads: ${[...loaded]}`,
  );
  assertEquals([...loaded].sort(), [...BUNDLED_SOURCES].sort());
});
