/**
 * The laptop's own files through the agent: app settings documents, task templates and themes.
 */
import { join } from "node:path";
import { assertEquals, assertStringIncludes } from "./assert.ts";
import { makeDirs, startAgent } from "./harness.ts";
import { untilEvent } from "./wait.ts";
import { AgentClient } from "../client/agent.ts";

Deno.test("app documents, templates and themes", async () => {
  const dirs = await makeDirs();
  await using agent = await startAgent(dirs);
  const headers = { authorization: `Bearer ${agent.token}`, "content-type": "application/json" };
  const get = async (path: string) => {
    const response = await fetch(`${agent.url}${path}`, { headers });
    return { status: response.status, body: await response.json() };
  };
  assertEquals(await get("/v1/app/layout"), { status: 200, body: null });
  const client = new AgentClient({ url: agent.url, token: agent.token });
  const start = (await client.emit({ type: "test.mark" })).id!;
  const put = await fetch(`${agent.url}/v1/app/layout`, {
    method: "PUT",
    headers,
    body: JSON.stringify({ panes: [1, 2], theme: "dark" }),
  });
  assertEquals(put.status, 200);
  await put.body?.cancel();
  assertEquals((await get("/v1/app/layout")).body, { panes: [1, 2], theme: "dark" });
  const changed = await untilEvent(client, (e) => e.type === "app.changed", { after: start });
  assertEquals(changed.data, { key: "layout" });
  const tooBig = await fetch(`${agent.url}/v1/app/big`, {
    method: "PUT",
    headers,
    body: JSON.stringify("x".repeat(1024 * 1024 + 10)),
  });
  assertEquals(tooBig.status, 413);
  await tooBig.body?.cancel();
  const badKey = await fetch(`${agent.url}/v1/app/..%2Fescape`, { method: "PUT", headers, body: "{}" });
  assertEquals(badKey.status === 400 || badKey.status === 404, true);
  await badKey.body?.cancel();
  const notJson = await fetch(`${agent.url}/v1/app/x`, { method: "PUT", headers, body: "{nope" });
  assertEquals(notJson.status, 400);
  await notJson.body?.cancel();

  await Deno.mkdir(join(dirs.dockHome, "templates"), { recursive: true });
  await Deno.writeTextFile(
    join(dirs.dockHome, "templates", "bugfix.json"),
    JSON.stringify({
      name: "Bug fix",
      agent: "claude",
      branch: "fix/{{name}}",
      prompt: "Fix {{issue}}",
      variables: [{ id: "issue", label: "Issue" }],
    }),
  );
  await Deno.writeTextFile(
    join(dirs.dockHome, "templates", "broken.json"),
    JSON.stringify({ variables: [{ id: "1x" }] }),
  );
  // A command with a first prompt would be refused by every `POST tasks` (only an agent takes a prompt),
  // and so would an agent and a command both: each is listed with why, not as valid.
  await Deno.writeTextFile(
    join(dirs.dockHome, "templates", "script.json"),
    JSON.stringify({ command: "make test", prompt: "run the tests" }),
  );
  await Deno.writeTextFile(
    join(dirs.dockHome, "templates", "twice.json"),
    JSON.stringify({ agent: "claude", command: "make test" }),
  );
  const templates = (await get("/v1/templates")).body as { id: string; name?: string; error?: string }[];
  assertEquals(templates.map((t) => t.id), ["broken", "bugfix", "script", "twice"]);
  assertEquals(templates[1].name, "Bug fix");
  assertEquals(templates[1].error, undefined);
  assertStringIncludes(templates[0].error!, "variables[0].id");
  assertStringIncludes(templates[2].error!, "prompt: a first prompt needs an agent");
  assertStringIncludes(templates[3].error!, "command: give either agent or command, not both");

  await Deno.mkdir(join(dirs.dockHome, "themes"), { recursive: true });
  await Deno.writeTextFile(
    join(dirs.dockHome, "themes", "night.json"),
    JSON.stringify({ background: "#000" }),
  );
  assertEquals((await get("/v1/themes")).body, [{ background: "#000", id: "night" }]);
  client.close();
});
