/**
 * The box's TLS identity for laptops that dial it over TCP. A box-local certificate authority (EC
 * P-256, ten years) is made once and kept; its SHA-256 fingerprint travels in the pairing link, and the
 * laptop pins exactly that CA (`Deno.createHttpClient({ caCerts: [caPem] })`). The server presents a
 * leaf (EC P-256, one year) signed by that CA whose subjectAltName lists every address the laptop may
 * dial, because rustls refuses a self-signed certificate used directly (`CaUsedAsEndEntity`) and
 * refuses any address the SAN does not list.
 *
 * The leaf is re-issued whenever it is missing, within 30 days of expiry, signed by another CA, not
 * matching its key, or issued for another set of addresses — so a box that gains an address (a new
 * interface, a renamed host) serves a valid certificate on its next start without re-pairing: the CA,
 * and with it the fingerprint every laptop pinned, stays the same.
 *
 * Certificates are made by the `openssl` CLI (through the one process runner) rather than by WebCrypto
 * and a hand-written DER encoder: openssl is on every box, its X.509 output is what every TLS stack is
 * tested against, and the only DER this module has to understand is the little it reads back (validity
 * and subjectAltName) to decide whether to re-issue.
 *
 * Note for the laptop side: Deno adds `caCerts` to its default (public) roots rather than replacing
 * them, so a certificate a public CA issued for the dialled name would be accepted too. Against anyone
 * without such a certificate the box CA is the pin; links that name an IP address (which public CAs
 * rarely certify) are the tightest.
 *
 * @module
 */
import { DockError } from "../client/errors.ts";
import { fingerprintOf, pemToDer } from "../core/pairing_link.ts";
import { run, which } from "../core/runner.ts";
import { hex } from "../core/bytes.ts";
import { join } from "../core/posix_path.ts";

/** The box's CA and current leaf, as the TLS listener and the pairing link need them. */
export interface BoxCertificates {
  /** The box CA certificate (PEM) that laptops pin. */
  caPem: string;
  /** The leaf certificate (PEM) the listener presents. */
  certPem: string;
  /** The leaf's private key (PKCS#8 PEM). */
  keyPem: string;
  /** SHA-256 of the CA certificate's DER, lowercase hex without colons: the `fp` of a pairing link. */
  fingerprint: string;
}

/** Options for {@linkcode ensureCertificates}. */
export interface EnsureCertificatesOptions {
  /** Host names and IP addresses the laptop may dial; each becomes a DNS or IP subjectAltName entry. */
  addresses: string[];
  /**
   * The time renewal is judged against (the certificates themselves are dated by openssl from the
   * real clock). @default {new Date()}
   */
  now?: Date;
  /** The openssl program. @default {the one on PATH} */
  openssl?: string;
}

const CA_DAYS = 3650;
const LEAF_DAYS = 365;
const RENEW_BEFORE_MS = 30 * 24 * 3600 * 1000;
const OPENSSL_TIMEOUT_MS = 30_000;

/**
 * Creates the box CA once and (re-)issues the leaf for `addresses` when needed; returns both. A fresh
 * box's openssl runs start before this returns to the event loop: `dockd serve` begins this before it
 * loads the daemon's modules, and the runs then go on on another core while this thread is busy.
 */
export async function ensureCertificates(
  dir: string,
  options: EnsureCertificatesOptions,
): Promise<BoxCertificates> {
  const now = options.now ?? new Date();
  const wanted = sanEntries(options.addresses);
  Deno.mkdirSync(dir, { recursive: true, mode: 0o700 });

  let ca = readPair(dir, "ca");
  let leaf: Pair | null;
  if (!ca || !await caUsable(ca, now)) {
    ({ ca, leaf } = await issue(dir, wanted, { ca: null, openssl: options.openssl }));
  } else {
    leaf = readPair(dir, "leaf");
    if (!leaf || !await leafUsable(leaf, ca, wanted, now)) {
      leaf = (await issue(dir, wanted, { ca, openssl: options.openssl })).leaf;
    }
  }

  // Someone may have loosened the modes by hand; the keys never leave this user.
  await Deno.chmod(`${dir}/ca.key`, 0o600);
  await Deno.chmod(`${dir}/leaf.key`, 0o600);
  return {
    caPem: ca.certPem,
    certPem: leaf.certPem,
    keyPem: leaf.keyPem,
    fingerprint: await fingerprintOf(ca.certPem),
  };
}

/**
 * The box's certificates (in `<boxDir>/tls`) for a listener bound to `hostname` that is dialled at
 * `addresses`, made or renewed when needed, and the addresses they cover. `dockd serve` asks before it
 * loads the daemon (cli/serve_early.ts), so that a fresh box makes them while the daemon loads.
 */
export async function listenerCertificates(
  boxDir: string,
  listener: { hostname: string; addresses: string[] },
): Promise<{ addresses: string[]; certificates: BoxCertificates }> {
  const wildcard = ["0.0.0.0", "::", "[::]"].includes(listener.hostname);
  const addresses = [...new Set([...listener.addresses, ...(wildcard ? [] : [listener.hostname])])];
  return { addresses, certificates: await ensureCertificates(join(boxDir, "tls"), { addresses }) };
}

/**
 * The host a pairing link (a laptop's or a phone's) names when none is given: the listener's own address when it is
 * bound to one, otherwise the box's first non-loopback address (IPv4 first: more laptops route it).
 */
export function defaultLinkHost(listener: { hostname: string; addresses: string[] }): string {
  if (!WILDCARD.has(listener.hostname)) return listener.hostname;
  const ip = (a: string) => /^[0-9.]+$/.test(a) || a.includes(":");
  const outward = listener.addresses.filter((a) => !a.startsWith("127.") && a !== "::1" && a !== "localhost");
  return outward.find((a) => ip(a) && !a.includes(":")) ?? outward.find(ip) ?? outward[0] ?? "127.0.0.1";
}

const WILDCARD = new Set(["0.0.0.0", "::", "[::]"]);

/** True when `host` is one the listener's certificate covers. */
export function coveredHost(listener: { addresses: string[] }, host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, "$1").toLowerCase().replace(/\.$/, "");
  return listener.addresses.some((address) => address.toLowerCase() === bare);
}

/** The addresses a laptop may use to reach this box: loopback, the host name and every interface address. */
export function localAddresses(): string[] {
  const addresses = ["localhost", "127.0.0.1", "::1"];
  const hostname = Deno.hostname();
  // A host name that is not a valid DNS name (possible on some systems) cannot go into a certificate.
  if (dnsName(hostname) !== null) addresses.push(hostname);
  for (const iface of Deno.networkInterfaces()) {
    const bytes = ipBytes(iface.address);
    if (!bytes || isLoopback(bytes)) continue;
    // An IPv6 link-local address is only dialable with a zone (`fe80::1%eth0`), which no URL carries.
    if (bytes.length === 16 && bytes[0] === 0xfe && (bytes[1] & 0xc0) === 0x80) continue;
    addresses.push(iface.address);
  }
  return [...new Set(addresses)];
}

// ---------------------------------------------------------------------------------------------------
// Issuing

interface Pair {
  certPem: string;
  keyPem: string;
}

/** One subjectAltName entry: how openssl's config spells it, and a canonical key to compare sets by. */
interface SanEntry {
  kind: "DNS" | "IP";
  text: string;
  key: string;
}

/** A key and certificate `dir` holds, or null. Read at once (two small files): see ensureCertificates. */
function readPair(dir: string, name: string): Pair | null {
  try {
    return {
      certPem: Deno.readTextFileSync(`${dir}/${name}.pem`),
      keyPem: Deno.readTextFileSync(`${dir}/${name}.key`),
    };
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return null;
    throw error;
  }
}

async function caUsable(ca: Pair, now: Date): Promise<boolean> {
  try {
    // Re-creating the CA forces every laptop to pair again, so only an unusable one is replaced.
    return parseCertificate(pemToDer(ca.certPem)).notAfter > now && await keyMatches(ca);
  } catch {
    return false;
  }
}

async function leafUsable(leaf: Pair, ca: Pair, wanted: SanEntry[], now: Date): Promise<boolean> {
  try {
    const parsed = parseCertificate(pemToDer(leaf.certPem));
    if (parsed.notAfter.getTime() - now.getTime() <= RENEW_BEFORE_MS) return false;
    if (!sameSet(parsed.san, wanted.map((entry) => entry.key))) return false;
    if (!await keyMatches(leaf)) return false;
    const { X509Certificate } = await nodeCrypto();
    return new X509Certificate(leaf.certPem).verify(new X509Certificate(ca.certPem).publicKey);
  } catch {
    return false;
  }
}

/**
 * node:crypto, imported when certificates are checked: its first import costs ~20 ms, which a fresh box
 * (nothing to check) would spend before its openssl runs could start.
 */
function nodeCrypto(): Promise<typeof import("node:crypto")> {
  return import("node:crypto");
}

async function keyMatches(pair: Pair): Promise<boolean> {
  const { createPrivateKey, createPublicKey, X509Certificate } = await nodeCrypto();
  const fromKey = createPublicKey(createPrivateKey(pair.keyPem)).export({ type: "spki", format: "der" });
  const fromCert = new X509Certificate(pair.certPem).publicKey.export({ type: "spki", format: "der" });
  return fromKey.equals(fromCert);
}

/**
 * Issues the leaf for `entries`, signed by `ca` (the CA `dir` holds), or by a new CA made first when
 * `ca` is null; returns both. One openssl script, started before this returns to the event loop.
 */
async function issue(
  dir: string,
  entries: SanEntry[],
  options: { ca: Pair | null; openssl?: string },
): Promise<{ ca: Pair; leaf: Pair }> {
  const binary = options.openssl ?? which("openssl");
  if (!binary) {
    throw new DockError(
      "openssl_missing",
      "Cannot create the box's TLS certificates: openssl is not on PATH",
      {
        status: 500,
      },
    );
  }
  // A private scratch folder inside `dir` (mode 0700: a key is never readable by others, even for a
  // moment; the same file system: the renames into place are atomic).
  const scratch = Deno.makeTempDirSync({ dir, prefix: ".issue-" });
  try {
    if (!options.ca) Deno.writeTextFileSync(`${scratch}/ca.cnf`, caConfig());
    Deno.writeTextFileSync(`${scratch}/leaf.cnf`, leafConfig(entries));
    const result = await run("/bin/sh", [
      "-c",
      ISSUE_SCRIPT,
      "dock-tls",
      binary,
      scratch,
      options.ca ? dir : scratch,
      options.ca ? "" : String(CA_DAYS),
      String(LEAF_DAYS),
      randomSerial(),
    ], { timeoutMs: OPENSSL_TIMEOUT_MS, group: false });
    if (result.code !== 0 || result.timedOut) {
      throw new DockError(
        "certificate_failed",
        `Cannot create the box's TLS certificates: openssl ${
          result.timedOut ? "timed out" : `exited with ${result.code}`
        }: ${result.stderr.trim().slice(-2000)}`,
        { status: 500 },
      );
    }
    // The CA before the leaf it signed, and each key before its certificate: a certificate never names
    // a missing key.
    const ca = options.ca ?? await install(scratch, dir, "ca");
    return { ca, leaf: await install(scratch, dir, "leaf") };
  } finally {
    await Deno.remove(scratch, { recursive: true });
  }
}

function caConfig(): string {
  return [
    "[req]",
    "distinguished_name = dn",
    "prompt = no",
    "[dn]",
    // A random suffix: two boxes with the same host name must not have CAs with the same subject.
    `CN = dock box CA ${commonName(Deno.hostname())} ${randomSerial().slice(2, 10)}`,
    "[ca_ext]",
    // pathlen:0: this CA signs the box's leaves and nothing that could sign further.
    "basicConstraints = critical, CA:TRUE, pathlen:0",
    "keyUsage = critical, keyCertSign, cRLSign",
    "subjectKeyIdentifier = hash",
    "",
  ].join("\n");
}

function leafConfig(entries: SanEntry[]): string {
  const counts = { DNS: 0, IP: 0 };
  const alt = entries.map((entry) => `${entry.kind}.${++counts[entry.kind]} = ${entry.text}`);
  return [
    "[req]",
    "distinguished_name = dn",
    "prompt = no",
    "[dn]",
    `CN = dock box ${commonName(Deno.hostname())}`,
    "[leaf_ext]",
    "basicConstraints = critical, CA:FALSE",
    "keyUsage = critical, digitalSignature",
    "extendedKeyUsage = serverAuth",
    "subjectKeyIdentifier = hash",
    "authorityKeyIdentifier = keyid:always",
    "subjectAltName = @alt",
    "[alt]",
    ...alt,
    "",
  ].join("\n");
}

/**
 * Makes the certificates in the scratch folder $2: with $1 the openssl program, $3 the folder of the
 * CA that signs (ca.pem, ca.key), $4 the days of a new CA made first in $2 (empty: none), $5 the leaf's
 * days, $6 its serial (explicit: openssl 3.0 would otherwise want a serial file beside the CA). EC
 * P-256 keys. OpenSSL 3 makes and signs the leaf in one run (`req -x509 -CA`: ~7 ms, where a request
 * and `x509 -req` take ~40 here); older ones and LibreSSL, which refuse `-CA`, take the two.
 */
const ISSUE_SCRIPT = `
set -e
openssl=$1 scratch=$2 ca=$3
if [ -n "$4" ]; then
  "$openssl" req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \\
    -keyout "$scratch/ca.key" -out "$scratch/ca.pem" -days "$4" -sha256 \\
    -config "$scratch/ca.cnf" -extensions ca_ext
fi
if ! "$openssl" req -x509 -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \\
  -keyout "$scratch/leaf.key" -out "$scratch/leaf.pem" -config "$scratch/leaf.cnf" -extensions leaf_ext \\
  -CA "$ca/ca.pem" -CAkey "$ca/ca.key" -set_serial "$6" -days "$5" -sha256 2>/dev/null; then
  "$openssl" req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes \\
    -keyout "$scratch/leaf.key" -out "$scratch/leaf.csr" -config "$scratch/leaf.cnf"
  "$openssl" x509 -req -in "$scratch/leaf.csr" -CA "$ca/ca.pem" -CAkey "$ca/ca.key" \\
    -set_serial "$6" -days "$5" -sha256 -extfile "$scratch/leaf.cnf" -extensions leaf_ext \\
    -out "$scratch/leaf.pem"
fi
`;

/** Moves a freshly made key and certificate into place: the key first, so a cert never names a missing key. */
async function install(scratch: string, dir: string, name: string): Promise<Pair> {
  await Deno.chmod(`${scratch}/${name}.key`, 0o600);
  await Deno.rename(`${scratch}/${name}.key`, `${dir}/${name}.key`);
  await Deno.rename(`${scratch}/${name}.pem`, `${dir}/${name}.pem`);
  return readPair(dir, name)!;
}

function randomSerial(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[0] = (bytes[0] & 0x7f) | 0x01; // positive and never zero, as RFC 5280 asks
  return `0x${hex(bytes)}`;
}

/** A host name reduced to characters that are safe in an openssl config value. */
function commonName(hostname: string): string {
  return hostname.replace(/[^A-Za-z0-9.-]/g, "-").slice(0, 40) || "box";
}

// ---------------------------------------------------------------------------------------------------
// Addresses

function sanEntries(addresses: string[]): SanEntry[] {
  if (addresses.length === 0) {
    throw new DockError("invalid_request", "Cannot issue a certificate: 'addresses' must not be empty");
  }
  const entries = new Map<string, SanEntry>();
  for (const address of addresses) {
    const entry = sanEntry(address);
    if (!entries.has(entry.key)) entries.set(entry.key, entry);
  }
  return [...entries.values()];
}

function sanEntry(address: string): SanEntry {
  const bare = address.startsWith("[") && address.endsWith("]") ? address.slice(1, -1) : address;
  const bytes = ipBytes(bare);
  if (bytes) return { kind: "IP", text: formatIp(bytes), key: `ip:${hex(bytes)}` };
  const name = dnsName(bare);
  if (name !== null) return { kind: "DNS", text: name, key: `dns:${name}` };
  throw new DockError(
    "invalid_request",
    `Cannot issue a certificate: '${address}' is neither an IP address nor a DNS name`,
  );
}

/** The canonical (lowercase, no trailing dot) form of a DNS name, or null when it is not one. */
function dnsName(text: string): string | null {
  const name = text.toLowerCase().replace(/\.$/, "");
  if (name.length === 0 || name.length > 253) return null;
  // Underscores appear in real host names; wildcards and anything else do not belong in a box's SAN.
  const label = /^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$/;
  return name.split(".").every((part) => label.test(part)) ? name : null;
}

/** The 4 or 16 bytes of an IPv4 or IPv6 address (no zone), or null when `text` is not one. */
function ipBytes(text: string): Uint8Array | null {
  const v4 = parseIpv4(text);
  if (v4) return v4;
  if (!text.includes(":") || !/^[0-9a-fA-F:.]+$/.test(text)) return null;
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const groups = (half: string): number[] | null => {
    if (half === "") return [];
    const out: number[] = [];
    const parts = half.split(":");
    for (const [index, part] of parts.entries()) {
      if (index === parts.length - 1 && part.includes(".")) {
        const tail = parseIpv4(part);
        if (!tail) return null;
        out.push((tail[0] << 8) | tail[1], (tail[2] << 8) | tail[3]);
      } else if (/^[0-9a-fA-F]{1,4}$/.test(part)) {
        out.push(parseInt(part, 16));
      } else {
        return null;
      }
    }
    return out;
  };
  const head = groups(halves[0]);
  const tail = halves.length === 2 ? groups(halves[1]) : [];
  if (!head || !tail) return null;
  if (halves.length === 2 ? head.length + tail.length > 7 : head.length !== 8) return null;
  const all = [...head, ...new Array(8 - head.length - tail.length).fill(0), ...tail];
  return new Uint8Array(all.flatMap((group) => [group >> 8, group & 0xff]));
}

function parseIpv4(text: string): Uint8Array | null {
  const parts = text.split(".");
  if (parts.length !== 4 || !parts.every((part) => /^(0|[1-9][0-9]{0,2})$/.test(part))) return null;
  const bytes = parts.map(Number);
  return bytes.every((byte) => byte <= 255) ? new Uint8Array(bytes) : null;
}

function formatIp(bytes: Uint8Array): string {
  if (bytes.length === 4) return bytes.join(".");
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((bytes[i] << 8) | bytes[i + 1]).toString(16));
  return groups.join(":");
}

function isLoopback(bytes: Uint8Array): boolean {
  if (bytes.length === 4) return bytes[0] === 127;
  return bytes.every((byte, i) => byte === (i === 15 ? 1 : 0));
}

function sameSet(a: string[], b: string[]): boolean {
  const left = new Set(a);
  const right = new Set(b);
  return left.size === right.size && [...left].every((item) => right.has(item));
}

// ---------------------------------------------------------------------------------------------------
// Reading certificates back: just enough DER for the renewal decision.

interface Tlv {
  tag: number;
  start: number;
  end: number;
}

function readTlv(der: Uint8Array, offset: number, limit: number): Tlv {
  if (offset + 2 > limit) throw new Error("DER: truncated");
  const tag = der[offset];
  let length = der[offset + 1];
  let start = offset + 2;
  if (length & 0x80) {
    const count = length & 0x7f;
    if (count === 0 || count > 4 || start + count > limit) throw new Error("DER: bad length");
    length = 0;
    for (let i = 0; i < count; i++) length = length * 256 + der[start + i];
    start += count;
  }
  if (start + length > limit) throw new Error("DER: truncated");
  return { tag, start, end: start + length };
}

function children(der: Uint8Array, parent: Tlv): Tlv[] {
  const out: Tlv[] = [];
  for (let offset = parent.start; offset < parent.end;) {
    const tlv = readTlv(der, offset, parent.end);
    out.push(tlv);
    offset = tlv.end;
  }
  return out;
}

const OID_SUBJECT_ALT_NAME = "551d11"; // 2.5.29.17

/** The expiry and subjectAltName keys (as {@linkcode sanEntry} makes them) of a DER certificate. */
function parseCertificate(der: Uint8Array): { notAfter: Date; san: string[] } {
  const certificate = readTlv(der, 0, der.length);
  const tbs = children(der, certificate)[0];
  const fields = children(der, tbs);
  const first = fields[0]?.tag === 0xa0 ? 1 : 0; // [0] version is optional (v1)
  const validity = children(der, fields[first + 3]);
  const notAfter = derTime(der, validity[1]);
  const san: string[] = [];
  const extensions = fields.slice(first + 6).find((field) => field.tag === 0xa3);
  for (const extension of extensions ? children(der, children(der, extensions)[0]) : []) {
    const parts = children(der, extension);
    if (hex(der.subarray(parts[0].start, parts[0].end)) !== OID_SUBJECT_ALT_NAME) continue;
    const value = parts[parts.length - 1]; // OCTET STRING, after the optional critical flag
    for (const name of children(der, readTlv(der, value.start, value.end))) {
      const content = der.subarray(name.start, name.end);
      if (name.tag === 0x82) san.push(`dns:${new TextDecoder().decode(content).toLowerCase()}`);
      else if (name.tag === 0x87) san.push(`ip:${hex(content)}`);
      else san.push(`other:${name.tag}:${hex(content)}`);
    }
  }
  return { notAfter, san };
}

function derTime(der: Uint8Array, tlv: Tlv): Date {
  const text = new TextDecoder().decode(der.subarray(tlv.start, tlv.end));
  // UTCTime (YYMMDDHHMMSSZ) covers 1950–2049; GeneralizedTime (YYYYMMDDHHMMSSZ) the rest.
  const full = tlv.tag === 0x17 ? `${Number(text.slice(0, 2)) < 50 ? "20" : "19"}${text}` : text;
  const match = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})Z$/.exec(full);
  if (!match) throw new Error(`DER: unsupported time ${text}`);
  const [, year, month, day, hour, minute, second] = match.map(Number);
  return new Date(Date.UTC(year, month - 1, day, hour, minute, second));
}
