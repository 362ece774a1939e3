/**
 * Routes of locations: registration, clone and new, branches, config layers and box-level scripts.
 *
 * @module
 */
import type { Location, StreamLine } from "../../client/wire.ts";
import {
  LOCATION_CLONE,
  LOCATION_CONFIG_PUT,
  LOCATION_CREATE,
  LOCATION_NEW,
  LOCATION_SCRIPTS,
} from "../../client/schemas.ts";
import type { BoxPaths } from "../../core/paths.ts";
import { defaultRepoPath, type Locations, nameFromUrl } from "../locations.ts";
import type { Worktrees } from "../worktrees.ts";
import { checkName } from "../names.ts";
import { Channel } from "../../core/channel.ts";
import { run } from "../../core/runner.ts";
import * as git from "../git.ts";
import { DockError } from "../../client/errors.ts";
import { body, json, ndjson, param, requestOrigin, RouteTable } from "../../core/http.ts";

/** What the location routes use of the box. */
export interface LocationRoutesBackend {
  paths: Pick<BoxPaths, "userHome">;
  locations: Pick<Locations, "add" | "list" | "get" | "branches" | "setScripts" | "config" | "setLocal">;
  worktrees: Pick<Worktrees, "reconcile">;
  /** Every location with its worktrees. */
  locationList(): Location[];
  /** One location with its worktrees. */
  location(name: string): Location;
  /** Forgets a location, stopping what dock runs in it. */
  forgetLocation(name: string, origin: string): Promise<Location>;
}

/** The location routes. */
export function locationRoutes(box: LocationRoutesBackend): RouteTable {
  return new RouteTable("locations")
    .add("GET", "/locations", () => json(box.locationList()))
    .add("POST", "/locations", async (c) => {
      const request = await body(c, LOCATION_CREATE);
      await box.locations.add(request.name, expandHome(request.path, box.paths.userHome)!, requestOrigin(c));
      await box.worktrees.reconcile(request.name);
      return json(box.location(request.name), 201);
    })
    .add("POST", "/locations/clone", async (c) => {
      const request = await body(c, LOCATION_CLONE);
      const name = checkName("name", request.name ?? nameFromUrl(request.url));
      const path = expandHome(request.path, box.paths.userHome) ?? defaultRepoPath(box.paths.userHome, name);
      const origin = requestOrigin(c);
      if (box.locations.list().some((l) => l.name === name)) {
        throw new DockError("exists", `location '${name}' already exists`, { status: 409 });
      }
      return ndjson(cloneProgress(box, request.url, name, path, origin));
    })
    .add("POST", "/locations/new", async (c) => {
      const request = await body(c, LOCATION_NEW);
      const name = checkName("name", request.name);
      const path = expandHome(request.path, box.paths.userHome) ?? defaultRepoPath(box.paths.userHome, name);
      if (box.locations.list().some((l) => l.name === name)) {
        throw new DockError("exists", `location '${name}' already exists`, { status: 409 });
      }
      await git.initRepository(path);
      await box.locations.add(name, path, requestOrigin(c));
      await box.worktrees.reconcile(name);
      return json(box.location(name), 201);
    })
    .add("GET", "/locations/:name", (c) => json(box.location(param(c, "name"))))
    .add(
      "DELETE",
      "/locations/:name",
      async (c) => json(await box.forgetLocation(param(c, "name"), requestOrigin(c))),
    )
    .add(
      "GET",
      "/locations/:name/branches",
      async (c) => json(await box.locations.branches(param(c, "name"))),
    )
    .route({
      method: "PUT",
      path: "/locations/:name/scripts",
      input: async (c) => {
        const scripts = await body(c, LOCATION_SCRIPTS);
        box.locations.get(param(c, "name")); // 404 before the gate runs
        return scripts;
      },
      gates: [{
        action: "config.change",
        describe: (scripts, c) => ({
          target: { file: "scripts", location: param(c, "name"), value: scripts },
          location: param(c, "name"),
        }),
      }],
      handler: async (c, scripts) =>
        json(await box.locations.setScripts(param(c, "name"), scripts, requestOrigin(c))),
    })
    .add("GET", "/locations/:name/config", async (c) => json(await box.locations.config(param(c, "name"))))
    .route({
      method: "PUT",
      path: "/locations/:name/config",
      input: async (c) => {
        const request = await body(c, LOCATION_CONFIG_PUT);
        box.locations.get(param(c, "name")); // 404 before the gate runs
        return request;
      },
      gates: [{
        action: "config.change",
        describe: (request, c) => ({
          target: { file: "config", location: param(c, "name"), value: request.local },
          location: param(c, "name"),
        }),
      }],
      handler: async (c, request) =>
        json(await box.locations.setLocal(param(c, "name"), request.local ?? null, requestOrigin(c))),
    });
}

function expandHome(path: string | undefined, home: string): string | undefined {
  return path?.replace(/^~(?=$|\/)/, home);
}

async function* cloneProgress(
  box: LocationRoutesBackend,
  url: string,
  name: string,
  path: string,
  origin: string,
): AsyncGenerator<StreamLine & { location?: unknown }> {
  const lines = new Channel<string>();
  const decoder = new TextDecoder();
  let partial = "";
  // git prints progress on stderr, redrawing a line with \r: each redraw becomes one line.
  const cloning = run("git", ["clone", "--progress", "--", url, path], {
    env: { GIT_TERMINAL_PROMPT: "0" },
    timeoutMs: 60 * 60_000,
    maxOutput: 64 * 1024,
    onOutput: (chunk) => {
      const parts = (partial + decoder.decode(chunk, { stream: true })).split(/[\r\n]/);
      partial = parts.pop() ?? "";
      for (const part of parts) if (part.trim()) lines.push(part);
    },
  }).finally(() => lines.close());
  for await (const line of lines) yield { line };
  const result = await cloning;
  if (result.code !== 0) {
    yield {
      done: true,
      error: `git clone failed (exit ${result.code}): ${result.stderr.trim().split("\n").pop()}`,
    };
    return;
  }
  await box.locations.add(name, path, origin);
  await box.worktrees.reconcile(name);
  yield { done: true, location: box.location(name) };
}
