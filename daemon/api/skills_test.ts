import { Hono } from "hono";
import { join } from "node:path";
import { DockError } from "../../client/errors.ts";
import type { DockEvent } from "../../client/wire.ts";
import { SKILLS } from "../../skills/mod.ts";
import { assert, assertEquals } from "../../tests/assert.ts";
import type { Box } from "../box.ts";
import type { GateContext } from "../../core/hooks.ts";
import { errorResponse, mount } from "../../core/http.ts";
import { skillRoutes } from "./skills.ts";
import { STDERR_LOG } from "../../core/log.ts";

interface GateCall {
  action: string;
  target: Record<string, unknown>;
  context: GateContext;
}

/** The part of a Box the skills routes use: a temp home, one location with one worktree, a gate to steer. */
async function fakeBox(gate: (call: GateCall) => Promise<void>) {
  const dir = await Deno.makeTempDir({ prefix: "dock-skills-" });
  const home = join(dir, "home");
  const tree = join(dir, "feat");
  await Deno.mkdir(home);
  await Deno.mkdir(tree);
  const calls: GateCall[] = [];
  const events: DockEvent[] = [];
  const box = {
    paths: { userHome: home },
    bus: { publish: (event: DockEvent) => events.push(event) },
    locations: {
      get: (name: string) => {
        if (name !== "app") throw new DockError("not_found", `location '${name}' not found`, { status: 404 });
        return { name, path: join(dir, "app") };
      },
    },
    worktrees: {
      get: (location: string, name: string) => {
        if (location !== "app" || name !== "feat") {
          throw new DockError("not_found", `worktree '${location}/${name}' not found`, { status: 404 });
        }
        return { location, name, path: tree };
      },
    },
  } as unknown as Box;
  const app = new Hono();
  app.onError((error) => errorResponse(error, STDERR_LOG));
  // No CLAUDE_CONFIG_DIR or CODEX_HOME from the test's own environment: only the temp home is written.
  mount(app, "/v1", [skillRoutes(box, { env: {} })], {
    gate: (action, target, context) => {
      calls.push({ action, target, context });
      return gate({ action, target, context });
    },
  });
  return {
    home,
    tree,
    calls,
    events,
    post: async (path: string, body: unknown) => {
      const response = await app.request(`/v1/skills/${path}`, {
        method: "POST",
        headers: { "x-dock-origin": "my-tool" },
        body: JSON.stringify(body),
      });
      return { status: response.status, body: await response.json() };
    },
    get: async (query = "") => {
      const response = await app.request(`/v1/skills${query}`);
      return { status: response.status, body: await response.json() };
    },
    [Symbol.asyncDispose]: () => Deno.remove(dir, { recursive: true }),
  };
}

Deno.test("skills routes: a refusing gate stops the install before anything is written", async () => {
  await using box = await fakeBox(() =>
    Promise.reject(new DockError("gate_refused", "not today", { status: 403 }))
  );
  const answer = await box.post("install", { skills: ["dock"] });
  assertEquals(answer.status, 403);
  assertEquals(answer.body.error.code, "gate_refused");
  assertEquals([...Deno.readDirSync(box.home)], [], "nothing written");
  assertEquals(box.events, [], "nothing announced");
});

Deno.test("skills routes: the gate sees the request with its defaults, the origin and the worktree", async () => {
  await using box = await fakeBox(() => Promise.resolve());
  const answer = await box.post("install", { agent: "codex", location: "app/feat" });
  assertEquals(answer.status, 200);
  assertEquals(box.calls, [{
    action: "skills.install",
    target: {
      skills: SKILLS.map((s) => s.id),
      agent: "codex",
      target: "project",
      location: "app/feat",
      commit: false,
    },
    context: { origin: "my-tool", location: "app", worktree: "feat" },
  }]);
  assert(Deno.statSync(join(box.tree, ".agents/skills/dock/SKILL.md")).isFile);
  assertEquals(box.events.map((e) => [e.type, e.origin]), [["skills.installed", "my-tool"]]);

  await box.post("uninstall", { skills: ["dock"] });
  assertEquals(box.calls[1], {
    action: "skills.uninstall",
    target: { skills: ["dock"], agent: "all", target: "user", location: undefined, commit: false },
    context: { origin: "my-tool", location: undefined, worktree: undefined },
  });
  assertEquals(box.events.length, 1, "nothing was removed, so nothing announced");
});

Deno.test("skills routes: invalid requests are refused before the gate runs", async () => {
  await using box = await fakeBox(() => Promise.resolve());
  for (
    const body of [
      { skills: ["nope"] },
      { target: "project" },
      { location: "ghost" },
      { location: "app/ghost" },
      { agents: "claude" },
    ]
  ) {
    const answer = await box.post("install", body);
    assert(answer.status === 400 || answer.status === 404, JSON.stringify(answer));
  }
  assertEquals(box.calls, []);
});

Deno.test("skills routes: GET lists the copies installed, a project's under its location", async () => {
  await using box = await fakeBox(() => Promise.resolve());
  assertEquals((await box.post("install", { skills: ["dock"], agent: "claude" })).status, 200);
  const listed = await box.get();
  assertEquals(listed.status, 200);
  assert(
    listed.body.some((c: { skill: string; target: string }) => c.skill === "dock" && c.target === "user"),
  );
  assertEquals((await box.get("?location=ghost")).status, 404);
});
