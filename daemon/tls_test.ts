import {
  assert,
  assertEquals,
  assertMatch,
  assertNotEquals,
  assertRejects,
  assertStringIncludes,
} from "../tests/assert.ts";
import { DockError } from "../client/errors.ts";
import { ensureCertificates, listenerCertificates, localAddresses } from "./tls.ts";
import { fingerprintOf } from "../core/pairing_link.ts";
import { which } from "../core/runner.ts";

const LOOPBACK = ["localhost", "127.0.0.1", "::1"];
const DAY = 24 * 3600 * 1000;

/** Serves `certificates` on 127.0.0.1 (or `hostname`) and hands `fn` the port. */
async function withServer(
  certificates: { certPem: string; keyPem: string },
  fn: (port: number) => Promise<void>,
  hostname = "127.0.0.1",
): Promise<void> {
  const server = Deno.serve({
    port: 0,
    hostname,
    cert: certificates.certPem,
    key: certificates.keyPem,
    onListen: () => {},
    // A refused handshake is the point of some tests; keep it out of the output.
    onError: () => new Response("error", { status: 500 }),
  }, () => new Response("box"));
  try {
    await fn(server.addr.port);
  } finally {
    await server.shutdown();
  }
}

/** GETs `url` with a client that trusts only what `caPem` adds; returns the body. */
async function fetchPinned(url: string, caPem: string): Promise<string> {
  const client = Deno.createHttpClient({ caCerts: [caPem] });
  try {
    const response = await fetch(url, { client });
    return await response.text();
  } finally {
    client.close();
  }
}

/** The reason a pinned GET of `url` fails (the TLS error sits in the TypeError's cause). */
async function refusal(url: string, caPem: string): Promise<string> {
  const error = await assertRejects(() => fetchPinned(url, caPem), TypeError);
  return String(error.cause ?? error);
}

async function mode(path: string): Promise<number> {
  return (await Deno.stat(path)).mode! & 0o777;
}

Deno.test("tls: the CA is made once and reused; the leaf follows the addresses", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const first = await ensureCertificates(`${dir}/tls`, { addresses: LOOPBACK });
    assertMatch(first.fingerprint, /^[0-9a-f]{64}$/);
    assertEquals(first.fingerprint, await fingerprintOf(first.caPem));
    assertNotEquals(await fingerprintOf(first.certPem), first.fingerprint);
    assertEquals(await mode(`${dir}/tls/ca.key`), 0o600);
    assertEquals(await mode(`${dir}/tls/leaf.key`), 0o600);
    assertEquals(await mode(`${dir}/tls`), 0o700);

    const again = await ensureCertificates(`${dir}/tls`, { addresses: [...LOOPBACK].reverse() });
    assertEquals(again, first, "the same addresses in another order reuse everything");

    const moved = await ensureCertificates(`${dir}/tls`, { addresses: [...LOOPBACK, "box.example"] });
    assertEquals(moved.fingerprint, first.fingerprint, "the CA (and the pinned fingerprint) stays");
    assertEquals(moved.caPem, first.caPem);
    assertNotEquals(moved.certPem, first.certPem, "a new address means a new leaf");
    assertNotEquals(moved.keyPem, first.keyPem);
    assertEquals((await Array.fromAsync(Deno.readDir(`${dir}/tls`), (entry) => entry.name)).sort(), [
      "ca.key",
      "ca.pem",
      "leaf.key",
      "leaf.pem",
    ]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("tls: a leaf within 30 days of expiry is re-issued, the CA is kept", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const first = await ensureCertificates(dir, { addresses: LOOPBACK });
    const later = await ensureCertificates(dir, {
      addresses: LOOPBACK,
      now: new Date(Date.now() + 300 * DAY),
    });
    assertEquals(later.certPem, first.certPem, "eleven months ahead there is no need yet");
    const renewed = await ensureCertificates(dir, {
      addresses: LOOPBACK,
      now: new Date(Date.now() + 340 * DAY),
    });
    assertNotEquals(renewed.certPem, first.certPem);
    assertEquals(renewed.fingerprint, first.fingerprint);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("tls: a damaged or foreign leaf is replaced; a lost CA key makes a new CA", async () => {
  const dir = await Deno.makeTempDir();
  const other = await Deno.makeTempDir();
  try {
    const first = await ensureCertificates(dir, { addresses: LOOPBACK });
    // A leaf signed by another CA (a copied state dir, a half-finished restore) is not trusted.
    await ensureCertificates(other, { addresses: LOOPBACK });
    await Deno.copyFile(`${other}/leaf.pem`, `${dir}/leaf.pem`);
    await Deno.copyFile(`${other}/leaf.key`, `${dir}/leaf.key`);
    const fixed = await ensureCertificates(dir, { addresses: LOOPBACK });
    assertEquals(fixed.fingerprint, first.fingerprint);
    await withServer(fixed, async (port) => {
      assertEquals(await fetchPinned(`https://127.0.0.1:${port}/`, fixed.caPem), "box");
    });

    // A key that does not belong to the certificate (a crash between the two renames).
    await Deno.copyFile(`${other}/leaf.key`, `${dir}/leaf.key`);
    const rekeyed = await ensureCertificates(dir, { addresses: LOOPBACK });
    assertNotEquals(rekeyed.certPem, fixed.certPem);
    await withServer(rekeyed, async (port) => {
      assertEquals(await fetchPinned(`https://127.0.0.1:${port}/`, rekeyed.caPem), "box");
    });

    await Deno.writeTextFile(`${dir}/leaf.pem`, "garbage");
    const rewritten = await ensureCertificates(dir, { addresses: LOOPBACK });
    assertMatch(rewritten.certPem, /BEGIN CERTIFICATE/);

    await Deno.remove(`${dir}/ca.key`);
    const fresh = await ensureCertificates(dir, { addresses: LOOPBACK });
    assertNotEquals(fresh.fingerprint, first.fingerprint);
    await withServer(fresh, async (port) => {
      assertEquals(await fetchPinned(`https://localhost:${port}/`, fresh.caPem), "box");
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(other, { recursive: true });
  }
});

Deno.test("tls: a laptop pinning the box CA reaches it by IP and by name", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const certificates = await ensureCertificates(dir, { addresses: LOOPBACK });
    await withServer(certificates, async (port) => {
      assertEquals(await fetchPinned(`https://127.0.0.1:${port}/`, certificates.caPem), "box");
      assertEquals(await fetchPinned(`https://localhost:${port}/`, certificates.caPem), "box");
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("tls: IPv6 loopback is listed and reachable when the box has it", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const certificates = await ensureCertificates(dir, { addresses: LOOPBACK });
    let listening = true;
    try {
      Deno.listen({ hostname: "::1", port: 0 }).close();
    } catch {
      listening = false; // a container without IPv6
    }
    if (!listening) return;
    await withServer(certificates, async (port) => {
      assertEquals(await fetchPinned(`https://[::1]:${port}/`, certificates.caPem), "box");
    }, "::1");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * An openssl that logs each run's first two words to `<dir>/runs` and hands it to the real one; with
 * `refuseCa`, refuses `req … -CA` as OpenSSL 1.1 and LibreSSL do ("req: Unrecognized flag CA").
 */
async function loggingOpenssl(dir: string, options: { refuseCa: boolean }): Promise<string> {
  const real = which("openssl")!;
  const path = `${dir}/openssl`;
  await Deno.writeTextFile(
    path,
    `#!/bin/sh
echo "$1 $2" >> "${dir}/runs"
if ${options.refuseCa ? "true" : "false"} && [ "$1" = req ]; then
  for arg in "$@"; do [ "$arg" = -CA ] && { echo "req: Unrecognized flag CA" >&2; exit 1; }; done
fi
exec "${real}" "$@"
`,
  );
  await Deno.chmod(path, 0o755);
  return path;
}

Deno.test("tls: a fresh box's CA and leaf take two openssl runs; an openssl without `req -CA` takes a request and a signing run", async () => {
  for (const refuseCa of [false, true]) {
    const dir = await Deno.makeTempDir();
    try {
      const openssl = await loggingOpenssl(dir, { refuseCa });
      const made = await ensureCertificates(`${dir}/tls`, { addresses: LOOPBACK, openssl });
      const runs = (await Deno.readTextFile(`${dir}/runs`)).trim().split("\n");
      assertEquals(
        runs,
        refuseCa ? ["req -x509", "req -x509", "req -new", "x509 -req"] : ["req -x509", "req -x509"],
      );
      // Either way the leaf is signed by the CA, for the addresses, and nothing is left in the folder.
      await withServer(made, async (port) => {
        assertEquals(await fetchPinned(`https://127.0.0.1:${port}/`, made.caPem), "box");
        assertEquals(await fetchPinned(`https://localhost:${port}/`, made.caPem), "box");
      });
      assertEquals((await Array.fromAsync(Deno.readDir(`${dir}/tls`), (entry) => entry.name)).sort(), [
        "ca.key",
        "ca.pem",
        "leaf.key",
        "leaf.pem",
      ]);
      // A new address: one run (or two) for the leaf, signed by the CA kept.
      await Deno.remove(`${dir}/runs`);
      const moved = await ensureCertificates(`${dir}/tls`, {
        addresses: [...LOOPBACK, "box.example"],
        openssl,
      });
      assertEquals(moved.fingerprint, made.fingerprint);
      assertEquals(
        (await Deno.readTextFile(`${dir}/runs`)).trim().split("\n"),
        refuseCa ? ["req -x509", "req -new", "x509 -req"] : ["req -x509"],
      );
      await withServer(moved, async (port) => {
        assertEquals(await fetchPinned(`https://localhost:${port}/`, made.caPem), "box");
      });
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  }
});

Deno.test("tls: an openssl that fails says why, and leaves no scratch folder", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const openssl = `${dir}/openssl`;
    await Deno.writeTextFile(openssl, "#!/bin/sh\necho 'no entropy today' >&2\nexit 3\n");
    await Deno.chmod(openssl, 0o755);
    const error = await assertRejects(
      () => ensureCertificates(`${dir}/tls`, { addresses: LOOPBACK, openssl }),
      DockError,
    );
    assertEquals((error as DockError).code, "certificate_failed");
    assertStringIncludes(error.message, "no entropy today");
    assertEquals(await Array.fromAsync(Deno.readDir(`${dir}/tls`)), []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("tls: the listener's certificates are the box's, kept where the daemon finds them", async () => {
  const box = await Deno.makeTempDir();
  try {
    const made = await listenerCertificates(box, { hostname: "127.0.0.1", addresses: LOOPBACK });
    const found = await ensureCertificates(`${box}/tls`, { addresses: LOOPBACK });
    assertEquals(found, made.certificates);
    assertEquals(made.addresses, LOOPBACK);
  } finally {
    await Deno.remove(box, { recursive: true });
  }
});

Deno.test("tls: a laptop pinning another box's CA is refused", async () => {
  const dir = await Deno.makeTempDir();
  const other = await Deno.makeTempDir();
  try {
    const certificates = await ensureCertificates(dir, { addresses: LOOPBACK });
    const stranger = await ensureCertificates(other, { addresses: LOOPBACK });
    assertNotEquals(stranger.fingerprint, certificates.fingerprint);
    await withServer(certificates, async (port) => {
      assertMatch(
        await refusal(`https://127.0.0.1:${port}/`, stranger.caPem),
        /invalid peer certificate: UnknownIssuer/,
      );
      // Nor does the leaf itself work as the pin: rustls wants the CA.
      assertMatch(
        await refusal(`https://127.0.0.1:${port}/`, certificates.certPem),
        /invalid peer certificate: UnknownIssuer/,
      );
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
    await Deno.remove(other, { recursive: true });
  }
});

Deno.test("tls: an address missing from the certificate is refused", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const certificates = await ensureCertificates(dir, { addresses: ["127.0.0.1"] });
    await withServer(certificates, async (port) => {
      assertEquals(await fetchPinned(`https://127.0.0.1:${port}/`, certificates.caPem), "box");
      assertStringIncludes(
        await refusal(`https://localhost:${port}/`, certificates.caPem),
        `certificate not valid for name "localhost"`,
      );
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("tls: addresses that cannot go into a certificate are refused up front", async () => {
  const dir = await Deno.makeTempDir();
  try {
    for (const bad of ["*.example.com", "bad name", "fe80::1%eth0", "a\nb", "-x.example", ""]) {
      await assertRejects(() => ensureCertificates(dir, { addresses: [bad] }), DockError, "neither");
    }
    await assertRejects(() => ensureCertificates(dir, { addresses: [] }), DockError, "must not be empty");
    // Bracketed, compressed and embedded-IPv4 forms are accepted as the same address.
    const certificates = await ensureCertificates(dir, {
      addresses: ["[::1]", "0:0:0:0:0:0:0:1", "::ffff:10.0.0.1", "10.0.0.1", "Box.Example."],
    });
    const again = await ensureCertificates(dir, {
      addresses: ["::1", "::ffff:a00:1", "10.0.0.1", "box.example"],
    });
    assertEquals(again.certPem, certificates.certPem);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("tls: fingerprintOf reads the first certificate of a PEM", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const certificates = await ensureCertificates(dir, { addresses: ["127.0.0.1"] });
    const bundle = `${certificates.caPem}\n${certificates.certPem}`;
    assertEquals(await fingerprintOf(bundle), certificates.fingerprint);
    await assertRejects(() => fingerprintOf("no certificate here"), DockError, "no PEM CERTIFICATE");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("tls: localAddresses lists loopback, the host name and interface addresses", () => {
  const addresses = localAddresses();
  for (const address of LOOPBACK) assert(addresses.includes(address), address);
  assertEquals(new Set(addresses).size, addresses.length, "no duplicates");
  for (const iface of Deno.networkInterfaces()) {
    if (iface.family === "IPv4" && !iface.address.startsWith("127.")) {
      assert(addresses.includes(iface.address), iface.address);
    }
  }
  assert(!addresses.some((address) => address.toLowerCase().startsWith("fe80:")), "no link-local IPv6");
});
