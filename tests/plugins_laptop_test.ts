/**
 * Whole-system tests of plugins on the laptop: the example plugin (`plugins/examples/notify`) driven by
 * a real `dock agent` and the `dock plugin` commands, its theme, its files and its function, the same
 * plugin on a paired box through the relay, and `dock plugin new`.
 */
import { join } from "node:path";
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { AgentClient } from "../client/agent.ts";
import { freePort, laptopEnv, makeDirs, runCli, startAgent, startBox } from "./harness.ts";
import { until, untilEvent } from "./wait.ts";

const EXAMPLE = new URL("../plugins/examples/notify/", import.meta.url).pathname;

/** Copies the example into `home/plugins/notify`, granting `net` to the test's webhook instead of ntfy.sh. */
async function installExample(dockHome: string, webhookHost: string): Promise<void> {
  const dir = join(dockHome, "plugins", "notify");
  await Deno.mkdir(join(dir, "themes"), { recursive: true });
  await Deno.mkdir(join(dir, "ui"), { recursive: true });
  for (const file of ["main.ts", "themes/dusk.json", "ui/panel.html", "ui/panel.js"]) {
    await Deno.copyFile(join(EXAMPLE, file), join(dir, file));
  }
  const manifest = JSON.parse(await Deno.readTextFile(join(EXAMPLE, "dock-plugin.json")));
  delete manifest.$schema;
  manifest.permissions.net = [webhookHost];
  await Deno.writeTextFile(join(dir, "dock-plugin.json"), JSON.stringify(manifest, null, 2));
}

Deno.test("laptop plugins: the example notifies through its granted webhook, with its theme, files and function", async () => {
  const received: string[] = [];
  const webhookPort = freePort();
  const webhook = Deno.serve(
    { port: webhookPort, hostname: "127.0.0.1", onListen: () => {} },
    async (request) => {
      received.push(await request.text());
      return new Response("ok");
    },
  );
  const dirs = await makeDirs();
  const env = {
    DOCK_PLUGIN_SCAN_MS: "100",
    NOTIFY_WEBHOOK_URL: `http://127.0.0.1:${webhookPort}/topic`,
  };
  await using box = await startBox({ dirs, env });
  await using agent = await startAgent(dirs, { env });
  const client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  try {
    await client.addLocal();
    await installExample(dirs.dockHome, `127.0.0.1:${webhookPort}`);
    const cli = (...args: string[]) =>
      runCli("dock", args, { env: laptopEnv(dirs, agent, env), cwd: dirs.home });

    // Listed on the laptop and on the box (one ~/.dock here), off on both.
    const listed = await until(async () => {
      const list = await client.plugins();
      return list.filter((p) => p.id === "notify").length === 2 ? list : undefined;
    }, { on: client });
    assertEquals(listed.filter((p) => p.id === "notify").map((p) => [p.where, p.state]).sort(), [
      ["laptop", "off"],
      ["local", "off"],
    ]);
    const list = await cli("plugin", "list");
    assertEquals(list.code, 0, list.stderr);
    assertStringIncludes(list.stdout, "notify");

    // Enabling says what it grants, and wants --yes without a terminal.
    const unconfirmed = await cli("plugin", "enable", "notify");
    assertEquals(unconfirmed.code, 2, unconfirmed.stdout);
    assertStringIncludes(unconfirmed.stdout, `network 127.0.0.1:${webhookPort}`);
    assertStringIncludes(unconfirmed.stderr, "pass --yes");
    const enabled = await cli("plugin", "enable", "notify", "--yes");
    assertEquals(enabled.code, 0, enabled.stderr);
    assertStringIncludes(enabled.stdout, "enabled notify (laptop)");

    const since = (await client.emit({ type: "agent.waiting", data: { session: "s1", agent: "claude" } }))
      .id!;
    const sent = await untilEvent(client, (e) => e.type === "notify.sent", {
      after: since,
      timeoutMs: 15_000,
    });
    assertEquals(sent.origin, "plugin:notify");
    assertEquals(received, ["claude in s1 needs you"]);

    // Its function answers with the token only; the caller's token never reaches it.
    const status = await fetch(`${agent.url}/v1/plugins/notify/fn/status`, {
      headers: { authorization: `Bearer ${agent.token}` },
    });
    assertEquals(await status.json(), { sent: 1 });
    const anonymous = await fetch(`${agent.url}/v1/plugins/notify/fn/status`);
    await anonymous.body?.cancel();
    assertEquals(anonymous.status, 401);

    // Its theme is listed; its UI files are served with a type; nothing else of its folder is.
    const themes = await client.themes();
    const dusk = themes.find((t) => t.id === "notify/dusk");
    assertEquals(dusk?.name, "Dusk");
    const file = (path: string) =>
      fetch(`${agent.url}/v1/plugins/notify/${path}`, {
        headers: { authorization: `Bearer ${agent.token}` },
      });
    const panel = await file("ui/panel.html");
    assertEquals(panel.status, 200);
    assertStringIncludes(panel.headers.get("content-type") ?? "", "text/html");
    assertStringIncludes(await panel.text(), "Notifications sent");
    for (
      const path of [
        "dock-plugin.json",
        "main.ts",
        "ui/..%2fmain.ts",
        "..%2f..%2fui-token",
        "ui/%2e%2e/main.ts",
      ]
    ) {
      const refused = await file(path);
      await refused.body?.cancel();
      assert(refused.status === 404 || refused.status === 400, `${path}: ${refused.status}`);
    }
    // A raw request with .. in its path (fetch would normalize it away).
    const raw = await rawGet(agent.port, "/v1/plugins/notify/../../client/ui-token", agent.token);
    assert(!raw.includes(agent.token.slice(0, 8)) || raw.startsWith("HTTP/1.1 401"), raw.slice(0, 200));
    assert(/^HTTP\/1\.1 (400|404)/.test(raw), raw.slice(0, 200));

    // The same plugin on the box, enabled through the relay, with its own store.
    const onBox = await cli("plugin", "enable", "notify", "--box", "local", "--yes");
    assertEquals(onBox.code, 0, onBox.stderr);
    const boxStatus = await fetch(`${agent.url}/v1/boxes/local/api/plugins/notify/fn/status`, {
      headers: { authorization: `Bearer ${agent.token}` },
    });
    assertEquals(await boxStatus.json(), { sent: 0 });
    const shown = await cli("plugin", "show", "notify");
    assertEquals(shown.code, 0, shown.stderr);
    assertStringIncludes(shown.stdout, "sent: claude in s1 needs you");
    const disabled = await cli("plugin", "disable", "notify");
    assertEquals(disabled.code, 0, disabled.stderr);
    assertEquals((await client.plugin("notify")).enabled, false);
    assertEquals(
      (await client.themes()).some((t) => t.id === "notify/dusk"),
      false,
      "a disabled plugin's theme is gone",
    );
    assertEquals(box.dirs.root, dirs.root);
  } finally {
    client.close();
    await webhook.shutdown();
  }
});

Deno.test("dock plugin new writes a skeleton whose test passes and which runs once enabled", async () => {
  const dirs = await makeDirs();
  const env = { DOCK_PLUGIN_SCAN_MS: "100" };
  await using agent = await startAgent(dirs, { env });
  const client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  try {
    const made = await runCli("dock", ["plugin", "new", "demo"], {
      env: laptopEnv(dirs, agent, env),
      cwd: dirs.home,
    });
    assertEquals(made.code, 0, made.stderr);
    const folder = join(dirs.dockHome, "plugins", "demo");
    const test = await new Deno.Command(Deno.execPath(), {
      args: ["test", "--no-lock", "--allow-read", join(folder, "main_test.ts")],
      cwd: folder,
      stdout: "piped",
      stderr: "piped",
    }).output();
    assertEquals(test.code, 0, new TextDecoder().decode(test.stdout) + new TextDecoder().decode(test.stderr));
    // Bounds for a loaded machine (two suites at once): the first event and the first call each start
    // a sandboxed worker in its own process, which took over 10 s there.
    const info = await until(
      async () => (await client.plugins()).find((p) => p.id === "demo" && p.version),
      { on: client, timeoutMs: 30_000 },
    );
    await client.enablePlugin("demo", info.permissions ?? {});
    await client.emit({ type: "agent.finished", data: {} });
    await until(async () => {
      const answer = await fetch(`${agent.url}/v1/plugins/demo/fn/`, {
        headers: { authorization: `Bearer ${agent.token}` },
      });
      return (await answer.json()).seen === 1;
    }, { timeoutMs: 30_000 });
  } finally {
    client.close();
  }
});

/** A GET sent byte for byte, so a `..` in the path reaches the server as written. */
async function rawGet(port: number, path: string, token: string): Promise<string> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await conn.write(new TextEncoder().encode(
      `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${token}\r\nConnection: close\r\n\r\n`,
    ));
    const chunks: string[] = [];
    const buffer = new Uint8Array(65536);
    while (true) {
      const n = await conn.read(buffer);
      if (n === null) break;
      chunks.push(new TextDecoder().decode(buffer.subarray(0, n)));
    }
    return chunks.join("");
  } finally {
    try {
      conn.close();
    } catch { /* closed by the server */ }
  }
}

Deno.test("laptop plugins: a symlink planted in the data folder never leads to the ui-token; system event types and a store over its bytes are refused", async () => {
  const dirs = await makeDirs();
  // Scans far apart: the check before each call is what stops it.
  const env = { DOCK_PLUGIN_SCAN_MS: "600000" };
  await using agent = await startAgent(dirs, { env });
  const client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  try {
    const token = join(dirs.state, "client", "ui-token");
    assert((await Deno.stat(token)).isFile, "the agent's ui-token is where the plugin would reach");
    const dir = join(dirs.dockHome, "plugins", "peek");
    await Deno.mkdir(dir, { recursive: true });
    const permissions = { scopes: ["events:emit"], read: ["."] };
    await Deno.writeTextFile(
      join(dir, "dock-plugin.json"),
      JSON.stringify({
        id: "peek",
        name: "peek",
        version: "1.0.0",
        hooks: [{ on: "test.peek", module: "main.ts" }],
        permissions,
      }),
    );
    await Deno.writeTextFile(
      join(dir, "main.ts"),
      `export default {
        async event(ev, ctx) {
          const tried = {};
          const attempt = async (name, f) => { try { await f(); tried[name] = "allowed"; } catch (e) { tried[name] = String(e).slice(0, 120); } };
          await attempt("read", () => Deno.readTextFile(ev.data.path));
          await attempt("agentFinished", () => ctx.emit("agent.finished", { path: "/" }));
          await attempt("laptopRevoked", () => ctx.emit("laptop.revoked", {}));
          await attempt("boxAdded", () => ctx.emit("box.added", { name: "evil" }));
          await attempt("kvMultibyte", () => ctx.kv.set("wide", "é".repeat(600_000)));
          await ctx.emit("peek.done", { tried, of: ev.id });
        },
      };`,
    );
    await client.enablePlugin("peek", permissions);
    const data = join(dirs.state, "client", "plugins", "peek");
    await Deno.symlink(token, join(data, "token"));
    await client.emit({ type: "test.peek", data: { path: join(data, "token") } });
    const refused = await until(async () => {
      const info = (await client.plugins()).find((p) => p.id === "peek");
      return info?.error?.includes("symlink") ? info : undefined;
    }, { on: client });
    assertStringIncludes(refused.error!, "token is a symlink out of its folder");
    assertEquals(refused.counters.calls, 0, "the call with the link there never ran");
    await Deno.remove(join(data, "token"));
    await Deno.writeTextFile(join(data, "own.txt"), "OWN");
    const since = (await client.emit({ type: "test.peek", data: { path: join(data, "own.txt") } })).id!;
    const done = await untilEvent(client, (e) => e.type === "peek.done" && e.data?.of === since, {
      after: since,
      timeoutMs: 30_000,
    });
    const tried = done.data?.tried as Record<string, string>;
    assertEquals(tried.read, "allowed", "its own data folder is readable");
    for (const name of ["agentFinished", "laptopRevoked", "boxAdded"]) {
      assertStringIncludes(tried[name], "events are dock's own", name);
    }
    assertStringIncludes(tried.kvMultibyte, "would hold 1200");
  } finally {
    client.close();
  }
});
