/**
 * Whole-system test of a package for boxes (`deno task package`, package/build.ts): built for this
 * machine, unpacked into an empty folder, and run from there with no way to the network: the daemon
 * serves, reports its build, runs a session and attaches to it (the native PTY addon from the
 * package's own node_modules), and `dock` answers from the same package.
 */
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { VERSION } from "../client/version.ts";
import type { DockEvent } from "../client/wire.ts";
import { DOCK_COMMANDS, DOCKD_COMMANDS } from "../cli/commands.generated.ts";
import { run, which } from "../core/runner.ts";
import { buildPackage } from "../package/build.ts";
import { NPM_LOCK } from "../package/npm.ts";
import {
  hashTree,
  hostTarget,
  type PackageManifest,
  type PackageRelease,
  targetName,
} from "../package/release.ts";
import { checkPackage, installHere } from "../package/install.ts";
import { zstdEnd } from "../agent/packages.ts";
import { makeDirs, makeRepo, startBox } from "./harness.ts";
import { until } from "./wait.ts";
import { connectUnixWebSocket } from "./ws_unix.ts";

/** Every request to the network goes to a closed port: a package that fetched anything would fail. */
const OFFLINE = {
  HTTP_PROXY: "http://127.0.0.1:9",
  HTTPS_PROXY: "http://127.0.0.1:9",
  NPM_CONFIG_REGISTRY: "http://127.0.0.1:9/",
};

Deno.test("a package for this machine runs dockd and dock from itself, offline, with the build it names", async () => {
  const target = hostTarget();
  assert(target, `${Deno.build.os}/${Deno.build.arch} is a target dock packages for`);
  const out = await Deno.makeTempDir({ prefix: "dock-package-test-" });
  const dirs = await makeDirs();
  try {
    const built = await buildPackage({ target, out });
    assertEquals(built.file, join(out, `dock-${VERSION}-${targetName(target)}.tar.gz`));
    assertEquals([built.manifest.name, built.manifest.version, built.manifest.target], [
      "dock",
      VERSION,
      targetName(target),
    ]);
    assertEquals(built.manifest.deno, Deno.version.deno);
    assert(/^[0-9a-f]{12}(-dirty)?$/.test(built.manifest.commit), built.manifest.commit);

    const unpacked = join(dirs.root, "package");
    await Deno.mkdir(unpacked);
    assertEquals((await run("tar", ["-xzf", built.file, "-C", unpacked])).code, 0);
    const root = join(unpacked, `dock-${VERSION}-${targetName(target)}`);
    // What is inside is what the manifest says, file for file.
    const { ["manifest.json"]: _, ["release.json"]: release, ...files } = await hashTree(root);
    assertEquals(files, built.manifest.files);
    assert(release, "release.json is there");
    assertEquals(JSON.parse(await Deno.readTextFile(join(root, "release.json"))), built.release);
    assert(Object.keys(files).some((file) => file.startsWith("src/node_modules/@lydell/node-pty-")));
    // Where this machine has zstd, the same files compressed with it (for a box that has it too).
    if (which("zstd")) {
      assert(built.zstd && built.zstd.bytes < built.bytes, JSON.stringify(built.zstd));
      // Kept without the archive's end, which a sender adds with the box's Deno caches (agent/packages.ts):
      // one stream of the two, unpacked as dock add ssh's install script does.
      const zstdInto = join(dirs.root, "package-zstd");
      await Deno.mkdir(zstdInto);
      const end = join(dirs.root, "end.zst");
      assert(built.cacheTemplate, "the build keeps its cache template beside the archives");
      const endBytes = await zstdEnd(built, zstdInto);
      await Deno.writeFile(end, endBytes);
      // Kept by the root it names: the same for a box of the same home, another for another.
      assertEquals(await zstdEnd(built, zstdInto), endBytes);
      const other = await zstdEnd(built, `${zstdInto}-elsewhere`);
      assert(other.length !== endBytes.length || other.some((byte, i) => byte !== endBytes[i]));
      const unpacked = await run("sh", [
        "-c",
        'cat -- "$0" "$1" | zstd -dcq | tar -xf - -C "$2" --strip-components=1',
        built.zstd.file,
        end,
        zstdInto,
      ]);
      assertEquals(unpacked.code, 0, unpacked.output);
      const { ["manifest.json"]: _, ["release.json"]: __, ...same } = await hashTree(zstdInto);
      const cache = Object.keys(same).filter((file) => file.startsWith("cache/"));
      assertEquals(cache.sort(), [
        "cache/dep_analysis_cache_v2",
        "cache/node_analysis_cache_v2",
        "cache/servers/dep_analysis_cache_v2",
        "cache/servers/node_analysis_cache_v2",
        "cache/servers/v8_code_cache_v2",
        "cache/v8_code_cache_v2",
      ]);
      for (const file of cache) delete same[file];
      assertEquals(same, built.manifest.files);
      // The caches name the modules where they now are: the daemon's in the servers' set, with what it
      // compiled as it started (the runtime's own), `dockd pair`'s in the commands'.
      const served = cachedModules(zstdInto, "servers");
      assert(served.includes(`file://${zstdInto}/src/cli/serve.js`), `${served}`);
      assert(served.includes("ext:deno_node/internal/timers.mjs"), `${served}`);
      assert(cachedModules(zstdInto).includes(`file://${zstdInto}/src/cli/pair.js`));
    } else assertEquals(built.zstd, undefined);
    assert(
      !Object.keys(files).some((file) =>
        file.endsWith("_test.ts") || file.startsWith("src/node_modules/playwright")
      ),
    );
    // What runs is bundled beside its sources, the servers included; of the npm packages, only the PTY
    // addon's stay files, and of the sources only those started or imported by path (a box unpacks every
    // file: ~120 rather than ~3,000).
    for (
      const file of [
        ...["src/cli/dock.js", "src/cli/dockd.js", "src/cli/hook.js", "src/cli/worktree.js"],
        ...["src/cli/serve.js", "src/cli/run_agent.js", "src/core/mcp.js", "src/plugins/host_main.ts"],
      ]
    ) {
      assert(files[file], `${file} is in the package`);
    }
    const npmPackages = new Set(
      Object.keys(files).flatMap((file) =>
        /^src\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(file)?.[1] ?? []
      ),
    );
    assertEquals([...npmPackages].sort(), ["@lydell/node-pty", `@lydell/node-pty-${targetName(target)}`]);
    assert(Object.keys(files).length < 150, `${Object.keys(files).length} files`);
    // The licences of what the bundles hold, the vendored commander's too.
    const notices = await Deno.readTextFile(join(root, "src", "NOTICES.md"));
    for (const name of ["hono", "zod", "commander"]) assertStringIncludes(notices, `\n## ${name} `);
    assertStringIncludes(await Deno.readTextFile(join(root, "bin", "dock")), "/src/cli/dock.js");
    // The programs' files and their command lines are whole (an agent turn's hook loads one module, a
    // command two and its family's): no static import of a chunk.
    for (const program of ["dock.js", "dockd.js", "dock_main.js", "dockd_main.js"]) {
      const text = await Deno.readTextFile(join(root, "src", "cli", program));
      assertEquals(text.match(/\b(?:from|import)\s*["']\.\.?\//)?.[0], undefined, program);
    }

    await using box = await startBox({
      dirs,
      launcher: join(root, "bin", "dockd"),
      env: { ...OFFLINE, DOCK_PLUGIN_SCAN_MS: "100" },
    });
    const info = await box.client.info();
    assertEquals(info.build, `${VERSION}+${built.manifest.commit}`);

    const repo = await makeRepo(join(dirs.home, "work"), "app");
    await box.client.addLocation({ name: "app", path: repo });
    await box.client.createSession({ location: "app", command: "sh", name: "term" });
    const ws = await connectUnixWebSocket(dirs.socket, "/v1/sessions/term/attach?cols=90&rows=30");
    await ws.sendBinary(new TextEncoder().encode("echo packaged-$((6*7))\r"));
    await ws.readUntil((text) => text.includes("packaged-42"));
    await ws.close();

    const env = { ...box.env, ...OFFLINE };
    /** Runs the package's `bin/<program> ARGS`, as a person or an agent tool would. */
    const packaged = async (program: string, args: string[], options: { stdin?: string } = {}) => {
      const child = new Deno.Command(join(root, "bin", program), {
        args,
        env,
        clearEnv: true,
        stdin: "piped",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const writer = child.stdin.getWriter();
      await writer.write(new TextEncoder().encode(options.stdin ?? ""));
      await writer.close();
      const output = await child.output();
      const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);
      return { code: output.code, stdout: text(output.stdout), stderr: text(output.stderr) };
    };
    /** The first event after `after` that `wanted` accepts (a spooled report arrives later, not never). */
    const next = async (after: number, wanted: (event: DockEvent) => boolean) => {
      for await (const event of box.client.events({ after, signal: AbortSignal.timeout(30_000) })) {
        if (wanted(event)) return event;
      }
    };
    const version = await new Deno.Command(join(root, "bin", "dock"), {
      args: ["--version"],
      env,
      clearEnv: true,
    })
      .output();
    assertEquals(new TextDecoder().decode(version.stdout).trim(), info.build);
    const listed = await new Deno.Command(join(root, "bin", "dockd"), {
      args: ["location", "list"],
      env,
      clearEnv: true,
    }).output();
    assertEquals(listed.code, 0, new TextDecoder().decode(listed.stderr));
    assertStringIncludes(new TextDecoder().decode(listed.stdout), repo);
    // Commands of three families, each run from its own whole bundle with the clients inside it.
    const worktrees = await packaged("dockd", ["worktree", "list", "app"]);
    assertEquals([worktrees.code, worktrees.stderr], [0, ""]);
    assertStringIncludes(worktrees.stdout, repo);
    const sessions = await packaged("dockd", ["session", "list"]);
    assertEquals([sessions.code, sessions.stderr], [0, ""]);
    assertStringIncludes(sessions.stdout, "term");
    const executed = await packaged("dockd", ["exec", "app", "--", "echo", "packaged-exec"]);
    assertEquals([executed.code, executed.stdout.trim()], [0, "packaged-exec"], executed.stderr);
    const help = await packaged("dockd", ["--help"]);
    assertEquals(help.code, 0);
    assertStringIncludes(help.stdout, "Usage: dockd [options] [command]");
    // Every family's bundle loads: each top-level command's own help (but `hook`'s, which never prints).
    for (const [program, index] of [["dock", DOCK_COMMANDS], ["dockd", DOCKD_COMMANDS]] as const) {
      for (const command of index.filter((entry) => entry.name !== "hook")) {
        const own = await packaged(program, [command.name, "--help"]);
        assertEquals([own.code, own.stderr], [0, ""], `${program} ${command.name} --help`);
        assertStringIncludes(own.stdout, `Usage: ${program} ${command.name}`);
      }
    }
    // `serve` runs from its own bundle; its refusal (a DockError of that bundle's copy of the class) is
    // still told as a refusal by the command line's bundle, not as a crash.
    const again = await packaged("dockd", ["serve"]);
    assertEquals(again.code, 2, again.stderr);
    assertStringIncludes(again.stderr, "already serves");
    assertEquals(again.stderr.includes("    at "), false, again.stderr);

    // An agent turn's report through the bundled hook reaches the daemon.
    const start = (await box.client.emit({ type: "test.mark" })).id ?? 0;
    const hook = await packaged("dock", ["hook", "claude", "Stop"], {
      stdin: JSON.stringify({ session_id: "packaged-hook", cwd: repo, hook_event_name: "Stop" }),
    });
    assertEquals([hook.code, hook.stdout, hook.stderr], [0, "", ""]);
    const reported = await next(start, (event) => event.data?.session_id === "packaged-hook");
    assertEquals(reported?.type, "agent.finished");

    // A plugin's module runs in the plugin host, which the daemon's bundle starts from its sources.
    const plugin = join(dirs.dockHome, "plugins", "echo");
    await Deno.mkdir(plugin, { recursive: true });
    await Deno.writeTextFile(
      join(plugin, "main.ts"),
      `export default { async event(ev, ctx) { await ctx.emit("echo.pong", { of: ev.id }); } };`,
    );
    await Deno.writeTextFile(
      join(plugin, "dock-plugin.json"),
      JSON.stringify({
        id: "echo",
        name: "echo",
        version: "1.0.0",
        main: "main.ts",
        hooks: [{ on: "test.ping", module: "main.ts" }],
        permissions: { scopes: ["events:emit"] },
      }),
    );
    const listedPlugin = await until(async () => (await box.client.plugins()).find((p) => p.id === "echo"), {
      on: box,
    });
    await box.client.enablePlugin("echo", listedPlugin.permissions ?? {});
    const ping = (await box.client.emit({ type: "test.ping" })).id!;
    const pong = await next(ping, (event) => event.type === "echo.pong");
    assertEquals(pong?.data?.of, ping);

    // The box's MCP server runs from its bundle (core/mcp.js), the SDK inside it.
    assert((await mcpTools(join(root, "bin", "dockd"), env)).includes("list_sessions"));
    // So do the schemas, from the zod schemas bundled with them (core/config.js, plugins/manifest.js).
    const schemas = await packaged("dockd", ["schemas"]);
    assertEquals([schemas.code, schemas.stderr], [0, ""]);
    assertEquals(Object.keys(JSON.parse(schemas.stdout)).length, 3, schemas.stdout.slice(0, 200));

    // A dock running from this package (a laptop after `dock upgrade --self`) has no checkout: for a box of
    // its own target it packs the release it runs again, which a box checks as the original; for another
    // target it swaps in that target's runtime and native packages from the registry (below).
    const probe = join(dirs.root, "repack.ts");
    await Deno.writeTextFile(
      probe,
      `import { buildPackage } from ${JSON.stringify(`file://${root}/src/package/build.ts`)};
      import { parseTarget } from ${JSON.stringify(`file://${root}/src/package/release.ts`)};
      const [target, out] = Deno.args;
      try {
        const built = await buildPackage({ target: parseTarget(target), out });
        console.log(JSON.stringify({ file: built.file, lean: built.withoutRuntime.file, release: built.release }));
      } catch (error) {
        console.log(JSON.stringify({ error: String(error) }));
      }`,
    );
    const repack = async (target: string, registry?: string) => {
      const made = await new Deno.Command(join(root, "bin", "deno"), {
        args: ["run", "-A", "--cached-only", "--no-config", probe, target, join(dirs.root, "repacked")],
        env: {
          ...env,
          DENO_DIR: join(root, "cache"),
          ...registry ? { NPM_CONFIG_REGISTRY: registry, NO_PROXY: "127.0.0.1" } : {},
        },
        clearEnv: true,
      }).output();
      assertEquals(made.code, 0, new TextDecoder().decode(made.stderr));
      return JSON.parse(new TextDecoder().decode(made.stdout));
    };
    const repacked = await repack(targetName(target));
    assertEquals(repacked.release, built.release);
    for (const [archive, runtime] of [[repacked.file, true], [repacked.lean, false]] as const) {
      const into = await Deno.makeTempDir({ dir: dirs.root });
      assertEquals((await run("tar", ["-xzf", archive, "-C", into, "--strip-components=1"])).code, 0);
      if (runtime) assertEquals(await checkPackage(into), built.release);
      else assertEquals(await Deno.stat(join(into, "bin", "deno")).catch(() => null), null);
      assertEquals(await Deno.stat(join(into, "cache")).catch(() => null), null, "no transpile cache");
    }
    await retargetsFromRegistry(root, targetName(target), built.manifest, repack, dirs.root);

    // `deno task install`: the same package installed here as the commands a person runs, linked in
    // ~/.dock/bin; a second install of the same release unpacks nothing.
    const here = join(dirs.root, "installed-home");
    const first = await installHere(built, here);
    assertEquals([first.folder, first.bin, first.again], [
      `${VERSION}-${built.release.id}`,
      join(here, "bin"),
      false,
    ]);
    assertEquals(await Deno.readLink(join(here, "current")), `versions/${first.folder}`);
    // Deno's caches as the build made them (the daemon started), for where it is installed.
    const installedRoot = await Deno.realPath(join(here, "versions", first.folder));
    assert(cachedModules(installedRoot, "servers").includes(`file://${installedRoot}/src/cli/serve.js`));
    const installedVersion = await new Deno.Command(join(here, "bin", "dock"), {
      args: ["--version"],
      env,
      clearEnv: true,
    }).output();
    assertEquals(new TextDecoder().decode(installedVersion.stdout).trim(), info.build);
    const second = await installHere(built, here);
    assertEquals([second.folder, second.again], [first.folder, true]);

    // The hook command written into an agent tool's settings runs this package's launcher, by the path
    // it was started from (a link on PATH survives an upgrade; the package folder does not).
    const installed = await new Deno.Command(join(root, "bin", "dockd"), {
      args: ["integrations", "install", "claude"],
      env,
      clearEnv: true,
    }).output();
    assertEquals(installed.code, 0, new TextDecoder().decode(installed.stderr));
    const settings = await Deno.readTextFile(join(dirs.home, ".claude", "settings.json"));
    assertStringIncludes(settings, `${join(root, "bin", "dockd")} hook`);
  } finally {
    await Deno.remove(out, { recursive: true });
  }
});

/** The module URLs of the V8 code cache placed in the installed release at `root` (package/cache.ts). */
/** The modules whose compiled code the release at `root` has cached (in its `set` of caches). */
function cachedModules(root: string, set = ""): string[] {
  const db = new DatabaseSync(join(root, "cache", set, "v8_code_cache_v2"), { readOnly: true });
  try {
    return db.prepare("SELECT specifier FROM codecache").all().map((row) => String(row.specifier));
  } finally {
    db.close();
  }
}

/** The names of the tools `<dockd> mcp` lists, asked over its stdio as an agent tool would. */
async function mcpTools(dockd: string, env: Record<string, string>): Promise<string[]> {
  const child = new Deno.Command(dockd, {
    args: ["mcp"],
    env,
    clearEnv: true,
    stdin: "piped",
    stdout: "piped",
  })
    .spawn();
  const writer = child.stdin.getWriter();
  const send = (message: Record<string, unknown>) =>
    writer.write(new TextEncoder().encode(JSON.stringify({ jsonrpc: "2.0", ...message }) + "\n"));
  await send({
    id: 1,
    method: "initialize",
    params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "test", version: "1" } },
  });
  await send({ method: "notifications/initialized" });
  await send({ id: 2, method: "tools/list" });
  let text = "";
  const decoder = new TextDecoder();
  for await (const chunk of child.stdout) {
    text += decoder.decode(chunk, { stream: true });
    const lines = text.split("\n").slice(0, -1); // whole lines only
    const answer = lines.map((line) => line ? JSON.parse(line) : {}).find((m) => m.id === 2);
    if (answer) {
      await writer.close();
      await child.status;
      return (answer.result?.tools ?? []).map((tool: { name: string }) => tool.name);
    }
  }
  throw new Error(`dockd mcp ended without listing its tools: ${text}`);
}

/** An npm tarball (a `.tgz` holding `package/`) of `files`, and its integrity as a lock writes it. */
async function npmTarball(files: Record<string, string>, scratch: string) {
  const folder = await Deno.makeTempDir({ dir: scratch });
  for (const [name, text] of Object.entries(files)) {
    await Deno.mkdir(join(folder, "package", name, ".."), { recursive: true });
    await Deno.writeTextFile(join(folder, "package", name), text, { mode: 0o755 });
  }
  const packed = await new Deno.Command("tar", { args: ["-czf", "-", "-C", folder, "package"] }).output();
  assert(packed.success, "tar made the tarball");
  const digest = new Uint8Array(await crypto.subtle.digest("SHA-512", packed.stdout));
  return { bytes: packed.stdout, integrity: `sha512-${btoa(String.fromCharCode(...digest))}` };
}

/**
 * The installed release at `root` (for `host`) made into a package for the other Linux architecture,
 * from a local registry serving that target's runtime and PTY addon: refused while the registry's bytes
 * are not those the release's lock names, then built with them in place of this target's, everything
 * else (sources, bundles, launchers, version, commit) as installed.
 */
async function retargetsFromRegistry(
  root: string,
  host: string,
  installed: PackageManifest,
  repack: (
    target: string,
    registry?: string,
  ) => Promise<{ error?: string; file: string; lean: string; release: PackageRelease }>,
  scratch: string,
): Promise<void> {
  const other = host === "linux-arm64" ? "linux-x64" : "linux-arm64";
  const lockFile = join(root, "src", NPM_LOCK);
  const lock = JSON.parse(await Deno.readTextFile(lockFile)) as {
    npm: Record<string, { integrity: string }>;
  };
  const addonKey = Object.keys(lock.npm).find((key) => key.startsWith(`@lydell/node-pty-${other}@`));
  assert(addonKey, `the release's lock names the ${other} addon (it holds every target's)`);
  const addonVersion = addonKey.split("@")[2];
  const runtimeScript = `#!/bin/sh\necho deno for ${other}\n`;
  const runtime = await npmTarball({ deno: runtimeScript, "package.json": "{}" }, scratch);
  const addon = await npmTarball({
    "pty.node": `native code for ${other}`,
    "package.json": "{}",
    "README.md": "not loaded at run time: pruned",
  }, scratch);
  const requested: string[] = [];
  await using registry = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    const path = decodeURIComponent(new URL(request.url).pathname);
    requested.push(path);
    if (path === `/@deno/${other}-glibc`) {
      return Response.json({
        versions: {
          [Deno.version.deno]: {
            dist: { tarball: `${new URL(request.url).origin}/runtime.tgz`, integrity: runtime.integrity },
          },
        },
      });
    }
    if (path === "/runtime.tgz") return new Response(runtime.bytes);
    if (path === `/@lydell/node-pty-${other}/-/node-pty-${other}-${addonVersion}.tgz`) {
      return new Response(addon.bytes);
    }
    return new Response("not found", { status: 404 });
  });
  const url = `http://127.0.0.1:${registry.addr.port}/`;

  // The lock names the real addon's bytes: the registry's are refused.
  const refused = await repack(other, url);
  assertStringIncludes(refused.error ?? "", "integrity mismatch");
  // The lock naming these bytes (as it names what npm serves), the package is made.
  lock.npm[addonKey].integrity = addon.integrity;
  await Deno.writeTextFile(lockFile, JSON.stringify(lock));
  const made = await repack(other, url);
  assertEquals(made.error, undefined);
  assertEquals(
    [made.release.target, made.release.version, made.release.commit, made.release.deno],
    [other, installed.version, installed.commit, Deno.version.deno],
  );
  assert(made.release.id !== installed.id, "its own id");
  assert(requested.includes("/runtime.tgz"), "the runtime came from the registry");

  const into = await Deno.makeTempDir({ dir: scratch });
  assertEquals((await run("tar", ["-xzf", made.file, "-C", into, "--strip-components=1"])).code, 0);
  const manifest = JSON.parse(await Deno.readTextFile(join(into, "manifest.json"))) as PackageManifest;
  const { ["manifest.json"]: _, ["release.json"]: __, ...files } = await hashTree(into);
  assertEquals(files, manifest.files, "the manifest names every file as it is");
  assertEquals(JSON.parse(await Deno.readTextFile(join(into, "release.json"))), made.release);
  assertEquals(await Deno.readTextFile(join(into, "bin", "deno")), runtimeScript);
  for (const program of ["deno", "dock", "dockd"]) {
    assertEquals((await Deno.stat(join(into, "bin", program))).mode! & 0o111, 0o111, `bin/${program} runs`);
  }
  const addonFolder = `src/node_modules/@lydell/node-pty-${other}/`;
  assertEquals(await Deno.readTextFile(join(into, addonFolder, "pty.node")), `native code for ${other}`);
  assertEquals(files[`${addonFolder}README.md`], undefined, "pruned as a build prunes");
  assert(!Object.keys(files).some((file) => file.startsWith(`src/node_modules/@lydell/node-pty-${host}/`)));
  // Everything that holds nothing of a platform is the installed release's, byte for byte.
  for (const [file, hash] of Object.entries(installed.files)) {
    if (file === "bin/deno" || file.includes("/node-pty-") || file === `src/${NPM_LOCK}`) {
      continue;
    }
    assertEquals(files[file], hash, file);
  }
  const lean = await Deno.makeTempDir({ dir: scratch });
  assertEquals((await run("tar", ["-xzf", made.lean, "-C", lean, "--strip-components=1"])).code, 0);
  assertEquals(await Deno.stat(join(lean, "bin", "deno")).catch(() => null), null);

  // A release built before packages carried the lock cannot: it says so, and what to do.
  await Deno.remove(lockFile);
  const older = await repack(other, url);
  assertStringIncludes(older.error ?? "", `without ${NPM_LOCK} (built before it was there)`);
  assertStringIncludes(older.error ?? "", "upgrade it, or run dock from a checkout of its sources");
}
