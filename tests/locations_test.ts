/**
 * Whole-system tests of locations: registration and persistence, clone and new, branches, scripts
 * and config layers, through the API and the `dockd` CLI.
 */
import { join } from "node:path";
import { assert, assertEquals, assertRejects, assertStringIncludes } from "./assert.ts";
import { DockError } from "../client/errors.ts";
import { git, makeRepo, startBox } from "./harness.ts";
import { until, untilEvent } from "./wait.ts";

Deno.test("locations persist across a kill -9 of the daemon", async () => {
  const first = await startBox();
  const repo = await makeRepo(join(first.dirs.home, "work"));
  const added = await first.client.addLocation({ name: "app", path: repo });
  assertEquals(added.name, "app");
  assertEquals(added.path, repo);
  assertEquals(added.worktrees.map((w) => [w.name, w.main, w.origin]), [["app", true, "main"]]);
  await first.client.createWorktree("app", { name: "w1" });
  await first.stop({ kill: true });

  await using second = await startBox({ dirs: first.dirs });
  const locations = await second.client.locations();
  assertEquals(locations.map((l) => l.name), ["app"]);
  assertEquals(locations[0].worktrees.map((w) => w.name).sort(), ["app", "w1"]);
  assertEquals(locations[0].default_branch, "main");
});

Deno.test("registering refuses what is not a repository's main checkout, and duplicates", async () => {
  await using box = await startBox();
  const repo = await makeRepo(join(box.dirs.home, "work"));
  const plain = join(box.dirs.home, "plain");
  await Deno.mkdir(plain);
  const notRepo = await assertRejects(
    () => box.client.addLocation({ name: "p", path: plain }),
    DockError,
    "path:",
  );
  assertEquals((notRepo as DockError).status, 422);
  const missing = await assertRejects(
    () => box.client.addLocation({ name: "m", path: "/no/such/dir" }),
    DockError,
  );
  assertEquals((missing as DockError).status, 404);
  await box.client.addLocation({ name: "app", path: repo });
  const again = await assertRejects(() => box.client.addLocation({ name: "other", path: repo }), DockError);
  assertEquals((again as DockError).status, 409);
  const sameName = await assertRejects(() => box.client.addLocation({ name: "app", path: plain }), DockError);
  assert([409, 422].includes((sameName as DockError).status));
  const badName = await assertRejects(
    () => box.client.addLocation({ name: "../up", path: repo }),
    DockError,
    "name:",
  );
  assertEquals((badName as DockError).status, 400);
});

Deno.test("clone streams progress and registers the clone; new makes an empty repository", async () => {
  await using box = await startBox();
  const upstream = await makeRepo(join(box.dirs.root, "upstream"), "source");
  await git(upstream, "branch", "feature-x");
  const cli = await box.cli(["location", "clone", upstream, "--name", "cloned"]);
  assertEquals(cli.code, 0, cli.stderr);
  assertStringIncludes(cli.stderr, "Cloning into");
  assertStringIncludes(cli.stdout, "added cloned");
  const location = await box.client.location("cloned");
  assertEquals(location.path, join(box.dirs.home, "work", "cloned"));
  const branches = await box.client.branches("cloned");
  assert(branches.some((b) => b.name === "main" && !b.remote && b.current));
  assert(branches.some((b) => b.name === "origin/feature-x" && b.remote));
  // A branch that exists only on the remote becomes a tracking branch in a new worktree.
  const wt = await box.client.createWorktree("cloned", { name: "fx", branch: "feature-x" });
  assertEquals(wt.branch, "feature-x");

  const failed = [];
  for await (
    const line of box.client.cloneLocation({ url: join(box.dirs.root, "nothing-here"), name: "broken" })
  ) {
    failed.push(line);
  }
  assert(failed.at(-1)?.error?.includes("git clone failed"), JSON.stringify(failed.at(-1)));

  const fresh = await box.client.newLocation({ name: "fresh" });
  assertEquals(fresh.path, join(box.dirs.home, "work", "fresh"));
  assertEquals((await git(fresh.path, "log", "--format=%s")).trim(), "Initial commit");
  const wt2 = await box.client.createWorktree("fresh", { name: "first" });
  assertEquals(wt2.branch, "first");
  const taken = await assertRejects(
    () => box.client.newLocation({ name: "again", path: fresh.path }),
    DockError,
  );
  assertEquals((taken as DockError).status, 409);
});

Deno.test("box-level scripts and config layers merge, and changes are announced", async () => {
  await using box = await startBox();
  const repo = await makeRepo(join(box.dirs.home, "work"), "app", {
    ".dock/config.json": `{
      // comments are fine
      "setup": "echo repo-setup",
      "env": { "A": "repo", "B": "repo" },
      "services": [{ "name": "web", "run": "echo web" }, { "name": "worker", "run": "echo w" }],
      "hooks": [{ "on": "worktree.*", "run": "true" }],
    }`,
  });
  await box.client.addLocation({ name: "app", path: repo });
  const start = (await box.client.emit({ type: "test.mark" })).id!;
  const scripts = await box.client.setScripts("app", {
    setup: "echo box-setup",
    archive: "echo box-archive",
  });
  assertEquals(scripts.effective.setup, "echo box-setup");
  assertEquals(scripts.repo?.setup, "echo repo-setup");
  const changed = await untilEvent(box.client, (e) => e.type === "config.changed", { after: start });
  assertEquals(changed.data?.location, "app");
  assertEquals(changed.origin, "test");

  const config = await box.client.putConfig("app", {
    ...scripts.local,
    env: { B: "box", C: "$DOCK_LOCATION-x" },
    services: [{ name: "web", run: "echo box-web" }],
    hooks: [{ on: "*", run: "true" }],
  });
  assertEquals(config.effective.env, { A: "repo", B: "box", C: "$DOCK_LOCATION-x" });
  assertEquals(config.effective.services, [{ name: "web", run: "echo box-web" }, {
    name: "worker",
    run: "echo w",
  }]);
  assertEquals(config.effective.hooks?.map((h) => h.on), ["worktree.*", "*"]);
  assertEquals(config.kit, null);

  const cli = await box.cli(["location", "config", "app"]);
  assertEquals(cli.code, 0, cli.stderr);
  for (const heading of ["# repo", "# kit", "# local", "# effective"]) {
    assertStringIncludes(cli.stdout, heading);
  }
  const wt = await box.client.createWorktree("app", { name: "w" });
  const env = await box.client.exec({ location: "app/w", command: 'echo "$A $B $C"' });
  assertEquals(env.output.trim(), "repo box app-x");
  assertEquals(wt.setup.state === "none", false);

  const cleared = await box.client.setScripts("app", { setup: null, archive: null });
  assertEquals(cleared.effective.setup, "echo repo-setup");
  assertEquals(cleared.local?.archive, undefined);
});

Deno.test("an invalid repository config is reported with its file and field", async () => {
  await using box = await startBox();
  const repo = await makeRepo(join(box.dirs.home, "work"), "app", {
    ".dock/config.json": JSON.stringify({
      services: [{ name: "ok", run: "x" }, { name: "b", run: "y" }, { name: "Web", run: "z" }],
    }),
  });
  await box.client.addLocation({ name: "app", path: repo });
  const config = await box.client.config("app");
  assertEquals(config.repo, null);
  assertEquals(config.errors?.[0].field, "services[2].name");
  assertStringIncludes(config.errors![0].file, join(repo, ".dock", "config.json"));
  const error = await assertRejects(() => box.client.createWorktree("app", { name: "w" }), DockError);
  assertEquals((error as DockError).status, 422);
  assertStringIncludes(error.message, `${join(repo, ".dock", "config.json")}: services[2].name:`);
  assertStringIncludes(error.message, '"Web"');

  await Deno.writeTextFile(join(repo, ".dock", "config.json"), '{ "ports": 2, }\n{');
  const broken = await box.client.config("app");
  assertStringIncludes(broken.errors![0].file, "config.json");
  const cli = await box.cli(["location", "config", "app"]);
  assertEquals(cli.code, 1);
  assertStringIncludes(cli.stderr, "config.json");

  const badLocal = await assertRejects(
    () => box.client.putConfig("app", { ports: 11 }),
    DockError,
    "local.ports",
  );
  assertEquals((badLocal as DockError).status, 400);
});

Deno.test("removing a location forgets it, stops what runs in it, and keeps its files", async () => {
  await using box = await startBox();
  const repo = await makeRepo(join(box.dirs.home, "work"), "app", {
    ".dock/config.json": JSON.stringify({
      services: [{ name: "idle", run: "exec sleep 600", autostart: true }],
    }),
  });
  await box.client.addLocation({ name: "app", path: repo });
  await box.client.createWorktree("app", { name: "w" });
  const service = await until(async () => {
    const s = (await box.client.services("app", "w"))[0];
    return s.state === "running" ? s : undefined;
  }, { on: box });
  await box.client.createSession({ location: "app/w", command: "sleep 600", name: "s" });
  const removed = await box.client.removeLocation("app");
  assertEquals(removed.name, "app");
  assertEquals(await box.client.locations(), []);
  assertEquals(await box.client.sessions(), []);
  const state = await Deno.readTextFile(`/proc/${service.pid}/stat`).then((t) => t.split(") ")[1][0]).catch(
    () => "gone",
  );
  assert(state === "gone" || state === "Z", `the service is ${state}`);
  assert((await Deno.stat(join(repo, "README.md"))).isFile);
  const missing = await assertRejects(() => box.client.location("app"), DockError);
  assertEquals((missing as DockError).status, 404);
  const json = await box.cli(["location", "list", "--json"]);
  assertEquals(JSON.parse(json.stdout), []);
});

Deno.test("dockd location scripts sets, keeps and clears the box-level scripts (spec 4.4)", async () => {
  await using box = await startBox();
  const repo = await makeRepo(join(box.dirs.home, "work"), "app");
  await box.client.addLocation({ name: "app", path: repo });
  const set = await box.cli([
    "location",
    "scripts",
    "app",
    "--setup",
    "make setup",
    "--archive",
    "make clean",
  ]);
  assertEquals(set.code, 0, set.stderr);
  assertEquals((await box.client.config("app")).local, { setup: "make setup", archive: "make clean" });
  // Naming one keeps the other.
  assertEquals((await box.cli(["location", "scripts", "app", "--setup", "make all"])).code, 0);
  assertEquals((await box.client.config("app")).local, { setup: "make all", archive: "make clean" });
  const cleared = await box.cli(["location", "scripts", "app", "--clear", "--json"]);
  assertEquals(cleared.code, 0, cleared.stderr);
  assertEquals(JSON.parse(cleared.stdout).effective.setup, undefined);
  assertEquals((await box.client.config("app")).local, null);
});
