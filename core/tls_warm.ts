/**
 * Setting up the process's TLS stack before its first handshake, off the thread that would wait for it.
 * Deno's TLS sets itself up on a process's first handshake, ~30–40 ms here (client or server side) that
 * block the thread handshaking: a fresh daemon would spend them on the first laptop that dials it (the
 * one `dock add ssh` is pairing, waiting), a laptop agent on the first box it dials after it starts
 * (measured: a pairing's pinning handshake 37 ms cold, 3 ms warm). WebCrypto's first P-256 key does the
 * same one-time setup (a later first handshake then takes ~1 ms, not ~35), and Deno makes WebCrypto keys
 * on a thread of its blocking-task pool: the calling thread goes on.
 *
 * @module
 */

/** Sets up the process's TLS stack on another thread; never rejects. */
export function warmTls(): Promise<void> {
  return crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, false, ["sign"]).then(
    () => {},
    () => {},
  );
}
