import { assert, assertEquals, assertRejects } from "../tests/assert.ts";
import { DockError, TransportError } from "./errors.ts";
import { failedBeforeSending, Transport } from "./http.ts";

/** A server whose first `cuts` streams break after two events, as a server cutting off a slow client does. */
function sseServer(cuts: number) {
  const resumedFrom: (string | null)[] = [];
  let next = 1;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    resumedFrom.push(request.headers.get("last-event-id"));
    const broken = resumedFrom.length <= cuts;
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      // One event per pull, so both are written before the stream ends or breaks.
      pull(controller) {
        if (sent++ < 2) {
          controller.enqueue(new TextEncoder().encode(`id: ${next}\ndata: {"n":${next++}}\n\n`));
        } else if (broken) controller.error(new Error("cut off"));
        else controller.close();
      },
    });
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  });
  return { server, resumedFrom, url: `http://127.0.0.1:${server.addr.port}` };
}

Deno.test("Transport.stream follows a stream that breaks after events again from the last one", async () => {
  const { server, resumedFrom, url } = sseServer(2);
  const transport = new Transport({ url });
  try {
    const seen: number[] = [];
    for await (const message of transport.stream<{ n: number }>("/v1/events", { after: 0 })) {
      seen.push(message.n);
    }
    assertEquals(seen, [1, 2, 3, 4, 5, 6]);
    assertEquals(resumedFrom, ["0", "2", "4"]);
  } finally {
    transport.close();
    await server.shutdown();
  }
});

Deno.test("Transport.stream: a stream that breaks before any event is the caller's error", async () => {
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, () => {
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => controller.error(new Error("cut")),
    });
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  });
  const transport = new Transport({ url: `http://127.0.0.1:${server.addr.port}` });
  try {
    await assertRejects(async () => {
      for await (const _ of transport.stream("/v1/events")) { /* nothing arrives */ }
    });
  } finally {
    transport.close();
    await server.shutdown();
  }
});

/** A TCP port nothing listens on right now. */
function closedPort(): number {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  return port;
}

/** A server that handles each connection with `onConnection`, then closes it. */
function rawServer(onConnection: (conn: Deno.Conn) => Promise<void>) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const serving = (async () => {
    for await (const conn of listener) {
      await onConnection(conn).catch(() => {});
      try {
        conn.close();
      } catch { /* closed already */ }
    }
  })();
  return {
    port: (listener.addr as Deno.NetAddr).port,
    async [Symbol.asyncDispose]() {
      listener.close();
      await serving.catch(() => {});
    },
  };
}

async function failure(transport: Transport, options: { method?: string; body?: unknown } = {}) {
  try {
    const error = await assertRejects(() => transport.json("/v1/x", options), TransportError);
    return error as TransportError;
  } finally {
    transport.close();
  }
}

Deno.test("a refused connection never sent the request", async () => {
  const error = await failure(new Transport({ url: `http://127.0.0.1:${closedPort()}` }));
  assertEquals([error.neverSent, error.code, error.status], [true, "unreachable", 503]);
  assert(error instanceof DockError);
});

Deno.test("a missing unix socket never sent the request", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const error = await failure(new Transport({ socket: `${dir}/dockd.sock` }));
    assertEquals(error.neverSent, true);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a TLS handshake that fails never sent the request", async () => {
  // A plain TCP server that hangs up at once: the handshake ends before any request is written.
  await using server = rawServer(() => Promise.resolve());
  const error = await failure(new Transport({ url: `https://127.0.0.1:${server.port}` }));
  assertEquals(error.neverSent, true);
});

Deno.test("a connection that breaks after the request went out may have been acted on", async () => {
  // Reads the request, then hangs up without an answer.
  await using server = rawServer(async (conn) => {
    await conn.read(new Uint8Array(64 * 1024));
  });
  const error = await failure(new Transport({ url: `http://127.0.0.1:${server.port}` }), {
    method: "POST",
    body: { text: "hello" },
  });
  assertEquals([error.neverSent, error.status], [false, 503]);
});

Deno.test("failedBeforeSending reads the phase Deno's fetch names in its causes", () => {
  const failed = (message: string) =>
    new TypeError("fetch failed", {
      cause: new Error(`error sending request for url (http://x/): ${message}`),
    });
  for (
    const before of [
      "client error (Connect): dns error: failed to lookup address information: Name or service not known",
      "client error (Connect): tcp connect error: Connection refused (os error 111)",
      "client error (Connect): No such file or directory (os error 2)",
      "client error (Connect): invalid peer certificate: UnknownIssuer",
      "client error (Connect): tls handshake eof",
    ]
  ) assertEquals(failedBeforeSending(failed(before)), true, before);
  for (
    const after of [
      "client error (SendRequest): connection closed before message completed",
      "client error (SendRequest): connection error: Connection reset by peer (os error 104)",
      "request or response body error",
    ]
  ) assertEquals(failedBeforeSending(failed(after)), false, after);
});

Deno.test("an error answer is a DockError, not a transport failure", async () => {
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, onListen: () => {} },
    () => Response.json({ error: { code: "nope", message: "no" } }, { status: 503 }),
  );
  const transport = new Transport({ url: `http://127.0.0.1:${server.addr.port}` });
  try {
    const error = await assertRejects(() => transport.json("/v1/x"), DockError) as DockError;
    assertEquals([error.code, error.status, error instanceof TransportError], ["nope", 503, false]);
  } finally {
    transport.close();
    await server.shutdown();
  }
});
