/**
 * The relay's box client against real servers on a unix socket: a hand-written HTTP/1.1 server (so a
 * test can close a connection exactly where a dying box would) and the box's own listener.
 */
import { assert, assertEquals, assertRejects } from "../tests/assert.ts";
import { serveGuarded } from "../core/listen.ts";
import { rawServer } from "../tests/raw_http_server.ts";
import { type BoxAnswer, BoxHttp, BoxHttpError } from "./box_http.ts";

const encoder = new TextEncoder();

async function text(answer: BoxAnswer): Promise<string> {
  return await new Response(answer.body).text();
}

/** Waits (without a fixed sleep) until `check` holds. */
async function until(check: () => boolean, what: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (check()) return;
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error(`timed out waiting for ${what}`);
}

Deno.test("box client: sequential requests share one kept connection", async () => {
  const server = await rawServer(({ path }) => ({ body: `answer to ${path}` }));
  const http = new BoxHttp({ socket: server.socket });
  try {
    for (let i = 0; i < 20; i++) {
      const method = i % 2 ? "POST" : "GET";
      const body = method === "POST" ? encoder.encode(`{"i":${i}}`) : undefined;
      const response = await http.request({ method, path: `/v1/x${i}`, headers: {}, body });
      assertEquals(await text(response), `answer to /v1/x${i}`);
    }
    assertEquals(server.counts.connections, 1);
    assertEquals(server.seen.map((r) => r.nth), Array.from({ length: 20 }, (_, i) => i + 1));
    assertEquals(server.seen[1].body, '{"i":1}');
    assertEquals(http.stats(), { open: 1, idle: 1, opened: 1 });
  } finally {
    http.close();
    await server.stop();
  }
});

Deno.test("box client: a POST whose connection dies after the box read it runs once and fails", async () => {
  // The box reads the POST whole (its handler runs) and the connection ends before an answer: the
  // POST must not be sent again, on this connection or a fresh one.
  const server = await rawServer(({ method }) => method === "POST" ? "close" : { body: "ok" });
  const http = new BoxHttp({ socket: server.socket });
  try {
    await text(await http.request({ method: "GET", path: "/v1/info", headers: {} })); // a kept connection
    const error = await assertRejects(
      () => http.request({ method: "POST", path: "/v1/act", headers: {}, body: encoder.encode("{}") }),
      BoxHttpError,
      "before answering",
    ) as BoxHttpError;
    assertEquals(error.neverSent, false);
    assertEquals(server.seen.filter((r) => r.method === "POST").length, 1);
    // Also on a fresh connection.
    http.close();
    const fresh = new BoxHttp({ socket: server.socket });
    await assertRejects(
      () => fresh.request({ method: "POST", path: "/v1/act", headers: {}, body: encoder.encode("{}") }),
      BoxHttpError,
    );
    assertEquals(server.seen.filter((r) => r.method === "POST").length, 2);
    fresh.close();
  } finally {
    http.close();
    await server.stop();
  }
});

Deno.test("box client: a GET that a kept connection lost is sent again on a fresh one", async () => {
  // The second request on any connection is dropped unanswered, as by a box closing an idle connection
  // just as the request went out.
  const server = await rawServer(({ nth }) => nth === 2 ? "close" : { body: "ok" });
  const http = new BoxHttp({ socket: server.socket });
  try {
    assertEquals(await text(await http.request({ method: "GET", path: "/v1/a", headers: {} })), "ok");
    assertEquals(await text(await http.request({ method: "GET", path: "/v1/b", headers: {} })), "ok");
    assertEquals(server.seen.map((r) => `${r.path}#${r.nth}`), ["/v1/a#1", "/v1/b#2", "/v1/b#1"]);
    assertEquals(server.counts.connections, 2);
  } finally {
    http.close();
    await server.stop();
  }
});

Deno.test("box client: an idle connection the box closed is dropped before use, so a POST goes out fresh", async () => {
  const server = await rawServer(({ nth }) => nth === 1 ? { body: "ok", headers: {} } : { body: "late" });
  const http = new BoxHttp({ socket: server.socket });
  try {
    await text(await http.request({ method: "GET", path: "/v1/a", headers: {} }));
    assertEquals(http.stats().idle, 1);
    // The box ends its side of every connection (as its idle timeout would).
    await server.stop();
    await until(() => http.stats().idle === 0, "the closed idle connection to leave the pool");
    assertEquals(http.stats().open, 0);
  } finally {
    http.close();
  }
});

Deno.test("box client: a box that is not there is a never-sent failure", async () => {
  const http = new BoxHttp({ socket: "/nonexistent/dock-box.sock" });
  const error = await assertRejects(
    () => http.request({ method: "POST", path: "/v1/act", headers: {}, body: encoder.encode("{}") }),
    BoxHttpError,
    "cannot reach",
  ) as BoxHttpError;
  assertEquals(error.neverSent, true);
  assertEquals(http.stats().open, 0);
});

Deno.test("box client: a chunked stream holds its connection until read whole; a cancelled one is closed", async () => {
  const chunked = "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n" +
    "5\r\nhello\r\n7;ext=1\r\n, world\r\n0\r\nx-trailer: 1\r\n\r\n";
  const server = await rawServer(({ path }) => path === "/v1/stream" ? { raw: chunked } : { body: "ok" });
  const http = new BoxHttp({ socket: server.socket });
  try {
    const response = await http.request({ method: "GET", path: "/v1/stream", headers: {} });
    assertEquals(response.headers.get("content-type"), "text/event-stream");
    assertEquals(http.stats().idle, 0); // still busy: its body is unread
    assert(response.body instanceof ReadableStream, "a chunked answer streams");
    assertEquals(await text(response), "hello, world");
    assertEquals(http.stats(), { open: 1, idle: 1, opened: 1 });
    const again = await http.request({ method: "GET", path: "/v1/stream", headers: {} });
    await (again.body as ReadableStream).cancel();
    assertEquals(http.stats(), { open: 0, idle: 0, opened: 1 });
    assertEquals(await text(await http.request({ method: "GET", path: "/v1/info", headers: {} })), "ok");
    assertEquals(server.counts.connections, 2);
  } finally {
    http.close();
    await server.stop();
  }
});

Deno.test("box client: an answer's header past the bound is refused", async () => {
  const server = await rawServer(() => ({ headers: { "x-big": "a".repeat(70 * 1024) }, body: "ok" }));
  const http = new BoxHttp({ socket: server.socket });
  try {
    await assertRejects(
      () => http.request({ method: "GET", path: "/v1/info", headers: {} }),
      BoxHttpError,
      "header passed 65536 bytes",
    );
    assertEquals(server.counts.requests, 1); // not sent again: the box's answer itself is wrong
  } finally {
    http.close();
    await server.stop();
  }
});

Deno.test("box client: connections per box are capped; requests past the cap wait their turn", async () => {
  let release = () => {};
  const gate = new Promise<void>((resolve) => release = resolve);
  const server = await rawServer(async () => {
    await gate;
    return { body: "ok" };
  });
  const http = new BoxHttp({ socket: server.socket }, { maxConnections: 2 });
  try {
    const answers = Array.from(
      { length: 6 },
      (_, i) =>
        http.request({ method: i % 2 ? "POST" : "GET", path: `/v1/${i}`, headers: {}, body: undefined })
          .then(text),
    );
    await until(() => server.counts.requests === 2, "two requests at the box");
    assertEquals(http.stats().open, 2);
    release();
    assertEquals(await Promise.all(answers), Array(6).fill("ok"));
    assert(server.counts.peak <= 2, `at most 2 connections at once, saw ${server.counts.peak}`);
  } finally {
    http.close();
    await server.stop();
  }
});

Deno.test("box client: a burst of 50 requests at once keeps its connections for the next burst", async () => {
  let release = () => {};
  let gate = new Promise<void>((resolve) => release = resolve);
  const server = await rawServer(async () => {
    await gate;
    return { body: "ok" };
  });
  const http = new BoxHttp({ socket: server.socket });
  const burst = () =>
    Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        http.request({ method: "GET", path: `/v1/${i}`, headers: {} }).then(text)),
    );
  try {
    // Held at the box until all 50 are there: 50 connections open at once.
    const first = burst();
    await until(() => server.counts.requests === 50, "50 requests at the box");
    release();
    assertEquals(await first, Array(50).fill("ok"));
    assertEquals(http.stats(), { open: 50, idle: 50, opened: 50 });
    gate = Promise.resolve();
    assertEquals(await burst(), Array(50).fill("ok"));
    // The relay's 50-at-once bench: a pool of 32 opened 18 fresh connections for every burst.
    assertEquals(http.stats().opened, 50, "the second burst opened none");
  } finally {
    http.close();
    await server.stop();
  }
});

Deno.test("box client: a line break in a header is refused before anything is sent", async () => {
  const http = new BoxHttp({ socket: "/nonexistent/dock-box.sock" });
  await assertRejects(
    () => http.request({ method: "GET", path: "/v1/info", headers: { "x-a": "1\r\nx-forged: 1" } }),
    TypeError,
    "line break",
  );
});

Deno.test("box client: compressed answers of the box's listener come through as sent", async () => {
  const dir = await Deno.makeTempDir();
  const socket = `${dir}/box.sock`;
  const big = JSON.stringify({ items: Array.from({ length: 3000 }, (_, i) => ({ i, name: `item ${i}` })) });
  // The box's own listener: it compresses what the client accepts compressed (Deno.serve does not).
  const server = serveGuarded(
    { path: socket },
    () => new Response(big, { headers: { "content-type": "application/json" } }),
    { log: () => {} },
  );
  const http = new BoxHttp({ socket });
  try {
    const plain = await http.request({ method: "GET", path: "/v1/list", headers: {} });
    assertEquals(plain.headers.get("content-encoding"), undefined);
    assert(plain.body instanceof ReadableStream, "an answer past SMALL_BODY streams");
    assertEquals(await text(plain), big);
    const gzip = await http.request({
      method: "GET",
      path: "/v1/list",
      headers: { "accept-encoding": "gzip" },
    });
    assertEquals(gzip.headers.get("content-encoding"), "gzip");
    assert(gzip.body instanceof Uint8Array, "a small answer comes read whole");
    const bytes = gzip.body;
    assert(bytes.length < big.length / 3, `compressed: ${bytes.length} bytes`);
    const unzipped = new Response(new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip")));
    assertEquals(await unzipped.text(), big);
    assertEquals(http.stats().opened, 1);
  } finally {
    http.close();
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});
