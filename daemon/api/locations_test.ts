import { DockError } from "../../client/errors.ts";
import type { Location } from "../../client/wire.ts";
import { run } from "../../core/runner.ts";
import { assert, assertEquals } from "../../tests/assert.ts";
import { boxTables } from "../../tests/route_tables.ts";
import { locationRoutes } from "./locations.ts";

/**
 * The location routes over a fake registry in a temporary home: clone and new are git's own (a clone
 * of a real repository in the home). The gate refuses a setup script that says `curl`.
 */
async function locationsApp() {
  const home = await Deno.makeTempDir({ prefix: "dock-locations-api-" });
  const source = `${home}/source`;
  const git = (...args: string[]) =>
    run("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd: source });
  await Deno.mkdir(source);
  await git("init", "-q", "-b", "main");
  await git("commit", "-q", "--allow-empty", "-m", "first");
  const calls: string[] = [];
  const known = new Map<string, string>([["app", `${home}/app`]]);
  const location = (name: string): Location => {
    const path = known.get(name);
    if (!path) throw new DockError("not_found", `no location ${name}`, { status: 404 });
    return { name, path, worktrees: [] } as unknown as Location;
  };
  const { app, gates } = boxTables([locationRoutes({
    paths: { userHome: home },
    locations: {
      add: (name, path, origin) => {
        calls.push(`add ${name} ${path.replace(home, "~")} ${origin}`);
        known.set(name, path);
        return Promise.resolve({} as never);
      },
      list: () => [...known.keys()].map((name) => ({ name })) as never,
      get: (name) => location(name) as never,
      branches: (name) => (location(name), Promise.resolve(["main"] as never)),
      setScripts: (name, scripts) => {
        calls.push(`scripts ${name} ${scripts.setup}`);
        return Promise.resolve(scripts as never);
      },
      config: (name) => (location(name), Promise.resolve({ local: null } as never)),
      setLocal: (name, local) => {
        calls.push(`config ${name} ${JSON.stringify(local)}`);
        return Promise.resolve({} as never);
      },
    },
    worktrees: {
      reconcile: (name) => {
        calls.push(`reconcile ${name}`);
        return Promise.resolve() as never;
      },
    },
    locationList: () => [...known.keys()].map(location),
    location,
    forgetLocation: (name, origin) => {
      const forgotten = location(name);
      calls.push(`forget ${name} ${origin}`);
      known.delete(name);
      return Promise.resolve(forgotten);
    },
  })], { refuse: (_action, target) => JSON.stringify(target).includes("curl") });
  return { app, gates, calls, home, source, close: () => Deno.remove(home, { recursive: true }) };
}

Deno.test("location routes: list, add, clone (NDJSON progress), new, one, branches, scripts, config, forget", async () => {
  const world = await locationsApp();
  try {
    const { app } = world;
    assertEquals((await app.call("GET", "/locations")).body.length, 1);
    assertEquals(
      (await app.call("POST", "/locations", { json: { name: "web", path: "~/web" } })).status,
      201,
    );
    const cloned = await app.call("POST", "/locations/clone", { json: { url: world.source } });
    assertEquals(cloned.status, 200);
    const last = JSON.parse(cloned.text.trim().split("\n").at(-1)!);
    assertEquals([last.done, last.location.name], [true, "source"]);
    assert((await Deno.stat(`${world.home}/source/.git`)).isDirectory);
    const made = await app.call("POST", "/locations/new", { json: { name: "fresh", path: "~/fresh" } });
    assertEquals([made.status, made.body.name], [201, "fresh"]);
    assert((await Deno.stat(`${world.home}/fresh/.git`)).isDirectory);
    assertEquals((await app.call("GET", "/locations/app")).body.name, "app");
    assertEquals((await app.call("GET", "/locations/app/branches")).body, ["main"]);
    assertEquals(
      (await app.call("PUT", "/locations/app/scripts", { json: { setup: "npm ci" } })).status,
      200,
    );
    assertEquals((await app.call("GET", "/locations/app/config")).body, { local: null });
    assertEquals(
      (await app.call("PUT", "/locations/app/config", { json: { local: { agents: {} } } })).status,
      200,
    );
    assertEquals((await app.call("DELETE", "/locations/web")).status, 200);
    assertEquals(world.gates.map((g) => g.split(" ").slice(0, 2).join(" ")), [
      "config.change app",
      "config.change app",
    ]);
    const added = world.calls.filter((c) => !c.startsWith("reconcile"));
    // A clone with no path goes to the box's default folder for repositories, in the home.
    assert(added[1].startsWith("add source ~/") && added[1].endsWith("/source api"), added[1]);
    assertEquals(added.toSpliced(1, 1), [
      "add web ~/web api",
      "add fresh ~/fresh api",
      "scripts app npm ci",
      'config app {"agents":{}}',
      "forget web api",
    ]);
    assertEquals(world.calls.filter((c) => c.startsWith("reconcile")), [
      "reconcile web",
      "reconcile source",
      "reconcile fresh",
    ]);
    app.assertEveryRouteSucceeded();
  } finally {
    await world.close();
  }
});

Deno.test("location routes: refusals (strict bodies, names, paths, a name taken, unknown, the gate)", async () => {
  const world = await locationsApp();
  try {
    const { app } = world;
    await app.refusesUnknownField("POST", "/locations", { name: "x", path: "/x" });
    await app.refusesUnknownField("POST", "/locations/clone", { url: world.source });
    await app.refusesUnknownField("POST", "/locations/new", { name: "x" });
    await app.refusesUnknownField("PUT", "/locations/app/scripts", {});
    await app.refusesUnknownField("PUT", "/locations/app/config", {});
    assertEquals(
      (await app.call("POST", "/locations", { json: { name: "x", path: "relative" } })).status,
      400,
    );
    for (const name of ["../x", "-x", "a/b", "x.lock"]) {
      assertEquals((await app.call("POST", "/locations/new", { json: { name } })).status, 400, name);
    }
    assertEquals((await app.call("POST", "/locations/new", { json: { name: "app" } })).status, 409);
    assertEquals(
      (await app.call("POST", "/locations/clone", { json: { url: world.source, name: "app" } })).status,
      409,
    );
    assertEquals(
      (await app.refused("PUT", "/locations/ghost/scripts", 404, "not_found", { json: {} })).entered,
      0,
    );
    assertEquals(world.gates, []);
    assertEquals(
      (await app.refused("PUT", "/locations/app/scripts", 403, "gate_refused", {
        json: { setup: "curl x | sh" },
      })).entered,
      0,
    );
    assertEquals((await app.call("DELETE", "/locations/ghost")).status, 404);
    assertEquals(world.calls, []);
  } finally {
    await world.close();
  }
});
