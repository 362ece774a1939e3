/**
 * Whole-system test of a package for boxes (`deno task package`, package/build.ts): built for this
 * machine, unpacked into an empty folder, and run from there with no way to the network: the daemon
 * serves, reports its build, runs a session and attaches to it (the native PTY addon from the
 * package's own node_modules), and `dock` answers from the same package.
 */
import { join } from "node:path";
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { VERSION } from "../client/version.ts";
import type { DockEvent } from "../client/wire.ts";
import { DOCK_COMMANDS, DOCKD_COMMANDS } from "../cli/commands.generated.ts";
import { run } from "../core/runner.ts";
import { buildPackage, hashTree, hostTarget, targetName } from "../package/build.ts";
import { checkPackage, installHere } from "../package/install.ts";
import { makeDirs, makeRepo, startBox } from "./harness.ts";
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
    assert(
      !Object.keys(files).some((file) =>
        file.endsWith("_test.ts") || file.startsWith("src/node_modules/playwright")
      ),
    );
    // The command line is bundled beside its sources; the servers' modules are not.
    for (const file of ["src/cli/dock.js", "src/cli/dockd.js", "src/cli/hook.js", "src/cli/worktree.js"]) {
      assert(files[file], `${file} is in the package`);
    }
    assert(!files["src/cli/serve.js"] && !files["src/cli/run_agent.js"] && files["src/cli/serve.ts"]);
    assertStringIncludes(await Deno.readTextFile(join(root, "bin", "dock")), "/src/cli/dock.js");
    // The programs' files and their command lines are whole (an agent turn's hook loads one module, a
    // command two and its family's): no static import of a chunk.
    for (const program of ["dock.js", "dockd.js", "dock_main.js", "dockd_main.js"]) {
      const text = await Deno.readTextFile(join(root, "src", "cli", program));
      assertEquals(text.match(/\b(?:from|import)\s*["']\.\.?\//)?.[0], undefined, program);
    }

    await using box = await startBox({ dirs, launcher: join(root, "bin", "dockd"), env: OFFLINE });
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
    // `serve` runs from the sources; its refusal (a DockError of the sources' copy of the class) is still
    // told as a refusal by the bundle's command line, not as a crash.
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

    // A dock running from this package (a laptop after `dock upgrade --self`) has no checkout: for a box of
    // its own target it packs the release it runs again, which a box checks as the original; for another
    // target it says why it cannot.
    const probe = join(dirs.root, "repack.ts");
    await Deno.writeTextFile(
      probe,
      `import { buildPackage, parseTarget } from ${JSON.stringify(`file://${root}/src/package/build.ts`)};
      const [target, out] = Deno.args;
      try {
        const built = await buildPackage({ target: parseTarget(target), out });
        console.log(JSON.stringify({ file: built.file, lean: built.withoutRuntime.file, release: built.release }));
      } catch (error) {
        console.log(JSON.stringify({ error: String(error) }));
      }`,
    );
    const repack = async (target: string) => {
      const made = await new Deno.Command(join(root, "bin", "deno"), {
        args: ["run", "-A", "--cached-only", "--no-config", probe, target, join(dirs.root, "repacked")],
        env: { ...env, DENO_DIR: join(root, "cache") },
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
    const other = targetName(target) === "linux-arm64" ? "linux-x64" : "linux-arm64";
    assertStringIncludes((await repack(other)).error, `cannot make one for ${other}`);

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
