/**
 * Every route that takes a body refuses a field it does not know, on the box (its socket and its TLS
 * listener) and on the laptop agent: a 400 naming the misspelt field and the one that was meant. A
 * misspelt field silently ignored is a setting silently not applied (`timout` would run for the
 * default ten minutes).
 *
 * `PUT /v1/app/{key}` is the one body route left out: it stores any JSON document the app sends.
 */
import { join } from "node:path";
import { assertEquals } from "./assert.ts";
import { parseLink } from "../core/pairing_link.ts";
import { makeDirs, makeRepo, startAgent, startBox } from "./harness.ts";

/** One body route and a body with one misspelt field. */
interface Case {
  method: string;
  path: string;
  body: unknown;
  /** The misspelt field's path, as the error names it. */
  field: string;
  /** The field that was meant. */
  meant: string;
}

// Each body is otherwise valid, so the misspelt field is what the route refuses.
const BOX: Case[] = [
  { method: "POST", path: "/v1/locations", body: { name: "x", pth: "/tmp" }, field: "pth", meant: "path" },
  {
    method: "POST",
    path: "/v1/locations/clone",
    body: { url: "https://example.invalid/x.git", nme: "y" },
    field: "nme",
    meant: "name",
  },
  {
    method: "POST",
    path: "/v1/locations/new",
    body: { name: "n", pth: "/tmp/n" },
    field: "pth",
    meant: "path",
  },
  {
    method: "PUT",
    path: "/v1/locations/app/scripts",
    body: { setup: "true", archve: "true" },
    field: "archve",
    meant: "archive",
  },
  { method: "PUT", path: "/v1/locations/app/config", body: { locl: {} }, field: "locl", meant: "local" },
  {
    method: "PUT",
    path: "/v1/locations/app/config",
    body: { local: { servics: [] } },
    field: "local.servics",
    meant: "services",
  },
  {
    method: "POST",
    path: "/v1/locations/app/worktrees",
    body: { name: "w2", brnch: "b" },
    field: "brnch",
    meant: "branch",
  },
  {
    method: "POST",
    path: "/v1/locations/app/worktrees/w/sync",
    body: { mod: "merge" },
    field: "mod",
    meant: "mode",
  },
  {
    method: "POST",
    path: "/v1/exec",
    body: { location: "app", command: "true", timout: "5s" },
    field: "timout",
    meant: "timeout",
  },
  {
    method: "POST",
    path: "/v1/exec",
    body: { location: "app", comand: "true" },
    field: "comand",
    meant: "command",
  },
  { method: "POST", path: "/v1/events", body: { type: "build.done", dta: {} }, field: "dta", meant: "data" },
  {
    method: "POST",
    path: "/v1/events",
    body: {
      type: "agent.finished",
      origin: "claude",
      data: { path: "/tmp", agent: "claude", session_id: null },
      sesion: "main",
    },
    field: "sesion",
    meant: "session",
  },
  {
    method: "POST",
    path: "/v1/events",
    body: {
      type: "agent.started",
      origin: "claude",
      data: { path: "/tmp", agent: "claude", sesion_id: "a" },
    },
    field: "data.sesion_id",
    meant: "session_id",
  },
  { method: "PUT", path: "/v1/env", body: { envs: {} }, field: "envs", meant: "env" },
  {
    method: "PUT",
    path: "/v1/guard",
    body: { enabled: false, memory_percnt: 90 },
    field: "memory_percnt",
    meant: "memory_percent",
  },
  { method: "POST", path: "/v1/secrets/test", body: { rf: "env://HOME" }, field: "rf", meant: "ref" },
  { method: "PUT", path: "/v1/hooks", body: { hoks: [] }, field: "hoks", meant: "hooks" },
  { method: "PUT", path: "/v1/flows", body: { flws: [] }, field: "flws", meant: "flows" },
  {
    method: "PUT",
    path: "/v1/flows",
    body: {
      flows: [{ id: "f", name: "F", trigger: { event: "x.y" }, steps: [{ kind: "notify", titel: "t" }] }],
    },
    field: "flows[0].steps[0].titel",
    meant: "title",
  },
  { method: "POST", path: "/v1/flows/f/test", body: { scpe: "box" }, field: "scpe", meant: "scope" },
  {
    method: "PUT",
    path: "/v1/hooks",
    body: { hooks: [{ on: "worktree.*", run: "true", timout: "5s" }] },
    field: "hooks[0].timout",
    meant: "timeout",
  },
  {
    method: "POST",
    path: "/v1/sessions",
    body: { location: "app", comand: "sh" },
    field: "comand",
    meant: "command",
  },
  {
    method: "POST",
    path: "/v1/sessions/s/send",
    body: { text: "hi", entr: false },
    field: "entr",
    meant: "enter",
  },
  {
    method: "POST",
    path: "/v1/tasks",
    body: { location: "app", name: "t", agnt: "claude" },
    field: "agnt",
    meant: "agent",
  },
  { method: "POST", path: "/v1/skills/install", body: { skill: ["dock"] }, field: "skill", meant: "skills" },
  { method: "POST", path: "/v1/skills/uninstall", body: { agen: "claude" }, field: "agen", meant: "agent" },
  { method: "POST", path: "/v1/pair/code", body: { hst: "127.0.0.1" }, field: "hst", meant: "host" },
  {
    method: "PUT",
    path: "/v1/locations/app/kit",
    body: { id: "k", verion: "1" },
    field: "verion",
    meant: "version",
  },
  {
    method: "POST",
    path: "/v1/preview",
    body: { location: "app", worktree: "w", prt: 3000 },
    field: "prt",
    meant: "port",
  },
  {
    method: "POST",
    path: "/v1/shares",
    body: { location: "app", worktre: "w" },
    field: "worktre",
    meant: "worktree",
  },
  { method: "POST", path: "/v1/units", body: { name: "u", rn: "true" }, field: "rn", meant: "run" },
  {
    method: "POST",
    path: "/v1/secrets/report",
    body: { locaton: "app" },
    field: "locaton",
    meant: "location",
  },
  {
    method: "POST",
    path: "/v1/plugins/none/ui-api",
    body: { method: "GET", pth: "status" },
    field: "pth",
    meant: "path",
  },
];

const LAPTOP: Case[] = [
  {
    method: "POST",
    path: "/v1/events",
    body: { type: "build.done", orign: "me" },
    field: "orign",
    meant: "origin",
  },
  { method: "POST", path: "/v1/boxes/add-local", body: { nme: "x" }, field: "nme", meant: "name" },
  {
    method: "POST",
    path: "/v1/forwards",
    body: { box: "local", local: 18080, remot: 8080 },
    field: "remot",
    meant: "remote",
  },
  {
    method: "POST",
    path: "/v1/routes",
    body: { pattern: "x.localhost", box: "local", prt: 8080 },
    field: "prt",
    meant: "port",
  },
  { method: "PUT", path: "/v1/hooks", body: { hoks: [] }, field: "hoks", meant: "hooks" },
  { method: "POST", path: "/v1/boxes/pair", body: { lnk: "dock://x" }, field: "lnk", meant: "link" },
  {
    method: "POST",
    path: "/v1/queue",
    body: { box: "local", session: "s", text: "hi", wai: false },
    field: "wai",
    meant: "wait",
  },
  { method: "PATCH", path: "/v1/queue/q1", body: { txt: "hi" }, field: "txt", meant: "text" },
  {
    method: "POST",
    path: "/v1/broadcast",
    body: { text: "hi", too: ["local/s"] },
    field: "too",
    meant: "to",
  },
  { method: "POST", path: "/v1/kits/add", body: { folde: "/x" }, field: "folde", meant: "folder" },
  {
    method: "POST",
    path: "/v1/kits/preview",
    body: { id: "k", box: "b", locaton: "a" },
    field: "locaton",
    meant: "location",
  },
  { method: "POST", path: "/v1/kits/remove", body: { bx: "b", location: "a" }, field: "bx", meant: "box" },
  {
    method: "POST",
    path: "/v1/kits/save",
    body: { box: "b", location: "a", id: "k", nam: "K" },
    field: "nam",
    meant: "name",
  },
  {
    method: "POST",
    path: "/v1/kits/k/apply",
    body: { box: "b", locatio: "a" },
    field: "locatio",
    meant: "location",
  },
  {
    method: "POST",
    path: "/v1/editors/open",
    body: { editor: "vscode", bx: "b" },
    field: "bx",
    meant: "box",
  },
  {
    method: "POST",
    path: "/v1/boxes/pair",
    body: { link: "dock://x", netwrk: "tailscale" },
    field: "netwrk",
    meant: "network",
  },
  // A box's route through the laptop's relay: the box answers.
  {
    method: "POST",
    path: "/v1/boxes/local/api/exec",
    body: { location: "app", command: "true", timout: "5s" },
    field: "timout",
    meant: "timeout",
  },
];

/** Sends the case's body and checks the answer: 400, naming the field and the one meant. */
async function refused(
  send: (method: string, path: string, body: string) => Promise<Response>,
  where: string,
  c: Case,
): Promise<void> {
  const response = await send(c.method, c.path, JSON.stringify(c.body));
  const answer = await response.json();
  const context = `${where} ${c.method} ${c.path} ${JSON.stringify(c.body)} → ${response.status} ${
    JSON.stringify(answer)
  }`;
  assertEquals(response.status, 400, context);
  const message: string = answer.error?.message ?? "";
  assertEquals(
    message.includes(`${c.field}: unknown field (did you mean "${c.meant}"?)`),
    true,
    `${context}: the message names neither ${c.field} nor ${c.meant}`,
  );
}

Deno.test("every body route of the box and the laptop refuses an unknown field, naming the one meant", async () => {
  const dirs = await makeDirs();
  await using box = await startBox({ dirs, env: { DOCK_LISTEN: "127.0.0.1:0" } });
  const repo = await makeRepo(join(dirs.home, "work"));
  await box.client.addLocation({ name: "app", path: repo });
  await box.client.createWorktree("app", { name: "w" });

  const socket = Deno.createHttpClient({
    proxy: { transport: "unix", path: dirs.socket },
    poolMaxIdlePerHost: 0,
  });
  try {
    for (const c of BOX) {
      await refused(
        (method, path, body) =>
          fetch(`http://localhost${path}`, {
            method,
            body,
            headers: { "content-type": "application/json" },
            client: socket,
          }),
        "box",
        c,
      );
    }
  } finally {
    socket.close();
  }

  // The TLS listener's one unauthenticated route.
  const { port } = parseLink((await box.client.pairCode({ host: "127.0.0.1" })).link);
  const ca = await Deno.readTextFile(join(dirs.state, "box", "tls", "ca.pem"));
  const tls = Deno.createHttpClient({ caCerts: [ca], poolMaxIdlePerHost: 0 });
  try {
    await refused(
      (method, path, body) => fetch(`https://127.0.0.1:${port}${path}`, { method, body, client: tls }),
      "box TLS",
      { method: "POST", path: "/v1/pair", body: { code: "x", nme: "laptop" }, field: "nme", meant: "name" },
    );
  } finally {
    tls.close();
  }

  await using agent = await startAgent(dirs);
  await fetch(`${agent.url}/v1/boxes/add-local`, {
    method: "POST",
    headers: { authorization: `Bearer ${agent.token}`, "content-type": "application/json" },
    body: "{}",
  }).then((response) => response.body?.cancel());
  for (const c of LAPTOP) {
    await refused(
      (method, path, body) =>
        fetch(`${agent.url}${path}`, {
          method,
          body,
          headers: { authorization: `Bearer ${agent.token}`, "content-type": "application/json" },
        }),
      "laptop",
      c,
    );
  }
});
