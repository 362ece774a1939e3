/**
 * The relay and compression, on a real `dockd` and `dock agent`: a box's answer reaches the laptop as the
 * box encoded it (once), and a small answer the box left uncompressed on purpose (`no-transform`) is not
 * compressed by the agent either.
 */
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { AgentClient } from "../client/agent.ts";
import { killProcessesUnder, makeDirs, startAgent, startBox, stopWithin } from "./harness.ts";

Deno.test("relay: answers keep the box's encoding; small ones are not compressed by the agent", async () => {
  const dirs = await makeDirs();
  const box = await startBox({ dirs });
  const agent = await startAgent(dirs);
  const client = new AgentClient({ url: agent.url, token: agent.token, origin: "test" });
  try {
    assert((await client.addLocal()).online, "the local box is online");
    const get = async (path: string) => {
      // fetch asks for "gzip, br" and decodes what it gets: the text must still be the box's JSON.
      const response = await fetch(`${agent.url}/v1/boxes/local/api/${path}`, {
        headers: { authorization: `Bearer ${agent.token}`, "accept-encoding": "gzip, br" },
      });
      const text = await response.text();
      return { response, json: JSON.parse(text) };
    };
    const info = await get("info");
    assertEquals(info.response.status, 200);
    assertEquals(info.json.build, (await box.client.info()).build);
    // The box marked it no-transform (core/http.ts json()); the agent used to brotli it anyway.
    assertEquals(info.response.headers.get("content-encoding"), null);
    assertStringIncludes(info.response.headers.get("cache-control") ?? "", "no-store");
    // Through the raw bytes: a box answer with its encoding is passed on once, never encoded twice.
    const raw = await new Deno.Command("curl", {
      args: [
        "-s",
        "-D",
        "-",
        "-o",
        "/dev/null",
        "-H",
        "accept-encoding: gzip",
        "-H",
        `authorization: Bearer ${agent.token}`,
        `${agent.url}/v1/boxes/local/api/info`,
      ],
      stdout: "piped",
    }).output();
    const head = new TextDecoder().decode(raw.stdout).toLowerCase();
    assertEquals(head.match(/^content-encoding:/gm) ?? [], [], head);
  } finally {
    client.close();
    await stopWithin(agent);
    await stopWithin(box);
    killProcessesUnder(dirs.root);
    await Deno.remove(dirs.root, { recursive: true });
  }
});
