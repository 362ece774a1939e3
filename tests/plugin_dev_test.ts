/**
 * Whole-system tests of a plugin author's loop (issue 34, items 2–4): a real dockd (and a real laptop
 * agent where the laptop matters) loading plugins from `~/.dock/plugins`, driven over its API and by the
 * `dockd plugin` / `dock plugin` commands: a fixed syntax error tried again by itself, stale errors
 * cleared, a hostile caller unable to switch a plugin off, `call` / `emit` / `logs -f`, settings and
 * secrets reaching `ctx`, `engines.dock` refused, and a gate refused on the laptop.
 */
import { join } from "node:path";
import { assert, assertEquals, assertRejects, assertStringIncludes } from "./assert.ts";
import { AgentClient } from "../client/agent.ts";
import { DockError } from "../client/errors.ts";
import type { PluginInfo } from "../client/wire.ts";
import { git, laptopEnv, makeDirs, runCli, startAgent, startBox, type TestBox } from "./harness.ts";
import { until, untilEvent } from "./wait.ts";

const FAST = { DOCK_PLUGIN_SCAN_MS: "100" };

/** Writes plugin `id` into `dockHome`'s plugins folder, whole at once (made aside and moved in). */
async function writePlugin(
  dockHome: string,
  id: string,
  manifest: Record<string, unknown>,
  files: Record<string, string> = {},
): Promise<string> {
  const dir = join(dockHome, "plugins", id);
  const aside = join(dockHome, "..", `plugin-${id}-${crypto.randomUUID()}`);
  await Deno.mkdir(aside, { recursive: true });
  for (const [name, text] of Object.entries(files)) await Deno.writeTextFile(join(aside, name), text);
  await Deno.writeTextFile(
    join(aside, "dock-plugin.json"),
    JSON.stringify({ id, name: id, version: "1.0.0", ...manifest }),
  );
  await Deno.mkdir(join(dir, ".."), { recursive: true });
  await Deno.rename(aside, dir);
  return dir;
}

async function plugin(box: TestBox, id: string, check: (p: PluginInfo) => boolean = () => true) {
  return await until(async () => {
    const found = (await box.client.plugins()).find((p) => p.id === id);
    return found && check(found) ? found : undefined;
  }, { on: box });
}

async function enable(box: TestBox, id: string): Promise<PluginInfo> {
  const info = await plugin(box, id, (p) => p.permissions !== undefined);
  return await box.client.enablePlugin(id, info.permissions ?? {});
}

/** A request to a plugin's `fn` over the box's socket. */
async function fn(box: TestBox, id: string, path = "", init: RequestInit = {}): Promise<Response> {
  return await fetch(`http://localhost/v1/plugins/${id}/fn${path}`, {
    ...init,
    client: Deno.createHttpClient({ proxy: { transport: "unix", path: box.dirs.socket } }),
  } as RequestInit);
}

/** Runs `dockd ARGS` that keeps running (`logs -f`, `dev`): its output so far, and a stop. */
function follow(box: TestBox, args: string[]) {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", "--cached-only", join(import.meta.dirname!, "../cli/dockd.ts"), ...args],
    env: box.env,
    clearEnv: true,
    cwd: box.dirs.home,
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const chunks: string[] = [];
  const reading = (async () => {
    for await (const chunk of child.stdout.pipeThrough(new TextDecoderStream())) chunks.push(chunk);
  })();
  return {
    output: () => chunks.join(""),
    async stop() {
      child.kill("SIGTERM");
      await child.status;
      await reading;
    },
  };
}

Deno.test("plugin dev: a fixed syntax error is tried again by itself, and the stale error clears", async () => {
  await using box = await startBox({ env: FAST });
  const dir = await writePlugin(box.dirs.dockHome, "dev", { main: "main.ts" }, {
    "main.ts": "export default { fetch( };",
  });
  await enable(box, "dev");
  const broken = await fn(box, "dev", "/");
  await broken.body?.cancel();
  assert(broken.status >= 500, `a module that does not load answers 5xx, got ${broken.status}`);
  const failed = await plugin(box, "dev", (p) => p.state === "failed");
  assertStringIncludes(failed.error ?? "", "did not load");
  // `plugin dev` follows it: the failure now, the reload once the file is fixed.
  const dev = follow(box, ["plugin", "dev", "dev"]);
  await until(() => /dev \([^)]+\): failed/.test(dev.output()), { timeoutMs: 20_000 });

  // Fixed in place, as an editor saves it: no enable, the host tries it again once it sees the change.
  await Deno.writeTextFile(join(dir, "main.ts"), "export default { fetch: () => new Response('fixed') };");
  await plugin(box, "dev", (p) => p.state !== "failed");
  const answer = await until(async () => {
    const response = await fn(box, "dev", "/");
    const text = await response.text();
    return response.ok ? text : undefined;
  });
  assertEquals(answer, "fixed");
  const listed = await plugin(box, "dev");
  assertEquals(listed.error, undefined, "the old error is gone once calls succeed");
  assertEquals(listed.enabled, true);
  await until(
    () => /dev \([^)]+\): (idle|running|starting)/.test(dev.output()),
    { timeoutMs: 20_000 },
  );
  await dev.stop();
});

Deno.test("plugin dev: a caller's bad requests never switch a plugin off; its own failures still do", async () => {
  await using box = await startBox({ env: FAST });
  await writePlugin(box.dirs.dockHome, "strict", {
    main: "main.ts",
    hooks: [{ on: "test.bad", module: "main.ts" }],
  }, {
    "main.ts": `export default {
      event() { throw new Error("bad event"); },
      async fetch(req) {
        const body = await req.json(); // throws on a body that is not JSON: the caller's doing
        if (body.hang) await new Promise(() => {});
        return Response.json({ got: body.n });
      },
    };`,
  });
  await enable(box, "strict");
  // Twice as many throws as once switched a plugin off.
  for (let i = 0; i < 10; i++) {
    const response = await fn(box, "strict", "/", { method: "POST", body: "not json" });
    await response.body?.cancel();
    assertEquals(response.status, 502, "a handler's throw answers its caller 502 (the plugin failed)");
  }
  const after = await plugin(box, "strict");
  assert(after.state !== "failed", `still on after 10 bad requests: ${JSON.stringify(after)}`);
  assertEquals(after.counters.failures, 10, "each throw is counted and logged");
  const good = await fn(box, "strict", "/", { method: "POST", body: JSON.stringify({ n: 7 }) });
  assertEquals(await good.json(), { got: 7 });
  const shown = await box.client.plugin("strict", 50);
  assert(shown.log?.some((line) => line.includes("fetch failed")), "the throw is in its log");
  // Its own failing still counts: an event handler (whose input is dock's) that throws 5 times in a row.
  for (let i = 0; i < 5; i++) {
    const result = await box.client.pluginTestEvent("strict", { type: "test.bad", data: {} });
    assertStringIncludes(result.delivered[0].error ?? "", "bad event");
  }
  const off = await plugin(box, "strict", (p) => p.state === "failed");
  assertStringIncludes(off.error ?? "", "failed 5 times in a row");
});

Deno.test("plugin dev: call, emit to one plugin only, and logs -f from the CLI", async () => {
  await using box = await startBox({ env: FAST });
  const hook = (id: string) =>
    writePlugin(box.dirs.dockHome, id, {
      main: "main.ts",
      hooks: [{ on: "test.ping", module: "main.ts" }],
      permissions: { write: ["."] },
    }, {
      "main.ts": `export default {
        async event(ev, ctx) {
          if (ev.data.boom) throw new Error("boom " + ev.data.boom);
          console.log("got " + ev.type + " n=" + ev.data.n + " origin=" + ev.origin);
          await ctx.kv.set("last", ev.data);
        },
        async fetch(req, ctx) {
          return Response.json({ method: req.method, path: new URL(req.url).pathname, last: await ctx.kv.get("last"),
            body: req.method === "GET" ? null : await req.json() });
        },
      };`,
    });
  await hook("one");
  await hook("other");
  await enable(box, "one");
  await enable(box, "other");
  const since = (await box.client.emit({ type: "test.marker" })).id!;

  const follower = follow(box, ["plugin", "logs", "-f", "one"]);
  try {
    const emitted = await box.cli(["plugin", "emit", "one", "test.ping", "n=3", "who=me"]);
    assertEquals(emitted.code, 0, emitted.stderr);
    assertStringIncludes(emitted.stdout, "main.ts: ok");
    // The handler's own log line reaches `logs -f` (printed after it started).
    await until(
      () => follower.output().includes("got test.ping n=3 origin=test:"),
      { timeoutMs: 20_000 },
    );

    const called = await box.cli(["plugin", "call", "one", "/x/y"]);
    assertEquals(called.code, 0, called.stderr);
    assertEquals(JSON.parse(called.stdout), {
      method: "GET",
      path: "/x/y",
      last: { n: 3, who: "me" },
      body: null,
    });
    const posted = await box.cli(["plugin", "call", "one", "/p", "--data", '{"a":1}', "--method", "PUT"]);
    assertEquals(JSON.parse(posted.stdout).body, { a: 1 });
    assertEquals(JSON.parse(posted.stdout).method, "PUT");

    // Only "one" got it: "other" hooks the same type and saw nothing, and the bus never carried it.
    assertEquals(
      (await box.cli(["plugin", "call", "other"])).stdout.trim(),
      JSON.stringify({
        method: "GET",
        path: "/",
        last: null,
        body: null,
      }),
    );
    const later = (await box.client.emit({ type: "test.marker2" })).id!;
    const seen: string[] = [];
    await untilEvent(box.client, (e) => {
      seen.push(e.type);
      return e.id === later;
    }, { after: since });
    assert(!seen.includes("test.ping"), `the test event stayed off the bus: ${seen.join(", ")}`);

    // A handler that throws is reported, with a failing exit; a type it has no hook on is refused.
    const failing = await box.cli(["plugin", "emit", "one", "test.ping", "boom=1"]);
    assertEquals(failing.code === 0, false);
    assertStringIncludes(failing.stdout, "boom 1");
    const unhooked = await box.cli(["plugin", "emit", "one", "agent.finished", "session=s"]);
    assertEquals(unhooked.code === 0, false);
    assertStringIncludes(unhooked.stderr, "no module hook on agent.finished");
    await assertRejects(
      () => box.client.pluginTestEvent("one", { type: "test.ping", data: {}, extra: 1 } as never),
      DockError,
      "extra",
    );
  } finally {
    await follower.stop();
  }
});

Deno.test("plugin config: the schema checks settings; ctx.config, ctx.secrets and ctx.dataDir reach the plugin; the secret never leaves", async () => {
  const secret = `s3cret-${crypto.randomUUID()}`;
  await using box = await startBox({ env: { ...FAST, DEV_TEST_TOKEN: secret } });
  const since = (await box.client.emit({ type: "test.marker" })).id!;
  await writePlugin(box.dirs.dockHome, "conf", {
    main: "main.ts",
    config: {
      type: "object",
      properties: {
        url: { type: "string", description: "Where to send" },
        retries: { type: "integer", default: 3 },
        loud: { type: "boolean" },
        token: { type: "string", secret: true, description: "The webhook's token" },
      },
      required: ["url"],
    },
  }, {
    "main.ts": `export default {
      fetch: (req, ctx) => {
        console.log("config " + JSON.stringify(ctx.config));
        return Response.json({
          config: ctx.config,
          secretKeys: Object.keys(ctx.secrets),
          tokenLength: ctx.secrets.token?.length ?? 0,
          tokenMatches: ctx.secrets.token === new URL(req.url).searchParams.get("expect"),
          dataDir: ctx.dataDir,
        });
      },
    };`,
  });
  await enable(box, "conf");
  // Refused: a missing required setting, a misspelt key, a wrong type, a secret's value instead of a reference.
  const refused = async (args: string[], text: string) => {
    const result = await box.cli(["plugin", "config", "conf", "set", ...args]);
    assertEquals(result.code === 0, false, result.stdout);
    assertStringIncludes(result.stderr, text);
  };
  await refused(["loud=true"], "missing required setting: url");
  await refused(["url=http://x", "retires=2"], "did you mean 'retries'");
  await refused(["url=http://x", "retries=2.5"], "must be an integer");
  await refused(["url=http://x", `token=${secret}`], "reference");
  const set = await box.cli([
    "plugin",
    "config",
    "conf",
    "set",
    "url=http://hook",
    "loud=true",
    "token=env://DEV_TEST_TOKEN",
  ]);
  assertEquals(set.code, 0, set.stderr);
  assertStringIncludes(set.stdout, "3 (default)");

  const answer = await (await fn(box, "conf", `/?expect=${secret}`)).json();
  assertEquals(answer.config, { url: "http://hook", retries: 3, loud: true });
  assertEquals(answer.secretKeys, ["token"]);
  assertEquals(answer.tokenMatches, true);
  assertEquals(answer.dataDir, join(box.dirs.state, "box", "plugins", "conf"));

  // A change restarts its workers with the new settings.
  assertEquals((await box.cli(["plugin", "config", "conf", "set", "retries=5"])).code, 0);
  assertEquals((await (await fn(box, "conf", "/")).json()).config.retries, 5);

  // The secret's value is in no answer, log line or event; the reference is what is shown.
  const shown = await box.client.pluginConfig("conf");
  assertEquals(shown.values.token, "env://DEV_TEST_TOKEN");
  const listing = JSON.stringify([shown, await box.client.plugins(), await box.client.plugin("conf", 500)]);
  assert(!listing.includes(secret), "no route returns the secret");
  const cliShown = await box.cli(["plugin", "config", "conf", "--json"]);
  assert(!cliShown.stdout.includes(secret));
  const logs = await Array.fromAsync(Deno.readDir(join(box.dirs.state, "box", "plugin-logs")));
  for (const file of logs) {
    assert(
      !(await Deno.readTextFile(join(box.dirs.state, "box", "plugin-logs", file.name))).includes(secret),
    );
  }
  const marker = (await box.client.emit({ type: "test.end" })).id!;
  const events: string[] = [];
  await untilEvent(box.client, (e) => {
    events.push(JSON.stringify(e));
    return e.id === marker;
  }, { after: since });
  assert(events.some((e) => e.includes("plugin.configured")), "a change is announced");
  assert(!events.some((e) => e.includes(secret)), "no event carries the secret");
});

Deno.test("plugin engines: a plugin made for another dock is refused at load, saying why", async () => {
  await using box = await startBox({ env: FAST });
  await writePlugin(box.dirs.dockHome, "future", { main: "main.ts", engines: { dock: ">=99.0.0" } }, {
    "main.ts": "export default { fetch: () => new Response('x') };",
  });
  await writePlugin(box.dirs.dockHome, "fits", { main: "main.ts", engines: { dock: "^0.1 || >=1" } }, {
    "main.ts": "export default { fetch: () => new Response('fits') };",
  });
  const future = await plugin(box, "future");
  assertStringIncludes(future.error ?? "", "engines.dock is '>=99.0.0', and this is dock ");
  await assertRejects(() => box.client.enablePlugin("future", {}), DockError, "engines.dock");
  await enable(box, "fits");
  assertEquals(await (await fn(box, "fits", "/")).text(), "fits");
});

Deno.test("plugin gates: enabling a plugin with a gate on the laptop is refused with why", async () => {
  const dirs = await makeDirs();
  // A laptop alone: its plugins folder is its own (no box shares the home here).
  await using agent = await startAgent(dirs, { env: FAST });
  const client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  await writePlugin(dirs.dockHome, "guard", {
    main: "main.ts",
    hooks: [{ on: "before:exec", module: "main.ts" }],
  }, { "main.ts": "export default { gate: () => ({ allow: false }) };" });
  await until(async () => (await client.plugins()).find((p) => p.id === "guard" && p.where === "laptop"), {
    on: client,
  });
  await assertRejects(() => client.enablePlugin("guard", {}), DockError, "gates never run on the laptop");
  const after = (await client.plugins()).find((p) => p.id === "guard" && p.where === "laptop");
  assertEquals(after?.enabled, false);
});

Deno.test("plugin install: from a folder to a box through the laptop, with consent; update; remove; hostile files refused", async () => {
  const dirs = await makeDirs();
  await using box = await startBox({ dirs, env: FAST });
  await using agent = await startAgent(dirs, { env: FAST });
  const client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  const local = await client.addLocal("devbox");
  const name = local.name;
  const cli = (...args: string[]) =>
    runCli("dock", args, { env: laptopEnv(dirs, agent, FAST), cwd: dirs.home });

  // The author's folder, outside any plugins folder.
  const source = join(dirs.root, "work-hello");
  await Deno.mkdir(join(source, "lib"), { recursive: true });
  const manifest = (version: string) =>
    JSON.stringify({
      id: "hello",
      name: "Hello",
      version,
      main: "main.ts",
      permissions: { write: ["."], scopes: ["events:emit"] },
    });
  await Deno.writeTextFile(join(source, "dock-plugin.json"), manifest("1.0.0"));
  await Deno.writeTextFile(join(source, "lib", "word.ts"), "export const word = 'one';");
  await Deno.writeTextFile(
    join(source, "main.ts"),
    "import { word } from './lib/word.ts'; export default { fetch: () => new Response(word) };",
  );

  // Without --yes and no terminal: the grants are shown, nothing is installed.
  const unconfirmed = await cli("plugin", "install", source, "--box", name);
  assertEquals(unconfirmed.code === 0, false);
  assertStringIncludes(unconfirmed.stdout, "hello 1.0.0 for devbox asks for:");
  assertStringIncludes(unconfirmed.stdout, "events:emit");
  assertStringIncludes(unconfirmed.stderr, "--yes");
  await assertRejects(() => box.client.plugin("hello"), DockError, "no plugin 'hello'");

  const installed = await cli("plugin", "install", source, "--box", name, "--yes");
  assertEquals(installed.code, 0, installed.stderr);
  assertStringIncludes(installed.stdout, `installed hello 1.0.0 on ${name}`);
  const onBox = await box.client.plugin("hello");
  assertEquals(onBox.enabled, true);
  assertEquals(onBox.granted?.scopes, ["events:emit"]);
  assertEquals((await cli("plugin", "call", "hello", "--box", name)).stdout.trim(), "one");

  // Update: new files replace the old in one step; the new code answers.
  await Deno.writeTextFile(join(source, "dock-plugin.json"), manifest("1.1.0"));
  await Deno.writeTextFile(join(source, "lib", "word.ts"), "export const word = 'two';");
  const updated = await cli("plugin", "update", "hello", source, "--box", name, "--yes");
  assertEquals(updated.code, 0, updated.stderr);
  assertEquals((await box.client.plugin("hello")).version, "1.1.0");
  await until(async () => (await cli("plugin", "call", "hello", "--box", name)).stdout.trim() === "two");

  // A folder holding a symlink is refused before anything is sent.
  await Deno.symlink("/etc/passwd", join(source, "lib", "leak"));
  const linked = await cli("plugin", "update", "hello", source, "--box", name, "--yes");
  assertEquals(linked.code === 0, false);
  assertStringIncludes(linked.stderr, "is a symlink");
  await Deno.remove(join(source, "lib", "leak"));

  // The box's route itself: no path out of the folder, no manifest for another id, bounded.
  const put = (files: { path: string; data: string }[], id = "hello") => box.client.installPlugin(id, files);
  const mf = { path: "dock-plugin.json", data: btoa(manifest("9.0.0")) };
  await assertRejects(() => put([mf, { path: "../escape.ts", data: "" }]), DockError, "not a path inside");
  await assertRejects(() => put([mf, { path: "/etc/x", data: "" }]), DockError, "not a path inside");
  await assertRejects(() => put([mf, { path: ".git/config", data: "" }]), DockError, ".git");
  await assertRejects(() => put([mf], "other"), DockError, "names 'hello', not 'other'");
  await assertRejects(() => put([{ path: "main.ts", data: "" }]), DockError, "no dock-plugin.json");
  await assertRejects(
    () => box.client.installPlugin("hello", [mf, { path: "x", data: "", mode: 7 } as never]),
    DockError,
    "mode",
  );
  assertEquals((await box.client.plugin("hello")).version, "1.1.0", "a refused install changes nothing");
  let escaped = false;
  try {
    await Deno.stat(join(dirs.dockHome, "escape.ts"));
    escaped = true;
  } catch { /* not written */ }
  assertEquals(escaped, false);

  // From a tarball (its files in one top folder, as npm packs `package/`) and from a git URL.
  const packed = join(dirs.root, "pack");
  await Deno.mkdir(join(packed, "package", "lib"), { recursive: true });
  await Deno.writeTextFile(join(packed, "package", "dock-plugin.json"), manifest("2.0.0"));
  await Deno.copyFile(join(source, "main.ts"), join(packed, "package", "main.ts"));
  await Deno.writeTextFile(join(packed, "package", "lib", "word.ts"), "export const word = 'tarball';");
  const tarball = join(dirs.root, "hello-2.0.0.tgz");
  const tar = await new Deno.Command("tar", { args: ["-czf", tarball, "-C", packed, "package"] }).output();
  assert(tar.success);
  const fromTarball = await cli("plugin", "update", "hello", tarball, "--box", name, "--yes");
  assertEquals(fromTarball.code, 0, fromTarball.stderr);
  await until(async () => (await cli("plugin", "call", "hello", "--box", name)).stdout.trim() === "tarball");
  await git(source, "init", "-q", "-b", "main");
  await Deno.writeTextFile(join(source, "lib", "word.ts"), "export const word = 'git';");
  await git(source, "add", "-A");
  await git(source, "commit", "-q", "-m", "plugin");
  const fromGit = await cli("plugin", "update", "hello", `file://${source}`, "--box", name, "--yes");
  assertEquals(fromGit.code, 0, fromGit.stderr);
  await until(async () => (await cli("plugin", "call", "hello", "--box", name)).stdout.trim() === "git");
  const wrong = await cli("plugin", "update", "other", `file://${source}`, "--box", name, "--yes");
  assertStringIncludes(wrong.stderr, "holds plugin 'hello', not 'other'");

  const removed = await cli("plugin", "remove", "hello", "--box", name);
  assertEquals(removed.code, 0, removed.stderr);
  await assertRejects(() => box.client.plugin("hello"), DockError, "no plugin 'hello'");
  const left = (await Array.fromAsync(Deno.readDir(join(dirs.dockHome, "plugins")))).map((e) => e.name);
  assertEquals(left.filter((n) => n.startsWith(".")), [], "nothing left aside");
});

Deno.test("plugin sharing: with a local box, a box's event reaches one copy of a shared plugin, not two", async () => {
  const dirs = await makeDirs();
  await using box = await startBox({ dirs, env: FAST });
  await using agent = await startAgent(dirs, { env: FAST });
  const client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  const { name } = await client.addLocal("devbox");
  // One folder, read by both.
  await writePlugin(dirs.dockHome, "dup", {
    main: "main.ts",
    hooks: [{ on: "test.ping", module: "main.ts" }, { on: "test.marker", module: "main.ts" }],
    permissions: { write: ["."], scopes: ["events:emit"] },
  }, {
    "main.ts": `export default {
      async event(ev, ctx) {
        const pings = (await ctx.kv.get("pings")) ?? 0;
        if (ev.type === "test.ping") {
          await ctx.kv.set("pings", pings + 1);
          await ctx.emit("dup.got", { k: ev.data.k });
        } else await ctx.emit("dup.marker", { k: ev.data.k, pings });
      },
    };`,
  });
  const laptopCopy = () =>
    client.plugins().then((l) => l.find((p) => p.id === "dup" && p.where === "laptop"));
  const laptopInfo = await until(laptopCopy, { on: client });
  await client.enablePlugin("dup", laptopInfo.permissions ?? {});

  /**
   * One round: a ping on the box, then (once the box's event has reached the laptop) a marker on the
   * laptop only. Returns how many events the laptop's copy was called with in the round: 2 when it
   * handled the box's ping too, 1 when it left it to the box's copy. (Calls are counted as they start,
   * in order: once the marker's call has answered, a ping queued before it has been counted.)
   */
  let round = 0;
  const laptopCalls = async () => (await laptopCopy())!.counters.calls;
  const callsInRound = async (): Promise<number> => {
    const k = `r${++round}`;
    const calls = await laptopCalls();
    const since = (await client.emit({ type: "test.start", data: { k } })).id!;
    await box.client.emit({ type: "test.ping", data: { k } });
    await untilEvent(client, (e) => e.type === "test.ping" && e.box === name && e.data?.k === k, {
      after: since,
      timeoutMs: 15_000,
    });
    await client.emit({ type: "test.marker", data: { k } });
    await untilEvent(client, (e) => e.type === "dup.marker" && e.data?.k === k && !e.box, {
      after: since,
      timeoutMs: 15_000,
    });
    return await until(async () => {
      const now = await laptopCalls();
      return now > calls ? now - calls : undefined;
    });
  };
  // Enabled on the laptop alone, it hears the box's events (nothing else would).
  assertEquals(await callsInRound(), 2);

  // Enabled on the box too: the box's copy handles the box's events, the laptop's copy no longer does
  // (once the laptop has heard the box enabled it).
  const boxInfo = await box.client.plugin("dup");
  await box.client.enablePlugin("dup", boxInfo.permissions ?? {});
  await until(async () => await callsInRound() === 1, { on: client, timeoutMs: 30_000 });
  const k = `r${round}`;
  const boxGot = await untilEvent(
    client,
    (e) => e.type === "dup.got" && e.box === name && e.data?.k === k,
    {
      timeoutMs: 15_000,
    },
  );
  assertEquals(boxGot.origin, "plugin:dup", "the box's copy handled it");
  assertEquals(await callsInRound(), 1, "and stays the one that does");
});

Deno.test("plugin fn link: the app's signed link opens a plugin's page once, without the token, sandboxed", async () => {
  const dirs = await makeDirs();
  await using agent = await startAgent(dirs, { env: FAST });
  const client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  await writePlugin(dirs.dockHome, "dash", { main: "main.ts" }, {
    "main.ts": `export default {
      fetch: (req) => new Response("<h1>" + new URL(req.url).pathname + new URL(req.url).search + "</h1>", {
        headers: { "content-type": "text/html", "set-cookie": "x=1" },
      }),
    };`,
  });
  const info = await until(async () => (await client.plugins()).find((p) => p.id === "dash"), { on: client });
  await client.enablePlugin("dash", info.permissions ?? {});

  const link = await client.pluginFnLink("dash", { path: "/report" });
  assert(!link.url.includes(agent.token), "the token is never in the link");
  const page = await fetch(`${agent.url}${link.url}&q=1`);
  assertEquals(page.status, 200);
  assertEquals(await page.text(), "<h1>/report?q=1</h1>", "the plugin sees neither exp nor sig");
  assertStringIncludes(page.headers.get("content-security-policy") ?? "", "sandbox");
  assertEquals(page.headers.get("referrer-policy"), "no-referrer");
  assertEquals(page.headers.get("set-cookie"), null, "the plugin's own headers are left out");

  const again = await fetch(`${agent.url}${link.url}`);
  assertEquals(again.status, 403, "a link works once");
  assertStringIncludes((await again.json()).error.message, "used already");
  const other = await client.pluginFnLink("dash", { path: "/report" });
  const moved = await fetch(`${agent.url}${other.url.replace("/report", "/admin")}`);
  assertEquals(moved.status, 403, "a link is for its path only");
  await moved.body?.cancel();
  const posted = await fetch(`${agent.url}${other.url}`, { method: "POST" });
  await posted.body?.cancel();
  assert(
    posted.status === 401 || posted.status === 404 || posted.status === 405,
    `GET only: ${posted.status}`,
  );
  const unsigned = await fetch(`${agent.url}/app/fn/laptop/dash/report`);
  await unsigned.body?.cancel();
  assertEquals(unsigned.status, 403);
  await assertRejects(() => client.pluginFnLink("nope"), DockError, "no enabled plugin");
});
