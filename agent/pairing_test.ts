import { assert, assertEquals, assertRejects, assertStringIncludes } from "../tests/assert.ts";
import { DockError } from "../client/errors.ts";
import { ensureCertificates } from "../daemon/tls.ts";
import { fingerprintOf } from "../core/pairing_link.ts";
import { SYSTEM_CLOCK } from "../core/clock.ts";
import { EventBus } from "../core/events.ts";
import { Store } from "../core/store.ts";
import { Boxes } from "./boxes.ts";
import { pairBox, pinnedCa } from "./pairing.ts";

/** A TLS server on loopback presenting `chain`; counts the requests that reach it. */
function tlsServer(chain: string, keyPem: string) {
  let requests = 0;
  const server = Deno.serve(
    { hostname: "127.0.0.1", port: 0, cert: chain, key: keyPem, onListen() {} },
    () => {
      requests++;
      return new Response("hello");
    },
  );
  return { port: server.addr.port, requests: () => requests, [Symbol.asyncDispose]: () => server.shutdown() };
}

Deno.test("pinnedCa: the CA the link pins is read from the handshake, and then verifies the box", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const box = await ensureCertificates(`${dir}/box`, { addresses: ["127.0.0.1"] });
    await using server = tlsServer(box.certPem + box.caPem, box.keyPem);
    const pem = await pinnedCa("127.0.0.1", server.port, box.fingerprint);
    assertEquals(await fingerprintOf(pem), box.fingerprint);
    assertEquals(server.requests(), 0, "pinning sends no request");
    const client = Deno.createHttpClient({ caCerts: [pem] });
    try {
      const response = await fetch(`https://127.0.0.1:${server.port}/`, { client } as RequestInit);
      assertEquals(await response.text(), "hello");
    } finally {
      client.close();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("pinnedCa: another CA, or none presented, is a fingerprint mismatch; nothing listening is 503", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const box = await ensureCertificates(`${dir}/box`, { addresses: ["127.0.0.1"] });
    const other = await ensureCertificates(`${dir}/other`, { addresses: ["127.0.0.1"] });
    {
      await using server = tlsServer(other.certPem + other.caPem, other.keyPem);
      const error = await assertRejects(() => pinnedCa("127.0.0.1", server.port, box.fingerprint), DockError);
      assertEquals([(error as DockError).code, (error as DockError).status as number], [
        "fingerprint_mismatch",
        403,
      ]);
      assertEquals((error as DockError).detail?.presented, [
        await fingerprintOf(other.certPem),
        other.fingerprint,
      ]);
      assertEquals(server.requests(), 0);
    }
    {
      // A server that presents only its leaf gives nothing to pin, even with the right key behind it.
      await using server = tlsServer(box.certPem, box.keyPem);
      const error = await assertRejects(() => pinnedCa("127.0.0.1", server.port, box.fingerprint), DockError);
      assertEquals((error as DockError).code, "fingerprint_mismatch");
    }
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (listener.addr as Deno.NetAddr).port;
    listener.close();
    const error = await assertRejects(() => pinnedCa("127.0.0.1", port, box.fingerprint), DockError);
    assertEquals([(error as DockError).code, (error as DockError).status as number], [
      "box_unreachable",
      503,
    ]);
    assertStringIncludes(error.message, `127.0.0.1:${port}`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("pinnedCa: a server that never completes the handshake times out", async () => {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const held: Deno.Conn[] = [];
  const accepting = (async () => {
    for await (const conn of listener) held.push(conn);
  })();
  try {
    const port = (listener.addr as Deno.NetAddr).port;
    const error = await assertRejects(() => pinnedCa("127.0.0.1", port, "ab".repeat(32), { timeoutMs: 200 }));
    assert(error instanceof DockError && error.status === 503, String(error));
    assertStringIncludes(error.message, "no TLS handshake within 200 ms");
  } finally {
    listener.close();
    for (const conn of held) conn.close();
    await accepting.catch(() => {});
  }
});

Deno.test("pairBox: a link to an address the box's certificate does not cover stops before the code is sent", async () => {
  const dir = await Deno.makeTempDir();
  const store = new Store(`${dir}/agent.db`);
  const boxes = new Boxes(store, new EventBus(store), { clock: SYSTEM_CLOCK });
  try {
    const box = await ensureCertificates(`${dir}/box`, { addresses: ["localhost"] });
    await using server = tlsServer(box.certPem + box.caPem, box.keyPem);
    const link = `dock://127.0.0.1:${server.port}?code=${"a".repeat(32)}&fp=${box.fingerprint}`;
    const error = await assertRejects(() => pairBox(boxes, { link }, { origin: "test" }), DockError);
    assertEquals([(error as DockError).code, (error as DockError).status as number], [
      "certificate_refused",
      502,
    ]);
    assertStringIncludes(error.message, "does not cover 127.0.0.1");
    assertEquals(server.requests(), 0, "the code never left the laptop");
    assertEquals(boxes.list(), []);
    // A malformed link is refused before anything is dialled.
    const malformed = await assertRejects(
      () => pairBox(boxes, { link: "dock://x" }, { origin: "test" }),
      DockError,
    );
    assertEquals((malformed as DockError).code, "invalid_link");
  } finally {
    boxes.close();
    store.close();
    await Deno.remove(dir, { recursive: true });
  }
});
