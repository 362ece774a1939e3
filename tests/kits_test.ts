/**
 * Whole-system tests of kits (issue 16): on a real box, a kit applied to a location becomes its kit
 * layer and a folder of files (`DOCK_KIT_DIR`), refused when a path or its config is wrong; through the
 * laptop agent, the library under `~/.dock/kits/`: add, preview, apply, installed (older versions
 * flagged), update, remove, rm, and the CLI.
 */
import { join } from "node:path";
import { assert, assertEquals, assertRejects, assertStringIncludes } from "./assert.ts";
import { DockError } from "../client/errors.ts";
import type { Kit } from "../client/wire.ts";
import { AgentClient } from "../client/agent.ts";
import { run } from "../core/runner.ts";
import { git, laptopEnv, makeDirs, makeRepo, runCli, startAgent, startBox } from "./harness.ts";
import { untilEvent } from "./wait.ts";
import { exists } from "../core/files.ts";

const KIT: Kit = {
  id: "node-app",
  name: "Node app",
  version: "1.2.0",
  requires: [{ tool: "sh" }, { tool: "no-such-tool-here", hint: "apt install no-such-tool-here" }],
  config: { env: { FROM_KIT: "yes", SHARED: "kit" }, setup: "sh $DOCK_KIT_DIR/bin/setup.sh" },
  files: {
    "bin/setup.sh": "#!/bin/sh\necho kit setup\n",
    "templates/README.md": "# from the kit\n",
  },
};

Deno.test("a kit on a box: its layer in the merge, its files at DOCK_KIT_DIR, refused when wrong, removed whole", async () => {
  const dirs = await makeDirs();
  await using box = await startBox({ dirs });
  const { client } = box;
  const repo = await makeRepo(join(dirs.home, "work"), "app", {
    ".dock/config.json": JSON.stringify({ env: { SHARED: "repo", FROM_REPO: "yes" } }),
  });
  await client.addLocation({ name: "app", path: repo });
  await client.putConfig("app", { env: { SHARED: "box" } });
  const mark = (await client.emit({ type: "test.mark" })).id!;

  const installed = await client.applyKit("app", KIT);
  assertEquals([installed.id, installed.version, installed.files], ["node-app", "1.2.0", [
    "bin/setup.sh",
    "templates/README.md",
  ]]);
  assertEquals(installed.missing, [{ tool: "no-such-tool-here", hint: "apt install no-such-tool-here" }]);
  const applied = await untilEvent(client, (e) => e.type === "kit.applied", { after: mark });
  assertEquals(applied.data?.kit, "node-app");
  await untilEvent(client, (e) => e.type === "config.changed" && e.data?.layer === "kit", { after: mark });

  // The three layers, merged repository → kit → box.
  const config = await client.config("app");
  assertEquals(config.kit, KIT.config);
  assertEquals(config.effective.env, { SHARED: "box", FROM_REPO: "yes", FROM_KIT: "yes" });
  assertEquals(config.effective.setup, "sh $DOCK_KIT_DIR/bin/setup.sh");

  // Its files where DOCK_KIT_DIR says, the #! one executable.
  const ran = await client.exec({
    location: "app",
    command: 'echo "$DOCK_KIT_DIR"; "$DOCK_KIT_DIR/bin/setup.sh"',
  });
  const [dir, said] = ran.output.trim().split("\n");
  assertEquals([dir, said], [installed.dir, "kit setup"]);
  assertEquals((await Deno.stat(join(dir, "bin/setup.sh"))).mode! & 0o777, 0o755);
  assertEquals((await Deno.stat(join(dir, "templates/README.md"))).mode! & 0o777, 0o644);
  assertEquals((await client.kits()).installed.map((k) => [k.location, k.id]), [["app", "node-app"]]);

  // Applying again replaces the files whole: one gone is gone.
  await client.applyKit("app", {
    ...KIT,
    version: "1.3.0",
    files: { "bin/setup.sh": "#!/bin/sh\necho v2\n" },
  });
  assert(!(await exists(join(dir, "templates/README.md"))), "the old version's files are gone");
  assertEquals(await Deno.readTextFile(join(dir, "bin/setup.sh")), "#!/bin/sh\necho v2\n");

  // Paths that would leave the kit, and a config that breaks a rule: 400 naming the path or the field.
  for (const path of ["../escape.sh", "/etc/passwd", "a/../../b", "./x", "a//b"]) {
    const error = await assertRejects(
      () => client.applyKit("app", { id: "bad", files: { [path]: "x" } }),
      DockError,
    ) as DockError;
    assertEquals(error.status, 400, path);
    assertStringIncludes(error.message, "kit.json");
    assertStringIncludes(error.message, path);
  }
  const badConfig = await assertRejects(
    () => client.applyKit("app", { id: "bad", config: { ports: 11 } }),
    DockError,
  ) as DockError;
  assertEquals(badConfig.status, 400);
  assertStringIncludes(badConfig.message, "kit.json: config.ports");
  const badId = await assertRejects(() => client.applyKit("app", { id: "Bad Id" }), DockError) as DockError;
  assertStringIncludes(badId.message, "kit.json: id");
  assert(!(await exists(join(dirs.state, "escape.sh"))));
  assertEquals(
    (await assertRejects(() => client.applyKit("nope", KIT), DockError) as DockError).status,
    404,
  );

  // Removed: the layer and the files go; a second removal is a 404.
  await client.removeKit("app");
  assertEquals((await client.config("app")).kit, null);
  assert(!(await exists(dir)));
  assertEquals((await assertRejects(() => client.removeKit("app"), DockError) as DockError).status, 404);
});

Deno.test("a kit on a box: the CLI's layers, links planted in its folder, applies at once, a forgotten location, gates", async () => {
  const dirs = await makeDirs();
  // What an apply cut short by a crash leaves: its fresh folder and the version moved aside.
  const kits = join(dirs.state, "box", "kits");
  for (const left of [".kit-abc123", ".old-0f1e2d3c", "ghost"]) {
    await Deno.mkdir(join(kits, left, "bin"), { recursive: true });
  }
  await using box = await startBox({ dirs });
  assertEquals([...Deno.readDirSync(kits)].map((e) => e.name), ["ghost"], "swept at start, the rest left");
  await Deno.remove(join(kits, "ghost"), { recursive: true });
  const { client } = box;
  const repo = await makeRepo(join(dirs.home, "work"), "app");
  await client.addLocation({ name: "app", path: repo });
  const installed = await client.applyKit("app", KIT);
  const dir = installed.dir;

  // `location config` prints the three layers and their merge.
  const printed = await box.cli(["location", "config", "app"]);
  assertEquals(printed.code, 0, printed.stderr);
  const layers = Object.fromEntries(
    printed.stdout.split(/^# /m).filter(Boolean).map((part) => {
      const [name, ...rest] = part.trim().split("\n");
      const text = rest.join("\n");
      return [name, text === "(none)" ? null : JSON.parse(text)];
    }),
  );
  assertEquals(layers, { repo: null, kit: KIT.config, local: null, effective: KIT.config });

  // Links left in the kit's folder (by a script run there, say) lead no write outside it.
  const outside = join(dirs.root, "outside");
  await Deno.mkdir(outside);
  await Deno.remove(join(dir, "bin"), { recursive: true });
  await Deno.symlink(outside, join(dir, "bin"));
  await Deno.symlink(join(outside, "readme"), join(dir, "templates", "README.md.link"));
  await client.applyKit("app", KIT);
  assertEquals([...Deno.readDirSync(outside)], [], "nothing written through the links");
  assertEquals((await Deno.lstat(join(dir, "bin"))).isDirectory, true);
  assertEquals(await Deno.readTextFile(join(dir, "bin/setup.sh")), KIT.files!["bin/setup.sh"]);
  // The folder itself a link: moved aside and removed as a link, what it pointed at untouched.
  await Deno.writeTextFile(join(outside, "keep"), "mine");
  await Deno.remove(dir, { recursive: true });
  await Deno.symlink(outside, dir);
  await client.applyKit("app", KIT);
  assertEquals((await Deno.lstat(dir)).isDirectory, true);
  assertEquals([...Deno.readDirSync(outside)].map((e) => e.name), ["keep"]);

  // Applies at once to one location: each finishes, and the folder holds the files its record names.
  const versions = ["2.0.1", "2.0.2", "2.0.3", "2.0.4", "2.0.5"];
  await Promise.all(
    versions.map((version) =>
      client.applyKit("app", { id: "node-app", version, files: { [`v${version}.txt`]: version } })
    ),
  );
  const now = (await client.kits()).installed[0];
  assertEquals(now.files, [`v${now.version}.txt`]);
  assertEquals([...Deno.readDirSync(dir)].map((e) => e.name), now.files);
  assertEquals([...Deno.readDirSync(join(dir, ".."))].map((e) => e.name), ["app"], "no folder left aside");

  // A forgotten location's kit files go; one added again under the name starts without a kit.
  await client.removeLocation("app");
  assert(!(await exists(dir)), "the kit's folder went with the location");
  await client.addLocation({ name: "app", path: repo });
  assertEquals((await client.config("app")).kit, null);
  const env = await client.exec({ location: "app", command: 'echo "[${DOCK_KIT_DIR-unset}]"' });
  assertEquals(env.output.trim(), "[unset]");
  const again = await client.applyKit("app", { ...KIT, version: "3.0.0" });
  assertEquals(again.dir, dir);
  // A before:config.change gate refuses both applying and removing; nothing changes.
  await client.putHooks([{ on: "before:config.change", run: "echo kits are frozen >&2; exit 1" }]);
  for (const attempt of [() => client.applyKit("app", KIT), () => client.removeKit("app")]) {
    const error = await assertRejects(attempt, DockError) as DockError;
    assertEquals([error.status, error.code, error.message], [403, "gate_refused", "kits are frozen"]);
  }
  assertEquals((await client.kits()).installed[0].version, "3.0.0");
  assertEquals(await Deno.readTextFile(join(dir, "bin/setup.sh")), KIT.files!["bin/setup.sh"]);
});

/** A box, the agent with it added as `devbox`, and the laptop's client: where the library tests start. */
async function startLibrary() {
  const dirs = await makeDirs();
  const box = await startBox({ dirs });
  const agent = await startAgent(dirs).catch(async (error) => {
    await box[Symbol.asyncDispose]();
    throw error;
  });
  const laptop = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  await laptop.addLocal("devbox");
  return {
    dirs,
    box,
    agent,
    laptop,
    async [Symbol.asyncDispose]() {
      laptop.close();
      await agent[Symbol.asyncDispose]();
      await box[Symbol.asyncDispose]();
    },
  };
}

Deno.test("the kits library: add from a folder and from git, preview, apply, installed, update, remove, save, rm, and the CLI", async () => {
  await using lab = await startLibrary();
  const { dirs, box, agent, laptop } = lab;
  const repo = await makeRepo(join(dirs.home, "work"), "app");
  await run("git", ["-C", repo, "remote", "add", "origin", "git@github.com:acme/shop.git"]);
  await box.client.addLocation({ name: "app", path: repo });

  // A kit as a folder: kit.json, and its other files become the kit's files.
  const folder = join(dirs.root, "kit-src");
  await Deno.mkdir(join(folder, "bin"), { recursive: true });
  const manifest = {
    id: "shop-kit",
    version: "1.9.0",
    match: { slug: "acme/shop" },
    requires: [{ tool: "no-such-tool-here" }],
    config: { env: { KIT: "1" } },
  };
  await Deno.writeTextFile(join(folder, "kit.json"), JSON.stringify(manifest));
  await Deno.writeTextFile(join(folder, "bin", "hello.sh"), "#!/bin/sh\necho hello\n");
  const added = await laptop.addKit({ folder });
  assertEquals([added.id, added.version, added.files], ["shop-kit", "1.9.0", ["bin/hello.sh"]]);
  assertEquals((await laptop.kits()).map((k) => k.id), ["shop-kit"]);
  assertEquals((await laptop.kit("shop-kit")).matching, [{ box: "devbox", location: "app" }]);

  // Preview: what would change, done nowhere.
  const preview = await laptop.previewKit("shop-kit", { box: "devbox", location: "app" });
  assertEquals(preview.changed, ["env"]);
  assertEquals(preview.effective.after.env, { KIT: "1" });
  assertEquals(preview.files, ["bin/hello.sh"]);
  assertStringIncludes(preview.warnings.join("\n"), "no-such-tool-here");
  assertEquals((await box.client.kits()).installed, []);

  const applied = await laptop.applyKit("shop-kit", { box: "devbox", location: "app" });
  assertEquals(applied.version, "1.9.0");
  const hello = await box.client.exec({ location: "app", command: '"$DOCK_KIT_DIR/bin/hello.sh"' });
  assertEquals(hello.output.trim(), "hello");

  // A newer version in the library: the location is flagged older (1.10.0 > 1.9.0), then updated.
  await Deno.writeTextFile(join(folder, "kit.json"), JSON.stringify({ ...manifest, version: "1.10.0" }));
  await laptop.addKit({ folder });
  const flagged = await laptop.kitsInstalled();
  assertEquals(flagged.map((k) => [k.box, k.location, k.version, k.library, k.older]), [
    ["devbox", "app", "1.9.0", "1.10.0", true],
  ]);
  const updated = await laptop.updateKit("shop-kit");
  assertEquals([updated.updated.map((u) => u.version), updated.failed], [["1.10.0"], []]);
  assertEquals((await laptop.kitsInstalled())[0].older, false);

  // The CLI shows the same.
  const env = laptopEnv(dirs, agent);
  const listed = await runCli("dock", ["kit", "installed"], { env, cwd: dirs.home });
  assertEquals(listed.code, 0, listed.stderr);
  assertStringIncludes(listed.stdout, "devbox/app");
  const json = await runCli("dock", ["kit", "list", "--json"], { env, cwd: dirs.home });
  assertEquals(JSON.parse(json.stdout)[0].version, "1.10.0");

  // From a git repository the laptop can reach.
  const gitKit = await makeRepo(join(dirs.root, "git-kit"), "lint-kit", {
    "kit.json": JSON.stringify({ id: "lint-kit", version: "0.1.0", config: { env: { LINT: "on" } } }),
    "lint.sh": "#!/bin/sh\ntrue\n",
  });
  const fromGit = await laptop.addKit({ git: `file://${gitKit}` });
  assertEquals([fromGit.id, fromGit.files], ["lint-kit", ["README.md", "lint.sh"]]);

  // Save a location's config as a kit; remove; rm.
  const saved = await laptop.saveKit({ box: "devbox", location: "app", id: "from-app", version: "1.0.0" });
  assertEquals(saved.id, "from-app");
  assertEquals((await laptop.kit("from-app")).config?.env, { KIT: "1" });
  await laptop.removeKit({ box: "devbox", location: "app" });
  assertEquals((await box.client.kits()).installed, []);
  await laptop.deleteKit("lint-kit");
  assertEquals((await laptop.kits()).map((k) => k.id), ["from-app", "shop-kit"]);

  // Bad input: a kit.json with a wrong field names the file and field; an unknown kit is a 404.
  const broken = join(dirs.root, "broken.json");
  await Deno.writeTextFile(broken, JSON.stringify({ id: "broken", files: { "../x": "y" } }));
  const refused = await assertRejects(() => laptop.addKit({ file: broken }), DockError) as DockError;
  assertEquals(refused.status, 400);
  assertStringIncludes(refused.message, `${broken}: files`);
  const unknown = await assertRejects(
    () => laptop.applyKit("nope", { box: "devbox", location: "app" }),
    DockError,
  ) as DockError;
  assertEquals(unknown.status, 404);
});

Deno.test("the kits library: bad input names the path or field, unknown kits and places are 404s, and dock kit from a folder to rm", async () => {
  await using lab = await startLibrary();
  const { dirs, box, agent, laptop } = lab;
  const repo = await makeRepo(join(dirs.home, "work"), "app");
  await run("git", ["-C", repo, "remote", "add", "origin", "https://github.com/acme/shop.git"]);
  await box.client.addLocation({ name: "app", path: repo });
  const refused = async (call: () => Promise<unknown>, status: number, ...says: string[]) => {
    const error = await assertRejects(call, DockError) as DockError;
    assertEquals(error.status, status, error.message);
    for (const text of says) assertStringIncludes(error.message, text);
    return error;
  };

  // A folder whose kit.json leaves the kit, or whose config breaks a rule: 400 naming file and path.
  const folder = join(dirs.root, "bad-kit");
  await Deno.mkdir(folder);
  const manifest = join(folder, "kit.json");
  for (const path of ["../../escape.sh", "/etc/profile", "bin/../../x"]) {
    await Deno.writeTextFile(manifest, JSON.stringify({ id: "bad-kit", files: { [path]: "x" } }));
    await refused(() => laptop.addKit({ folder }), 400, manifest, `files[${JSON.stringify(path)}]`);
  }
  await Deno.writeTextFile(manifest, JSON.stringify({ id: "bad-kit", config: { ports: 11 } }));
  await refused(() => laptop.addKit({ folder }), 400, manifest, "config.ports");
  await Deno.writeTextFile(
    manifest,
    JSON.stringify({ id: "bad-kit", config: { services: [{ run: "x" }] } }),
  );
  await refused(() => laptop.addKit({ folder }), 400, "kit.json", "config.services");
  await Deno.writeTextFile(manifest, JSON.stringify({ id: "bad-kit" }));
  await Deno.writeFile(join(folder, "logo.png"), new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0, 0, 0xff]));
  await refused(() => laptop.addKit({ folder }), 400, join(folder, "logo.png"), "not a text file");
  await Deno.remove(join(folder, "logo.png"));
  // Links: to a file inside the folder, followed; out of it, to nothing, or a kit.json leading out: 400.
  const secret = join(dirs.root, "secret.txt");
  await Deno.writeTextFile(secret, "not for the box");
  await Deno.symlink(secret, join(folder, "key"));
  await refused(() => laptop.addKit({ folder }), 400, join(folder, "key"), "outside the kit");
  await Deno.remove(join(folder, "key"));
  await Deno.symlink(join(folder, "gone"), join(folder, "dangling"));
  await refused(() => laptop.addKit({ folder }), 400, join(folder, "dangling"), "a link to nothing");
  await Deno.remove(join(folder, "dangling"));
  const elsewhere = join(dirs.root, "elsewhere");
  await Deno.mkdir(elsewhere);
  await Deno.writeTextFile(join(elsewhere, "kit.json"), JSON.stringify({ id: "bad-kit" }));
  await Deno.rename(manifest, join(folder, "kit.json.real"));
  await Deno.symlink(join(elsewhere, "kit.json"), manifest);
  await refused(() => laptop.addKit({ folder }), 400, manifest, "outside the kit");
  await Deno.remove(manifest);
  await Deno.rename(join(folder, "kit.json.real"), manifest);
  const linked = await makeRepo(join(dirs.root, "linked-kit"), "linked", {
    "kit.json": JSON.stringify({ id: "linked" }),
  });
  await Deno.symlink(secret, join(linked, "key"));
  await git(linked, "add", "key");
  await git(linked, "commit", "-qm", "a link out of the kit");
  await refused(() => laptop.addKit({ git: `file://${linked}` }), 400, "key", "outside the kit");

  await refused(() => laptop.addKit({ folder: "relative/kit" }), 400, "folder", "absolute");
  await refused(() => laptop.addKit({ folder: join(dirs.root, "none") }), 400, "no kit.json");
  await refused(() => laptop.addKit({}), 400, "exactly one");
  await refused(() => laptop.addKit({ git: "--upload-pack=touch /tmp/x" }), 400, "not a repository URL");
  await refused(() => laptop.addKit({ git: `file://${join(dirs.root, "no-repo")}` }), 422, "git clone");
  assertEquals(await laptop.kits(), [], "nothing refused reached the library");

  // Unknown kits, boxes and locations.
  const target = { box: "devbox", location: "app" };
  await refused(() => laptop.kit("nope"), 404, "nope");
  await refused(() => laptop.kit("Not An Id"), 404);
  await refused(() => laptop.previewKit("nope", target), 404, "nope");
  await refused(() => laptop.applyKit("nope", target), 404, "nope");
  await refused(() => laptop.updateKit("nope"), 404, "nope");
  await refused(() => laptop.deleteKit("nope"), 404, "nope");
  await refused(() => laptop.removeKit(target), 404, "no kit");

  // The CLI, from a folder named relative to where it runs, to rm.
  await Deno.writeTextFile(
    manifest,
    JSON.stringify({
      id: "shop",
      version: "2.0.0",
      match: { slug: "acme/shop" },
      requires: [{ tool: "no-such-tool-here", hint: "brew install it" }],
      config: { env: { SHOP: "1" } },
    }),
  );
  await Deno.mkdir(join(folder, "scripts"));
  await Deno.writeTextFile(join(folder, "scripts", "run.sh"), "#!/bin/sh\necho run\n");
  await Deno.symlink("scripts/run.sh", join(folder, "run.sh"));
  const env = laptopEnv(dirs, agent);
  const dock = (...args: string[]) => runCli("dock", ["kit", ...args], { env, cwd: dirs.root });
  const added = await dock("add", "bad-kit");
  assertEquals(added.code, 0, added.stderr);
  assertStringIncludes(added.stdout, "added kit shop 2.0.0 (2 files)");
  await refused(() => laptop.applyKit("shop", { box: "devbox", location: "nope" }), 404, "nope");
  await refused(() => laptop.applyKit("shop", { box: "ghost", location: "app" }), 404, "ghost");

  const shown = await dock("show", "shop");
  assertEquals(shown.code, 0, shown.stderr);
  assertStringIncludes(shown.stdout, "matches devbox/app");
  const preview = await dock("preview", "shop", "devbox/app");
  assertEquals(preview.code, 0, preview.stderr);
  assertStringIncludes(preview.stdout, "changes: env");
  assertStringIncludes(preview.stdout, "files: run.sh, scripts/run.sh");
  assertStringIncludes(
    preview.stdout,
    "warning: no-such-tool-here is not installed on devbox: brew install it",
  );
  const previewJson = JSON.parse((await dock("preview", "shop", "devbox/app", "--json")).stdout);
  assertEquals([previewJson.layers.kit_before, previewJson.layers.kit_after], [null, {
    env: { SHOP: "1" },
  }]);
  assertEquals((await box.client.kits()).installed, [], "a preview applies nothing");

  const applied = await dock("apply", "shop", "devbox/app", "--json");
  assertEquals(applied.code, 0, applied.stderr);
  assertEquals(JSON.parse(applied.stdout).missing, [{
    tool: "no-such-tool-here",
    hint: "brew install it",
  }]);
  const ran = await box.client.exec({ location: "app", command: '"$DOCK_KIT_DIR/run.sh"; echo "$SHOP"' });
  assertEquals(ran.output.trim().split("\n"), ["run", "1"]);
  const nothing = await dock("update", "shop");
  assertEquals([nothing.code, nothing.stdout.trim()], [0, "nothing runs an older version"]);

  const removed = await dock("remove", "devbox/app");
  assertEquals([removed.code, removed.stdout.trim()], [0, "removed shop from devbox/app"]);
  const rm = await dock("rm", "shop", "--json");
  assertEquals([rm.code, JSON.parse(rm.stdout).id], [0, "shop"]);
  assertEquals(await laptop.kits(), []);

  // Refusals on the command line: the agent's message, a non-zero exit.
  const unknown = await dock("show", "shop");
  assertEquals(unknown.code, 1);
  assertStringIncludes(unknown.stderr, "no kit 'shop' in the library");
  const usage = await dock("apply", "shop", "no-slash");
  assertEquals(usage.code, 2, usage.stderr);
  assertStringIncludes(usage.stderr, "expected BOX/LOCATION");
});

Deno.test("dock kit save keeps what the location adds to its repository: applied where that repository runs, no hook runs twice", async () => {
  await using lab = await startLibrary();
  const { dirs, box, laptop } = lab;
  const repoHook = { on: "worktree.created", run: "echo from-the-repository" };
  const boxHook = { on: "worktree.created", run: "echo from-this-box" };
  const repo = await makeRepo(join(dirs.home, "work"), "app", {
    ".dock/config.json": JSON.stringify({ hooks: [repoHook], env: { FROM: "repo" } }),
  });
  await box.client.addLocation({ name: "app", path: repo });
  await box.client.putConfig("app", { hooks: [boxHook], env: { FROM: "box", EXTRA: "1" } });

  const saved = await laptop.saveKit({ box: "devbox", location: "app", id: "app-setup" });
  assertEquals((await laptop.kit(saved.id)).config, { hooks: [boxHook], env: { FROM: "box", EXTRA: "1" } });

  // The same repository as a second location (another clone), without the box's own config.
  const clone = join(dirs.home, "clone");
  await run("git", ["clone", "-q", "--", repo, clone]);
  await box.client.addLocation({ name: "copy", path: clone });
  await laptop.applyKit(saved.id, { box: "devbox", location: "copy" });
  const effective = (await box.client.config("copy")).effective;
  assertEquals(effective.hooks, [repoHook, boxHook]);
  assertEquals(effective.env, { FROM: "box", EXTRA: "1" });
});

Deno.test("a kit preview asks the box which required tools it lacks and runs nothing there: a refusing before:exec gate does not matter", async () => {
  await using lab = await startLibrary();
  const { dirs, box, laptop } = lab;
  const repo = await makeRepo(join(dirs.home, "work"), "app");
  await box.client.addLocation({ name: "app", path: repo });
  await box.client.putHooks([{ on: "before:exec", run: "echo exec is off >&2; exit 1" }]);
  const file = join(dirs.root, "kit.json");
  await Deno.writeTextFile(
    file,
    JSON.stringify({
      id: "needs",
      requires: [{ tool: "git" }, { tool: "no-such-tool-here", hint: "apt install it" }, {
        tool: "/bin/sh",
      }],
    }),
  );
  await laptop.addKit({ file });

  const preview = await laptop.previewKit("needs", { box: "devbox", location: "app" });
  assertEquals(preview.warnings, [
    "no-such-tool-here is not installed on devbox: apt install it",
    "/bin/sh is not installed on devbox",
  ]);
  // What applying it reports as missing is the same.
  const applied = await laptop.applyKit("needs", { box: "devbox", location: "app" });
  assertEquals(applied.missing.map((need) => need.tool), ["no-such-tool-here", "/bin/sh"]);
  // The preview ran no command: its gate would have refused it, and said so in an event.
  const marker = await box.client.emit({ type: "test.marker" });
  const gates: string[] = [];
  await untilEvent(box.client, (event) => {
    if (event.type.startsWith("gate.")) gates.push(event.type);
    return event.id === marker.id;
  });
  assertEquals(gates, []);
  // A tool's name reaches a file name (the PATH lookup): a NUL in one is refused, not looked up.
  const nul = await assertRejects(() => box.client.kits({ tools: ["git\0x"] }), DockError) as DockError;
  assertEquals([nul.status, nul.code], [400, "invalid_request"]);
});
