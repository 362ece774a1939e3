import { DockError } from "../../client/errors.ts";
import { run } from "../../core/runner.ts";
import { assertEquals } from "../../tests/assert.ts";
import { boxTables } from "../../tests/route_tables.ts";
import { worktreeRoutes } from "./worktrees.ts";

const WT = "/locations/app/worktrees/feat";

/**
 * The worktree routes over fake records of one real git repository (location `app`, worktree `feat`,
 * both that repository, one commit on `main`): status, log and sync are git's own. The gates refuse
 * a worktree named `refused`, and a forced removal.
 */
async function worktreesApp() {
  const dir = await Deno.makeTempDir({ prefix: "dock-worktrees-api-" });
  const git = (...args: string[]) =>
    run("git", ["-c", "user.name=t", "-c", "user.email=t@t", ...args], { cwd: dir });
  await git("init", "-q", "-b", "main");
  await Deno.writeTextFile(`${dir}/a.txt`, "a\n");
  await git("add", "a.txt");
  await git("commit", "-q", "-m", "first");
  const calls: string[] = [];
  const published: string[] = [];
  const record = { location: "app", name: "feat", path: dir, base: "main" };
  const { app, gates } = boxTables([worktreeRoutes({
    bus: {
      publish: (announce) => {
        published.push(`${announce.type} ${JSON.stringify(announce.data)}`);
        return {} as never;
      },
    },
    locations: {
      get: (name) => {
        if (name !== "app") throw new DockError("not_found", `no location ${name}`, { status: 404 });
        return { name, path: dir } as never;
      },
    },
    worktrees: {
      list: (location) => (location === undefined || location === "app" ? [record] : []) as never,
      get: (location, name) => {
        if (`${location}/${name}` !== "app/feat") {
          throw new DockError("not_found", "no worktree", { status: 404 });
        }
        return record as never;
      },
      create: (location, request, origin) => {
        calls.push(`create ${location}/${request.name} ${origin}`);
        return Promise.resolve({ location, name: request.name } as never);
      },
      remove: (location, name, options) => {
        calls.push(`remove ${location}/${name} ${options.force}`);
        return Promise.resolve({} as never);
      },
      setupLog: () =>
        (async function* () {
          yield { line: "npm install" };
        })() as never,
    },
  })], {
    refuse: (action, target) =>
      target.name === "refused" || (action === "worktree.remove" && target.force === true),
  });
  const close = () => Deno.remove(dir, { recursive: true });
  return { app, gates, calls, published, close, dir };
}

Deno.test("worktree routes: list (with git status), create and remove through their gates, logs, sync", async () => {
  const world = await worktreesApp();
  try {
    const { app } = world;
    const all = await app.call("GET", "/worktrees?location=app");
    assertEquals([all.status, all.body[0].name, all.body[0].branch], [200, "feat", "main"]);
    assertEquals((await app.call("GET", "/locations/app/worktrees")).body.length, 1);
    assertEquals(
      (await app.call("POST", "/locations/app/worktrees", { json: { name: "fix", base: "main" } })).status,
      201,
    );
    assertEquals((await app.call("GET", WT)).body.name, "feat");
    assertEquals((await app.call("GET", `${WT}/setup/log`)).body, { line: "npm install" });
    const log = await app.call("GET", `${WT}/log?limit=5`);
    assertEquals([log.status, log.body.length], [200, 1]);
    const synced = await app.call("POST", `${WT}/sync`, { json: { mode: "merge" } });
    assertEquals([synced.status, synced.body.ok, synced.body.mode], [200, true, "merge"]);
    assertEquals((await app.call("DELETE", WT)).status, 200);
    assertEquals(world.gates, [
      'worktree.create app {"name":"fix","base":"main"}',
      `worktree.remove app {"worktree":"feat","path":${JSON.stringify(world.dir)},"force":false}`,
    ]);
    assertEquals(world.calls, ["create app/fix api", "remove app/feat false"]);
    assertEquals(world.published, [
      'worktree.synced {"location":"app","worktree":"feat","mode":"merge","ok":true}',
    ]);
    app.assertEveryRouteSucceeded();
  } finally {
    await world.close();
  }
});

Deno.test("worktree routes: refusals (unknown records before the gates, the gates, strict bodies, bounds)", async () => {
  const world = await worktreesApp();
  try {
    const { app } = world;
    assertEquals((await app.call("GET", "/worktrees?location=ghost")).status, 404);
    const ghost = await app.refused("POST", "/locations/ghost/worktrees", 404, "not_found", {
      json: { name: "x" },
    });
    assertEquals([ghost.entered, world.gates], [0, []]);
    assertEquals(
      (await app.refused("DELETE", "/locations/app/worktrees/ghost", 404, "not_found")).entered,
      0,
    );
    const refused = await app.refused("POST", "/locations/app/worktrees", 403, "gate_refused", {
      json: { name: "refused" },
    });
    assertEquals(refused.entered, 0);
    assertEquals((await app.refused("DELETE", `${WT}?force=1`, 403, "gate_refused")).entered, 0);
    await app.refusesUnknownField("POST", "/locations/app/worktrees", { name: "x" });
    await app.refusesUnknownField("POST", `${WT}/sync`, {});
    assertEquals((await app.call("POST", `${WT}/sync`, { json: { mode: "squash" } })).status, 400);
    assertEquals(
      (await app.call("POST", "/locations/app/worktrees", { json: { name: "x", pr: -1 } })).status,
      400,
    );
    assertEquals((await app.call("GET", `${WT}/log?limit=0`)).status, 400);
    assertEquals((await app.call("GET", "/locations/app/worktrees/ghost/setup/log")).status, 404);
    assertEquals([world.calls, world.published], [[], []]);
  } finally {
    await world.close();
  }
});
