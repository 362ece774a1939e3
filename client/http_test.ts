import { assert, assertEquals, assertRejects } from "../tests/assert.ts";
import { DockError, TransportError } from "./errors.ts";
import { failedBeforeSending, readLines, Transport } from "./http.ts";

/** A server whose first `cuts` streams break after two events, as a server cutting off a slow client does. */
function sseServer(cuts: number) {
  const resumedFrom: (string | null)[] = [];
  let next = 1;
  const server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, (request) => {
    // The caller's `after` comes as a query, a resume as the header.
    const after = new URL(request.url).searchParams.get("after");
    resumedFrom.push(request.headers.get("last-event-id") ?? (after === null ? null : `after=${after}`));
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
    assertEquals(resumedFrom, ["after=0", "2", "4"]);
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

/** A byte stream (as fetch's bodies are) of `chunks`; `cancelled` once its reader gives up early. */
function byteStream(chunks: Uint8Array[]) {
  const state = { cancelled: false };
  const stream = new ReadableStream({
    type: "bytes",
    pull(controller) {
      const chunk = chunks.shift();
      if (!chunk) {
        controller.close();
        return controller.byobRequest?.respond(0); // a read waiting for the end gets it
      }
      const request = controller.byobRequest!;
      const view = request.view!;
      const n = Math.min(view.byteLength, chunk.byteLength);
      new Uint8Array(view.buffer, view.byteOffset, n).set(chunk.subarray(0, n));
      if (n < chunk.byteLength) chunks.unshift(chunk.subarray(n));
      request.respond(n);
    },
    cancel() {
      state.cancelled = true;
    },
  });
  return { stream, state };
}

Deno.test("readLines reads a byte stream into one buffer: lines across chunks, characters split between them", async () => {
  const bytes = new TextEncoder().encode(`first\nsé${"x".repeat(100_000)}cond\r\nthird ✓`);
  // Chunks cut at odd places, one inside the two bytes of "é".
  const cuts = [3, 9, 70_000, 70_001];
  const chunks = [0, ...cuts].map((start, i) => bytes.slice(start, cuts[i] ?? bytes.length));
  const lines: string[] = [];
  for await (const line of readLines(byteStream(chunks).stream)) lines.push(line);
  assertEquals(lines, ["first", `sé${"x".repeat(100_000)}cond`, "third ✓"]);

  // A reader that stops early cancels the body, as leaving a for-await over it does.
  const early = byteStream([new TextEncoder().encode("a\nb\nc\n")]);
  for await (const line of readLines(early.stream)) {
    assertEquals(line, "a");
    break;
  }
  assert(early.state.cancelled);
});

Deno.test("a read after the server restarted behind a kept connection reaches the new server", async () => {
  const dir = await Deno.makeTempDir();
  const socket = `${dir}/box.sock`;
  let generation = 0;
  const serve = () => {
    const mine = ++generation;
    return Deno.serve({ path: socket, onListen() {} }, () => Response.json({ generation: mine }));
  };
  let server = serve();
  const transport = new Transport({ socket });
  try {
    assertEquals(await transport.json("/v1/info"), { generation: 1 });
    await server.shutdown(); // a daemon stopping: its socket goes, kept connections close
    server = serve();
    assertEquals(await transport.json("/v1/info"), { generation: 2 });
  } finally {
    transport.close();
    await server.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a read that cannot connect is tried once (no kept connection to retry past)", async () => {
  const dir = await Deno.makeTempDir();
  const transport = new Transport({ socket: `${dir}/nobody.sock` });
  const real = globalThis.fetch;
  let tries = 0;
  globalThis.fetch = ((...args: Parameters<typeof fetch>) => (tries++, real(...args))) as typeof fetch;
  try {
    // `fetch` only: `json()` GETs of a socket go through their own one-shot path.
    const error = await assertRejects(() => transport.fetch("/v1/info"), TransportError) as TransportError;
    assertEquals([tries, error.neverSent], [1, true]);
  } finally {
    globalThis.fetch = real;
    transport.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a keyed write goes on the kept connection, as a read does; a plain write on a new one each time", async () => {
  const dir = await Deno.makeTempDir();
  const socket = `${dir}/box.sock`;
  // A bare HTTP/1.1 server that counts the connections it accepts and answers each request on its own.
  const listener = Deno.listen({ transport: "unix", path: socket });
  let connections = 0;
  const serving = (async () => {
    for await (const conn of listener) {
      connections++;
      (async () => {
        const buffer = new Uint8Array(64 * 1024);
        let held = "";
        for (;;) {
          const n = await conn.read(buffer).catch(() => null);
          if (n === null) break;
          held += new TextDecoder().decode(buffer.subarray(0, n));
          for (;;) {
            const end = held.indexOf("\r\n\r\n");
            if (end < 0) break;
            const length = Number(/content-length: (\d+)/i.exec(held.slice(0, end))?.[1] ?? 0);
            if (held.length < end + 4 + length) break;
            held = held.slice(end + 4 + length);
            const body = '{"ok":true}';
            await conn.write(
              new TextEncoder().encode(
                `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
              ),
            );
          }
        }
        conn.close();
      })();
    }
  })();
  const transport = new Transport({ socket });
  try {
    for (let i = 0; i < 3; i++) {
      assertEquals(
        await transport.json("/v1/sessions/s/keys", {
          body: { keys: ["x"], key: `k${i}` },
          idempotent: true,
        }),
        {
          ok: true,
        },
      );
    }
    assertEquals(connections, 1, "three keyed writes, one kept connection");
    for (let i = 0; i < 3; i++) {
      assertEquals(await transport.json("/v1/sessions/s/send", { body: { text: "x" } }), { ok: true });
    }
    assertEquals(connections, 4, "a write without a key never rides a kept connection");
  } finally {
    transport.close();
    listener.close();
    await serving.catch(() => {});
    await Deno.remove(dir, { recursive: true });
  }
});
