/**
 * The WebSocket client over a unix socket and over TLS, against Deno's own WebSocket server and a
 * hand-written one (fragments, pings, a bad accept key).
 */
import { join } from "node:path";
import { assert, assertEquals, assertRejects, assertStringIncludes } from "../tests/assert.ts";
import { ensureCertificates } from "../daemon/tls.ts";
import { WebSocketConnectionError, WebSocketHandshakeError } from "./websocket.ts";
import { connectTlsWebSocket, connectUnixWebSocket, openWebSocket } from "./ws_client.ts";
import { webSocketsSocket } from "./paths.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Deno's WebSocket server: echoes, closes on `close:CODE`, refuses `/refuse` with a JSON 404. */
function echoHandler(closes: { code: number; reason: string }[]) {
  return (request: Request): Response => {
    if (new URL(request.url).pathname === "/refuse") {
      return Response.json({ error: { code: "not_found", message: "nothing here" } }, { status: 404 });
    }
    const { socket, response } = Deno.upgradeWebSocket(request);
    socket.binaryType = "arraybuffer";
    socket.onmessage = (event) => {
      const text = typeof event.data === "string" ? event.data : decoder.decode(new Uint8Array(event.data));
      const close = /^close:(\d+)$/.exec(text);
      if (close) socket.close(Number(close[1]), "server bye");
      else if (typeof event.data === "string") socket.send(`text:${text}`);
      else socket.send(new Uint8Array([...encoder.encode("bin:"), ...new Uint8Array(event.data)]));
    };
    socket.onclose = (event) => closes.push({ code: event.code, reason: event.reason });
    return response;
  };
}

Deno.test("unix socket: messages both ways, big ones too, and the close handshake both ways", async () => {
  const dir = await Deno.makeTempDir({ prefix: "dock-ws-" });
  const path = join(dir, "s.sock");
  const closes: { code: number; reason: string }[] = [];
  // Served where connectUnixWebSocket dials a daemon whose API socket is `path`: the socket beside it.
  const server = Deno.serve({ path: webSocketsSocket(path), onListen() {} }, echoHandler(closes));
  try {
    const ws = await connectUnixWebSocket(path, "/x");
    await ws.sendText("hi");
    assertEquals(await ws.next(), { binary: false, data: encoder.encode("text:hi") });
    const big = crypto.getRandomValues(new Uint8Array(65536)).map((b) => b | 1);
    const large = new Uint8Array(200_000).fill(7);
    await ws.sendBinary(big);
    const echoed = await ws.next();
    assertEquals(echoed?.binary, true);
    assertEquals(echoed?.data.subarray(4), big);
    await ws.sendBinary(large);
    assertEquals((await ws.next())?.data.length, 200_004);
    await ws.close(4001, "client bye");
    assert(ws.closed);
    await eventuallyTrue(() => closes.length === 1);
    assertEquals(closes[0], { code: 4001, reason: "client bye" });

    const second = await connectUnixWebSocket(path, "/x");
    await second.sendText("close:4321");
    assertEquals(await second.next(), null);
    assertEquals([second.closeCode, second.closeReason], [4321, "server bye"]);
    await second.ended;

    const refused = await assertRejects(() => connectUnixWebSocket(path, "/refuse"), WebSocketHandshakeError);
    assertEquals((refused as WebSocketHandshakeError).status, 404);
    assertEquals(
      JSON.parse(decoder.decode((refused as WebSocketHandshakeError).body)).error.code,
      "not_found",
    );
  } finally {
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a hand-written server: fragments are joined, pings answered, a wrong accept key refused", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = listener.addr.port;
  const served = (async () => {
    for (const mode of ["frames", "bad-accept", "chunked-error"]) {
      const conn = await listener.accept();
      const head = await readHead(conn);
      const key = /sec-websocket-key: (.+)\r\n/i.exec(head)![1];
      if (mode === "chunked-error") {
        await conn.write(encoder.encode(
          "HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n" +
            '9\r\n{"error":\r\n4\r\ntrue\r\n1\r\n}\r\n0\r\n\r\n',
        ));
        conn.close();
        continue;
      }
      const accept = mode === "bad-accept" ? "nope" : await acceptKey(key);
      await conn.write(encoder.encode(
        `HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
          `Sec-WebSocket-Accept: ${accept}\r\n\r\n`,
      ));
      if (mode === "bad-accept") {
        conn.close();
        continue;
      }
      // "hel" + ping + "lo" as a fragmented text message, then a close.
      await conn.write(
        new Uint8Array([
          0x01,
          3,
          ...encoder.encode("hel"),
          0x89,
          2,
          ...encoder.encode("pp"),
          0x80,
          2,
          ...encoder.encode("lo"),
          0x88,
          2,
          0x0f,
          0xa0,
        ]),
      );
      // The client's pong (masked "pp") and its close answer (masked 4000) arrive.
      const reply = new Uint8Array(64);
      let got = 0;
      while (got < 16) {
        const n = await conn.read(reply.subarray(got));
        if (n === null) break;
        got += n;
      }
      assertEquals(reply[0], 0x8a, "a pong");
      assertEquals(reply[8], 0x88, "a close");
      conn.close();
    }
  })();
  try {
    const ws = await openWebSocket(await Deno.connect({ hostname: "127.0.0.1", port }), { path: "/" });
    assertEquals(await ws.next(), { binary: false, data: encoder.encode("hello") });
    assertEquals(await ws.next(), null);
    assertEquals(ws.closeCode, 4000);
    await assertRejects(
      async () => await openWebSocket(await Deno.connect({ hostname: "127.0.0.1", port }), { path: "/" }),
      WebSocketConnectionError,
      "Sec-WebSocket-Accept",
    );
    const refused = await assertRejects(
      async () => await openWebSocket(await Deno.connect({ hostname: "127.0.0.1", port }), { path: "/" }),
      WebSocketHandshakeError,
    );
    assertEquals((refused as WebSocketHandshakeError).status, 401);
    assertEquals(decoder.decode((refused as WebSocketHandshakeError).body), '{"error":true}');
    await served;
  } finally {
    listener.close();
  }
});

Deno.test("TLS: pinned CA and a bearer credential; an unpinned CA fails before anything is sent", async () => {
  const dir = await Deno.makeTempDir({ prefix: "dock-ws-tls-" });
  const certs = await ensureCertificates(join(dir, "box"), { addresses: ["127.0.0.1", "localhost"] });
  const other = await ensureCertificates(join(dir, "other"), { addresses: ["127.0.0.1"] });
  const closes: { code: number; reason: string }[] = [];
  const echo = echoHandler(closes);
  let requests = 0;
  const server = Deno.serve(
    { port: 0, hostname: "127.0.0.1", cert: certs.certPem, key: certs.keyPem, onListen() {} },
    (request) => {
      requests++;
      if (request.headers.get("authorization") !== "Bearer s3cret") {
        return Response.json({ error: { code: "unauthorized", message: "who?" } }, { status: 401 });
      }
      return echo(request);
    },
  );
  const port = server.addr.port;
  try {
    for (const hostname of ["127.0.0.1", "localhost"]) {
      const ws = await connectTlsWebSocket({
        hostname,
        port,
        caCerts: [certs.caPem],
        path: "/attach?cols=80",
        headers: { authorization: "Bearer s3cret" },
      });
      await ws.sendBinary(encoder.encode("keys"));
      assertEquals(decoder.decode((await ws.next())!.data), "bin:keys");
      await ws.close(1000);
    }
    const denied = await assertRejects(
      () =>
        connectTlsWebSocket({
          hostname: "127.0.0.1",
          port,
          caCerts: [certs.caPem],
          path: "/",
          headers: { authorization: "Bearer wrong" },
        }),
      WebSocketHandshakeError,
    );
    assertEquals((denied as WebSocketHandshakeError).status, 401);
    const before = requests;
    const forged = await assertRejects(() =>
      connectTlsWebSocket({ hostname: "127.0.0.1", port, caCerts: [other.caPem], path: "/" })
    );
    assert(!(forged instanceof WebSocketHandshakeError) && !(forged instanceof WebSocketConnectionError));
    assertStringIncludes(String(forged), "certificate");
    assertEquals(requests, before, "no request reached the server");
  } finally {
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});

async function readHead(conn: Deno.Conn): Promise<string> {
  let text = "";
  const buffer = new Uint8Array(4096);
  while (!text.includes("\r\n\r\n")) {
    const n = await conn.read(buffer);
    if (n === null) break;
    text += decoder.decode(buffer.subarray(0, n));
  }
  return text;
}

async function acceptKey(key: string): Promise<string> {
  const digest = await crypto.subtle.digest(
    "SHA-1",
    encoder.encode(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"),
  );
  return btoa(String.fromCharCode(...new Uint8Array(digest)));
}

async function eventuallyTrue(check: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
