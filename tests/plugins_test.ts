/**
 * Whole-system tests of the plugin host on a box: a real dockd loading plugins from its `~/.dock/plugins`,
 * running their modules in sandboxed workers inside its plugin-host process, with the escapes a hostile
 * plugin would try.
 */
import { join } from "node:path";
import { assert, assertEquals, assertRejects, assertStringIncludes } from "./assert.ts";
import { DockError } from "../client/errors.ts";
import type { DockEvent, PluginInfo } from "../client/wire.ts";
import { makeRepo, startBox, type TestBox } from "./harness.ts";
import { until, untilEvent } from "./wait.ts";
import { untilGone } from "./process_exits.ts";

const FAST = { DOCK_PLUGIN_SCAN_MS: "100" };

/**
 * Writes plugin `id` (its manifest and files) into the box's plugins folder, whole at once (made aside
 * and moved in, as an installer would: a scan never sees it half written).
 */
async function writePlugin(
  box: TestBox,
  id: string,
  manifest: Record<string, unknown>,
  files: Record<string, string> = {},
): Promise<string> {
  const dir = join(box.dirs.dockHome, "plugins", id);
  const aside = join(box.dirs.root, `plugin-${id}-${crypto.randomUUID()}`);
  await Deno.mkdir(aside, { recursive: true });
  for (const [name, text] of Object.entries(files)) {
    await Deno.mkdir(join(aside, name, ".."), { recursive: true });
    await Deno.writeTextFile(join(aside, name), text);
  }
  await Deno.writeTextFile(
    join(aside, "dock-plugin.json"),
    JSON.stringify({ id, name: id, version: "1.0.0", ...manifest }),
  );
  await Deno.mkdir(join(dir, ".."), { recursive: true });
  await Deno.rename(aside, dir);
  return dir;
}

async function plugin(box: TestBox, id: string): Promise<PluginInfo> {
  return await until(async () => (await box.client.plugins()).find((p) => p.id === id), { on: box });
}

async function enable(box: TestBox, id: string): Promise<PluginInfo> {
  const info = await plugin(box, id);
  return await box.client.enablePlugin(id, info.permissions ?? {});
}

/** Announces `type` on the box and returns its id (events after it are what the plugin caused). */
async function announce(box: TestBox, type: string, data: Record<string, unknown> = {}): Promise<number> {
  return (await box.client.emit({ type, data })).id!;
}

/**
 * The journal's events after `since` up to event `last` (one it already holds), read to that event and
 * no further: no window on a clock. (A read ended only by `AbortSignal.timeout` was seen to outlive its
 * timeout under load, hanging the test.)
 */
async function journalBetween(box: TestBox, since: number, last: number): Promise<DockEvent[]> {
  const events: DockEvent[] = [];
  for await (const event of box.client.events({ after: since })) {
    events.push(event);
    if (event.id! >= last) break;
  }
  return events;
}

function after(box: TestBox, since: number, match: (e: DockEvent) => boolean, timeoutMs = 15_000) {
  return untilEvent(box.client, match, { after: since, timeoutMs });
}

Deno.test("plugins: off until enabled with the permissions shown; a module hook gets events; the choice survives a restart", async () => {
  const dirs = await (await import("./harness.ts")).makeDirs();
  let box = await startBox({ dirs, env: FAST });
  try {
    await writePlugin(box, "echo", {
      main: "main.ts",
      hooks: [{ on: "test.ping", module: "main.ts" }],
      permissions: { scopes: ["events:emit"], write: ["."] },
    }, {
      "main.ts": `export default {
        async event(ev, ctx) {
          const n = ((await ctx.kv.get("n")) ?? 0) + 1;
          await ctx.kv.set("n", n);
          await ctx.emit("echo.pong", { n, of: ev.id });
        },
        fetch: async (req, ctx) => Response.json({ path: new URL(req.url).pathname, n: await ctx.kv.get("n"), auth: req.headers.get("authorization") }),
      };`,
    });
    const listed = await plugin(box, "echo");
    assertEquals(listed.enabled, false);
    assertEquals(listed.state, "off");
    assertEquals(listed.permissions?.scopes, ["events:emit"], JSON.stringify(listed));
    // Nothing reaches a plugin that is off.
    const idle = await announce(box, "test.ping");
    await assertRejects(
      () => box.client.enablePlugin("echo", { scopes: ["events:emit", "exec"] }),
      DockError,
      "asks for",
    );
    const enabled = await enable(box, "echo");
    assertEquals(enabled.state, "idle");
    assertEquals(enabled.granted?.scopes, ["events:emit"]);
    const since = await announce(box, "test.ping");
    const pong = await after(box, since, (e) => e.type === "echo.pong");
    assertEquals(pong.origin, "plugin:echo");
    assertEquals(pong.data?.n, 1, "the event sent while it was off never reached it");
    assert((pong.data?.of as number) > idle);
    // Counted when the call answers, which is after the handler's emit arrived.
    const info = await until(async () => {
      const echo = await plugin(box, "echo");
      return echo.counters.calls === 1 && echo.counters.cold_starts === 1 ? echo : undefined;
    });
    assert(info.state === "running" || info.state === "idle", info.state);
    // Its fetch function, with the caller's credentials left out: found before the daemon's router, or by
    // the router (a path with an escape), the same call.
    const socket = Deno.createHttpClient({ proxy: { transport: "unix", path: box.dirs.socket } });
    for (const path of ["a/b", "%61/b"]) {
      const response = await fetch(`http://localhost/v1/plugins/echo/fn/${path}?x=1`, {
        client: socket,
        headers: { authorization: "Bearer secret" },
      } as RequestInit);
      assertEquals(await response.json(), { path: "/a/b", n: 1, auth: null }, path);
    }
    for (const path of ["nope/fn/", "echo/fn/a%2Fb"]) {
      const refused = await fetch(`http://localhost/v1/plugins/${path}`, { client: socket } as RequestInit);
      assertEquals(refused.status, path.startsWith("nope") ? 404 : 400, path);
      assertEquals((await refused.json()).error.code, path.startsWith("nope") ? "not_found" : "invalid_path");
    }
    socket.close();

    await box.stop();
    box = await startBox({ dirs, env: FAST });
    const again = await plugin(box, "echo");
    assertEquals(again.enabled, true, "enabled across a restart");
    const since2 = await announce(box, "test.ping");
    assertEquals((await after(box, since2, (e) => e.type === "echo.pong")).data?.n, 2, "its store kept");
    const disabled = await box.client.disablePlugin("echo");
    assertEquals(disabled.state, "off");
    // A disabled plugin receives nothing: a witness plugin sees the next event, echo does not.
    await writePlugin(box, "witness", {
      hooks: [{ on: "test.ping", module: "main.ts" }],
      permissions: { scopes: ["events:emit"] },
    }, {
      "main.ts": `export default { async event(ev, ctx) { await ctx.emit("witness.saw", { of: ev.id }); } };`,
    });
    await enable(box, "witness");
    const callsBefore = (await box.client.plugin("echo", 0)).counters.calls;
    const since3 = await announce(box, "test.ping");
    const saw = await after(box, since3, (e) => e.type === "witness.saw" || e.type === "echo.pong");
    assertEquals(saw.type, "witness.saw");
    assertEquals((await box.client.plugin("echo", 0)).counters.calls, callsBefore);
  } finally {
    await box[Symbol.asyncDispose]();
  }
});

Deno.test("plugins: every escape is refused, visible in its log, and the daemon is unharmed", async () => {
  await using box = await startBox({ env: FAST });
  const data = join(box.dirs.state, "box", "plugins", "escape");
  const secretDir = join(box.dirs.home, ".ssh");
  await Deno.mkdir(secretDir);
  await Deno.writeTextFile(join(secretDir, "id_ed25519"), "PRIVATE");
  const targets = {
    passwd: "/etc/passwd",
    ssh: join(secretDir, "id_ed25519"),
    db: join(box.dirs.state, "box", "dockd.db"),
    socket: box.dirs.socket,
    outside: join(box.dirs.root, "written-by-plugin"),
    data,
  };
  await writePlugin(box, "escape", {
    hooks: [{ on: "test.escape", module: "main.ts", timeout: "60s" }],
    permissions: { scopes: ["events:emit", "sessions:read", "system:read"], write: ["cache", "."] },
  }, {
    "main.ts": `const t = ${JSON.stringify(targets)};
      const attempts = {
        readPasswd: () => Deno.readTextFile(t.passwd),
        readSsh: () => Deno.readTextFile(t.ssh),
        readDatabase: () => Deno.readFile(t.db),
        connectSocket: () => Deno.connect({ transport: "unix", path: t.socket }),
        writeOutside: () => Deno.writeTextFile(t.outside, "x"),
        command: () => new Deno.Command("/bin/sh", { args: ["-c", "touch " + t.outside] }).output(),
        dlopen: () => Deno.dlopen("libc.so.6", {}),
        fetchUngranted: () => fetch("http://127.0.0.1:8080/"),
        envUngranted: () => Deno.env.get("HOME"),
        remoteImport: () => import("https://example.com/mod.ts"),
        widerWorker: () => new Worker(import.meta.url, { type: "module", deno: { permissions: { read: true } } }),
        apiOutsideScopes: (ctx) => ctx.api("POST", "exec", { location: "x", command: "true" }),
        apiPlugins: (ctx) => ctx.api("POST", "plugins/escape/enable", { permissions: {} }),
        apiDotDot: (ctx) => ctx.api("POST", "sessions/%2e%2e/exec", {}),
        // Types dock itself announces: a plugin's agent.finished could start flows, its plugin.enabled lie.
        emitSystem: (ctx) => ctx.emit("agent.finished", { path: "/" }),
        emitPluginFamily: (ctx) => ctx.emit("plugin.enabled", { id: "other" }),
        // What cannot cross as JSON stopped the whole host (every plugin's calls with it).
        emitCycle: (ctx) => { const o = {}; o.self = o; return ctx.emit("escape.cycle", o); },
        emitBigInt: (ctx) => ctx.emit("escape.big", { n: 1n }),
        // 3,000 calls at once slowed every client of the daemon to 2.5 s: 16 chains, as fast as answered.
        apiFlood: (ctx) => Promise.all(Array.from({ length: 16 }, async () => {
          for (let i = 0; i < 400; i++) await ctx.api("GET", "info");
        })),
        // kv.json is the plugin's to write: one of 2 MB was read whole (450 MB took the daemon to 1 GB).
        kvHugeFile: async (ctx) => {
          await Deno.writeTextFile(${
      JSON.stringify(join("DATA", "kv.json"))
    }.replace("DATA", t.data), JSON.stringify({ x: "a".repeat(2e6) }));
          try { return await ctx.kv.get("x"); } finally { await Deno.remove(t.data + "/kv.json"); }
        },
        // The cap is in bytes: 600,000 "é" are 1.2 MB, under a cap that counted characters.
        kvMultibyte: (ctx) => ctx.kv.set("wide", "é".repeat(600_000)),
      };
      export default {
        async event(ev, ctx) {
          const results = {};
          for (const [name, attempt] of Object.entries(attempts)) {
            try { await attempt(ctx); results[name] = "allowed"; }
            catch (e) { results[name] = String(e).slice(0, 100); console.error(name + " refused: " + String(e).slice(0, 100)); }
          }
          // A loop that emits is cut off (the journal every client reads is not flooded). 5,000 at once: the
          // burst (1,000) and 20 s of the rate, so even a machine too loaded to deliver them quickly refuses some.
          let refusedEmits = 0;
          await Promise.all(
            Array.from({ length: 5000 }, (_, i) => ctx.emit("escape.flood", { i }).catch(() => refusedEmits++)),
          );
          // A message posted past ctx (it owns self.postMessage) that cannot cross as JSON: the host lives.
          self.postMessage({ t: "request", id: 1e9, op: "emit", args: ["escape.raw", { n: 1n }] });
          await ctx.kv.set("after-raw", true);
          // Its stdout, written past console: into its own log, bounded, never the daemon's.
          (await import("node:process")).default.stdout.write("raw-stdout-marker\\n");
          const line = new TextEncoder().encode("stdout-flood ".repeat(80) + "\\n");
          for (let i = 0; i < 20_000; i++) Deno.stdout.writeSync(line);
          // What it was granted works.
          await Deno.writeTextFile(${
      JSON.stringify(join(box.dirs.state, "box", "plugins", "escape", "cache", "ok"))
    }, "ok");
          const sessions = await ctx.api("GET", "sessions");
          await new Promise((resolve) => setTimeout(resolve, 50)); // a token back for the report
          await ctx.emit("escape.done", {
            results, sessions: Array.isArray(sessions), refusedEmits, afterRaw: await ctx.kv.get("after-raw"),
          });
        },
      };`,
  });
  await enable(box, "escape");
  const since = await announce(box, "test.escape");
  const done = await after(box, since, (e) => e.type === "escape.done", 90_000).catch(async (error) => {
    throw new Error(`${error.message}: ${JSON.stringify(await box.client.plugin("escape", 30))}`);
  });
  const results = done.data?.results as Record<string, string>;
  assertEquals(Object.keys(results).length, 21);
  for (const [name, outcome] of Object.entries(results)) {
    assert(outcome !== "allowed", `${name} was allowed`);
    assert(
      /Requires|escalate|not open to plugins|needs the scope|dock's own|not JSON|calls a second|byte limit|bytes; the limit/
        .test(outcome),
      `${name}: ${outcome}`,
    );
  }
  assertStringIncludes(results.emitSystem, "agent.* events are dock's own");
  assertStringIncludes(results.apiFlood, "more than 100 calls a second");
  assertStringIncludes(results.kvHugeFile, "over the 1048576-byte limit");
  assertStringIncludes(results.kvMultibyte, "would hold 1200");
  assertEquals(done.data?.afterRaw, true, "the host outlived a message it cannot send");
  const journal = await journalBetween(box, since, done.id!);
  assert(
    !journal.some((e) => e.type === "agent.finished" || e.type === "plugin.enabled"),
    "no system type got out",
  );
  assertEquals(done.data?.sessions, true, "a granted scope works");
  assert((done.data?.refusedEmits as number) > 0, "an emitting loop is cut off");
  assertEquals(await Deno.readTextFile(join(box.dirs.home, ".ssh", "id_ed25519")), "PRIVATE");
  await assertRejects(() => Deno.stat(targets.outside), Deno.errors.NotFound);
  const info = await box.client.plugin("escape", 500);
  assert(
    info.counters.refused - (done.data?.refusedEmits as number) > 5,
    "three ctx.api calls outside its scopes, two system types and the API flood, counted",
  );
  const log = info.log!.join("\n");
  assertStringIncludes(log, "more than 262144 characters of output this minute");
  assertStringIncludes(log, "stdout-flood");
  // 20,000 lines of 1,041 characters written; 256 KiB of them a minute kept.
  const kept = info.log!.filter((line) => line.includes("stdout-flood")).length;
  assert(kept > 0 && kept <= Math.ceil(262144 / 1040), `its output is bounded: ${kept} lines`);
  assertStringIncludes(log, "raw-stdout-marker", "a write through node:process is attributed to it");
  // The flood is said once, however long it lasted: it does not push the refusals above out of the log.
  assertEquals(log.split("more than 200 events a second").length - 1, 1, log);
  assertStringIncludes(log, "readSsh refused");
  assertStringIncludes(log, "Requires read access");
  assertStringIncludes(log, "refused: ctx.api: POST exec needs the scope exec");
  assertEquals((await box.client.info()).name.length > 0, true, "the daemon still answers");
});

Deno.test("plugins: a runaway handler is stopped at its deadline and the next event reaches the others; a memory bomb stops at the cap", async () => {
  await using box = await startBox({ env: { ...FAST, DOCK_PLUGIN_MEMORY_MB: "64" } });
  await writePlugin(box, "spin", {
    hooks: [{ on: "test.spin", module: "main.ts", timeout: "1s" }],
  }, { "main.ts": `export default { event() { while (true) {} } };` });
  await writePlugin(box, "bomb", {
    hooks: [{ on: "test.bomb", module: "main.ts", timeout: "30s" }],
  }, {
    "main.ts":
      `export default { event() { const a = []; while (true) a.push(new Array(1e5).fill(Math.random())); } };`,
  });
  await writePlugin(box, "count", {
    hooks: [{ on: "test.*", module: "main.ts" }],
    permissions: { scopes: ["events:emit"] },
  }, {
    "main.ts": `export default { async event(ev, ctx) { await ctx.emit("count.saw", { type: ev.type }); } };`,
  });
  for (const id of ["spin", "bomb", "count"]) await enable(box, id);

  const since = await announce(box, "test.spin");
  await until(async () => (await box.client.plugin("spin", 0)).counters.timeouts === 1, { timeoutMs: 15_000 })
    .catch(async (error) => {
      throw new Error(`${error.message}: ${JSON.stringify(await box.client.plugin("spin", 20))}`);
    });
  const next = await announce(box, "test.after");
  await after(box, next, (e) => e.type === "count.saw" && e.data?.type === "test.after");

  const bombed = await announce(box, "test.bomb");
  await until(async () => (await box.client.plugin("bomb", 0)).counters.failures === 1, {
    timeoutMs: 30_000,
  });
  const next2 = await announce(box, "test.after-bomb");
  await after(box, next2, (e) => e.type === "count.saw" && e.data?.type === "test.after-bomb");
  const spin = await box.client.plugin("spin", 20);
  assertStringIncludes(spin.log!.join("\n"), "timed out");
  assert(bombed > since);
  assertEquals((await box.client.info()).name.length > 0, true, "the daemon still answers");
});

Deno.test("plugins: a bad manifest is listed with its error and never runs; one that throws on load is failed; edits take effect", async () => {
  await using box = await startBox({ env: FAST });
  await writePlugin(box, "greedy", {
    main: "main.ts",
    permissions: { run: ["sh"] },
  }, { "main.ts": `export default {};` });
  await writePlugin(box, "broken", {
    hooks: [{ on: "test.load", module: "main.ts" }],
  }, { "main.ts": `throw new Error("broken on purpose");` });
  const greedy = await plugin(box, "greedy");
  assertEquals(greedy.state, "off");
  assertStringIncludes(greedy.error ?? "", "permissions.run");
  assertStringIncludes(greedy.error ?? "", "never granted");
  await assertRejects(() => box.client.enablePlugin("greedy", {}), DockError, "permissions.run");
  // A symlink in its folder to ~/.ssh would be readable through the folder's own grant: refused.
  await Deno.mkdir(join(box.dirs.home, ".ssh"), { recursive: true });
  const linked = await writePlugin(box, "linked", { main: "main.ts" }, { "main.ts": `export default {};` });
  await Deno.symlink(join(box.dirs.home, ".ssh"), join(linked, "keys"));
  const refusedLink = await until(async () => {
    const info = await plugin(box, "linked");
    return info.error?.includes("symlink") ? info : undefined;
  }, { on: box });
  assertStringIncludes(refusedLink.error ?? "", "keys is a symlink out of its folder");
  assertEquals(refusedLink.state, "off");

  // dockd's own command lists them, each with its state and error.
  const listed = await box.cli(["plugin", "list"]);
  assertEquals(listed.code, 0, listed.stderr);
  assertStringIncludes(listed.stdout, "greedy");
  assertStringIncludes(listed.stdout, "never granted");

  // Five failures in a row make a plugin failed (announced), until it is enabled again.
  await writePlugin(box, "flaky", { hooks: [{ on: "test.flaky", module: "main.ts" }] }, {
    "main.ts": `export default { event() { throw new Error("flaky on purpose"); } };`,
  });
  await enable(box, "flaky");
  for (let i = 1; i <= 5; i++) {
    await announce(box, "test.flaky");
    await until(async () => (await box.client.plugin("flaky", 0)).counters.failures === i);
  }
  const failed = await after(box, 0, (e) => e.type === "plugin.failed" && e.data?.id === "flaky");
  assertStringIncludes(String(failed.data?.error), "flaky on purpose");
  const flaky = await box.client.plugin("flaky", 0);
  assertEquals(flaky.state, "failed");
  await announce(box, "test.flaky");
  assertEquals((await box.client.plugin("flaky", 0)).counters.calls, 5, "a failed plugin gets nothing");
  assertEquals((await enable(box, "flaky")).state, "idle", "enabling again clears it");

  await enable(box, "broken");
  await announce(box, "test.load");
  const broken = await until(async () => {
    const info = await box.client.plugin("broken", 10);
    return info.state === "failed" ? info : undefined;
  }, { on: box });
  assertStringIncludes(broken.error ?? "", "broken on purpose");
  // Fixed on disk and enabled again: it runs, and an edit reaches the next call without a restart.
  const dir = join(box.dirs.dockHome, "plugins", "broken");
  await Deno.writeTextFile(
    join(dir, "main.ts"),
    `export default { async event(ev, ctx) { await ctx.emit("fixed.v1", {}); } };`,
  );
  await Deno.writeTextFile(
    join(dir, "dock-plugin.json"),
    JSON.stringify({
      id: "broken",
      name: "broken",
      version: "1.0.1",
      hooks: [{ on: "test.load", module: "main.ts" }],
      permissions: { scopes: ["events:emit"] },
    }),
  );
  await until(async () => (await box.client.plugin("broken", 0)).version === "1.0.1", { on: box });
  await enable(box, "broken");
  let since = await announce(box, "test.load");
  await after(box, since, (e) => e.type === "fixed.v1");
  const edited = since;
  await Deno.writeTextFile(
    join(dir, "main.ts"),
    `export default { async event(ev, ctx) { await ctx.emit("fixed.v2", {}); } };`,
  );
  // Tried at once, then again on each `plugin.changed` of it (its workers are stopped before that is
  // announced), not on the events a try itself causes.
  let changed = true;
  const v2 = await until(async (events) => {
    changed ||= events.some((e) => e.type === "plugin.changed" && e.data?.id === "broken");
    if (!changed) return undefined;
    changed = false;
    since = await announce(box, "test.load");
    const seen = await after(box, since, (e) => e.type.startsWith("fixed."), 5000);
    return seen.type === "fixed.v2" ? seen : undefined;
  }, { on: box, after: edited, timeoutMs: 10_000 });
  assertEquals(v2.origin, "plugin:broken");
});

Deno.test("plugins: a module gate refuses exec with its reason; a removed plugin's gate is gone", async () => {
  await using box = await startBox({ env: FAST });
  const repo = await makeRepo(join(box.dirs.home, "work"));
  await box.client.addLocation({ name: "app", path: repo });
  const dir = await writePlugin(box, "guard", {
    hooks: [{ on: "before:exec", module: "gate.ts" }],
  }, {
    "gate.ts": `export default {
      gate(req) {
        return req.target.command.includes("rm ") ? { allow: false, reason: "guard: no rm on this box" } : { allow: true };
      },
    };`,
  });
  await enable(box, "guard");
  const refused = await assertRejects(
    () => box.client.exec({ location: "app", command: "rm -f README.md" }),
    DockError,
    "guard: no rm on this box",
  ) as DockError;
  assertEquals(refused.code, "gate_refused");
  assertEquals(refused.status, 403);
  assertEquals((await box.client.exec({ location: "app", command: "echo fine" })).exit_code, 0);
  // A manifest's shell hooks run too (spec 2.9: "its hooks run on the box too"), as the box's own do.
  const out = join(box.dirs.root, "shell-hook-ran");
  await writePlugin(box, "shellish", {
    hooks: [
      { on: "test.shell", run: `echo "$DOCK_EVENT_TYPE $DOCK_EVENT_ORIGIN" > ${out}` },
      {
        on: "before:exec",
        run: `case "$DOCK_COMMAND" in *shellish*) echo 'shellish says no' >&2; exit 1;; esac`,
      },
    ],
  });
  await enable(box, "shellish");
  await announce(box, "test.shell");
  await until(async () => (await Deno.readTextFile(out).catch(() => "")).trim() === "test.shell test", {
    watch: out,
  });
  await assertRejects(
    () => box.client.exec({ location: "app", command: "echo shellish" }),
    DockError,
    "shellish says no",
  );
  await box.client.disablePlugin("shellish");
  assertEquals((await box.client.exec({ location: "app", command: "echo shellish" })).exit_code, 0);

  await Deno.remove(dir, { recursive: true });
  await until(async () => !(await box.client.plugins()).some((p) => p.id === "guard"), { on: box });
  assertEquals((await box.client.exec({ location: "app", command: "rm -f README.md" })).exit_code, 0);
});

Deno.test("module hooks in hooks.json and a repository's config run sandboxed: read of their folder and the worktree only", async () => {
  await using box = await startBox({ env: FAST });
  await Deno.mkdir(join(box.dirs.dockHome, "hooks"), { recursive: true });
  await Deno.writeTextFile(join(box.dirs.dockHome, "hooks", "words.txt"), "hello from beside the hook");
  await Deno.writeTextFile(
    join(box.dirs.dockHome, "hooks", "seen.ts"),
    `export default {
      async event(ev, ctx) {
        const own = await Deno.readTextFile(new URL("./words.txt", import.meta.url));
        let passwd = "read";
        try { await Deno.readTextFile("/etc/passwd"); } catch (e) { passwd = String(e).slice(0, 60); }
        await ctx.emit("file.seen", { of: ev.type, own, passwd });
      },
    };`,
  );
  await Deno.writeTextFile(
    join(box.dirs.dockHome, "hooks.json"),
    JSON.stringify({ hooks: [{ on: "test.file", module: "hooks/seen.ts" }] }),
  );
  const repo = await makeRepo(join(box.dirs.home, "work"), "app", {
    ".dock/config.json": JSON.stringify({ hooks: [{ on: "before:exec", module: "guard.ts" }] }),
    ".dock/guard.ts": `export default {
      async gate(req) {
        const readme = await Deno.readTextFile(new URL("../README.md", import.meta.url)).catch((e) => String(e));
        if (readme.includes("LOCKED")) return { allow: false, reason: "the worktree is locked" };
        return req.target.command.includes("forbidden") ? { allow: false, reason: "guard.ts: forbidden" } : undefined;
      },
    };`,
  });
  await box.client.addLocation({ name: "app", path: repo });

  const since = await announce(box, "test.file");
  const seen = await after(box, since, (e) => e.type === "file.seen");
  assertEquals(seen.data?.own, "hello from beside the hook");
  assertStringIncludes(String(seen.data?.passwd), "Requires read access");
  assertEquals(seen.origin, "hook:hooks/seen.ts");

  await assertRejects(
    () => box.client.exec({ location: "app", command: "echo forbidden" }),
    DockError,
    "guard.ts: forbidden",
  );
  assertEquals((await box.client.exec({ location: "app", command: "echo fine" })).exit_code, 0);
  // It reads the worktree it guards (the checkout's README), and its answer follows the file.
  await Deno.writeTextFile(join(repo, "README.md"), "LOCKED\n");
  await assertRejects(
    () => box.client.exec({ location: "app", command: "echo fine" }),
    DockError,
    "the worktree is locked",
  );
});

Deno.test("plugins: a heap bomb ends its host, and the other plugins' calls in flight run again on a fresh host: none lost", async () => {
  await using box = await startBox({ env: { ...FAST, DOCK_PLUGIN_MEMORY_MB: "64" } });
  const calm = ["calm-a", "calm-b", "calm-c"];
  for (const id of calm) {
    const go = join(box.dirs.state, "box", "plugins", id, "go");
    await writePlugin(box, id, {
      hooks: [{ on: "test.calm", module: "main.ts", timeout: "60s" }],
      permissions: { scopes: ["events:emit"], read: ["."] },
    }, {
      // In flight until the test says so (a file in its data folder), which it does after the bomb.
      "main.ts": `export default {
        async event(ev, ctx) {
          await ctx.emit("calm.started", { id: ${JSON.stringify(id)} });
          while (!(await Deno.stat(${
        JSON.stringify(go)
      }).catch(() => null))) await new Promise((r) => setTimeout(r, 50));
          await ctx.emit("calm.done", { id: ${JSON.stringify(id)}, of: ev.id });
        },
      };`,
    });
  }
  await writePlugin(box, "bomb", { hooks: [{ on: "test.bomb", module: "main.ts", timeout: "30s" }] }, {
    "main.ts":
      `export default { event() { const a = []; while (true) a.push(new Array(1e5).fill(Math.random())); } };`,
  });
  for (const id of [...calm, "bomb"]) await enable(box, id);
  const since = await announce(box, "test.calm");
  const started = new Set<string>();
  await untilEvent(box.client, (e) => {
    if (e.type === "calm.started") started.add(e.data?.id as string);
    return started.size === calm.length;
  }, { after: since, timeoutMs: 30_000 });
  const generations = (await box.client.plugins()).length; // (a round trip: the calls are in flight)
  assert(generations > 0);
  await announce(box, "test.bomb");
  await until(async () => (await box.client.plugin("bomb", 0)).counters.failures >= 1, { timeoutMs: 30_000 });
  for (const id of calm) await Deno.writeTextFile(join(box.dirs.state, "box", "plugins", id, "go"), "");
  const done = new Set<string>();
  await untilEvent(box.client, (e) => {
    if (e.type === "calm.done" && e.data?.of === since) done.add(e.data?.id as string);
    return done.size === calm.length;
  }, { after: since, timeoutMs: 60_000 }).catch(async (error) => {
    throw new Error(`${error.message}: done ${[...done]}; ${JSON.stringify(await box.client.plugins())}`);
  });
  for (const id of calm) {
    const info = await box.client.plugin(id, 0);
    assertEquals(info.counters.failures, 0, `${id} lost no call: ${JSON.stringify(info)}`);
  }
  const bomb = await box.client.plugin("bomb", 20);
  assertStringIncludes(bomb.log!.join("\n"), "event failed");
  assertEquals((await box.client.info()).name.length > 0, true, "the daemon still answers");
});

Deno.test("plugins: a symlink planted in its data folder, or in its folder before a scan notices, is never followed out", async () => {
  // Scans far apart: the check before each call is what stops it.
  await using box = await startBox({ env: { DOCK_PLUGIN_SCAN_MS: "600000" } });
  const secret = join(box.dirs.root, "ui-token");
  await Deno.writeTextFile(secret, "SECRET");
  const dir = await writePlugin(box, "reader", {
    hooks: [{ on: "test.read", module: "main.ts" }],
    permissions: { scopes: ["events:emit"], read: ["."] },
  }, {
    "main.ts": `export default {
      async event(ev, ctx) {
        let text;
        try { text = await Deno.readTextFile(ev.data.path); } catch (e) { text = String(e).slice(0, 80); }
        await ctx.emit("reader.read", { text, of: ev.id });
      },
    };`,
  });
  await box.client.enablePlugin("reader", { scopes: ["events:emit"], read: ["."] });
  const data = join(box.dirs.state, "box", "plugins", "reader");
  const read = async (path: string) => {
    const since = await announce(box, "test.read", { path });
    return await after(box, since, (e) => e.type === "reader.read" && e.data?.of === since);
  };
  // It runs, and reads its own data folder.
  await Deno.writeTextFile(join(data, "own.txt"), "OWN");
  assertEquals((await read(join(data, "own.txt"))).data?.text, "OWN");

  for (const [where, link] of [["data folder", join(data, "link")], ["plugin folder", join(dir, "link")]]) {
    await Deno.symlink(secret, link);
    const since = await announce(box, "test.read", { path: link });
    const refused = await until(async () => {
      const info = await box.client.plugin("reader", 20);
      return info.error?.includes("symlink") ? info : undefined;
    });
    assertStringIncludes(refused.error!, "link is a symlink out of its folder", where);
    assertEquals(refused.state, "off", where);
    await Deno.remove(link);
    // Gone again, it runs again; the event sent while the link was there never ran (nothing read it).
    const next = await read(join(data, "own.txt"));
    assertEquals(next.data?.text, "OWN", where);
    const seen = await Array.fromAsync(
      (async function* () {
        for await (const e of box.client.events({ after: since, signal: AbortSignal.timeout(1000) })) yield e;
      })(),
    ).catch(() => [] as DockEvent[]);
    assert(
      !seen.some((e) => e.type === "reader.read" && e.data?.text === "SECRET"),
      `${where}: read through`,
    );
  }
});

Deno.test("plugins: nothing a plugin started runs on after its last answer (10 s) or a nested Worker's spin", async () => {
  await using box = await startBox({ env: FAST });
  await writePlugin(box, "ticker", {
    hooks: [{ on: "test.tick", module: "main.ts" }],
    permissions: { scopes: ["events:emit"] },
  }, {
    "main.ts": `export default {
      event(ev, ctx) { setInterval(() => ctx.emit("ticker.tick", {}).catch(() => {}), 200); },
    };`,
  });
  await writePlugin(box, "nest", {
    hooks: [{ on: "test.nest", module: "main.ts" }],
    permissions: { scopes: ["events:emit"] },
  }, {
    "spin.js": `while (true) {}`,
    "main.ts": `export default {
      async event(ev, ctx) {
        const { Worker } = await import("node:worker_threads");
        new Worker(new URL("./spin.js", import.meta.url));
        await ctx.emit("nest.spun", {});
      },
    };`,
  });
  await enable(box, "ticker");
  await enable(box, "nest");
  const since = await announce(box, "test.tick");
  await after(box, since, (e) => e.type === "ticker.tick");
  // Its worker is ended at the bound after its answer (it was kept 5 minutes, ticking on).
  await until(async () => (await box.client.plugin("ticker", 0)).state === "idle", { timeoutMs: 30_000 });
  const mark = await announce(box, "test.mark");

  const spun = await announce(box, "test.nest");
  await after(box, spun, (e) => e.type === "nest.spun");
  const host = hostPids(box.dirs.state);
  assertEquals(host.length, 1, "one plugin host");
  await box.client.disablePlugin("nest");
  // The spinning thread outlives terminate(): its host is recycled, and nothing of it runs on.
  await untilGone(() => hostPids(box.dirs.state).filter((pid) => pid === host[0]), {
    timeoutMs: 30_000,
    what: "the plugin host the spinning thread was in",
  });
  // Everything journaled since the mark (seconds: the idle bound's wait, the host's recycling), up to
  // an event announced now.
  const ticks = await journalBetween(box, mark, await announce(box, "test.end"));
  assertEquals(ticks.filter((e) => e.type === "ticker.tick").length, 0, "no tick after its worker ended");
});

/** Pids of the plugin hosts of the box whose state folder is `state` (their command line names it). */
function hostPids(state: string): number[] {
  const pids: number[] = [];
  for (const entry of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(entry.name)) continue;
    try {
      const cmdline = Deno.readTextFileSync(`/proc/${entry.name}/cmdline`);
      if (cmdline.includes("host_main.ts") && cmdline.includes(state)) pids.push(Number(entry.name));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

Deno.test("plugins: a data folder over its quota becomes read-only to its plugin", async () => {
  await using box = await startBox({ env: { ...FAST, DOCK_PLUGIN_DATA_QUOTA_MB: "1" } });
  const data = join(box.dirs.state, "box", "plugins", "hoard");
  await writePlugin(box, "hoard", {
    hooks: [{ on: "test.hoard", module: "main.ts" }],
    permissions: { scopes: ["events:emit"], write: ["."] },
  }, {
    "main.ts": `export default {
      async event(ev, ctx) {
        const tried = {};
        try { await Deno.writeFile(${
      JSON.stringify(data)
    } + "/" + ev.data.name, new Uint8Array(ev.data.bytes)); tried.write = "allowed"; }
        catch (e) { tried.write = String(e).slice(0, 100); }
        try { await ctx.kv.set("k", ev.data.name); tried.kv = "allowed"; } catch (e) { tried.kv = String(e).slice(0, 100); }
        await ctx.emit("hoard.tried", { tried, of: ev.id });
      },
    };`,
  });
  await enable(box, "hoard");
  const attempt = async (name: string, bytes: number) => {
    const since = await announce(box, "test.hoard", { name, bytes });
    return (await after(box, since, (e) => e.type === "hoard.tried" && e.data?.of === since)).data
      ?.tried as Record<string, string>;
  };
  assertEquals(await attempt("first.bin", 2 * 1024 * 1024), { write: "allowed", kv: "allowed" });
  // Measured every 2 s at most: within a few calls it is read-only.
  let n = 0;
  const refused = await until(async () => {
    const tried = await attempt(`small-${n++}.bin`, 10);
    return tried.write !== "allowed" ? tried : undefined;
  }, { timeoutMs: 30_000 });
  assertStringIncludes(refused.write, "Requires write access");
  assertStringIncludes(refused.kv, "over its quota");
  const log = (await box.client.plugin("hoard", 50)).log!.join("\n");
  assertStringIncludes(log, "over its 1048576: read-only until it is below");
  // Below again (the user removed what it hoarded), it may write again.
  await Deno.remove(join(data, "first.bin"));
  await until(async () => (await attempt(`again-${n++}.bin`, 10)).write === "allowed", { timeoutMs: 30_000 });
});
