/**
 * Never a 5xx for bad input, on the laptop (issue 11): a seeded fuzz of every route of the agent's API
 * (path parameters, query values, headers and bodies, each made from a valid request by mutation; see
 * `fuzz.ts`), and of the box's body routes relayed through the agent to a box on its socket and to one
 * paired over TLS. After each route the agent and both boxes still answer. A route the agent registers
 * that the walk does not know fails the first test, so a new route is fuzzed from its first day.
 */
import { join } from "node:path";
import { assert, assertEquals } from "./assert.ts";
import { Agent } from "../agent/agent.ts";
import { agentApp } from "../agent/api/server.ts";
import { AgentClient } from "../client/agent.ts";
import { clientPaths } from "../core/paths.ts";
import { boxBodyRoutes, fuzzBody, fuzzSegment, fuzzValue, isErrorBody, random, reportFuzz } from "./fuzz.ts";
import { type BoxDirs, freePort, makeDirs, makeRepo, startAgent, startBox, type TestBox } from "./harness.ts";

/** How one route of the agent's API is called validly; the walk mutates each part. */
interface LaptopRoute {
  method: string;
  /** The path as registered, `:name` for each parameter. */
  path: string;
  /** A valid value of each parameter. */
  params?: Record<string, string>;
  /** A valid value of the path's trailing `*`. */
  rest?: string;
  /** The query values it reads, valid. */
  query?: Record<string, string>;
  /** The headers it reads, valid. */
  headers?: Record<string, string>;
  /** A valid body, for a route that reads one. */
  body?: Record<string, unknown>;
  /** Body fields only ever replaced by non-strings. */
  noStrings?: string[];
  /** The answer is a stream: only its status is read. */
  stream?: boolean;
  /** Makes a mutated body safe to send, where a fuzzed value would reach beyond this test. */
  safe?: (body: Record<string, unknown>) => void;
}

/** Every route of the agent's API but the relay's (walked with the box's routes below), called validly. */
function laptopRoutes(options: { link: string; forwardPort: number }): LaptopRoute[] {
  return [
    { method: "GET", path: "/v1/status" },
    { method: "GET", path: "/v1/sessions", query: { box: "local" } },
    { method: "POST", path: "/v1/refresh" },
    { method: "GET", path: "/v1/events", query: { after: "0" }, stream: true },
    { method: "GET", path: "/v1/events", headers: { "last-event-id": "0" }, stream: true },
    { method: "POST", path: "/v1/events", body: { type: "fuzz.event", origin: "fuzz", data: { a: 1 } } },
    { method: "POST", path: "/v1/stop" },
    { method: "GET", path: "/v1/boxes" },
    { method: "POST", path: "/v1/boxes/add-local", body: { name: "local" } },
    { method: "POST", path: "/v1/boxes/pair", body: { link: options.link, name: "remote" } },
    {
      method: "POST",
      path: "/v1/boxes/add-ssh",
      body: { host: "fuzz.invalid", name: "ssh" },
      stream: true,
      // A destination that parses would be dialled with this machine's own SSH keys: only a name that
      // never resolves (.invalid) goes out; what does not parse is refused before ssh runs.
      safe: (body) => {
        if (typeof body.host === "string" && /^[A-Za-z0-9@._:[\]-]+$/.test(body.host)) {
          body.host = "fuzz.invalid";
        }
      },
    },
    // A box that is not there: a valid name, but the walk never forgets the boxes it walks through.
    { method: "DELETE", path: "/v1/boxes/:box", params: { box: "ghost" } },
    // Upgrading a real box builds and sends a package (tests/upgrade_test.ts does): only a box not there.
    { method: "POST", path: "/v1/boxes/:box/upgrade", params: { box: "ghost" }, stream: true },
    {
      method: "POST",
      path: "/v1/forwards",
      body: { box: "local", local: options.forwardPort, remote: 8080 },
      // A forward listens on its local port: a fuzzed one could take a port another test was given.
      safe: (body) => {
        const local = body.local;
        if (Number.isInteger(local) && (local as number) >= 1 && (local as number) <= 65535) {
          body.local = options.forwardPort;
        }
      },
    },
    { method: "DELETE", path: "/v1/forwards/:id", params: { id: "f0" } },
    { method: "POST", path: "/v1/routes", body: { pattern: "fz.localhost", box: "local", port: 8080 } },
    { method: "DELETE", path: "/v1/routes", query: { pattern: "fz.localhost" } },
    { method: "GET", path: "/v1/app/:key", params: { key: "fuzz" } },
    { method: "PUT", path: "/v1/app/:key", params: { key: "fuzz" }, body: { theme: "dark", size: 3 } },
    { method: "GET", path: "/v1/templates" },
    { method: "GET", path: "/v1/themes" },
    { method: "GET", path: "/v1/hooks" },
    {
      method: "PUT",
      path: "/v1/hooks",
      body: { hooks: [{ on: "fuzz.event", run: "true" }] },
      noStrings: ["hooks"],
    },
    { method: "GET", path: "/v1/queue" },
    { method: "POST", path: "/v1/queue", body: { box: "local", session: "nobody", text: "hi", wait: false } },
    { method: "GET", path: "/v1/queue/:id", params: { id: "q-fuzz" } },
    { method: "PATCH", path: "/v1/queue/:id", params: { id: "q-fuzz" }, body: { text: "edited" } },
    { method: "POST", path: "/v1/queue/:id/retry", params: { id: "q-fuzz" } },
    { method: "POST", path: "/v1/queue/:id/send", params: { id: "q-fuzz" } },
    { method: "DELETE", path: "/v1/queue/:id", params: { id: "q-gone" } },
    {
      method: "POST",
      path: "/v1/broadcast",
      body: { text: "hi {{session}}", to: ["local/nobody"], queue: false },
      // Nothing the fuzz sends is queued for later.
      safe: (body) => void (body.queue = false),
    },
    {
      method: "GET",
      path: "/v1/boxes/:box/sessions/:name/attach",
      params: { box: "local", name: "nobody" },
      query: { cols: "80", rows: "24" },
    },
    { method: "GET", path: "/v1/plugins" },
    { method: "GET", path: "/v1/plugins/:id", params: { id: "fz" }, query: { log: "10" } },
    {
      method: "POST",
      path: "/v1/plugins/:id/enable",
      params: { id: "fz" },
      body: { permissions: { scopes: ["events:emit"] } },
    },
    // A plugin that is not there: the walk keeps its plugin enabled for the routes below.
    { method: "POST", path: "/v1/plugins/:id/disable", params: { id: "ghost" } },
    ...["GET", "POST", "PUT", "PATCH", "DELETE"].flatMap((method) => {
      const body = method === "GET" ? undefined : { any: "json", n: 1 };
      return [
        { method, path: "/v1/plugins/:id/fn", params: { id: "fz" }, body },
        { method, path: "/v1/plugins/:id/fn/*", params: { id: "fz" }, rest: "a/b", body },
      ];
    }),
    { method: "GET", path: "/v1/plugins/:id/*", params: { id: "fz" }, rest: "ui/index.html" },
    // Installing writes only under its own id's folder (never fz's, which the walk keeps using).
    {
      method: "PUT",
      path: "/v1/plugins/:id/files",
      params: { id: "fzi" },
      body: {
        files: [{
          path: "dock-plugin.json",
          data: JSON.stringify({ id: "fzi", name: "fzi", version: "1.0.0", main: "main.ts" }),
        }],
      },
    },
    { method: "DELETE", path: "/v1/plugins/:id", params: { id: "ghost" } },
    { method: "GET", path: "/v1/plugins/:id/config", params: { id: "fz" } },
    { method: "PUT", path: "/v1/plugins/:id/config", params: { id: "fz" }, body: { values: { a: "b" } } },
    {
      method: "POST",
      path: "/v1/plugins/:id/test-event",
      params: { id: "fz" },
      body: { type: "fuzz.event", data: { a: 1 } },
    },
    {
      method: "POST",
      path: "/v1/plugins/:id/fn-link",
      params: { id: "fz" },
      body: { where: "laptop", path: "a" },
    },
    { method: "POST", path: "/v1/setup/port80", query: { remove: "1" }, stream: true },
    // The test agent runs from a checkout: its own upgrade is refused before a byte is read (409).
    { method: "POST", path: "/v1/upgrade", headers: { "content-type": "application/gzip" } },
    { method: "GET", path: "/v1/networks" },
    { method: "GET", path: "/v1/networks/:name/peers", params: { name: "tailscale" } },
    // No tailscale on a test machine: a 404, nothing logs in.
    { method: "POST", path: "/v1/networks/:name/login", params: { name: "tailscale" }, stream: true },
    { method: "GET", path: "/v1/discover", query: { network: "tailscale" } },
    { method: "GET", path: "/v1/editors" },
    // No editor is installed on a test machine: a valid open is a 422, nothing is launched.
    {
      method: "POST",
      path: "/v1/editors/open",
      body: { editor: "vscode", box: "local", location: "app", file: "a.ts", line: 3 },
    },
    { method: "GET", path: "/v1/ssh-config" },
    { method: "POST", path: "/v1/ssh-config" },
    { method: "GET", path: "/v1/kits" },
    { method: "GET", path: "/v1/kits/installed" },
    { method: "GET", path: "/v1/kits/:id", params: { id: "fz-kit" } },
    { method: "DELETE", path: "/v1/kits/:id", params: { id: "ghost-kit" } },
    {
      method: "POST",
      path: "/v1/kits/add",
      body: { file: "/nonexistent/fz/kit.json" },
      // What parses as a path or URL is read or cloned: only places that do not exist.
      safe: (body) => {
        for (const key of ["file", "folder"]) {
          if (typeof body[key] === "string") body[key] = "/nonexistent/fz";
        }
        if (typeof body.git === "string") body.git = "file:///nonexistent/fz.git";
      },
    },
    { method: "POST", path: "/v1/kits/preview", body: { id: "fz-kit", box: "local", location: "app" } },
    { method: "POST", path: "/v1/kits/remove", body: { box: "ghost", location: "app" } },
    { method: "POST", path: "/v1/kits/save", body: { box: "ghost", location: "app", id: "fz-saved" } },
    {
      method: "POST",
      path: "/v1/kits/:id/apply",
      params: { id: "fz-kit" },
      body: { box: "ghost", location: "app" },
    },
    { method: "POST", path: "/v1/kits/:id/update", params: { id: "fz-kit" } },
    { method: "GET", path: "/v1/mcp", headers: { accept: "application/json, text/event-stream" } },
    { method: "DELETE", path: "/v1/mcp" },
    {
      method: "POST",
      path: "/v1/mcp",
      headers: { accept: "application/json, text/event-stream" },
      body: { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "list_boxes", arguments: {} } },
    },
    {
      method: "POST",
      path: "/v1/plugins/:id/ui-api",
      params: { id: "fz" },
      body: { method: "GET", path: "status" },
    },
    // The app's static files (issue 14), which need no token.
    { method: "GET", path: "/app" },
    { method: "GET", path: "/app/*", rest: "app.js" },
    { method: "HEAD", path: "/app" },
    { method: "HEAD", path: "/app/*", rest: "index.html" },
    { method: "GET", path: "/app/plugins/*", rest: "laptop/fz/ui/index.html" },
    { method: "HEAD", path: "/app/plugins/*", rest: "devbox/fz/panel.html" },
    { method: "GET", path: "/app/fn/*", rest: "laptop/fz/a", query: { sig: "00", exp: "1" } },
  ];
}

/** A plugin with a `fetch` function that answers what it was asked, and a file it offers the app. */
async function writePlugin(dockHome: string): Promise<void> {
  const dir = join(dockHome, "plugins", "fz");
  await Deno.mkdir(join(dir, "ui"), { recursive: true });
  await Deno.writeTextFile(join(dir, "ui", "index.html"), "<p>fz</p>\n");
  await Deno.writeTextFile(
    join(dir, "main.ts"),
    `export default {
      async fetch(request) {
        const body = await request.text();
        return Response.json({ method: request.method, path: new URL(request.url).pathname, length: body.length });
      },
    };\n`,
  );
  await Deno.writeTextFile(
    join(dir, "dock-plugin.json"),
    JSON.stringify({
      id: "fz",
      name: "fz",
      version: "1.0.0",
      main: "main.ts",
      ui: ["ui/"],
      permissions: { scopes: ["events:emit"] },
    }),
  );
}

Deno.test("the laptop fuzz walks every route the agent's API registers", async () => {
  const dirs = await makeDirs();
  const env: Record<string, string> = {
    DOCK_STATE_DIR: dirs.state,
    HOME: dirs.home,
    DOCK_HOME: dirs.dockHome,
  };
  const agent = new Agent(clientPaths({ get: (key) => env[key] }));
  try {
    const walked = new Set(
      laptopRoutes({ link: "", forwardPort: 0 }).map((route) => `${route.method} ${route.path}`),
    );
    const registered = agentApp(agent, { port: 1378 }).routes
      // ALL routes are the 405 answers of known paths (and the gate), except the relay's, walked below.
      .filter((route) => route.method !== "ALL")
      .map((route) => `${route.method} ${route.path}`);
    assertEquals(registered.filter((route) => !walked.has(route)), [], "routes the fuzz does not walk");
  } finally {
    agent.close();
    await Deno.remove(dirs.root, { recursive: true });
  }
});

/** Methods a request may come with (HEAD and OPTIONS too: a browser sends them). */
const METHODS = ["GET", "HEAD", "OPTIONS", "POST", "PUT", "PATCH", "DELETE"];

/** Now and then, headers every route reads or passes on, with hostile values; else none. */
function fuzzHeaders(next: () => number): Record<string, string> {
  const headers: Record<string, string> = {};
  if (next() < 0.1) {
    headers["content-type"] = ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data", ""][
      Math.floor(next() * 4)
    ];
  }
  if (next() < 0.1) headers["x-dock-origin"] = fuzzSegment(next);
  if (next() < 0.05) headers["last-event-id"] = fuzzSegment(next);
  return headers;
}

/** `body` with `safe` applied when it is a JSON object; as it is otherwise (broken JSON stays broken). */
function safeBody(body: string, safe: (body: Record<string, unknown>) => void): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return body;
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return body;
  safe(parsed as Record<string, unknown>);
  return JSON.stringify(parsed);
}

/** A box with location `app` and its worktree `w`, listening for laptops when `listen`. */
async function fuzzBox(options: { listen?: boolean; dirs?: BoxDirs } = {}) {
  const box = await startBox({
    dirs: options.dirs,
    env: options.listen ? { DOCK_LISTEN: "127.0.0.1:0" } : {},
  });
  const repo = await makeRepo(join(box.dirs.home, "work"));
  await box.client.addLocation({ name: "app", path: repo });
  await box.client.createWorktree("app", { name: "w" });
  return { box, repo };
}

/** `dockd pair --host 127.0.0.1`: the link it prints. */
async function pairLink(box: TestBox): Promise<string> {
  const out = await box.cli(["pair", "--host", "127.0.0.1"]);
  assertEquals(out.code, 0, out.stderr);
  const link = /dock:\/\/[^\s']+/.exec(out.stdout)?.[0];
  assert(link, `no link in: ${out.stdout}`);
  return link;
}

Deno.test("fuzzed requests to every laptop route, and to box routes through the relay, never get a 5xx", async () => {
  const dirs = await makeDirs();
  await writePlugin(dirs.dockHome);
  const local = await fuzzBox({ dirs });
  await using _local = local.box;
  const remote = await fuzzBox({ listen: true });
  await using _remote = remote.box;
  // The firewall is never touched: port 80's set-up finds no iptables (a root CI machine may have one).
  await using agent = await startAgent(dirs, { env: { DOCK_IPTABLES: "/nonexistent/iptables" } });
  const client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  try {
    assertEquals((await client.addLocal("local")).online, true);
    assertEquals((await client.pairBox(await pairLink(remote.box), "remote")).online, true);
    // A queue item for the routes that take one (its session is nobody's: it fails, and stays).
    await client.enqueue({ id: "q-fuzz", box: "local", session: "nobody", text: "hi", wait: false });
    assertEquals((await client.enablePlugin("fz", { scopes: ["events:emit"] })).enabled, true);

    const next = random(20261123);
    const failures: string[] = [];
    let requests = 0;
    const send = async (
      method: string,
      path: string,
      init: { body?: string; headers?: Record<string, string>; stream?: boolean } = {},
    ) => {
      const label = `${method} ${path.slice(0, 200)} ${init.body?.slice(0, 200) ?? ""}`;
      requests++;
      let response: Response;
      try {
        response = await fetch(`${agent.url}${path}`, {
          method,
          body: method === "GET" || method === "HEAD" ? undefined : init.body,
          headers: {
            authorization: `Bearer ${agent.token}`,
            "content-type": "application/json",
            ...init.headers,
          },
          signal: AbortSignal.timeout(20_000),
        });
      } catch (error) {
        failures.push(`${label} → no answer: ${(error as Error).message}`);
        return;
      }
      // A stream (also where another method made the request one: GET of the events route) is not read.
      const streaming = /^(text\/event-stream|application\/x-ndjson)/.test(
        response.headers.get("content-type") ?? "",
      );
      if (init.stream || streaming || method === "HEAD") {
        if (response.status >= 500) failures.push(`${label} → ${response.status}`);
        await response.body?.cancel();
        return;
      }
      let text: string;
      try {
        text = await response.text();
      } catch (error) {
        failures.push(`${label} → ${response.status}, its body unread: ${(error as Error).message}`);
        return;
      }
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch { /* not JSON: kept as text for the report */ }
      if (response.status >= 500) failures.push(`${label} → ${response.status} ${text.slice(0, 300)}`);
      else if (response.status >= 400 && !isErrorBody(parsed)) {
        failures.push(`${label} → ${response.status} without an error body: ${text.slice(0, 300)}`);
      }
    };
    const alive = async (after: string) => {
      const status = await fetch(`${agent.url}/v1/status`, {
        headers: { authorization: `Bearer ${agent.token}` },
      });
      await status.body?.cancel();
      assertEquals(status.status, 200, `the agent stopped answering after ${after}`);
      assertEquals((await local.box.client.info()).os, Deno.build.os, `the local box, after ${after}`);
      assertEquals((await remote.box.client.info()).os, Deno.build.os, `the remote box, after ${after}`);
    };

    // The agent's own routes: the valid request first, then each part of it mutated in turn.
    const ROUNDS = 20;
    const ownRoutes = laptopRoutes({ link: await pairLink(remote.box), forwardPort: freePort() });
    for (const route of ownRoutes) {
      const valid = (name: string) => route.params?.[name] ?? route.query?.[name] ?? "";
      for (let round = 0; round < ROUNDS; round++) {
        const keep = () => round === 0 || next() < 0.5;
        let path = route.path;
        for (const name of Object.keys(route.params ?? {})) {
          path = path.replace(`:${name}`, keep() ? valid(name) : fuzzSegment(next));
        }
        if (route.rest !== undefined) {
          const rest = keep()
            ? route.rest
            : Array.from({ length: 1 + Math.floor(next() * 3) }, () => fuzzSegment(next)).join("/");
          path = path.replace("*", rest);
        }
        const query = Object.keys(route.query ?? {}).map((name) =>
          `${name}=${keep() ? valid(name) : fuzzSegment(next)}`
        );
        if (round > 0 && next() < 0.2) query.push(`${fuzzSegment(next)}=${fuzzSegment(next)}`);
        if (query.length) path += `?${query.join("&")}`;
        const headers: Record<string, string> = { ...route.headers };
        for (const name of Object.keys(headers)) if (!keep()) headers[name] = fuzzSegment(next);
        if (round > 0) Object.assign(headers, fuzzHeaders(next));
        // A route that reads no body gets one now and then: it must not care.
        let body = round === 0
          ? route.body && JSON.stringify(route.body)
          : route.body
          ? fuzzBody(next, route.body, { noStrings: route.noStrings, round })
          : next() < 0.3
          ? JSON.stringify(fuzzValue(next))
          : undefined;
        if (route.safe && body !== undefined) body = safeBody(body, route.safe);
        // Now and then another method than the route's: the path is known, the method is not.
        const method = round > 0 && next() < 0.1
          ? METHODS[Math.floor(next() * METHODS.length)]
          : route.method;
        await send(method, path, { body, headers, stream: route.stream });
      }
      await alive(`${route.method} ${route.path}`);
    }

    // The box's body routes through the relay, to the box on its socket and to the one over TLS.
    let relayed = 0;
    for (const [name, { box, repo }] of [["local", local], ["remote", remote]] as const) {
      const routes = boxBodyRoutes({ repo, safePath: join(box.dirs.home, "fuzz") });
      relayed += routes.length;
      for (const route of routes) {
        for (let round = 0; round < ROUNDS; round++) {
          const body = round === 0
            ? JSON.stringify(route.valid)
            : fuzzBody(next, route.valid, { noStrings: route.noStrings, round });
          const path = `/v1/boxes/${name}/api/${route.path.slice("/v1/".length)}`;
          await send(route.method, path, { body, headers: round === 0 ? {} : fuzzHeaders(next) });
        }
        await alive(`${route.method} ${route.path} through the relay to ${name}`);
      }
    }

    // And hostile relay paths: the box's name and the path below api/ mutated, every method.
    for (let round = 0; round < 100; round++) {
      const method = ["GET", "POST", "PUT", "PATCH", "DELETE"][Math.floor(next() * 5)];
      const box = next() < 0.5 ? ["local", "remote"][Math.floor(next() * 2)] : fuzzSegment(next);
      const path = Array.from({ length: 1 + Math.floor(next() * 3) }, () => fuzzSegment(next)).join("/");
      const query = next() < 0.3 ? `?${fuzzSegment(next)}=${fuzzSegment(next)}` : "";
      await send(method, `/v1/boxes/${box}/api/${path}${query}`, {
        body: next() < 0.5 ? JSON.stringify(fuzzValue(next)) : undefined,
      });
    }
    await alive("the hostile relay paths");

    await reportFuzz(
      "laptop routes and the relay",
      requests,
      failures.filter((f) => / → 5\d\d/.test(f)).length,
    );
    assertEquals(failures, [], `${failures.length} of ${requests} fuzzed requests failed`);
    assertEquals(requests, (ownRoutes.length + relayed) * ROUNDS + 100);
  } finally {
    client.close();
  }
});
