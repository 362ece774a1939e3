/**
 * Port forwards through the agent: a local port carries bytes both ways to a port on the box, over
 * the box's tunnel; a taken local port is refused; removing the forward stops it.
 */
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { AgentClient } from "../client/agent.ts";
import { freePort, makeDirs, startAgent, startBox } from "./harness.ts";
import { socketOwners } from "../daemon/procs.ts";

/** A TCP echo server standing in for a worktree's dev server on the box. */
function echoServer(): { port: number; close(): void } {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  (async () => {
    for await (const conn of listener) {
      (async () => {
        const buffer = new Uint8Array(65536);
        try {
          while (true) {
            const n = await conn.read(buffer);
            if (n === null) break;
            await conn.write(buffer.subarray(0, n));
          }
        } catch { /* closed */ }
        try {
          conn.close();
        } catch { /* closed */ }
      })();
    }
  })().catch(() => {});
  return { port: (listener.addr as Deno.NetAddr).port, close: () => listener.close() };
}

Deno.test("a forward carries bytes both ways; a taken port is refused; removal stops it", async () => {
  const dirs = await makeDirs();
  await using _box = await startBox({ dirs });
  await using agent = await startAgent(dirs);
  const client = new AgentClient({ url: agent.url, token: agent.token });
  const echo = echoServer();
  try {
    await client.addLocal("devbox");
    const local = freePort();
    const headers = { authorization: `Bearer ${agent.token}`, "content-type": "application/json" };
    const created = await fetch(`${agent.url}/v1/forwards`, {
      method: "POST",
      headers,
      body: JSON.stringify({ box: "devbox", local, remote: echo.port }),
    });
    assertEquals(created.status, 201);
    const forward = await created.json();
    assertEquals([forward.box, forward.local, forward.remote], ["devbox", local, echo.port]);

    const conn = await Deno.connect({ hostname: "127.0.0.1", port: local });
    const payload = new Uint8Array(300_000).map((_, i) => i % 251);
    const writing = (async () => {
      let written = 0;
      while (written < payload.length) written += await conn.write(payload.subarray(written));
    })();
    const received = new Uint8Array(payload.length);
    let got = 0;
    while (got < payload.length) {
      const n = await conn.read(received.subarray(got));
      if (n === null) break;
      got += n;
    }
    await writing;
    conn.close();
    assertEquals(got, payload.length);
    assert(received.every((byte, i) => byte === payload[i]), "the bytes came back unchanged");
    assertEquals((await client.status()).forwards.length, 1);

    const taken = await fetch(`${agent.url}/v1/forwards`, {
      method: "POST",
      headers,
      body: JSON.stringify({ box: "devbox", local, remote: echo.port }),
    });
    assertEquals(taken.status, 409);
    assertStringIncludes(await taken.text(), "in use");
    const unknown = await fetch(`${agent.url}/v1/forwards`, {
      method: "POST",
      headers,
      body: JSON.stringify({ box: "nope", local: freePort(), remote: 1 }),
    });
    assertEquals(unknown.status, 404);
    await unknown.body?.cancel();
    const badPort = await fetch(`${agent.url}/v1/forwards`, {
      method: "POST",
      headers,
      body: JSON.stringify({ box: "devbox", local: 70000, remote: echo.port }),
    });
    assertEquals(badPort.status, 400);
    assertStringIncludes((await badPort.json()).error.message, "local");

    assert(listeners(local, agent.process.pid) >= 1, "the agent listens on the local port");
    const removed = await fetch(`${agent.url}/v1/forwards/${forward.id}`, { method: "DELETE", headers });
    assertEquals((await removed.json()).id, forward.id);
    // Asked of the kernel's socket table, not by connecting or binding: a connect to a free ephemeral
    // port can meet itself (TCP simultaneous open), and another test may take the port once it is free.
    assertEquals(listeners(local, agent.process.pid), 0, "the agent no longer listens on the local port");
  } finally {
    echo.close();
    client.close();
  }
});

/** How many listening TCP sockets on `port` (IPv4 or IPv6) process `pid` holds. */
function listeners(port: number, pid: number): number {
  const owners = socketOwners();
  let count = 0;
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    for (const line of Deno.readTextFileSync(table).split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10 || fields[3] !== "0A") continue; // 0A: LISTEN
      if (parseInt(fields[1].split(":").at(-1)!, 16) !== port) continue;
      if (owners.get(Number(fields[9])) === pid) count++;
    }
  }
  return count;
}

Deno.test("a forward carries at most its cap of connections; past it a connection is closed at once, the others go on", async () => {
  const dirs = await makeDirs();
  await using _box = await startBox({ dirs });
  await using agent = await startAgent(dirs, { env: { DOCK_FORWARD_MAX_CONNECTIONS: "3" } });
  const client = new AgentClient({ url: agent.url, token: agent.token });
  const echo = echoServer();
  const conns: Deno.Conn[] = [];
  try {
    await client.addLocal("devbox");
    const local = freePort();
    const created = await fetch(`${agent.url}/v1/forwards`, {
      method: "POST",
      headers: { authorization: `Bearer ${agent.token}`, "content-type": "application/json" },
      body: JSON.stringify({ box: "devbox", local, remote: echo.port }),
    });
    assertEquals(created.status, 201);
    await created.body?.cancel();
    const roundTrip = async (conn: Deno.Conn, text: string) => {
      await conn.write(new TextEncoder().encode(text));
      const buffer = new Uint8Array(64);
      const n = await conn.read(buffer);
      return n === null ? null : new TextDecoder().decode(buffer.subarray(0, n));
    };
    for (let i = 0; i < 3; i++) {
      const conn = await Deno.connect({ hostname: "127.0.0.1", port: local });
      conns.push(conn);
      assertEquals(await roundTrip(conn, `hello ${i}`), `hello ${i}`);
    }
    const extra = await Deno.connect({ hostname: "127.0.0.1", port: local });
    conns.push(extra);
    // Were it carried, the echo would answer; it is closed instead.
    await extra.write(new TextEncoder().encode("over")).catch(() => {});
    const buffer = new Uint8Array(16);
    assertEquals(await extra.read(buffer).catch(() => null), null, "the fourth is closed at once");
    assertEquals(await roundTrip(conns[0], "still"), "still", "the first three go on");
  } finally {
    for (const conn of conns) {
      try {
        conn.close();
      } catch { /* closed */ }
    }
    echo.close();
    client.close();
  }
});
