/**
 * The outside author's path, whole: `dock plugin new` in a folder of their own, the module typed with the
 * SDK (`@dock/plugin`: a typed event, a typed `ctx.api` answer, `ctx.config` and `ctx.secrets`), its own
 * test passing with `deno test` in that folder, then installed from the laptop onto a box
 * (`dock plugin install --box`, over the box's API), given a setting and a secret reference, and working there: the event reaches its handler, its `fn` answers
 * with what the box's API said, and the secret is used but never shown.
 */
import { join } from "node:path";
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { AgentClient } from "../client/agent.ts";
import { laptopEnv, makeRepo, runCli, startAgent, startBox } from "./harness.ts";
import { until } from "./wait.ts";

/** What the author writes over the skeleton's main.ts: typed throughout, no cast, no `any`. */
const AUTHOR_MAIN = `import { definePlugin, type Session } from "@dock/plugin";

export default definePlugin({
  async event(event, ctx) {
    if (event.type !== "agent.finished") return;
    const session: string | undefined = event.data.session; // typed: agent.finished's data
    const seen = ((await ctx.kv.get<number>("seen")) ?? 0) + 1;
    await ctx.kv.set("seen", seen);
    ctx.log(\`\${session ?? event.data.path} finished (#\${seen})\`);
  },
  async fetch(_request, ctx) {
    const sessions: Session[] = await ctx.api("GET", "sessions"); // typed by the route
    const token = ctx.secrets.token ?? "";
    return Response.json({
      seen: (await ctx.kv.get<number>("seen")) ?? 0,
      greeting: ctx.config.greeting ?? null,
      sessions: sessions.map((s) => s.name),
      token_length: token.length,
    });
  },
});
`;

const AUTHOR_TEST = `import assert from "node:assert/strict";
import { callFetch, fakeContext, fakeEvent } from "@dock/plugin/testing";
import plugin from "./main.ts";

Deno.test("counts finished turns and answers with the box's sessions", async () => {
  const ctx = fakeContext({
    scopes: ["sessions:read"],
    api: { "GET sessions": [] },
    config: { greeting: "hi" },
    secrets: { token: "abc" },
  });
  await plugin.event(fakeEvent("agent.finished", { session: "s1" }), ctx);
  const answer = await (await callFetch(plugin, "/", {}, ctx)).json();
  assert.deepEqual(answer, { seen: 1, greeting: "hi", sessions: [], token_length: 3 });
  assert.deepEqual(ctx.logs, ["s1 finished (#1)"]);
});
`;

Deno.test("an outside author: plugin new, typed with the SDK, its test passing, installed and working on a box", async () => {
  const secret = `tok-${crypto.randomUUID()}`;
  const box = await startBox({ env: { DOCK_PLUGIN_SCAN_MS: "100", HELLO_TOKEN: secret } });
  // The laptop has a home of its own: the box is another machine to it, reached through the box's API.
  const laptopHome = join(box.dirs.root, "laptop-home");
  const agent = await startAgent(box.dirs, { env: { DOCK_HOME: laptopHome } });
  const laptop = laptopEnv(box.dirs, agent, { DOCK_HOME: laptopHome });
  const env = laptop;
  try {
    await new AgentClient({ url: agent.url, token: agent.token, origin: "test" }).addLocal();
    // 1. The skeleton, in the author's own folder (not the box's plugins folder).
    const folder = join(box.dirs.root, "work", "hello");
    const made = await runCli("dock", ["plugin", "new", "hello", "--dir", folder], {
      env,
      cwd: box.dirs.root,
    });
    assertEquals(made.code, 0, made.stderr);
    const manifest = JSON.parse(await Deno.readTextFile(join(folder, "dock-plugin.json")));
    assert(
      typeof manifest.$schema === "string" && manifest.$schema.endsWith("plugin.schema.json"),
      manifest.$schema,
    );
    await Deno.stat(new URL(manifest.$schema));
    // The module names no path of this machine: only the folder's deno.json does, for the editor.
    assertStringIncludes(await Deno.readTextFile(join(folder, "main.ts")), `from "@dock/plugin"`);

    // 2. Its own test passes as written, then the author's version of it, with `deno test` in the folder.
    const test = async () => {
      const output = await new Deno.Command(Deno.execPath(), {
        args: ["test", "--cached-only"],
        cwd: folder,
        env,
        clearEnv: true,
      }).output();
      return {
        code: output.code,
        out: new TextDecoder().decode(output.stdout) + new TextDecoder().decode(output.stderr),
      };
    };
    const skeleton = await test();
    assertEquals(skeleton.code, 0, skeleton.out);
    assertStringIncludes(skeleton.out, "1 passed");
    await Deno.writeTextFile(join(folder, "main.ts"), AUTHOR_MAIN);
    await Deno.writeTextFile(join(folder, "main_test.ts"), AUTHOR_TEST);
    manifest.permissions = { scopes: ["sessions:read"] };
    manifest.config = {
      type: "object",
      properties: { greeting: { type: "string" }, token: { type: "string", secret: true } },
    };
    await Deno.writeTextFile(join(folder, "dock-plugin.json"), JSON.stringify(manifest, null, 2));
    const authored = await test();
    assertEquals(authored.code, 0, authored.out); // type-checked too: deno test checks by default

    // 3. Installed from the laptop onto the box (`dock plugin install --box`: the files go over the box's
    //    API, the consent is the laptop's), then given a setting and the secret's reference.
    const install = await runCli("dock", ["plugin", "install", folder, "--box", "local", "--yes"], {
      env: laptop,
      cwd: box.dirs.root,
    });
    assertEquals(install.code, 0, install.stderr + install.stdout);
    assertStringIncludes(install.stdout, "sessions:read");
    const configured = await runCli(
      "dock",
      [
        "plugin",
        "config",
        "hello",
        "set",
        "greeting=hello there",
        "token=env://HELLO_TOKEN",
        "--box",
        "local",
      ],
      { env: laptop, cwd: box.dirs.root },
    );
    assertEquals(configured.code, 0, configured.stderr);
    assert(!configured.stdout.includes(secret), "the secret's value is never shown");
    // On the box, in its own plugins folder, not the laptop's.
    await Deno.stat(join(box.dirs.dockHome, "plugins", "hello", "main.ts"));

    // 5. Working there: a session to list, an event to its handler, its fn answering.
    const repo = await makeRepo(join(box.dirs.root, "repo"));
    await box.client.addLocation({ name: "web", path: repo });
    const session = await box.client.createSession({ location: "web", command: "sleep 600" });
    await box.client.emit({
      type: "agent.finished",
      origin: "claude",
      data: { path: repo, agent: "claude", session_id: null },
    });
    const answer = await until(async () => {
      const response = await box.client.callPlugin("hello", "/");
      const body = await response.json();
      return body.seen === 1 ? body : undefined;
    });
    assertEquals(answer, {
      seen: 1,
      greeting: "hello there",
      sessions: [session.name],
      token_length: secret.length,
    });
    // The handler logs after its kv.set, so the fn may read `seen` before the line is written.
    const info = await until(async () => {
      const read = await box.client.plugin("hello", 50);
      return read.state === "failed" || read.log?.some((line) => line.includes("finished (#1)"))
        ? read
        : undefined;
    });
    assertEquals(info.state === "failed", false, info.error);
    assert(!(info.log ?? []).some((line) => line.includes(secret)), "the secret never reaches the log");
  } finally {
    await agent.stop();
    // Disposed, not only stopped: the session's tmux server outlives its daemon (a run left it behind).
    await box[Symbol.asyncDispose]();
  }
});
