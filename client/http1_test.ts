import { assertEquals, assertRejects, assertThrows } from "../tests/assert.ts";
import { DockError, TransportError } from "./errors.ts";
import { getOnce, parseAnswer, parseHead } from "./http1.ts";
import { Transport } from "./http.ts";

const bytes = (text: string) => new TextEncoder().encode(text);
const text = (body: Uint8Array) => new TextDecoder().decode(body);

Deno.test("parseAnswer reads a body by length, by chunks and to the close", () => {
  const sized = parseAnswer(bytes("HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: b\r\n\r\nhello"));
  assertEquals([sized.status, sized.headers.get("x-a"), text(sized.body)], [200, "b", "hello"]);
  const chunked = parseAnswer(
    bytes(
      "HTTP/1.1 404 Not Found\r\ntransfer-encoding: chunked\r\n\r\n4;ext=1\r\nwiki\r\n5\r\npedia\r\n0\r\nT: x\r\n\r\n",
    ),
  );
  assertEquals([chunked.status, text(chunked.body)], [404, "wikipedia"]);
  const closed = parseAnswer(bytes("HTTP/1.0 200 OK\r\n\r\nto the end"));
  assertEquals(text(closed.body), "to the end");
});

Deno.test("parseAnswer refuses a cut or malformed answer", () => {
  for (
    const answer of [
      "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nshort",
      "HTTP/1.1 200 OK\r\nContent-Length: 2",
      "SSH-2.0-OpenSSH\r\n\r\n",
      "HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
      "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n",
      "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n10\r\nabc",
    ]
  ) assertThrows(() => parseAnswer(bytes(answer)), Error);
});

Deno.test("getOnce and a oneShotReads Transport read from a real server, over TCP and a unix socket", async () => {
  const dir = await Deno.makeTempDir();
  const seen: { host: string | null; auth: string | null; origin: string | null; url: string }[] = [];
  const handler = (request: Request) => {
    seen.push({
      host: request.headers.get("host"),
      auth: request.headers.get("authorization"),
      origin: request.headers.get("x-dock-origin"),
      url: request.url,
    });
    const path = new URL(request.url).pathname;
    if (path === "/v1/missing") {
      return Response.json({ error: { code: "not_found", message: "no such thing" } }, { status: 404 });
    }
    if (path === "/v1/stream") {
      // A streamed body goes out chunked.
      const parts = ['{"items":[', "1,2", ",3]}"];
      return new Response(
        new ReadableStream({
          pull(controller) {
            const next = parts.shift();
            if (next === undefined) controller.close();
            else controller.enqueue(bytes(next));
          },
        }),
        { headers: { "content-type": "application/json" } },
      );
    }
    return Response.json({ path, query: new URL(request.url).search });
  };
  const tcp = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, handler);
  const socket = `${dir}/s.sock`;
  const unix = Deno.serve({ path: socket, transport: "unix", onListen() {} }, handler);
  try {
    const answer = await getOnce({ hostname: "127.0.0.1", port: tcp.addr.port }, "/x?a=1", { host: "here" });
    assertEquals([answer.status, JSON.parse(text(answer.body))], [200, { path: "/x", query: "?a=1" }]);
    assertEquals(seen[0].host, "here");

    const agent = new Transport({
      url: `http://127.0.0.1:${tcp.addr.port}`,
      token: "t0k",
      origin: "cli",
      oneShotReads: true,
    });
    assertEquals(await agent.json("/v1/stream"), { items: [1, 2, 3] });
    assertEquals([seen[1].auth, seen[1].origin], ["Bearer t0k", "cli"]);
    const relayed = new Transport({
      url: `http://127.0.0.1:${tcp.addr.port}`,
      box: "b1",
      oneShotReads: true,
    });
    assertEquals(await relayed.json("/v1/locations", { query: { q: "a b" } }), {
      path: "/v1/boxes/b1/api/locations",
      query: "?q=a+b",
    });
    const error = await assertRejects(() => agent.json("/v1/missing"), DockError) as DockError;
    assertEquals([error.code, error.status, error.message], ["not_found", 404, "no such thing"]);

    const box = new Transport({ socket, oneShotReads: true });
    assertEquals(await box.json("/v1/info"), { path: "/v1/info", query: "" });
    box.close();
    agent.close();
    relayed.close();

    const refused = await assertRejects(
      () => getOnce({ socket: `${dir}/nothing.sock` }, "/", { host: "localhost" }),
      TransportError,
    ) as TransportError;
    assertEquals(refused.neverSent, true);
    await assertRejects(
      () => getOnce({ socket }, "/", { host: "localhost", headers: { "x-a": "b\r\nx-forged: 1" } }),
      DockError,
    );
  } finally {
    await tcp.shutdown();
    await unix.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("getOnce gives up when its signal aborts while the server says nothing", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const accepted = listener.accept();
  const controller = new AbortController();
  const request = getOnce({ hostname: "127.0.0.1", port: listener.addr.port }, "/", {
    host: "x",
    signal: controller.signal,
  });
  const conn = await accepted;
  controller.abort(new Error("given up"));
  await assertRejects(() => request, Error, "given up");
  conn.close();
  listener.close();
});

Deno.test("parseHead: fields joined when sent twice, the minor version read, a name that is not a token refused", () => {
  const head = parseHead("HTTP/1.0 200 OK\r\nVary: a\r\nvary: b\r\nContent-Type: text/plain");
  assertEquals(head.status, 200);
  assertEquals(head.minor, 0);
  assertEquals(head.headers.get("vary"), "a, b");
  assertEquals(head.headers.get("content-type"), "text/plain");
  assertThrows(() => parseHead("HTTP/1.1 200 OK\r\nbad name: x"), Error, "malformed header line");
  assertThrows(() => parseHead("HTTP/2 200"), Error, "not an HTTP/1.1 status line");
});
