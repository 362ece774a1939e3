/**
 * The flows engine in process, with a real store and bus and the rest of the box faked: the seam other
 * trigger sources (schedules, the forge) use to list the flows in force and start runs.
 */
import { join } from "node:path";
import type { DockConfig, DockEvent, FlowConfig, Worktree } from "../client/wire.ts";
import { DockError } from "../client/errors.ts";
import { EventBus } from "../core/events.ts";
import { Store } from "../core/store.ts";
import { assertEquals, assertRejects } from "../tests/assert.ts";
import { Flows, type FlowsOptions } from "./flows.ts";
import { BOX_SCHEMA } from "./schema.ts";

function flow(id: string, fields: Partial<FlowConfig> = {}): FlowConfig {
  return {
    id,
    name: id,
    enabled: true,
    trigger: { schedule: "@hourly" },
    steps: [{ kind: "notify", title: "{{event.type}} {{worktree.name}} {{event.schedule}}" }],
    ...fields,
  };
}

function worktree(location: string, name: string, main: boolean, branch: string): Worktree {
  return {
    name,
    location,
    path: `/srv/${location}/${name}`,
    branch,
    main,
    origin: "dock",
    ports: [],
    setup: { state: "succeeded" },
    created: "2026-01-01T00:00:00.000Z",
  };
}

/** The engine over a temp store, with one location `app` (main checkout `main`, worktree `feat`). */
async function engine(
  options: { box?: FlowConfig[]; repo?: FlowConfig[]; local?: FlowConfig[] } = {},
) {
  const dir = await Deno.makeTempDir({ prefix: "dock-flows-" });
  const store = new Store(join(dir, "box.db"), { schema: BOX_SCHEMA });
  const bus = new EventBus(store);
  const file = join(dir, "flows.json");
  if (options.box) await Deno.writeTextFile(file, JSON.stringify({ flows: options.box }));
  const worktrees = [worktree("app", "main", true, "main"), worktree("app", "feat", false, "feature/x")];
  const local: DockConfig | null = options.local ? { flows: options.local } : null;
  const record = { name: "app", path: "/srv/app/main", local, created: "2026-01-01T00:00:00.000Z" };
  const notFound = (what: string) => new DockError("not_found", `no ${what}`, { status: 404 });
  const fakes: Pick<FlowsOptions, "locations" | "worktrees" | "exec" | "sessions"> = {
    locations: {
      list: () => [record],
      get: (name) => {
        if (name !== "app") throw notFound(`location ${name}`);
        return record;
      },
      config: () => {
        const repo: DockConfig = { flows: options.repo ?? [] };
        const byId = new Map<string, FlowConfig>();
        for (const f of [...(repo.flows ?? []), ...(local?.flows ?? [])]) byId.set(f.id, f);
        return Promise.resolve({
          repo,
          kit: null,
          local,
          effective: { flows: [...byId.values()] },
          errors: [],
        });
      },
    } as FlowsOptions["locations"],
    worktrees: {
      list: (location?: string) => worktrees.filter((w) => location === undefined || w.location === location),
      get: (location: string, name: string) => {
        const found = worktrees.find((w) => w.location === location && w.name === name);
        if (!found) throw notFound(`worktree ${location}/${name}`);
        return found;
      },
      target: (spec: string) => {
        const [location, name] = spec.split("/");
        const found = worktrees.find((w) => w.location === location && (name ? w.name === name : w.main));
        if (!found) throw notFound(`worktree ${spec}`);
        return found;
      },
      containing: () => undefined,
    },
    exec: { run: () => Promise.reject(new Error("no exec here")) },
    sessions: {
      get: () => {
        throw notFound("session");
      },
      send: () => Promise.reject(new Error("no sessions here")),
      wait: () => Promise.reject(new Error("no sessions here")),
    } as unknown as FlowsOptions["sessions"],
  };
  const flows = new Flows({ store, bus, file, boxName: "box", home: dir, ...fakes });
  const events: DockEvent[] = [];
  bus.subscribe((event) => events.push(event));
  return {
    flows,
    bus,
    store,
    events,
    async [Symbol.asyncDispose]() {
      await flows.settled();
      flows.close();
      store.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

Deno.test("effective: the box's and each location's flows in force, enabled ones only", async () => {
  await using e = await engine({
    box: [
      flow("nightly"),
      flow("off", { enabled: false }),
      flow("here", { trigger: { schedule: "@daily", where: { location: "app" } } }),
    ],
    repo: [flow("lint"), flow("replaced"), flow("switched")],
    local: [flow("replaced", { name: "mine" }), flow("switched", { enabled: false })],
  });
  const listed = (await e.flows.effective()).map((f) => `${f.scope}:${f.flow.id}:${f.flow.name}:${f.source}`);
  assertEquals(listed.sort(), [
    "box:nightly:nightly:box",
    "repo:app:here:here:box",
    "repo:app:lint:lint:repo",
    "repo:app:replaced:mine:local",
  ]);
});

Deno.test("startTriggered: announces the event with the flow's origin and place, then runs there", async () => {
  await using e = await engine({ repo: [flow("lint")] });
  const [lint] = await e.flows.effective();
  const run = await e.flows.startTriggered({
    flow: lint,
    event: { type: "schedule.fired", data: { schedule: "@hourly", time: "2026-01-01T10:00:00.000Z" } },
    place: { location: "app", worktree: "feat" },
  });
  assertEquals([run.status, run.trigger, run.scope, run.location, run.worktree], [
    "succeeded",
    "schedule.fired",
    "repo:app",
    "app",
    "feat",
  ]);
  const fired = e.events.find((event) => event.type === "schedule.fired")!;
  assertEquals(fired.origin, "flow:lint");
  assertEquals(fired.data, {
    schedule: "@hourly",
    time: "2026-01-01T10:00:00.000Z",
    location: "app",
    worktree: "feat",
  });
  const notify = e.events.find((event) => event.type === "notify")!;
  assertEquals(notify.data?.title, "schedule.fired feat @hourly");

  const home = await e.flows.startTriggered({ flow: lint, event: { type: "schedule.fired" }, place: {} });
  assertEquals([home.status, home.location, home.worktree], ["succeeded", undefined, undefined]);
  const main = await e.flows.startTriggered({ flow: lint, event: { type: "x" }, place: { location: "app" } });
  assertEquals(main.worktree, "main");
});

Deno.test("startTriggered: an unknown place is a 404 and announces nothing", async () => {
  await using e = await engine({ repo: [flow("lint")] });
  const [lint] = await e.flows.effective();
  const error = await assertRejects(
    () =>
      e.flows.startTriggered({ flow: lint, event: { type: "schedule.fired" }, place: { location: "gone" } }),
    DockError,
  );
  assertEquals((error as DockError).status, 404);
  assertEquals(e.events.filter((event) => event.type === "schedule.fired"), []);
});

Deno.test("explainInactive: GET flows shows the first reason for enabled flows in force only", async () => {
  await using e = await engine({
    box: [flow("bad"), flow("off", { enabled: false })],
    repo: [flow("replaced")],
    local: [flow("replaced")],
  });
  e.flows.explainInactive(() => undefined);
  e.flows.explainInactive((f, scope) => `no ${f.id} in ${scope}`);
  e.flows.explainInactive(() => "never shown: an earlier reason wins");
  const listed = (await e.flows.list()).flows.map((f) => [f.id, f.source, f.inactive_reason]);
  assertEquals(listed, [
    ["bad", "box", "no bad in box"],
    ["off", "box", undefined],
    ["replaced", "repo", undefined],
    ["replaced", "local", "no replaced in repo:app"],
  ]);
});
