import { assert, assertEquals } from "../tests/assert.ts";
import { ensureCertificates } from "../daemon/tls.ts";
import { listeningPorts } from "../tests/harness.ts";
import { until } from "../tests/wait.ts";
import { serveGuarded, type ServeGuardedOptions } from "./listen.ts";
import { mayAskForWebSocket } from "./tls_hop.ts";
import { connectTlsWebSocket } from "./ws_client.ts";

function hello(request: Request): Response {
  const url = new URL(request.url);
  if (url.pathname === "/ws") {
    const { socket, response } = Deno.upgradeWebSocket(request);
    socket.onmessage = (message) => socket.send(`echo:${message.data}`);
    return response;
  }
  if (url.pathname === "/stream") {
    let timer: ReturnType<typeof setInterval>;
    let n = 0;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        timer = setInterval(() => {
          controller.enqueue(new TextEncoder().encode(`tick ${n++}\n`));
          if (n === 6) {
            clearInterval(timer);
            controller.close();
          }
        }, 50);
      },
      cancel: () => clearInterval(timer),
    });
    return new Response(body);
  }
  return new Response("ok");
}

async function withServer(
  options: Partial<ServeGuardedOptions>,
  fn: (port: number, stats: () => ReturnType<ReturnType<typeof serveGuarded>["stats"]>) => Promise<void>,
) {
  const server = serveGuarded({ hostname: "127.0.0.1", port: 0 }, hello, { log: () => {}, ...options });
  try {
    await fn(server.addr.port, server.stats);
  } finally {
    await server.shutdown();
  }
}

/** A box's certificates for 127.0.0.1, in a folder of their own (`dir`). */
async function loopbackCertificates() {
  const dir = await Deno.makeTempDir();
  return { dir, ...await ensureCertificates(dir, { addresses: ["127.0.0.1"] }) };
}

/** A TLS listener on a free loopback port with `certificates`. */
function tlsTarget(certificates: { certPem: string; caPem: string; keyPem: string }) {
  return {
    hostname: "127.0.0.1",
    port: 0,
    cert: certificates.certPem + certificates.caPem,
    key: certificates.keyPem,
  };
}

/** Resolves with what the server sends until it closes the connection (null on a reset). */
async function readUntilClosed(conn: Deno.Conn): Promise<string | null> {
  const buffer = new Uint8Array(4096);
  let text = "";
  try {
    while (true) {
      const n = await conn.read(buffer);
      if (n === null) return text;
      text += new TextDecoder().decode(buffer.subarray(0, n));
    }
  } catch {
    return null;
  } finally {
    conn.close();
  }
}

/** What the server sends until `marker` has come (the connection stays open). */
async function readUntil(conn: Deno.Conn, marker: string): Promise<string> {
  const buffer = new Uint8Array(4096);
  let text = "";
  while (!text.includes(marker)) {
    const n = await conn.read(buffer);
    if (n === null) throw new Error(`closed before ${marker}: ${text}`);
    text += new TextDecoder().decode(buffer.subarray(0, n));
  }
  return text;
}

Deno.test("serveGuarded: answers requests, keeps a WebSocket open past the idle timeout", async () => {
  await withServer({ idleMs: 100 }, async (port) => {
    const response = await fetch(`http://127.0.0.1:${port}/`);
    assertEquals(await response.text(), "ok");
    const ws = new WebSocket(`ws://127.0.0.1:${port}/ws`);
    await new Promise((resolve) => ws.onopen = resolve);
    const replies: string[] = [];
    const next = () =>
      new Promise<void>((resolve) => ws.onmessage = (m) => (replies.push(m.data), resolve()));
    ws.send("one");
    await next();
    // Three idle timeouts later the upgraded connection is still served.
    const stream = await fetch(`http://127.0.0.1:${port}/stream`);
    assertEquals((await stream.text()).split("\n").filter(Boolean).length, 6); // 300 ms, past the 100 ms idle
    ws.send("two");
    await next();
    assertEquals(replies, ["echo:one", "echo:two"]);
    const closed = new Promise((resolve) => ws.onclose = resolve);
    ws.close();
    await closed;
  });
});

/**
 * The two ways a plain connection is served: by `Deno.serveHttp` (WebSockets served), and by the
 * runtime's own server (listen_direct.ts) where WebSockets are served elsewhere.
 */
const SERVINGS = [["Deno.serveHttp", {}], ["direct", { webSocketsAt: "the WebSocket socket" }]] as const;

for (const [serving, way] of SERVINGS) {
  Deno.test(`serveGuarded (${serving}): a connection that sends nothing, or headers too slowly, is closed at its deadline`, async () => {
    await withServer({ headerMs: 150, ...way }, async (port, stats) => {
      const silent = await Deno.connect({ hostname: "127.0.0.1", port });
      const slow = await Deno.connect({ hostname: "127.0.0.1", port });
      await slow.write(new TextEncoder().encode("GET / HTTP/1.1\r\nHost: x\r\n"));
      const [a, b] = await Promise.all([readUntilClosed(silent), readUntilClosed(slow)]);
      assert(a === "" || a === null, `silent got ${a}`);
      assert(b === "" || b === null || !b.includes("200"), `slow got ${b}`);
      assertEquals(stats().timedOut, 2);
      await until(() => stats().open === 0, { what: "both connections given back" });
    });
  });

  Deno.test(`serveGuarded (${serving}): an idle keep-alive connection is closed; one with a request in flight is not`, async () => {
    await withServer({ idleMs: 120, headerMs: 5_000, ...way }, async (port, stats) => {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port });
      await conn.write(new TextEncoder().encode("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n"));
      const text = await readUntilClosed(conn);
      // The 300 ms stream was answered whole; only then did the idle timeout close the connection.
      assert(text?.includes("tick 5"), String(text));
      assertEquals(stats().timedOut, 1);
    });
  });

  Deno.test(`serveGuarded (${serving}): a shutdown ends an idle keep-alive connection at once, and one with an answer in flight once it went out`, async () => {
    const server = serveGuarded({ hostname: "127.0.0.1", port: 0 }, hello, {
      log: () => {},
      idleMs: 60_000,
      headerMs: 60_000,
      ...way,
    });
    const port = server.addr.port;
    const idle = await Deno.connect({ hostname: "127.0.0.1", port });
    await idle.write(new TextEncoder().encode("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
    assert((await readUntil(idle, "ok")).includes("200 OK"));
    const busy = await Deno.connect({ hostname: "127.0.0.1", port });
    await busy.write(new TextEncoder().encode("GET /stream HTTP/1.1\r\nHost: x\r\n\r\n"));
    const started = await readUntil(busy, "tick 0");
    const stopped = server.shutdown();
    // Deadlines stop with the listener: without the shutdown closing them, both would stay open.
    const bound = (conn: Deno.Conn) =>
      Promise.race([
        readUntilClosed(conn),
        new Promise<string>((resolve) => setTimeout(() => resolve("still open"), 10_000)),
      ]);
    const [idleRest, busyRest] = await Promise.all([bound(idle), bound(busy)]);
    assert(idleRest === "" || idleRest === null, `the idle one got ${idleRest}`);
    assert((started + busyRest).includes("tick 5"), `the busy one got ${started}${busyRest}`);
    await stopped;
  });

  for (const [cap, options] of [["per-peer", { maxPerPeer: 3 }], ["total", { maxConnections: 3 }]] as const) {
    Deno.test(`serveGuarded (${serving}): connections past the ${cap} cap are closed at once, and room comes back`, async () => {
      await withServer({ headerMs: 10_000, ...options, ...way }, async (port, stats) => {
        const held = await Promise.all([1, 2, 3].map(() => Deno.connect({ hostname: "127.0.0.1", port })));
        // The server counts a connection once it accepted it: wait for the three.
        while (stats().open < 3) await new Promise((resolve) => setTimeout(resolve, 5));
        const fourth = await Deno.connect({ hostname: "127.0.0.1", port });
        assertEquals(await readUntilClosed(fourth) ?? "", "");
        assertEquals(stats().refused, 1);
        for (const conn of held) conn.close();
        while (stats().open > 0) await new Promise((resolve) => setTimeout(resolve, 5));
        const response = await fetch(`http://127.0.0.1:${port}/`);
        assertEquals(await response.text(), "ok");
      });
    });
  }
}

Deno.test("serveGuarded (direct): answers and streams; a WebSocket request is refused, naming where they are served", async () => {
  await withServer({ idleMs: 100, webSocketsAt: "/run/box/dockd-ws.sock" }, async (port) => {
    const response = await fetch(`http://127.0.0.1:${port}/`);
    assertEquals(await response.text(), "ok");
    const stream = await fetch(`http://127.0.0.1:${port}/stream`);
    assertEquals((await stream.text()).split("\n").filter(Boolean).length, 6); // 300 ms, past the 100 ms idle
    const refused = await fetch(`http://127.0.0.1:${port}/ws`, {
      headers: {
        upgrade: "websocket",
        connection: "upgrade",
        "sec-websocket-key": "dGhlIHNhbXBsZSBub25jZQ==",
      },
    });
    assertEquals(refused.status, 400);
    const { error } = await refused.json();
    assertEquals(error.code, "websocket_elsewhere");
    assert(error.message.includes("/run/box/dockd-ws.sock"), error.message);
  });
});

Deno.test("serveGuarded (direct): connections that end on their own, then deadlines and a shutdown, end nothing else", async () => {
  // Ending a connection the runtime's server has already ended must not throw (an abort signal's
  // listener would, uncaught): 20 one-request connections close on their own, 5 more stay idle past
  // their deadline, and the listener is shut down with one in flight.
  const server = serveGuarded({ hostname: "127.0.0.1", port: 0 }, hello, {
    log: () => {},
    idleMs: 50,
    webSocketsAt: "elsewhere",
  });
  for (let i = 0; i < 20; i++) {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.addr.port });
    await conn.write(new TextEncoder().encode("GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"));
    assert((await readUntilClosed(conn))?.includes("200 OK"));
  }
  const idle = await Promise.all([1, 2, 3, 4, 5].map(async () => {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port: server.addr.port });
    await conn.write(new TextEncoder().encode("GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
    return readUntilClosed(conn);
  }));
  assert(idle.every((text) => text?.includes("200 OK")), String(idle));
  assertEquals(server.stats().timedOut, 5);
  const streaming = await fetch(`http://127.0.0.1:${server.addr.port}/stream`);
  await server.shutdown();
  await streaming.body?.cancel();
  await until(() => server.stats().open === 0, { what: "every connection given back" });
  assertEquals(server.stats().accepted, 26);
});

for (const [serving, way] of SERVINGS) {
  Deno.test(`serveGuarded (${serving}): the accept loop survives running out of file descriptors and recovers`, async () => {
    // A child with 64 descriptors and no cap below them: 100 idle connections exhaust them (the default cap,
    // a quarter of the limit, would refuse them before); after they are dropped it serves again.
    const script = `
    import { serveGuarded } from ${JSON.stringify(new URL("./listen.ts", import.meta.url).href)};
    const server = serveGuarded({ hostname: "127.0.0.1", port: 0 }, () => new Response("ok"), { headerMs: 60_000, maxConnections: 1000, log: (l) => console.error(l), ...${
      JSON.stringify(way)
    } });
    console.log(server.addr.port);
  `;
    const child = new Deno.Command("/bin/sh", {
      args: ["-c", `ulimit -n 64 && exec "${Deno.execPath()}" run -A --cached-only -`],
      stdin: "piped",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const writer = child.stdin.getWriter();
    await writer.write(new TextEncoder().encode(script));
    await writer.close();
    const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    const port = Number((await lines.read()).value?.trim());
    try {
      const hogs: Deno.Conn[] = [];
      for (let i = 0; i < 100; i++) hogs.push(await Deno.connect({ hostname: "127.0.0.1", port }));
      // Past the limit the child cannot accept; it must not die.
      const stuck = await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(300) }).catch(() =>
        null
      );
      assertEquals(stuck, null);
      for (const conn of hogs) conn.close();
      let answer = "";
      for (let attempt = 0; attempt < 100 && !answer; attempt++) {
        answer = await fetch(`http://127.0.0.1:${port}/`).then((r) => r.text()).catch(() => "");
      }
      assertEquals(answer, "ok");
    } finally {
      child.kill("SIGKILL");
      await child.status;
      await lines.cancel();
      const errors = await new Response(child.stderr).text();
      assert(errors.includes("cannot accept") && !errors.includes("Uncaught"), errors);
    }
  });
}

Deno.test("serveGuarded over TLS: served through the loopback hop with the stranger's address; a silent connection is released at the handshake deadline", async () => {
  const certificates = await loopbackCertificates();
  const server = serveGuarded(
    tlsTarget(certificates),
    (_request, info) => new Response(`${info.remoteAddr.hostname}:${info.remoteAddr.port}`),
    { handshakeMs: 200, log: () => {} },
  );
  const descriptors = () => [...Deno.readDirSync("/proc/self/fd")].length;
  const client = Deno.createHttpClient({ caCerts: [certificates.caPem] });
  try {
    const answer = await (await fetch(`https://127.0.0.1:${server.addr.port}/`, { client })).text();
    assertEquals(answer.startsWith("127.0.0.1:"), true);
    assertEquals(Number(answer.split(":")[1]) === server.addr.port, false); // the stranger's port, not ours
    client.close(); // its pooled connection goes, so the server holds nothing of it
    while (server.stats().open > 0) await new Promise((resolve) => setTimeout(resolve, 5));
    const before = descriptors();
    const silent = await Promise.all(
      [1, 2, 3, 4, 5].map(() => Deno.connect({ hostname: "127.0.0.1", port: server.addr.port })),
    );
    const ends = await Promise.all(silent.map(async (conn) => {
      try {
        return await conn.read(new Uint8Array(8));
      } catch {
        return null;
      } finally {
        conn.close();
      }
    }));
    assertEquals(ends, [null, null, null, null, null]);
    // Every server-side socket of the five (outer, pipe, loopback TLS) is given back. The bound is generous:
    // on a loaded machine (two suites at once) the runtime closes them late, and only a leak never closes them.
    while (server.stats().open > 0) await new Promise((resolve) => setTimeout(resolve, 5));
    const deadline = Date.now() + 20_000;
    while (descriptors() > before && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    assert(descriptors() <= before, `${descriptors()} descriptors open, ${before} before`);
  } finally {
    await server.shutdown();
    await Deno.remove(certificates.dir, { recursive: true });
  }
});

Deno.test("serveGuarded over TLS: the loopback hop closes at once what it did not dial, and a request says https", async () => {
  const certificates = await loopbackCertificates();
  const before = new Set(listeningPorts(Deno.pid));
  const server = serveGuarded(
    tlsTarget(certificates),
    (request) => new Response(new URL(request.url).protocol),
    { log: () => {} },
  );
  const client = Deno.createHttpClient({ caCerts: [certificates.caPem] });
  try {
    assertEquals(await (await fetch(`https://127.0.0.1:${server.addr.port}/`, { client })).text(), "https:");
    const hops = listeningPorts(Deno.pid).filter((port) => !before.has(port) && port !== server.addr.port);
    assertEquals(hops.length, 1, `loopback ports: ${hops}`);
    const refused = server.stats().refused;
    // A local process dialling the hop straight: each connection is closed by the server (read ends), so
    // none holds a descriptor (a Deno.listenTls hop kept every one until its peer left).
    const strangers = await Promise.all(
      Array.from({ length: 50 }, () => Deno.connect({ hostname: "127.0.0.1", port: hops[0] })),
    );
    await until(() => Promise.resolve(server.stats().refused - refused === 50));
    const ends = await Promise.all(strangers.map(async (conn) => {
      try {
        return await conn.read(new Uint8Array(8));
      } catch {
        return null;
      } finally {
        conn.close();
      }
    }));
    assertEquals(ends, new Array(50).fill(null));
    // The listener still serves.
    assertEquals(await (await fetch(`https://127.0.0.1:${server.addr.port}/`, { client })).text(), "https:");
  } finally {
    client.close();
    await server.shutdown();
    await Deno.remove(certificates.dir, { recursive: true });
  }
});

/**
 * Whether TCP_NODELAY is set on this process's socket from `localPort` to `remotePort`: its inode read
 * from /proc/net/tcp, its descriptor found under /proc/self/fd, the option read with getsockopt(2).
 */
function noDelayOf(localPort: number, remotePort: number): boolean {
  const hex = (port: number) => port.toString(16).toUpperCase().padStart(4, "0");
  const row = Deno.readTextFileSync("/proc/net/tcp").split("\n").map((line) => line.trim().split(/\s+/))
    .find((cols) => cols[1]?.endsWith(`:${hex(localPort)}`) && cols[2]?.endsWith(`:${hex(remotePort)}`));
  assert(row, `no socket ${localPort} → ${remotePort} in /proc/net/tcp`);
  const fd = [...Deno.readDirSync("/proc/self/fd")].map((entry) => Number(entry.name)).find((n) => {
    try {
      return Deno.readLinkSync(`/proc/self/fd/${n}`) === `socket:[${row[9]}]`;
    } catch {
      return false;
    }
  });
  assert(fd !== undefined, `no descriptor of socket ${row[9]}`);
  const libc = Deno.dlopen("libc.so.6", {
    getsockopt: { parameters: ["i32", "i32", "i32", "buffer", "buffer"], result: "i32" },
  });
  try {
    const value = new Int32Array(1);
    const length = new Uint32Array([4]);
    const IPPROTO_TCP = 6, TCP_NODELAY = 1;
    assertEquals(libc.symbols.getsockopt(fd, IPPROTO_TCP, TCP_NODELAY, value, length), 0);
    return value[0] !== 0;
  } finally {
    libc.close();
  }
}

Deno.test("serveGuarded: an accepted TCP connection has Nagle off, so an answer's last write is not held for the client's delayed ACK", async () => {
  await withServer({}, async (port) => {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    try {
      await conn.write(new TextEncoder().encode("GET / HTTP/1.1\r\nhost: x\r\n\r\n"));
      const answer = new Uint8Array(1024);
      assert(((await conn.read(answer)) ?? 0) > 0, "an answer");
      const clientPort = (conn.localAddr as Deno.NetAddr).port;
      assertEquals(noDelayOf(port, clientPort), true, "the server's end");
    } finally {
      conn.close();
    }
  });
});

Deno.test("serveGuarded over TLS: 8 MiB each way cross the hop's pump intact, past its per-connection window", async () => {
  const certificates = await loopbackCertificates();
  // Thirty-two times the hop's 256 KiB window each way: both directions pause and resume many times.
  const bytes = new Uint8Array(8 * 1024 * 1024).map((_, i) => (i * 7 + (i >> 13)) % 251);
  const digest = async (data: Uint8Array<ArrayBuffer>) =>
    Array.from(new Uint8Array(await crypto.subtle.digest("SHA-256", data)), (b) => b.toString(16)).join("");
  const server = serveGuarded(
    tlsTarget(certificates),
    async (request) =>
      request.method === "POST"
        ? new Response(await digest(new Uint8Array(await request.arrayBuffer())))
        : new Response(bytes),
    { log: () => {} },
  );
  const client = Deno.createHttpClient({ caCerts: [certificates.caPem] });
  try {
    const url = `https://127.0.0.1:${server.addr.port}/`;
    const up = await (await fetch(url, { method: "POST", body: bytes, client })).text();
    assertEquals(up, await digest(bytes));
    const down = new Uint8Array(await (await fetch(url, { client })).arrayBuffer());
    assertEquals([down.length, await digest(down)], [bytes.length, await digest(bytes)]);
  } finally {
    client.close();
    await server.shutdown();
    await Deno.remove(certificates.dir, { recursive: true });
  }
});

Deno.test("mayAskForWebSocket: a whole head with Upgrade: websocket, or a head not whole yet", () => {
  const bytes = (text: string) => new TextEncoder().encode(text);
  const ws = "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n";
  assertEquals(mayAskForWebSocket(bytes(ws)), true);
  assertEquals(mayAskForWebSocket(bytes(ws.replace("Upgrade: websocket", "upgrade:WebSocket"))), true);
  assertEquals(mayAskForWebSocket(bytes("GET / HTTP/1.1\r\nHost: x\r\n\r\n")), false);
  // A header that only names it, or a body that says it, asks for nothing.
  assertEquals(mayAskForWebSocket(bytes("GET / HTTP/1.1\r\nX-Upgrade: websocket\r\n\r\n")), false);
  assertEquals(
    mayAskForWebSocket(bytes("POST / HTTP/1.1\r\nContent-Length: 20\r\n\r\n\r\nUpgrade: websocket\r\n")),
    false,
  );
  assertEquals(mayAskForWebSocket(bytes("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")), false);
  // Not whole: it may yet ask, so the server that can carry one serves it.
  assertEquals(mayAskForWebSocket(bytes("GET / HTTP/1.1\r\nHost: x\r\n")), true);
});

Deno.test("serveGuarded over TLS: a first request for a WebSocket gets one; any other connection is served directly, and says where WebSockets are; silence after the handshake is closed at the header deadline", async () => {
  const certificates = await loopbackCertificates();
  const server = serveGuarded(
    tlsTarget(certificates),
    hello,
    { headerMs: 200, log: () => {} },
  );
  const tls = async () => {
    const conn = await Deno.connectTls({
      hostname: "127.0.0.1",
      port: server.addr.port,
      caCerts: [certificates.caPem],
    });
    await conn.handshake();
    return conn;
  };
  try {
    const ws = await connectTlsWebSocket({
      hostname: "127.0.0.1",
      port: server.addr.port,
      caCerts: [certificates.caPem],
      path: "/ws",
    });
    await ws.sendText("one");
    assertEquals(new TextDecoder().decode((await ws.next())!.data), "echo:one");
    await ws.close();

    // A plain first request: the direct server, which refuses a WebSocket later on the connection.
    const conn = await tls();
    await conn.write(new TextEncoder().encode(
      "GET / HTTP/1.1\r\nHost: x\r\n\r\n" +
        "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
        "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\nConnection: close\r\n\r\n",
    ));
    // What came before the close (TLS says the close without a close_notify as an error).
    let text = "";
    const buffer = new Uint8Array(4096);
    try {
      for (let n = await conn.read(buffer); n !== null; n = await conn.read(buffer)) {
        text += new TextDecoder().decode(buffer.subarray(0, n));
      }
    } catch { /* closed */ }
    conn.close();
    assert(text.startsWith("HTTP/1.1 200") && text.includes("\r\n\r\nok"), text);
    assert(text.includes("HTTP/1.1 400") && text.includes("websocket_elsewhere"), text);

    const timedOut = server.stats().timedOut;
    const silent = await tls();
    assertEquals(await readUntilClosed(silent) ?? "", "");
    assertEquals(server.stats().timedOut, timedOut + 1);
  } finally {
    await server.shutdown();
    await Deno.remove(certificates.dir, { recursive: true });
  }
});
