/**
 * The flows engine in process for unit tests: a real store and bus over a temp folder, with the rest of
 * the box faked (one location `app` with its main checkout `main` on `main` and a worktree `feat` on
 * `feature/x`; no exec, no sessions).
 */
import { join } from "node:path";
import type { DockConfig, DockEvent, FlowConfig, Worktree } from "../client/wire.ts";
import { DockError } from "../client/errors.ts";
import { EventBus } from "../core/events.ts";
import { Store } from "../core/store.ts";
import { Flows, type FlowsOptions } from "../daemon/flows.ts";
import { BOX_SCHEMA } from "../daemon/schema.ts";
import { type Clock, SYSTEM_CLOCK } from "../core/clock.ts";
import { MemoryLog } from "../core/log.ts";

/** A flow with a schedule and one notify step naming its event, worktree and schedule. */
export function flow(id: string, fields: Partial<FlowConfig> = {}): FlowConfig {
  return {
    id,
    name: id,
    enabled: true,
    trigger: { schedule: "@hourly" },
    steps: [{ kind: "notify", title: "{{event.type}} {{worktree.name}} {{event.schedule}}" }],
    ...fields,
  };
}

/** A worktree record of the fake box. */
export function worktree(location: string, name: string, main: boolean, branch: string): Worktree {
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
export async function engine(
  options: {
    box?: FlowConfig[];
    repo?: FlowConfig[];
    local?: FlowConfig[];
    /** The engine's clock. @default {SYSTEM_CLOCK} */
    clock?: Clock;
    /** Sessions for prompt and wait steps. @default {none: they fail} */
    sessions?: FlowsOptions["sessions"];
  } = {},
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
      create: () => Promise.reject(new Error("no worktrees made here")),
    },
    exec: { run: () => Promise.reject(new Error("no exec here")) },
    sessions: options.sessions ?? {
      get: () => {
        throw notFound("session");
      },
      send: () => Promise.reject(new Error("no sessions here")),
      wait: () => Promise.reject(new Error("no sessions here")),
    } as unknown as FlowsOptions["sessions"],
  };
  const log = new MemoryLog();
  const clock = options.clock ?? SYSTEM_CLOCK;
  const flows = new Flows({ store, bus, file, boxName: "box", home: dir, ...fakes, clock, log });
  const events: DockEvent[] = [];
  bus.subscribe((event) => events.push(event));
  return {
    flows,
    locations: fakes.locations,
    worktrees: fakes.worktrees,
    bus,
    store,
    events,
    /** What the engine logged. */
    log,
    /** The flows file. */
    file,
    async [Symbol.asyncDispose]() {
      await flows.settled();
      flows.close();
      store.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}
