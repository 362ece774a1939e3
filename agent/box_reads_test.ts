import { BUILD } from "../client/version.ts";
import { assert, assertEquals } from "../tests/assert.ts";
import { FakeClock } from "../tests/fake_clock.ts";
import { BoxHttp } from "./box_http.ts";
import { boxInfo, readSessions } from "./box_reads.ts";
import { MAX_LIST_BYTES } from "./sessions.ts";

function session(name: string) {
  return { name, agent: null, agent_state: "idle", exited: false };
}

Deno.test("readSessions: a box's list over its kept connections, its error message, refused past the bound", async () => {
  const folder = await Deno.makeTempDir();
  const socket = `${folder}/box.sock`;
  let answer = () => new Response(JSON.stringify([session("s1")]));
  const asked: string[] = [];
  const server = Deno.serve({ path: socket, onListen: () => {} }, (request) => {
    asked.push(`${request.method} ${new URL(request.url).pathname} ${request.headers.get("authorization")}`);
    return answer();
  });
  const http = new BoxHttp({ socket });
  const signal = new AbortController().signal;
  const options = { signal, maxBytes: MAX_LIST_BYTES };
  try {
    assertEquals(JSON.parse(await readSessions({ http, authorization: "Bearer cred" }, options)), [
      session("s1"),
    ]);
    assertEquals(asked, ["GET /v1/sessions Bearer cred"]);
    answer = () =>
      Response.json({ error: { code: "unauthorized", message: "no credential" } }, { status: 401 });
    const refused = await readSessions({ http, authorization: null }, options).catch((error) => error);
    assertEquals([refused.code, refused.message], ["box_error", "no credential"]);
    // Past the bound, with a length and streamed: refused, not held.
    const big = "[" + "x".repeat(MAX_LIST_BYTES) + "]";
    const bodies = [
      () => big,
      () => ReadableStream.from([big.slice(0, 1000), big.slice(1000)]).pipeThrough(new TextEncoderStream()),
    ];
    for (const body of bodies) {
      answer = () => new Response(body());
      const tooLarge = await readSessions({ http, authorization: null }, options).catch((error) => error);
      assertEquals([tooLarge.code, tooLarge.message.includes("larger than")], ["box_error", true]);
    }
  } finally {
    http.close();
    await server.shutdown();
    await Deno.remove(folder, { recursive: true });
  }
});

Deno.test("boxInfo: the health check's read, on the agent's clock, over a kept connection", async () => {
  const folder = await Deno.makeTempDir();
  const socket = `${folder}/box.sock`;
  let hang = false;
  const server = Deno.serve({ path: socket, onListen: () => {} }, async (request) => {
    if (hang) await new Promise((resolve) => request.signal.addEventListener("abort", resolve));
    return Response.json({ build: BUILD });
  });
  const http = new BoxHttp({ socket });
  const clock = new FakeClock(0);
  try {
    for (let i = 0; i < 3; i++) {
      assertEquals((await boxInfo({ http, authorization: null }, clock, 2000)).build, BUILD);
    }
    assertEquals(http.stats().opened, 1, "one connection, kept");
    hang = true;
    const pending = boxInfo({ http, authorization: null }, clock, 2000).catch((error) => error);
    await new Promise((resolve) => setTimeout(resolve, 20));
    clock.advance(2000);
    assert((await pending) instanceof Error);
  } finally {
    http.close();
    await server.shutdown();
    await Deno.remove(folder, { recursive: true });
  }
});
