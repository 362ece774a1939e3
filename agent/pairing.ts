/**
 * Pairing this laptop with a box from a link `dock://HOST:PORT?code=…&fp=…` (made by `dockd pair`).
 *
 * The laptop believes nothing the network tells it beyond what the link's fingerprint pins. Deno's
 * `fetch` neither shows the certificate a server presented nor talks to one it cannot verify, so the
 * first contact is a bare TLS handshake (`node:tls`, verification off) that only reads the chain the
 * box presents — the box sends its CA along with its leaf — and keeps the certificate whose SHA-256
 * equals `fp`. Nothing is sent over that connection: a box presenting another CA (a wrong link, or
 * someone in between) never sees the code, and pairing stops with 403 `fingerprint_mismatch`. From
 * then on every connection to the box is verified by Deno's TLS against that CA (`caCerts`), the
 * address included, and the code goes out only over such a connection.
 *
 * Deno adds `caCerts` to its public roots rather than replacing them (see `daemon/tls.ts`): a link
 * naming an IP address, which public CAs rarely certify, is the tightest pin.
 *
 * Forgetting a paired box also unpairs this laptop on the box (`DELETE /v1/pair` with its own
 * credential), so a box the laptop no longer lists stops trusting it too. That part is best effort: a
 * box that is offline or unreachable is forgotten all the same, and the answer says it was not told.
 *
 * @module
 */
import { isIP } from "node:net";
import { connect } from "node:tls";
import { causeChain, DockError, TransportError } from "../client/errors.ts";
import { BoxClient } from "../client/box.ts";
import type { ForgottenBox, PairRedeemed, PairRequest } from "../client/wire.ts";
import { fingerprintOf, parseLink } from "../core/pairing_link.ts";
import { type Boxes, type BoxStatus, checkBoxName, type TlsSecrets } from "./boxes.ts";

/** Options of {@linkcode pairBox}. */
export interface PairOptions {
  /** The origin of the `box.added` event. */
  origin: string;
  /** How the box will list this laptop. @default {Deno.hostname()} */
  laptopName?: string;
  /** How long the box may take for each step. @default {15_000} */
  timeoutMs?: number;
}

/**
 * Pairs with the box a link names and registers it; returns its status. A box paired already (the
 * link's CA is pinned for it) that answers is refused (409: nothing to do, the code is not spent); one
 * that does not answer where it was (it moved, or was set up again with the same CA) is paired again
 * in place: same name, same event cursor, announced as `box.changed` (issue 33: re-adding a box replayed
 * its history), and its old credential revoked on the box, best effort.
 */
export async function pairBox(boxes: Boxes, request: PairRequest, options: PairOptions): Promise<BoxStatus> {
  const link = parseLink(request.link);
  // Refuse what can be refused before the code is spent: a taken or invalid name, a box known and reachable.
  const known = await boxWithFingerprint(boxes, link.fp);
  if (known) {
    await boxes.check(known);
    if (boxes.online(known)) {
      throw new DockError(
        "exists",
        `Cannot pair: this box is paired already, as '${known}'; forget it first (dock forget ${known})`,
        { status: 409, detail: { box: known } },
      );
    }
    if (request.name !== undefined && request.name !== known) {
      throw new DockError(
        "exists",
        `Cannot pair as '${request.name}': this box is paired already, as '${known}' (it is paired again ` +
          `under that name; to rename it, forget it first: dock forget ${known})`,
        { status: 409, detail: { box: known } },
      );
    }
  } else if (request.name !== undefined) boxes.checkNew(request.name);
  const timeoutMs = options.timeoutMs ?? 15_000;
  const caPem = await pinnedCa(link.host, link.port, link.fp, { timeoutMs });
  const address = `https://${link.host.includes(":") ? `[${link.host}]` : link.host}:${link.port}`;
  const redeemed = await redeem(address, caPem, link.code, options.laptopName ?? Deno.hostname(), timeoutMs);
  if (known && boxes.has(known)) {
    const old = boxes.tlsCredentials(known);
    const status = await boxes.repair(
      known,
      { address, ca_pem: caPem, credential: redeemed.credential },
      options.origin,
    );
    if (old && old.credential !== redeemed.credential) await revoke(address, old, 3000).catch(() => {});
    return status;
  }
  const name = request.name ?? freeName(boxes, redeemed.box);
  return await boxes.add(
    { name, kind: "tls", address, ca_pem: caPem, credential: redeemed.credential },
    options.origin,
  );
}

/** The name of the box whose pinned CA has the SHA-256 fingerprint `fp`, if any. */
export async function boxWithFingerprint(boxes: Boxes, fp: string): Promise<string | undefined> {
  for (const box of boxes.list()) {
    const pinned = boxes.tlsCredentials(box.name)?.caCerts[0];
    if (pinned && await fingerprintOf(pinned) === fp) return box.name;
  }
  return undefined;
}

/**
 * The CA certificate (PEM) among those the server at `host:port` presents whose SHA-256 fingerprint is
 * `fp`. Only a TLS handshake happens: nothing is sent to a server that turns out not to be the box.
 */
export async function pinnedCa(
  host: string,
  port: number,
  fp: string,
  options: { timeoutMs?: number } = {},
): Promise<string> {
  const chain = await presentedChain(host, port, options.timeoutMs ?? 15_000);
  const presented: string[] = [];
  for (const der of chain) {
    const pem = derToPem(der);
    const fingerprint = await fingerprintOf(pem);
    if (fingerprint === fp) return pem;
    presented.push(fingerprint);
  }
  throw new DockError(
    "fingerprint_mismatch",
    `Cannot pair: the server at ${host}:${port} does not present the certificate authority the link pins ` +
      `(fp ${fp}); the link is not for this box, or something between is intercepting the connection`,
    { status: 403, detail: { expected: fp, presented } },
  );
}

/** The certificates the server presents in its handshake, leaf first (DER). */
function presentedChain(host: string, port: number, timeoutMs: number): Promise<Uint8Array[]> {
  return new Promise((resolve, reject) => {
    // Verification is off on purpose: this connection only reads certificates; trust comes from `fp`.
    const socket = connect({
      host,
      port,
      rejectUnauthorized: false,
      ...(isIP(host) ? {} : { servername: host }),
    });
    const timer = setTimeout(() => {
      socket.destroy();
      reject(unreachable(host, port, `no TLS handshake within ${timeoutMs} ms`));
    }, timeoutMs);
    socket.once("secureConnect", () => {
      clearTimeout(timer);
      const chain: Uint8Array[] = [];
      const seen = new Set<unknown>();
      // A self-signed CA is its own issuer: stop at the first certificate seen twice.
      for (
        let cert = socket.getPeerCertificate(true);
        cert?.raw && !seen.has(cert);
        cert = cert.issuerCertificate
      ) {
        seen.add(cert);
        chain.push(new Uint8Array(cert.raw));
      }
      socket.destroy();
      resolve(chain);
    });
    socket.once("error", (error: Error) => {
      clearTimeout(timer);
      socket.destroy();
      reject(unreachable(host, port, error.message));
    });
  });
}

/** Trades the code for a credential over a connection verified against the pinned CA. */
async function redeem(
  address: string,
  caPem: string,
  code: string,
  laptopName: string,
  timeoutMs: number,
): Promise<PairRedeemed> {
  const box = new BoxClient({ url: address, caCerts: [caPem], origin: "dock" });
  try {
    return await box.redeemPairCode({ code, name: laptopName }, { signal: AbortSignal.timeout(timeoutMs) });
  } catch (error) {
    // The pinned CA verified, but the leaf does not cover the host the link names.
    if (error instanceof TransportError && /certificate/i.test(causeChain(error))) {
      throw new DockError(
        "certificate_refused",
        `Cannot pair: the box's certificate does not cover ${new URL(address).hostname}: make a link for ` +
          `one of its addresses (dockd pair --host …), or add this one to DOCK_TLS_HOSTS on the box and restart it`,
        { status: 502, cause: error },
      );
    }
    const { hostname, port } = new URL(address);
    if (error instanceof DOMException && error.name === "TimeoutError") {
      throw unreachable(hostname, Number(port), "no answer in time");
    }
    if (error instanceof TransportError) {
      throw unreachable(hostname, Number(port), causeChain(error.cause).split("\n")[0]);
    }
    throw error;
  } finally {
    box.close();
  }
}

/** Options of {@linkcode forgetBox}. */
export interface ForgetOptions {
  /** The origin of the `box.removed` event. */
  origin: string;
  /** How long the box may take to unpair this laptop. @default {3000} */
  timeoutMs?: number;
}

/**
 * Forgets a box (`DELETE /v1/boxes/{box}`). For a paired box, this laptop's credential is then revoked
 * on the box itself, best effort: the box is forgotten here whatever it answers, and `revoked` says
 * whether it was told (`false` with the reason in `revoke_error` when it was not).
 */
export async function forgetBox(boxes: Boxes, name: string, options: ForgetOptions): Promise<ForgottenBox> {
  // Read before removing: removal closes the box's connections and drops its secrets.
  const secrets = boxes.tlsCredentials(name);
  const record = boxes.remove(name, options.origin);
  if (!secrets) return { ...record, revoked: null };
  // The credential is `<id>.<secret>`: the id is what `dockd laptops` lists on the box.
  const laptop = secrets.credential.split(".")[0];
  try {
    await revoke(record.address, secrets, options.timeoutMs ?? 3000);
    return { ...record, revoked: true, laptop };
  } catch (error) {
    // The box no longer knows the credential (revoked there already): it trusts this laptop no more.
    if (error instanceof DockError && error.status === 401) return { ...record, revoked: true, laptop };
    const reason = error instanceof DOMException && error.name === "TimeoutError"
      ? "no answer in time"
      : error instanceof TransportError
      ? causeChain(error.cause).split("\n")[0]
      : (error as Error).message;
    return { ...record, revoked: false, laptop, revoke_error: reason };
  }
}

/** Unpairs this laptop's credential `secrets` on the box at `address` (`DELETE /v1/pair`). */
async function revoke(address: string, secrets: TlsSecrets, timeoutMs: number): Promise<void> {
  const box = new BoxClient({
    url: address,
    token: secrets.credential,
    caCerts: secrets.caCerts,
    origin: "dock",
  });
  try {
    await box.unpair({ signal: AbortSignal.timeout(timeoutMs) });
  } finally {
    box.close();
  }
}

/** `name`, or `name-2`, `name-3`… when a box has it: the code is spent already, so the pairing is kept. */
function freeName(boxes: Boxes, name: string): string {
  checkBoxName(name);
  const taken = new Set(boxes.list().map((box) => box.name));
  if (!taken.has(name)) return name;
  for (let n = 2;; n++) {
    const candidate = `${name.slice(0, 58)}-${n}`;
    if (!taken.has(candidate)) return candidate;
  }
}

/** The messages of an error and its causes: fetch's own message ("fetch failed") says nothing. */
function unreachable(host: string, port: number, reason: string): DockError {
  return new DockError(
    "box_unreachable",
    `Cannot pair: the box at ${host}:${port} cannot be reached: ${reason}`,
    {
      status: 503,
    },
  );
}

function derToPem(der: Uint8Array): string {
  const base64 = btoa(String.fromCharCode(...der));
  return `-----BEGIN CERTIFICATE-----\n${base64.match(/.{1,64}/g)!.join("\n")}\n-----END CERTIFICATE-----\n`;
}
