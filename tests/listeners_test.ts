/**
 * A stranger who can reach a box's laptop port cannot stop dockd or hold its descriptors (issue 11):
 * run under `ulimit -n 256`, 300 connections that never start TLS are refused past the cap or closed at
 * the handshake deadline, the daemon keeps answering on its socket, and a laptop still pairs afterwards.
 */
import { assert, assertEquals, assertStringIncludes } from "./assert.ts";
import { makeDirs, startBox } from "./harness.ts";

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
  const idle: Deno.Conn[] = [];
  for (let i = 0; i < 300; i++) idle.push(await Deno.connect({ hostname: "127.0.0.1", port }));
  // While they are open the daemon still answers on its socket.
  assertEquals((await box.client.info()).name, name);
  // Each is closed by the box: refused past the cap at once, the rest at the handshake deadline (after a
  // TLS alert, perhaps: read to the end).
  const ended = await Promise.all(idle.map(async (conn) => {
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
  assertEquals(ended.length, 300);
  assertEquals((await box.client.info()).name, name);
  const second = await box.cli(["pair", "--host", "127.0.0.1"]);
  assertEquals(second.code, 0, second.stderr);
  assertStringIncludes(second.stdout, `127.0.0.1:${port}`);
});
