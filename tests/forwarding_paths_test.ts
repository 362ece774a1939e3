/**
 * Issue 29, item 1: every route that forwards a path to a box or a plugin (the app's panel files, a
 * plugin's files and `fn` on the laptop and on the box, the relay, the terminal relay) builds its
 * upstream path from checked segments (`core/forward_path.ts`). A real `dock agent` with the box on its
 * socket, one plugin enabled on both; requests are written byte for byte on the socket, so `..`, `\`
 * and every escape reach the server exactly as sent (fetch would resolve some of them first).
 */
import { join } from "node:path";
import { assert, assertEquals } from "./assert.ts";
import { AgentClient } from "../client/agent.ts";
import { fuzzPathTrick, isErrorBody, random, reportFuzz } from "./fuzz.ts";
import { makeDirs, startAgent, startBox } from "./harness.ts";
import { until } from "./wait.ts";

const PANEL_HTML = "<!doctype html><title>probe</title><p>probe panel</p>";

/** A plugin with a `ui` folder and a `fetch` that answers every path with what it saw. */
async function installProbe(dockHome: string): Promise<void> {
  const dir = join(dockHome, "plugins", "probe");
  await Deno.mkdir(join(dir, "ui"), { recursive: true });
  await Deno.writeTextFile(join(dir, "ui", "panel.html"), PANEL_HTML);
  await Deno.writeTextFile(
    join(dir, "main.ts"),
    `export default { fetch(request) { return Response.json({ fn: new URL(request.url).pathname }); } };\n`,
  );
  await Deno.writeTextFile(
    join(dir, "dock-plugin.json"),
    JSON.stringify({
      id: "probe",
      name: "Probe",
      version: "1.0.0",
      main: "main.ts",
      ui: ["ui/"],
      permissions: {},
    }),
  );
}

/** Where a raw request goes: the agent's TCP port or the box's unix socket. */
type Endpoint = { port: number } | { socket: string };

/** An answer read off the wire. */
interface RawAnswer {
  status: number;
  body: string;
}

/** Sends `GET path` exactly as written (no URL parsing on the way) and reads the whole answer. */
async function rawGet(to: Endpoint, path: string, token?: string): Promise<RawAnswer> {
  const conn = "port" in to
    ? await Deno.connect({ hostname: "127.0.0.1", port: to.port })
    : await Deno.connect({ transport: "unix", path: to.socket });
  const host = "port" in to ? `127.0.0.1:${to.port}` : "localhost";
  const auth = token ? `Authorization: Bearer ${token}\r\n` : "";
  await conn.write(
    new TextEncoder().encode(`GET ${path} HTTP/1.1\r\nHost: ${host}\r\n${auth}Connection: close\r\n\r\n`),
  );
  const bytes = new Uint8Array(await new Response(conn.readable).arrayBuffer());
  const text = new TextDecoder().decode(bytes);
  const split = text.indexOf("\r\n\r\n");
  const head = text.slice(0, split);
  let body = text.slice(split + 4);
  if (/^transfer-encoding:\s*chunked/im.test(head)) body = unchunk(body);
  return { status: Number(head.split(" ")[1]), body };
}

/** A chunked body's content (ASCII sizes, text content: enough for JSON and HTML). */
function unchunk(text: string): string {
  let out = "";
  let at = 0;
  while (at < text.length) {
    const line = text.indexOf("\r\n", at);
    const size = parseInt(text.slice(at, line), 16);
    if (!size) break;
    out += text.slice(line + 2, line + 2 + size);
    at = line + 2 + size + 2;
  }
  return out;
}

function errorCode(answer: RawAnswer): string | undefined {
  try {
    const body = JSON.parse(answer.body);
    return isErrorBody(body) ? body.error.code : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Every encoding trick, each aimed at reading the box's `info` (or a file outside the plugin's folder)
 * from wherever it is appended. A route must answer each with 400 `invalid_path` (or 401 without the
 * token, where the gate comes first): none is a path any route forwards.
 */
const TRICKS: Record<string, string> = {
  "encoded slash %2F": "x%2F..%2F..%2F..%2F..%2F..%2F..%2Fv1%2Finfo",
  "encoded slash %2f": "x%2f..%2f..%2f..%2f..%2f..%2f..%2fv1%2finfo",
  "encoded backslash %5C": "x%5C..%5C..%5C..%5C..%5C..%5C..%5Cv1%5Cinfo",
  "encoded dots %2e%2e": "%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/v1/info",
  "mixed case %2E%2e": "%2E%2e/%2E%2e/%2E%2e/%2E%2e/%2E%2e/%2E%2e/v1/info",
  "half encoded .%2e": ".%2e/.%2e/.%2e/.%2e/.%2e/.%2e/v1/info",
  "double encoded %252e%252e": "%252e%252e/%252e%252e/%252e%252e/%252e%252e/%252e%252e/%252e%252e/v1/info",
  "double encoded %252F": "x%252F..%252F..%252F..%252F..%252F..%252Fv1%252Finfo",
  "dots then encoded slash ..%2F": "..%2F..%2F..%2F..%2F..%2F..%2Fv1%2Finfo",
  "plain ..": "x/../../../../../../v1/info",
  "single dot": "./ui/panel.html",
  "raw backslash": "x\\..\\..\\..\\..\\..\\..\\v1\\info",
  "encoded NUL %00": "ui/panel.html%00",
  "encoded newline %0a": "ui%0a/panel.html",
  "empty segment //": "ui//panel.html",
  "overlong UTF-8 dot": "%c0%ae%c0%ae/%c0%ae%c0%ae/%c0%ae%c0%ae/%c0%ae%c0%ae/v1/info",
  "overlong UTF-8 slash": "x%c0%af..%c0%af..%c0%afv1%c0%afinfo",
  "smuggled ? %3F": "ui/panel.html%3F..%2F..%2F..%2Fv1%2Finfo",
  "smuggled # %23": "ui/panel.html%23..%2F..%2F..%2Fv1%2Finfo",
};

/** A forwarding route: `prefix + trick + suffix`; `open` when it answers without the token. */
interface ForwardRoute {
  name: string;
  to: "agent" | "box";
  prefix: string;
  suffix?: string;
  open?: boolean;
}

const ROUTES: ForwardRoute[] = [
  { name: "panel file (laptop)", to: "agent", prefix: "/app/plugins/laptop/probe/", open: true },
  { name: "panel file (box)", to: "agent", prefix: "/app/plugins/local/probe/", open: true },
  {
    name: "panel, the box's name",
    to: "agent",
    prefix: "/app/plugins/",
    suffix: "/probe/ui/panel.html",
    open: true,
  },
  {
    name: "panel, the plugin's id",
    to: "agent",
    prefix: "/app/plugins/local/",
    suffix: "/ui/panel.html",
    open: true,
  },
  { name: "plugin file (laptop)", to: "agent", prefix: "/v1/plugins/probe/" },
  { name: "plugin fn (laptop)", to: "agent", prefix: "/v1/plugins/probe/fn/" },
  { name: "relay", to: "agent", prefix: "/v1/boxes/local/api/" },
  { name: "relay, plugin file", to: "agent", prefix: "/v1/boxes/local/api/plugins/probe/" },
  { name: "relay, plugin fn", to: "agent", prefix: "/v1/boxes/local/api/plugins/probe/fn/" },
  { name: "terminal relay", to: "agent", prefix: "/v1/boxes/local/sessions/", suffix: "/attach" },
  { name: "plugin file (box)", to: "box", prefix: "/v1/plugins/probe/" },
  { name: "plugin fn (box)", to: "box", prefix: "/v1/plugins/probe/fn/" },
];

/** The agent and the box, the probe plugin enabled on both; `run` gets the endpoints. */
async function withProbe(
  run: (ends: { agent: Endpoint; box: Endpoint; token: string }) => Promise<void>,
): Promise<void> {
  const dirs = await makeDirs();
  const env = { DOCK_PLUGIN_SCAN_MS: "100" };
  await using _box = await startBox({ dirs, env });
  await using agent = await startAgent(dirs, { env });
  const client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  try {
    await client.addLocal();
    await installProbe(dirs.dockHome);
    const listed = await until(async () => {
      const probes = (await client.plugins()).filter((p) => p.id === "probe" && p.version);
      return probes.length === 2 ? probes : undefined;
    }, { on: client, timeoutMs: 30_000 });
    await client.enablePlugin("probe", listed[0].permissions ?? {});
    await client.box("local").enablePlugin("probe", listed[0].permissions ?? {});
    await run({ agent: { port: agent.port }, box: { socket: dirs.socket }, token: agent.token });
  } finally {
    client.close();
  }
}

Deno.test("forwarding routes: the panel route reads nothing of the box without a token (the exploit of item 1)", async () => {
  await withProbe(async ({ agent, box }) => {
    // The panel itself, without a token, from the laptop and from the box.
    for (const where of ["laptop", "local"]) {
      const panel = await rawGet(agent, `/app/plugins/${where}/probe/ui/panel.html`);
      assertEquals([panel.status, panel.body], [200, PANEL_HTML], where);
    }
    // What the box answers its own user on the socket: what the exploit read through the laptop.
    const info = await rawGet(box, "/v1/info");
    assertEquals(info.status, 200);
    const climb = "x%2F..%2F..%2F..%2F..%2F..%2F..%2F";
    for (
      const path of [
        `${climb}v1%2Finfo`,
        `${climb}v1%2Fsessions`,
        `${climb}v1%2Fenv`,
        "x%2F..%2F..%2Ffn%2Fsecret",
      ]
    ) {
      const answer = await rawGet(agent, `/app/plugins/local/probe/ui/${path}`);
      assertEquals(answer.status, 400, `${path}: ${answer.status} ${answer.body.slice(0, 200)}`);
      assertEquals(errorCode(answer), "invalid_path", answer.body);
      assert(!answer.body.includes(JSON.parse(info.body).build), answer.body);
    }
  });
});

Deno.test("forwarding routes: every encoding trick on every route, with and without the token, is refused", async () => {
  await withProbe(async ({ agent, box, token }) => {
    // The routes work as meant: what each must still serve.
    assertEquals((await rawGet(agent, "/v1/boxes/local/api/info", token)).status, 200);
    const fn = await rawGet(agent, "/v1/plugins/probe/fn/a%20b/c", token);
    assertEquals(JSON.parse(fn.body), { fn: "/a%20b/c" });
    assertEquals(JSON.parse((await rawGet(agent, "/v1/plugins/probe/fn/", token)).body), { fn: "/" });
    assertEquals(JSON.parse((await rawGet(agent, "/v1/plugins/probe/fn/d/", token)).body), { fn: "/d/" });
    const relayed = await rawGet(agent, "/v1/boxes/local/api/plugins/probe/fn/e", token);
    assertEquals(JSON.parse(relayed.body), { fn: "/e" });
    assertEquals((await rawGet(box, "/v1/plugins/probe/ui/panel.html")).body, PANEL_HTML);

    const failures: string[] = [];
    for (const route of ROUTES) {
      for (const [trick, path] of Object.entries(TRICKS)) {
        const url = route.prefix + path + (route.suffix ?? "");
        const end = route.to === "agent" ? agent : box;
        for (const withToken of route.to === "agent" ? [true, false] : [true]) {
          const answer = await rawGet(end, url, withToken ? token : undefined);
          const code = errorCode(answer);
          const expected = !withToken && !route.open ? [401, "unauthorized"] : [400, "invalid_path"];
          // A trick that makes the path another route's (the terminal relay's `/attach` after a `/`)
          // never reaches a forward: a 404 of the API itself is as good.
          const elsewhere = answer.status === 404 && code === "not_found" && route.suffix !== undefined &&
            path.includes("/");
          if (!elsewhere && (answer.status !== expected[0] || code !== expected[1])) {
            failures.push(
              `${route.name} ${withToken ? "with" : "without"} token, ${trick} (${url}): ${answer.status} ${
                answer.body.slice(0, 120)
              }`,
            );
          }
        }
      }
    }
    assertEquals(failures, []);
  });
});

Deno.test("forwarding routes: a seeded fuzz of path tricks is refused on every route, no 5xx, no data", async () => {
  await withProbe(async ({ agent, box, token }) => {
    const next = random(2929);
    const requests = 400;
    let errors5xx = 0;
    const served: string[] = [];
    for (let i = 0; i < requests; i++) {
      const route = ROUTES[Math.floor(next() * ROUTES.length)];
      const url = route.prefix + fuzzPathTrick(next) + (route.suffix ?? "");
      const withToken = route.to === "box" || next() < 0.5;
      const answer = await rawGet(route.to === "agent" ? agent : box, url, withToken ? token : undefined);
      if (answer.status >= 500) errors5xx++;
      // Every path holds a trick: none is served, with or without the token, and each refusal is JSON.
      if (answer.status < 400 || answer.status >= 500 || errorCode(answer) === undefined) {
        served.push(
          `${url} (${withToken ? "token" : "no token"}): ${answer.status} ${answer.body.slice(0, 120)}`,
        );
      }
    }
    await reportFuzz("forwarding path tricks", requests, errors5xx);
    assertEquals(served, []);
    assertEquals(errors5xx, 0);
  });
});

Deno.test("forwarding routes: a panel of a box's plugin that is not enabled is not served", async () => {
  await withProbe(async ({ agent, token }) => {
    const client = new AgentClient({
      url: `http://127.0.0.1:${(agent as { port: number }).port}`,
      token,
      origin: "test",
    });
    try {
      await client.box("local").disablePlugin("probe");
      const answer = await rawGet(agent, "/app/plugins/local/probe/ui/panel.html");
      assertEquals(answer.status, 404, answer.body);
      assert(!answer.body.includes("probe panel"));
    } finally {
      client.close();
    }
  });
});
