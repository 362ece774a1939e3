/**
 * Whole-system tests of the plugin host on a box: a real dockd loading plugins from its `~/.dock/plugins`,
 * running their modules in sandboxed workers inside its plugin-host process, with the escapes a hostile
 * plugin would try.
 */
import { join } from "node:path";
import { assert, assertEquals, assertRejects, assertStringIncludes } from "./assert.ts";
import { DockError } from "../client/errors.ts";
import type { DockEvent, PluginInfo } from "../client/wire.ts";
import { eventually, makeRepo, startBox, type TestBox, waitForEvent } from "./harness.ts";

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
  return await eventually(async () => (await box.client.plugins()).find((p) => p.id === id));
}

async function enable(box: TestBox, id: string): Promise<PluginInfo> {
  const info = await plugin(box, id);
  return await box.client.enablePlugin(id, info.permissions ?? {});
}

/** Announces `type` on the box and returns its id (events after it are what the plugin caused). */
async function announce(box: TestBox, type: string, data: Record<string, unknown> = {}): Promise<number> {
  return (await box.client.emit({ type, data })).id!;
}

function after(box: TestBox, since: number, match: (e: DockEvent) => boolean, timeoutMs = 15_000) {
  return waitForEvent(box.client, match, { after: since, timeoutMs });
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
    const info = await eventually(async () => {
      const echo = await plugin(box, "echo");
      return echo.counters.calls === 1 && echo.counters.cold_starts === 1 ? echo : undefined;
    });
    assert(info.state === "running" || info.state === "idle", info.state);
    // Its fetch function, with the caller's credentials left out.
    const response = await fetch(`http://localhost/v1/plugins/echo/fn/a/b?x=1`, {
      client: Deno.createHttpClient({ proxy: { transport: "unix", path: box.dirs.socket } }),
      headers: { authorization: "Bearer secret" },
    } as RequestInit);
    assertEquals(await response.json(), { path: "/a/b", n: 1, auth: null });

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
  const secretDir = join(box.dirs.home, ".ssh");
  await Deno.mkdir(secretDir);
  await Deno.writeTextFile(join(secretDir, "id_ed25519"), "PRIVATE");
  const targets = {
    passwd: "/etc/passwd",
    ssh: join(secretDir, "id_ed25519"),
    db: join(box.dirs.state, "box", "dockd.db"),
    socket: box.dirs.socket,
    outside: join(box.dirs.root, "written-by-plugin"),
  };
  await writePlugin(box, "escape", {
    hooks: [{ on: "test.escape", module: "main.ts", timeout: "20s" }],
    permissions: { scopes: ["events:emit", "sessions:read"], write: ["cache"] },
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
          // What it was granted works.
          await Deno.writeTextFile(${
      JSON.stringify(join(box.dirs.state, "box", "plugins", "escape", "cache", "ok"))
    }, "ok");
          const sessions = await ctx.api("GET", "sessions");
          await new Promise((resolve) => setTimeout(resolve, 50)); // a token back for the report
          await ctx.emit("escape.done", { results, sessions: Array.isArray(sessions), refusedEmits });
        },
      };`,
  });
  await enable(box, "escape");
  const since = await announce(box, "test.escape");
  const done = await after(box, since, (e) => e.type === "escape.done", 30_000);
  const results = done.data?.results as Record<string, string>;
  assertEquals(Object.keys(results).length, 14);
  for (const [name, outcome] of Object.entries(results)) {
    assert(outcome !== "allowed", `${name} was allowed`);
    assert(/Requires|escalate|not open to plugins|needs the scope/.test(outcome), `${name}: ${outcome}`);
  }
  assertEquals(done.data?.sessions, true, "a granted scope works");
  assert((done.data?.refusedEmits as number) > 0, "an emitting loop is cut off");
  assertEquals(await Deno.readTextFile(join(box.dirs.home, ".ssh", "id_ed25519")), "PRIVATE");
  await assertRejects(() => Deno.stat(targets.outside), Deno.errors.NotFound);
  const info = await box.client.plugin("escape", 100);
  assertEquals(
    info.counters.refused - (done.data?.refusedEmits as number),
    3,
    "three ctx.api calls outside its scopes, counted",
  );
  const log = info.log!.join("\n");
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
  await eventually(async () => (await box.client.plugin("spin", 0)).counters.timeouts === 1, 15_000)
    .catch(async (error) => {
      throw new Error(`${error.message}: ${JSON.stringify(await box.client.plugin("spin", 20))}`);
    });
  const next = await announce(box, "test.after");
  await after(box, next, (e) => e.type === "count.saw" && e.data?.type === "test.after");

  const bombed = await announce(box, "test.bomb");
  await eventually(async () => (await box.client.plugin("bomb", 0)).counters.failures === 1, 30_000);
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
  const refusedLink = await eventually(async () => {
    const info = await plugin(box, "linked");
    return info.error?.includes("symlink") ? info : undefined;
  });
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
    await eventually(async () => (await box.client.plugin("flaky", 0)).counters.failures === i);
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
  const broken = await eventually(async () => {
    const info = await box.client.plugin("broken", 10);
    return info.state === "failed" ? info : undefined;
  });
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
  await eventually(async () => (await box.client.plugin("broken", 0)).version === "1.0.1");
  await enable(box, "broken");
  let since = await announce(box, "test.load");
  await after(box, since, (e) => e.type === "fixed.v1");
  await Deno.writeTextFile(
    join(dir, "main.ts"),
    `export default { async event(ev, ctx) { await ctx.emit("fixed.v2", {}); } };`,
  );
  const v2 = await eventually(async () => {
    since = await announce(box, "test.load");
    const seen = await after(box, since, (e) => e.type.startsWith("fixed."), 5000);
    return seen.type === "fixed.v2" ? seen : undefined;
  }, 10_000);
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
  await eventually(async () => (await Deno.readTextFile(out).catch(() => "")).trim() === "test.shell test");
  await assertRejects(
    () => box.client.exec({ location: "app", command: "echo shellish" }),
    DockError,
    "shellish says no",
  );
  await box.client.disablePlugin("shellish");
  assertEquals((await box.client.exec({ location: "app", command: "echo shellish" })).exit_code, 0);

  await Deno.remove(dir, { recursive: true });
  await eventually(async () => !(await box.client.plugins()).some((p) => p.id === "guard"));
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
