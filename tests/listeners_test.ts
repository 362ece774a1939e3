/**
 * A stranger who can reach a box's laptop port cannot stop dockd or hold its descriptors (issue 11):
 * run under `ulimit -n 256`, 300 connections that never start TLS are refused past the cap or closed at
 * the handshake deadline, the daemon keeps answering on its socket, and a laptop still pairs afterwards.
 * The laptop agent's proxy port (no token needed there) holds the same way, and so does the daemon's own
 * unix socket. No port the daemon listens on is weaker than that one (issue 29): every TCP port it has
 * open, found from `/proc` rather than from what it announces (the TLS hop's loopback ports included),
 * holds 240 connections under the same limit, and both TLS listeners serve afterwards.
 */
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { listeningPorts, makeDirs, startAgent, startBox, stopWithin } from "./harness.ts";

/** Opens `count` connections to `port` and sends nothing. */
async function idleConnections(port: number, count: number): Promise<Deno.Conn[]> {
  const conns: Deno.Conn[] = [];
  for (let i = 0; i < count; i++) conns.push(await Deno.connect({ hostname: "127.0.0.1", port }));
  return conns;
}

/** Reads each connection to its end (an alert, a reset, or nothing before the close); resolves when all ended. */
async function allClosedByServer(conns: Deno.Conn[]): Promise<number> {
  const ended = await Promise.all(conns.map(async (conn) => {
    const buffer = new Uint8Array(1024);
    try {
      while (await conn.read(buffer) !== null) { /* an alert */ }
    } catch {
      /* reset */
    } finally {
      conn.close();
    }
    return true;
  }));
  return ended.length;
}

/** Opens up to `count` connections to `port` and sends nothing; stops early when connecting fails. */
async function heldConnections(port: number, count: number): Promise<Deno.Conn[]> {
  const conns: Deno.Conn[] = [];
  for (let i = 0; i < count; i++) {
    try {
      conns.push(await Deno.connect({ hostname: "127.0.0.1", port }));
    } catch {
      break; // the kernel's backlog is full
    }
  }
  return conns;
}

Deno.test("dockd under ulimit -n 256 survives 300 idle connections to its TLS port and closes them", async () => {
  const dirs = await makeDirs();
  await using box = await startBox({
    dirs,
    openFiles: 256,
    env: {
      DOCK_LISTEN: "127.0.0.1:0",
      DOCK_LISTEN_HANDSHAKE_MS: "500",
    },
  });
  const first = await box.cli(["pair", "--host", "127.0.0.1"]);
  assertEquals(first.code, 0, first.stderr);
  const port = Number(/dock:\/\/127\.0\.0\.1:(\d+)/.exec(first.stdout)?.[1]);
  assert(port > 0, first.stdout);

  const name = (await box.client.info()).name;
  const idle = await idleConnections(port, 300);
  // While they are open the daemon still answers on its socket.
  assertEquals((await box.client.info()).name, name);
  // Each is closed by the box: refused past the cap at once, the rest at the handshake deadline.
  assertEquals(await allClosedByServer(idle), 300);
  assertEquals((await box.client.info()).name, name);
  const second = await box.cli(["pair", "--host", "127.0.0.1"]);
  assertEquals(second.code, 0, second.stderr);
  assertStringIncludes(second.stdout, `127.0.0.1:${port}`);
});

Deno.test("the agent under ulimit -n 256 survives 300 idle connections to its proxy port and still answers", async () => {
  await using box = await startBox();
  const agent = await startAgent(box.dirs, { openFiles: 256, env: { DOCK_LISTEN_HEADER_MS: "500" } });
  try {
    const idle = await idleConnections(agent.proxyPort, 300);
    const status = await fetch(`${agent.url}/v1/status`, {
      headers: { authorization: `Bearer ${agent.token}` },
    });
    assertEquals(status.status, 200);
    await status.body?.cancel();
    assertEquals(await allClosedByServer(idle), 300);
    const again = await fetch(`${agent.url}/v1/status`, {
      headers: { authorization: `Bearer ${agent.token}` },
    });
    assertEquals(again.status, 200);
    await again.body?.cancel();
  } finally {
    await stopWithin(agent);
  }
});

Deno.test("dockd under ulimit -n 128 survives 300 connections to its own socket (Deno.serve would have died at EMFILE)", async () => {
  await using box = await startBox({ openFiles: 128, env: { DOCK_LISTEN_HEADER_MS: "500" } });
  const name = (await box.client.info()).name;
  const conns: Deno.Conn[] = [];
  for (let i = 0; i < 300; i++) {
    try {
      conns.push(await Deno.connect({ transport: "unix", path: box.dirs.socket }));
    } catch {
      break; // the kernel's backlog is full: the daemon has refused enough of them
    }
  }
  assert(conns.length > 100, `only ${conns.length} connections opened`);
  // Each is closed by the daemon: refused at the cap, or at the header deadline.
  assertEquals(await allClosedByServer(conns), conns.length);
  assertEquals((await box.client.info()).name, name, "the daemon still answers");
});

Deno.test("dockd under ulimit -n 256 survives 240 connections held on every port it listens on, loopback hops included", async () => {
  const dirs = await makeDirs();
  await using box = await startBox({
    dirs,
    openFiles: 256,
    env: { DOCK_LISTEN: "127.0.0.1:0", DOCK_LISTEN_HANDSHAKE_MS: "500", DOCK_LISTEN_HEADER_MS: "500" },
  });
  const paired = await box.cli(["pair", "--host", "127.0.0.1"]);
  assertEquals(paired.code, 0, paired.stderr);
  const laptopPort = Number(/dock:\/\/127\.0\.0\.1:(\d+)/.exec(paired.stdout)?.[1]);
  const phone = await box.client.setPhone({ enabled: true, listen: "127.0.0.1:0" });
  const phonePort = Number(new URL(phone.url!).port);
  const ports = listeningPorts(box.process.pid);
  assert(
    ports.includes(laptopPort) && ports.includes(phonePort),
    `${ports} lacks ${laptopPort} or ${phonePort}`,
  );
  const name = (await box.client.info()).name;
  let exited: Deno.CommandStatus | undefined;
  box.process.status.then((status) => exited = status);
  for (const port of ports) {
    const held = await heldConnections(port, 240);
    assert(held.length > 100, `only ${held.length} connections to ${port} opened`);
    // The daemon closes every one of them (past a cap at once, else at a deadline), or dies trying.
    const closed = await Promise.race([
      allClosedByServer(held),
      box.process.status.then((status) => {
        for (const conn of held) {
          try {
            conn.close();
          } catch { /* closed by the reader */ }
        }
        return `dockd exited with ${status.code} (signal ${status.signal}) while ${held.length} connections to ${port} were held`;
      }),
    ]);
    assertEquals(closed, held.length, `port ${port} of ${ports}`);
    assertEquals((await box.client.info()).name, name, `after port ${port}`);
  }
  assertEquals(exited, undefined);
  // Both TLS listeners still serve: a laptop pairs, and the phone listener answers its page.
  const again = await box.cli(["pair", "--host", "127.0.0.1"]);
  assertEquals(again.code, 0, again.stderr);
  const ca = await Deno.readTextFile(`${dirs.state}/box/tls/ca.pem`);
  const client = Deno.createHttpClient({ caCerts: [ca] });
  try {
    for (const port of [laptopPort, phonePort]) {
      const response = await fetch(`https://127.0.0.1:${port}/v1/info`, { client });
      assertEquals(response.status, 401, `port ${port}`);
      await response.body?.cancel();
    }
  } finally {
    client.close();
  }
});
